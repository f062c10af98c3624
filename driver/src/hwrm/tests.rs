use std::sync::Arc;
use std::time::Duration;

use bnxt_hsi::hwrm::layouts::*;
use bnxt_hsi::hwrm::{ErrorCode, Request};
use zerocopy::{FromZeros, IntoBytes};

use super::framing::WindowLimits;
use super::timeouts::Timeouts;
use super::*;
use crate::testing::{FakeFunction, Reply, parse, req_type, respond};
use bnxt_pci::Clock;

fn channel(firmware: impl FnMut(&[u8]) -> Reply + Send + 'static) -> (FakeFunction, Channel) {
    let f = FakeFunction::new(firmware);
    let ch = Channel::new("BNXT:3", Arc::new(f.clone())).unwrap();
    (f, ch)
}

/// Answers every request with a zeroed response of the right type (VER_GET and FUNC_QCAPS only).
fn answer_all(request: &[u8]) -> Reply {
    match req_type(request) {
        0x00 => {
            let mut r = HwrmVerGetOutput::new_zeroed();
            r.chip_num = 0x1760.into();
            Reply::Now(respond::<HwrmVerGetInput>(request, r, 0))
        }
        0x15 => Reply::Now(respond::<HwrmFuncQcapsInput>(request, HwrmFuncQcapsOutput::new_zeroed(), 0)),
        0x1d => Reply::Now(respond::<HwrmFuncDrvRgtrInput>(request, HwrmFuncDrvRgtrOutput::new_zeroed(), 0)),
        0x17 => Reply::Now(respond::<HwrmFuncCfgInput>(request, HwrmFuncCfgOutput::new_zeroed(), 0)),
        other => panic!("unexpected request 0x{other:x}"),
    }
}

#[test]
fn a_request_is_framed_as_bnxt_en_frames_it_and_its_answer_read_back() {
    let (f, mut ch) = channel(answer_all);
    let resp = ch
        .send(HwrmVerGetInput { hwrm_intf_maj: 1, hwrm_intf_min: 10, hwrm_intf_upd: 3, ..FromZeros::new_zeroed() })
        .unwrap();
    assert_eq!(resp.chip_num.get(), 0x1760);
    let subs = f.submissions();
    assert_eq!(subs.len(), 1);
    assert!(!subs[0].short);
    let req: HwrmVerGetInput = parse(&subs[0].request);
    assert_eq!(req.req_type.get(), 0);
    assert_eq!(req.cmpl_ring.get(), 0xffff);
    assert_eq!(req.target_id.get(), 0xffff);
    assert_eq!(req.seq_id.get(), 0);
    assert_eq!(req.resp_addr.get(), ch.buffer.iova() + 4096);
    assert_eq!((req.hwrm_intf_maj, req.hwrm_intf_min, req.hwrm_intf_upd), (1, 10, 3));
    // The valid byte was cleared in DMA memory once read.
    assert_eq!(ch.buffer.read_volatile_u8(4096 + size_of::<HwrmVerGetOutput>() - 1), 0);
    assert_eq!(resp.valid, 0);
}

#[test]
fn sequence_numbers_count_up_and_the_window_is_zero_filled_to_its_length() {
    let (f, mut ch) = channel(answer_all);
    let mut rgtr = HwrmFuncDrvRgtrInput::new_zeroed();
    rgtr.vf_req_fwd = [0xffff_ffffu32.into(); 8];
    ch.send(rgtr).unwrap();
    ch.send(HwrmFuncQcapsInput { fid: 0xffff.into(), ..FromZeros::new_zeroed() }).unwrap();
    let subs = f.submissions();
    assert_eq!(parse::<HwrmFuncDrvRgtrInput>(&subs[0].request).seq_id.get(), 0);
    assert_eq!(parse::<HwrmFuncQcapsInput>(&subs[1].request).seq_id.get(), 1);
    let window = &subs[1].window;
    assert_eq!(&window[16..18], &[0xff, 0xff], "fid");
    assert!(window[24..128].iter().all(|b| *b == 0), "the rest of the window is zeroed: {:?}", &window[24..128]);
}

#[test]
fn a_short_answer_is_zero_extended() {
    let (_f, mut ch) = channel(|request| {
        // An error-free answer only 16 bytes long (`hwrm_err_output`).
        let mut r = HwrmErrOutput::new_zeroed();
        r.req_type = 0x15.into();
        r.seq_id = u16::from_le_bytes([request[4], request[5]]).into();
        r.resp_len = 16.into();
        r.opaque_0 = 0x1234_5678.into();
        r.valid = 1;
        Reply::Now(r.as_bytes().to_vec())
    });
    let resp = ch.send(HwrmFuncQcapsInput::new_zeroed()).unwrap();
    assert_eq!(resp.fid.get(), 0x5678);
    assert_eq!(resp.port_id.get(), 0x1234);
    assert_eq!(resp.flags.get(), 0, "bytes past the answer read zero");
    assert_eq!(resp.mac_address, [0; 6]);
}

#[test]
fn a_refusal_names_the_nic_the_request_and_the_reason() {
    let (_f, mut ch) =
        channel(|request| Reply::Now(respond::<HwrmFuncDrvRgtrInput>(request, HwrmFuncDrvRgtrOutput::new_zeroed(), 4)));
    let err = ch.send(HwrmFuncDrvRgtrInput::new_zeroed()).unwrap_err();
    assert_eq!(
        err,
        Error::Refused { nic: "BNXT:3".into(), request: "FUNC_DRV_RGTR".into(), code: ErrorCode::ResourceAllocError }
    );
    let msg = err.to_string();
    assert!(msg.starts_with("BNXT:3: FUNC_DRV_RGTR"), "{msg}");
    assert!(msg.contains("RESOURCE_ALLOC_ERROR"), "{msg}");
    // A refusal does not wedge the channel.
    assert!(!ch.is_wedged());
}

#[test]
fn no_answer_times_out_on_the_virtual_clock_and_wedges_the_channel() {
    let (f, mut ch) = channel(|request| match req_type(request) {
        0x1d => Reply::Never,
        _ => answer_all(request),
    });
    let start = f.now();
    let err = ch.send(HwrmFuncDrvRgtrInput::new_zeroed()).unwrap_err();
    assert_eq!(f.now() - start, Duration::from_millis(500), "the default timeout before VER_GET");
    assert_eq!(
        err,
        Error::Timeout { nic: "BNXT:3".into(), request: "FUNC_DRV_RGTR".into(), timeout: Duration::from_millis(500) }
    );
    assert!(err.to_string().starts_with("BNXT:3: FUNC_DRV_RGTR"));
    assert_eq!(ch.wedged().get().map(String::as_str), Some("FUNC_DRV_RGTR"));

    // Later requests fail at once, without reaching the firmware or letting time pass.
    let before = f.now();
    let err = ch.send(HwrmFuncQcapsInput::new_zeroed()).unwrap_err();
    assert_eq!(f.now(), before);
    assert_eq!(f.submissions().len(), 1);
    assert_eq!(
        err,
        Error::Wedged { nic: "BNXT:3".into(), request: "FUNC_QCAPS".into(), wedged_by: "FUNC_DRV_RGTR".into() }
    );
    assert!(err.to_string().contains("FUNC_DRV_RGTR"));
}

#[test]
fn a_wait_the_clock_cuts_short_is_an_error_that_says_so_and_wedges_the_channel() {
    let (f, mut ch) = channel(|request| match req_type(request) {
        0x1d => Reply::Never,
        _ => answer_all(request),
    });
    let start = f.now();
    f.interrupt_at(start + Duration::from_millis(120));
    let err = ch.send(HwrmFuncDrvRgtrInput::new_zeroed()).unwrap_err();
    assert_eq!(f.now() - start, Duration::from_millis(120), "the clock stopped at the limit, not the timeout");
    let Error::Interrupted { nic, request, reason } = &err else { panic!("not an interruption: {err:?}") };
    assert_eq!((nic.as_str(), request.as_str()), ("BNXT:3", "FUNC_DRV_RGTR"));
    assert!(reason.reason.contains("limit"), "{reason}");
    assert!(err.to_string().contains("the wait was cut short"), "{err}");
    assert_eq!(ch.wedged().get().map(String::as_str), Some("FUNC_DRV_RGTR"));
    let err = ch.send(HwrmFuncQcapsInput::new_zeroed()).unwrap_err();
    assert!(matches!(err, Error::Wedged { .. }), "{err:?}");
}

#[test]
fn a_late_answer_within_the_timeout_is_taken_and_one_past_it_is_not() {
    let delay = Arc::new(std::sync::Mutex::new(Duration::from_millis(499)));
    let d = delay.clone();
    let (f, mut ch) = channel(move |request| {
        Reply::After(*d.lock().unwrap(), respond::<HwrmFuncQcapsInput>(request, HwrmFuncQcapsOutput::new_zeroed(), 0))
    });
    let start = f.now();
    ch.send(HwrmFuncQcapsInput::new_zeroed()).unwrap();
    assert!(f.now() - start >= Duration::from_millis(499));
    *delay.lock().unwrap() = Duration::from_millis(501);
    assert!(matches!(ch.send(HwrmFuncQcapsInput::new_zeroed()), Err(Error::Timeout { .. })));
}

#[test]
fn timeouts_from_ver_get_apply_and_a_long_wait_costs_virtual_time_only() {
    let (f, mut ch) = channel(|_| Reply::Never);
    ch.configure(WindowLimits::default(), Timeouts::from_ver_get(40_000, 0));
    let wall = std::time::Instant::now();
    let start = f.now();
    let err = ch.send_within(HwrmFuncResetInput::new_zeroed(), ch.timeouts().reset_wait()).unwrap_err();
    assert_eq!(f.now() - start, Duration::from_secs(40), "4 x 40 s is clipped to the 40 s ceiling");
    assert!(matches!(err, Error::Timeout { .. }));
    // Not a timing assertion on performance: a 40 s virtual wait must not be a 40 s real one.
    assert!(wall.elapsed() < Duration::from_secs(20));
}

#[test]
fn an_out_of_sequence_answer_is_discarded() {
    let (_f, mut ch) = channel(|request| {
        let mut wrong = request.to_vec();
        wrong[4] = wrong[4].wrapping_add(5);
        Reply::Now(respond::<HwrmFuncQcapsInput>(&wrong, HwrmFuncQcapsOutput::new_zeroed(), 0))
    });
    assert!(matches!(ch.send(HwrmFuncQcapsInput::new_zeroed()), Err(Error::Timeout { .. })));
}

#[test]
fn an_answer_whose_valid_byte_never_comes_wedges_after_the_valid_byte_delay() {
    let (f, mut ch) = channel(|request| {
        let mut r = respond::<HwrmFuncQcapsInput>(request, HwrmFuncQcapsOutput::new_zeroed(), 0);
        *r.last_mut().unwrap() = 0;
        Reply::Now(r)
    });
    let start = f.now();
    assert!(matches!(ch.send(HwrmFuncQcapsInput::new_zeroed()), Err(Error::Timeout { .. })));
    assert_eq!(f.now() - start, Duration::from_millis(50));
    assert!(ch.is_wedged());
}

#[test]
fn short_commands_point_at_the_request_in_dma_memory() {
    let (f, mut ch) = channel(answer_all);
    ch.configure(WindowLimits { max_req_len: 128, max_ext_req_len: 128, short_cmd: true }, Timeouts::default());
    ch.send(HwrmFuncQcapsInput { fid: 0xffff.into(), ..FromZeros::new_zeroed() }).unwrap();
    let sub = &f.submissions()[0];
    assert!(sub.short);
    let short: HwrmShortInput = parse(&sub.window);
    assert_eq!(short.req_type.get(), 0x15);
    assert_eq!(short.signature.get(), 0x4321);
    assert_eq!(short.size.get() as usize, size_of::<HwrmFuncQcapsInput>());
    assert_eq!(short.req_addr.get(), ch.buffer.iova());
    let req: HwrmFuncQcapsInput = parse(&sub.request);
    assert_eq!(req.fid.get(), 0xffff);
    assert_eq!(req.resp_addr.get(), ch.buffer.iova() + 4096);
}

#[test]
fn requests_longer_than_the_window_go_short_and_longer_than_the_firmware_takes_not_at_all() {
    assert_eq!(size_of::<HwrmFuncCfgInput>(), 160);
    let (f, mut ch) = channel(answer_all);
    let err = ch.send(HwrmFuncCfgInput::new_zeroed()).unwrap_err();
    assert_eq!(err, Error::RequestTooLong { nic: "BNXT:3".into(), request: "FUNC_CFG".into(), len: 160, max: 128 });
    assert!(f.submissions().is_empty());
    assert!(!ch.is_wedged());
    ch.configure(WindowLimits { max_req_len: 128, max_ext_req_len: 256, short_cmd: false }, Timeouts::default());
    ch.send(HwrmFuncCfgInput::new_zeroed()).unwrap();
    assert!(f.submissions()[0].short);
    assert_eq!(f.submissions()[0].request.len(), 160);
}

#[test]
fn the_buffer_outlives_the_channel_when_kept() {
    let (f, ch) = channel(answer_all);
    assert_eq!(f.dma_live(), 1);
    let kept = ch.into_buffer();
    assert_eq!(f.dma_live(), 1);
    drop(kept);
    assert_eq!(f.dma_live(), 0);
    assert_eq!(<HwrmFuncQcapsInput as Request>::NAME, "FUNC_QCAPS");
}
