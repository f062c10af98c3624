//! The HWRM mailbox: direct and short submission, response timing, the valid byte written last,
//! and DMA that fails.

mod common;

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use bnxt_hsi::hwrm::layouts::*;
use bnxt_model::device::Device;
use bnxt_model::events::{EventKind, SubmitForm};
use bnxt_model::faults::FaultPlan;
use bnxt_model::firmware::identity::HWRM_LATENCY;
use bnxt_model::host_memory::{DmaError, HeapBacking, HostMemory, Iommu};
use common::{REQ, RESP, Rig, req};
use zerocopy::IntoBytes;

const INVALID_PARAMS: u16 = 2;

/// Host memory that records every write (address, length, last byte) before passing it on.
struct Recording<'a> {
    inner: &'a dyn HostMemory,
    writes: RefCell<Vec<(u64, usize, u8)>>,
}

impl HostMemory for Recording<'_> {
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), DmaError> {
        self.inner.read(addr, out)
    }
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        self.writes.borrow_mut().push((addr, data.len(), *data.last().unwrap()));
        self.inner.write(addr, data)
    }
}

#[test]
fn the_valid_byte_is_written_last_in_its_own_write_after_the_latency() {
    let base = 0x8000_0000u64;
    let mem = Arc::new(HeapBacking::new(0x2000));
    let mut iommu = Iommu::new();
    iommu.map(base, mem, 0, 0x2000).unwrap();
    let mut dev = Device::new(0, [0, 0xa, 0xf7, 1, 2, 3], 1, Arc::new(FaultPlan::default()));
    let t0 = Duration::from_millis(3);
    dev.config_write(t0, 0x04, &6u16.to_le_bytes());
    let mut r: HwrmVerGetInput = req();
    r.seq_id = 0x1234.into();
    r.cmpl_ring = 0xffff.into();
    r.target_id = 0xffff.into();
    r.resp_addr = (base + 0x1000).into();
    for (i, dw) in r.as_bytes().chunks(4).enumerate() {
        dev.bar_write(t0, 0, 4 * i as u64, dw);
    }
    dev.bar_write(t0, 0, 0x100, &1u32.to_le_bytes());
    assert_eq!(dev.next_deadline(), Some(t0), "the request is taken at the trigger's time");
    let view = iommu.view(true);
    let rec = Recording { inner: &view, writes: RefCell::new(Vec::new()) };
    dev.advance(t0, &rec);
    assert!(rec.writes.borrow().is_empty(), "nothing is written before the latency");
    assert_eq!(dev.next_deadline(), Some(t0 + HWRM_LATENCY));
    dev.advance(t0 + HWRM_LATENCY - Duration::from_nanos(1), &rec);
    assert!(rec.writes.borrow().is_empty());
    dev.advance(t0 + HWRM_LATENCY, &rec);
    let len = size_of::<HwrmVerGetOutput>();
    let resp = base + 0x1000;
    assert_eq!(*rec.writes.borrow(), vec![(resp, len - 1, 0), (resp + len as u64 - 1, 1, 1)]);
    let mut out = vec![0u8; len];
    view.read(resp, &mut out).unwrap();
    assert_eq!(u16::from_le_bytes([out[4], out[5]]), 0x1234, "seq_id echoed");
    assert_eq!(u16::from_le_bytes([out[6], out[7]]) as usize, len, "resp_len is the layout's length");
    assert_eq!(dev.next_deadline(), None);
}

#[test]
fn responses_arrive_exactly_one_latency_after_the_trigger() {
    let mut rig = Rig::new(1);
    let mut bytes = req::<HwrmVerGetInput>().as_bytes().to_vec();
    let seq = rig.stamp(&mut bytes);
    rig.world.advance(Duration::from_millis(7));
    let t0 = rig.world.now();
    rig.submit_direct(0, &bytes);
    rig.world.advance(HWRM_LATENCY - Duration::from_nanos(1));
    assert!(rig.response(0, seq).is_none());
    rig.world.advance(Duration::from_nanos(1));
    assert_eq!(rig.response(0, seq).unwrap().code, 0);
    let events = rig.world.take_events();
    let times: Vec<_> = events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::HwrmRequest { form: SubmitForm::Direct, .. } => Some(("req", e.at)),
            EventKind::HwrmResponse { .. } => Some(("resp", e.at)),
            _ => None,
        })
        .collect();
    assert_eq!(times, vec![("req", t0), ("resp", t0 + HWRM_LATENCY)]);
}

#[test]
fn short_commands_carry_requests_of_any_length_up_to_max_ext_req_len() {
    let mut rig = Rig::new(1);
    // A VER_GET named by a short command.
    let mut bytes = req::<HwrmVerGetInput>().as_bytes().to_vec();
    let seq = rig.stamp(&mut bytes);
    rig.submit_short(0, &bytes, bytes.len() as u16, 0x4321);
    let a = rig.wait(0, seq, common::TIMEOUT).unwrap();
    assert_eq!(a.code, 0);
    assert_eq!(a.as_::<HwrmVerGetOutput>().chip_num.get(), 0x1760);
    let form = rig.world.take_events().iter().find_map(|e| match e.kind {
        EventKind::HwrmRequest { form, len, .. } => Some((form, len)),
        _ => None,
    });
    assert_eq!(form, Some((SubmitForm::Short, 24)));

    // Longer than the layout (up to max_ext_req_len): accepted, the tail ignored.
    let mut long = bytes.clone();
    long.resize(256, 0xee);
    let seq = rig.stamp(&mut long);
    rig.submit_short(0, &long, 256, 0x4321);
    assert_eq!(rig.wait(0, seq, common::TIMEOUT).unwrap().code, 0);

    // Shorter than the layout: zero-extended. QCAPS_V2 with only its header asks for type 0.
    let mut short = vec![0u8; 16];
    short[..2].copy_from_slice(&0x1a8u16.to_le_bytes());
    let seq = rig.stamp(&mut short);
    rig.submit_short(0, &short, 16, 0x4321);
    let a = rig.wait(0, seq, common::TIMEOUT).unwrap();
    assert_eq!(a.code, 0);
    assert_eq!(a.as_::<HwrmFuncBackingStoreQcapsV2Output>().entry_size.get(), 448, "type 0 is QP");
}

#[rstest::rstest]
#[case::above_max_ext_req_len(257)]
#[case::below_the_header(8)]
fn a_short_command_of_a_bad_size_is_refused(#[case] size: u16) {
    let mut rig = Rig::new(1);
    let mut bytes = req::<HwrmVerGetInput>().as_bytes().to_vec();
    let seq = rig.stamp(&mut bytes);
    rig.submit_short(0, &bytes, size, 0x4321);
    let a = rig.wait(0, seq, common::TIMEOUT).unwrap();
    assert_eq!(a.code, INVALID_PARAMS);
    assert!(rig.last_reason().unwrap().contains("short command size"));
}

#[test]
fn bad_short_commands_are_refused() {
    let mut rig = Rig::new(1);
    let mut bytes = req::<HwrmVerGetInput>().as_bytes().to_vec();
    // The short input names a different request than the one in memory.
    let seq = rig.stamp(&mut bytes);
    rig.poke(0, RESP, &[0; 64]);
    rig.poke(0, REQ, &bytes);
    let short = [0x15u16.to_le_bytes(), 0x4321u16.to_le_bytes(), [0, 0], 24u16.to_le_bytes()].concat();
    rig.world.bar_write(0, 0, 0, &short[..4]);
    rig.world.bar_write(0, 0, 4, &short[4..]);
    rig.world.bar_write(0, 0, 8, &(REQ as u32).to_le_bytes());
    rig.world.bar_write(0, 0, 12, &((REQ >> 32) as u32).to_le_bytes());
    rig.world.bar_write(0, 0, 0x100, &1u32.to_le_bytes());
    assert_eq!(rig.wait(0, seq, common::TIMEOUT).unwrap().code, INVALID_PARAMS);
}

#[test]
fn a_short_input_without_the_signature_is_a_direct_request() {
    // Without 0x4321 the window is read as the request itself: its bytes 8..16 (here the
    // short input's req_addr) are resp_addr, so the answer lands at REQ.
    let mut rig = Rig::new(1);
    let mut bytes = req::<HwrmVerGetInput>().as_bytes().to_vec();
    bytes[..2].copy_from_slice(&0u16.to_le_bytes());
    rig.stamp(&mut bytes);
    rig.submit_short(0, &bytes, 24, 0x1234);
    rig.world.advance(Duration::from_millis(1));
    let at_req = rig.peek(0, REQ, 8);
    assert_eq!(u16::from_le_bytes([at_req[6], at_req[7]]) as usize, size_of::<HwrmVerGetOutput>());
    let form = rig.world.take_events().iter().find_map(|e| match e.kind {
        EventKind::HwrmRequest { form, .. } => Some(form),
        _ => None,
    });
    assert_eq!(form, Some(SubmitForm::Direct));
}

#[test]
fn unreachable_requests_and_responses_are_dma_errors_not_panics() {
    let mut rig = Rig::new(1);
    // A response address nothing is mapped at.
    let mut bytes = req::<HwrmVerGetInput>().as_bytes().to_vec();
    rig.stamp(&mut bytes);
    bytes[8..16].copy_from_slice(&0x77_0000_0000u64.to_le_bytes());
    rig.submit_direct(0, &bytes);
    rig.world.advance(Duration::from_millis(1));
    // A short command naming unmapped memory.
    let short = [0u16.to_le_bytes(), 0x4321u16.to_le_bytes(), [0, 0], 24u16.to_le_bytes()].concat();
    rig.world.bar_write(0, 0, 0, &short[..4]);
    rig.world.bar_write(0, 0, 4, &short[4..]);
    rig.world.bar_write(0, 0, 8, &0u32.to_le_bytes());
    rig.world.bar_write(0, 0, 12, &0x77u32.to_le_bytes());
    rig.world.bar_write(0, 0, 0x100, &1u32.to_le_bytes());
    rig.world.advance(Duration::from_millis(1));
    assert_eq!(rig.world.nic_state(0).dma_errors, 2);
    let during: Vec<_> = rig
        .world
        .take_events()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::DmaFailed { during, .. } => Some(during),
            _ => None,
        })
        .collect();
    assert_eq!(during, vec!["writing an hwrm response", "reading a short-command request"]);
    // The mailbox still works.
    rig.ok(0, req::<HwrmVerGetInput>());
}

#[test]
fn a_request_naming_a_completion_ring_that_does_not_exist_is_still_answered_through_resp_addr() {
    let mut rig = Rig::new(1);
    let mut bytes = req::<HwrmVerGetInput>().as_bytes().to_vec();
    let seq = rig.stamp(&mut bytes);
    bytes[2..4].copy_from_slice(&3u16.to_le_bytes());
    rig.submit_direct(0, &bytes);
    assert_eq!(rig.wait(0, seq, common::TIMEOUT).unwrap().code, 0);
    // The HWRM_DONE completion for ring 3 has nowhere to go (no such L2 completion ring).
    assert_eq!(rig.world.device(0).l2().counters().cmpl_lost, 1);
    assert_eq!(rig.world.nic_state(0).unimplemented, 0);
}
