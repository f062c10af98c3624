//! Injected firmware faults: no response, a late response, an error code, and the nth
//! occurrence only.

mod common;

use std::time::Duration;

use bnxt_hsi::hwrm::Request;
use bnxt_hsi::hwrm::layouts::*;
use bnxt_model::events::EventKind;
use bnxt_model::faults::{FaultPlan, FirmwareAction, FirmwareFault};
use bnxt_model::firmware::identity::HWRM_LATENCY;
use common::{Rig, req};
use zerocopy::IntoBytes;

const RGTR: u16 = <HwrmFuncDrvRgtrInput as Request>::REQ_TYPE;

fn plan(nic: usize, req_type: u16, nth: Option<u32>, action: FirmwareAction) -> FaultPlan {
    FaultPlan { firmware: vec![FirmwareFault { nic, req_type, nth, action }], ..FaultPlan::default() }
}

fn fired(rig: &mut Rig) -> Vec<(u16, u32, FirmwareAction)> {
    rig.world
        .take_events()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::FaultFired { req_type, nth, action } => Some((req_type, nth, action)),
            _ => None,
        })
        .collect()
}

#[test]
fn no_response_never_answers_and_does_not_act() {
    let mut rig = Rig::with(2, 1, plan(0, RGTR, None, FirmwareAction::NoResponse));
    let mut bytes = req::<HwrmFuncDrvRgtrInput>().as_bytes().to_vec();
    bytes[..2].copy_from_slice(&RGTR.to_le_bytes());
    let seq = rig.stamp(&mut bytes);
    rig.submit_direct(0, &bytes);
    let wall = std::time::Instant::now();
    assert!(rig.wait(0, seq, Duration::from_secs(60)).is_none());
    assert!(rig.world.now() >= Duration::from_secs(60));
    assert!(wall.elapsed() < Duration::from_secs(1), "virtual time costs no wall time");
    assert_eq!(rig.peek(0, common::RESP, 16), vec![0; 16], "nothing was written");
    let st = rig.world.nic_state(0);
    assert!(!st.driver_registered, "the request was not acted on");
    assert_eq!(st.pending_responses, 0);
    assert_eq!(fired(&mut rig), vec![(RGTR, 1, FirmwareAction::NoResponse)]);
    // The other NIC is unaffected, and so are other requests on this one.
    rig.ok(1, req::<HwrmFuncDrvRgtrInput>());
    rig.ok(0, req::<HwrmVerGetInput>());
}

#[test]
fn acts_no_response_acts_on_the_request_and_never_answers() {
    let mut rig = Rig::with(1, 1, plan(0, RGTR, Some(1), FirmwareAction::ActsNoResponse));
    let mut bytes = req::<HwrmFuncDrvRgtrInput>().as_bytes().to_vec();
    bytes[..2].copy_from_slice(&RGTR.to_le_bytes());
    let seq = rig.stamp(&mut bytes);
    rig.submit_direct(0, &bytes);
    assert!(rig.wait(0, seq, Duration::from_secs(60)).is_none());
    assert_eq!(rig.peek(0, common::RESP, 16), vec![0; 16], "nothing was written");
    let st = rig.world.nic_state(0);
    assert!(st.driver_registered, "the request was acted on");
    assert_eq!(st.pending_responses, 0, "and no answer is waiting to be written");
    assert_eq!(fired(&mut rig), vec![(RGTR, 1, FirmwareAction::ActsNoResponse)]);
    // Only the first occurrence: the next is answered.
    rig.ok(0, req::<HwrmFuncDrvRgtrInput>());
}

#[test]
fn delay_answers_normally_exactly_that_much_later() {
    let d = Duration::from_millis(300);
    let mut rig = Rig::with(1, 1, plan(0, RGTR, None, FirmwareAction::Delay(d)));
    let mut bytes = req::<HwrmFuncDrvRgtrInput>().as_bytes().to_vec();
    bytes[..2].copy_from_slice(&RGTR.to_le_bytes());
    let seq = rig.stamp(&mut bytes);
    let t0 = rig.world.now();
    rig.submit_direct(0, &bytes);
    rig.world.advance(HWRM_LATENCY + d - Duration::from_nanos(1));
    assert!(rig.response(0, seq).is_none());
    rig.world.advance(Duration::from_nanos(1));
    assert_eq!(rig.response(0, seq).unwrap().code, 0);
    assert_eq!(rig.world.now(), t0 + HWRM_LATENCY + d);
    assert!(rig.world.nic_state(0).driver_registered);
    assert_eq!(fired(&mut rig), vec![(RGTR, 1, FirmwareAction::Delay(d))]);
}

#[test]
fn error_answers_with_the_code_without_acting() {
    let mut rig = Rig::with(1, 1, plan(0, RGTR, None, FirmwareAction::Error(4)));
    let a = rig.call(0, req::<HwrmFuncDrvRgtrInput>());
    assert_eq!(a.code, 4);
    assert_eq!(a.bytes.len(), size_of::<HwrmErrOutput>());
    assert!(!rig.world.nic_state(0).driver_registered);
    assert_eq!(fired(&mut rig), vec![(RGTR, 1, FirmwareAction::Error(4))]);
}

#[test]
fn nth_hits_only_that_occurrence_and_counts_survive_a_reset() {
    let ver = <HwrmVerGetInput as Request>::REQ_TYPE;
    let mut rig = Rig::with(1, 1, plan(0, ver, Some(3), FirmwareAction::Error(0x10)));
    assert_eq!(rig.call(0, req::<HwrmVerGetInput>()).code, 0);
    assert_eq!(rig.call(0, req::<HwrmVerGetInput>()).code, 0);
    // A function-level reset does not restart the count.
    let flr = (bnxt_model::config_space::DEVCTL_RESET | 0x8000).to_le_bytes();
    rig.world.config_write(0, bnxt_model::config_space::EXP_CAP + 8, &flr);
    rig.world.config_write(0, 0x04, &6u16.to_le_bytes());
    assert_eq!(rig.call(0, req::<HwrmVerGetInput>()).code, 0x10);
    assert_eq!(rig.call(0, req::<HwrmVerGetInput>()).code, 0);
    assert_eq!(fired(&mut rig), vec![(ver, 3, FirmwareAction::Error(0x10))]);
}

#[test]
fn a_delay_of_the_largest_duration_built_in_code_never_answers_and_never_overflows_the_clock() {
    // Plans read from JSON refuse delays past `faults::MAX_DELAY`; one built in code is not
    // bounded, and the firmware's deadline saturates instead of overflowing.
    let mut rig = Rig::with(1, 1, plan(0, RGTR, None, FirmwareAction::Delay(Duration::MAX)));
    let mut bytes = req::<HwrmFuncDrvRgtrInput>().as_bytes().to_vec();
    bytes[..2].copy_from_slice(&RGTR.to_le_bytes());
    let seq = rig.stamp(&mut bytes);
    rig.submit_direct(0, &bytes);
    assert!(rig.wait(0, seq, Duration::from_secs(60)).is_none());
    rig.ok(0, req::<HwrmVerGetInput>());
}
