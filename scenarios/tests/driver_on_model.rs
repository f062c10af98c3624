//! The driver (`bnxt`) against the model (`bnxt-model`) through the in-process target: the NIC
//! part of the Rig_bnxt contract (seed "NICs", "Errors", "Changes to the machine").

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bnxt::{Error, Nic, PciError};
use bnxt_hsi::hwrm::layouts::{HwrmFuncQcfgInput, HwrmVerGetInput};
use bnxt_hsi::hwrm::{ErrorCode, req_type_by_name};
use bnxt_model::faults::{FaultPlan, FirmwareAction, FirmwareFault};
use bnxt_model_host::machine::ModelMachine;
use bnxt_model_host::world::WorldConfig;
use bnxt_pci::Clock;
use zerocopy::FromZeros;

fn machine(nics: usize, faults: Vec<FirmwareFault>) -> Arc<ModelMachine> {
    ModelMachine::new(WorldConfig {
        nics,
        seed: 7,
        faults: FaultPlan { firmware: faults, ..FaultPlan::default() },
        ..WorldConfig::default()
    })
}

fn fault(nic: usize, request: &str, nth: Option<u32>, action: FirmwareAction) -> FirmwareFault {
    let req_type = req_type_by_name(request).unwrap_or_else(|| panic!("no request {request}"));
    FirmwareFault { nic, req_type, nth, action }
}

/// The model's view of NIC `i` once the driver let it go: no DMA mapping, bus master off,
/// relaxed ordering back on (the model powers up with it on, so every open here finds it on).
fn assert_released(m: &ModelMachine, i: usize) {
    let s = m.world().nic_state(i);
    assert_eq!(s.dma_mappings, 0, "NIC {i} still has DMA mappings: {s:?}");
    assert!(!s.bus_master, "NIC {i} still masters the bus: {s:?}");
    assert!(s.relaxed_ordering, "NIC {i} relaxed ordering not restored: {s:?}");
}

#[test]
fn two_nics_open_with_their_names_buses_and_identities_and_close_cleanly() {
    let m = machine(2, vec![]);
    let buses = bnxt::buses(&*m).unwrap();
    assert_eq!(bnxt::count(&*m).unwrap(), 2);
    let mut a = Nic::open(&*m, 0).unwrap();
    let mut b = Nic::open(&*m, 1).unwrap();
    assert_eq!((a.name(), b.name()), ("BNXT", "BNXT:1"));
    assert_eq!((a.bus(), b.bus()), (buses[0].as_str(), buses[1].as_str()));
    for (nic, i) in [(&a, 0), (&b, 1)] {
        let s = m.world().nic_state(i);
        let id = nic.identity();
        assert_eq!(id.mac, s.mac, "the MAC is the one the firmware reports");
        assert_eq!(id.ipv4, Ipv4Addr::new(10, s.mac[3], s.mac[4], s.mac[5]));
        let mut gid = [0u8; 16];
        gid[10..12].copy_from_slice(&[0xff, 0xff]);
        gid[12..].copy_from_slice(&[10, s.mac[3], s.mac[4], s.mac[5]]);
        assert_eq!(id.gid, gid);
        assert!(s.driver_registered && s.bus_master && s.memory_enabled, "{s:?}");
        assert!(!s.relaxed_ordering, "relaxed ordering is off while the NIC is held");
        assert!(s.dma_mappings > 0);
        assert!(s.unsupported_requests.is_empty(), "the bring-up sent requests the model does not know: {s:?}");
        assert_eq!((s.unimplemented, s.dma_errors, s.pending_responses), (0, 0, 0), "{s:?}");
        assert!(s.context_memory_done, "the last FUNC_BACKING_STORE_CFG_V2 carried BS_CFG_ALL_DONE");
        // What the driver says it holds is what the model derives from the memory it was given.
        let limits = nic.limits();
        assert_eq!(limits.qps, s.limits.qps - s.limits.l2_qps - s.limits.qp1_qps, "{limits:?} {:?}", s.limits);
        assert_eq!(limits.regions, s.limits.regions, "{limits:?} {:?}", s.limits);
        assert!(limits.qps > 0 && limits.qps <= 65_536 && limits.regions > 0 && limits.regions <= 262_144);
        assert_eq!(nic.wedged_by(), None);
    }
    assert_ne!(a.identity().mac, b.identity().mac);

    a.close();
    assert_released(&m, 0);
    assert!(!m.world().nic_state(0).driver_registered);
    assert!(m.world().nic_state(1).bus_master, "closing one NIC leaves the other alone");
    b.close();
    assert_released(&m, 1);
}

#[test]
fn a_nic_reopens_after_close_and_a_second_close_does_nothing() {
    let m = machine(1, vec![]);
    let mut nic = Nic::open(&*m, 0).unwrap();
    let id = nic.identity();
    nic.close();
    nic.close();
    assert!(!nic.is_open());
    assert_eq!((nic.name(), nic.bus(), nic.identity()), ("BNXT", m.world().nic_state(0).bus.as_str(), id));
    assert_released(&m, 0);
    let again = Nic::open(&*m, 0).unwrap();
    assert_eq!(again.identity(), id);
    drop(again);
    assert_released(&m, 0);
}

#[test]
fn a_held_nic_cannot_be_opened_again_and_there_is_no_nic_past_the_last() {
    let m = machine(1, vec![]);
    let _held = Nic::open(&*m, 0).unwrap();
    let err = Nic::open(&*m, 0).unwrap_err();
    assert!(matches!(err, Error::Pci { source: PciError::Busy { .. }, .. }), "{err}");
    assert!(err.to_string().starts_with("BNXT: "));
    let err = Nic::open(&*m, 3).unwrap_err();
    assert!(err.to_string().starts_with("BNXT:3: no NIC 3"), "{err}");
}

#[test]
fn registration_that_is_never_answered_fails_the_open_in_virtual_time_and_leaves_the_other_nic_alone() {
    let m = machine(2, vec![fault(0, "FUNC_DRV_RGTR", None, FirmwareAction::NoResponse)]);
    let clock = m.clock();
    let (virtual_start, wall_start) = (clock.now(), Instant::now());
    let err = Nic::open(&*m, 0).unwrap_err();
    let (virtual_spent, wall_spent) = (clock.now() - virtual_start, wall_start.elapsed());
    let Error::Timeout { ref nic, ref request, timeout } = err else { panic!("not a timeout: {err}") };
    assert_eq!((nic.as_str(), request.as_str()), ("BNXT", "FUNC_DRV_RGTR"));
    assert!(err.to_string().starts_with("BNXT: FUNC_DRV_RGTR"), "{err}");
    assert!(virtual_spent >= timeout && timeout >= Duration::from_millis(500), "{virtual_spent:?} {timeout:?}");
    assert!(
        wall_spent < virtual_spent,
        "the timeout cost {wall_spent:?} of real time for {virtual_spent:?} of virtual time"
    );
    let s = m.world().nic_state(0);
    assert!(
        !s.bus_master && s.relaxed_ordering,
        "a wedged open still turns bus master off and restores relaxed ordering: {s:?}"
    );

    let mut b = Nic::open(&*m, 1).unwrap();
    assert!(!m.world().nic_state(1).relaxed_ordering);
    b.close();
    assert_released(&m, 1);
}

#[test]
fn memory_an_unanswered_open_named_stays_mapped_until_the_next_open_resets_the_nic() {
    let m = machine(1, vec![fault(0, "FUNC_DRV_RGTR", Some(1), FirmwareAction::NoResponse)]);
    assert!(Nic::open(&*m, 0).is_err());
    assert!(m.world().nic_state(0).dma_mappings > 0, "the HWRM buffer the firmware may still write stays");
    let mut nic = Nic::open(&*m, 0).unwrap();
    nic.close();
    assert_released(&m, 0);
}

#[test]
fn a_request_after_open_that_is_never_answered_wedges_the_nic() {
    // The third FUNC_QCFG: the open sends two (at probe, and reading the reservation back).
    let m = machine(1, vec![fault(0, "FUNC_QCFG", Some(3), FirmwareAction::NoResponse)]);
    let mut nic = Nic::open(&*m, 0).unwrap();
    let err = nic.hwrm(HwrmFuncQcfgInput::new_zeroed()).unwrap_err();
    assert!(matches!(&err, Error::Timeout { request, .. } if request == "FUNC_QCFG"), "{err}");
    assert_eq!(nic.wedged_by(), Some("FUNC_QCFG"));
    let t = m.clock().now();
    let err = nic.hwrm(HwrmVerGetInput::new_zeroed()).unwrap_err();
    assert_eq!(m.clock().now(), t, "later requests fail at once");
    assert!(
        matches!(&err, Error::Wedged { request, wedged_by, .. } if request == "VER_GET" && wedged_by == "FUNC_QCFG")
    );
    assert!(err.to_string().starts_with("BNXT: VER_GET") && err.to_string().contains("FUNC_QCFG"), "{err}");
    nic.close();
    assert_released(&m, 0);
    assert!(m.world().nic_state(0).driver_registered, "a wedged firmware is not sent FUNC_DRV_UNRGTR");
}

#[test]
fn a_late_answer_within_the_timeout_is_waited_for() {
    let m = machine(1, vec![fault(0, "FUNC_QCAPS", None, FirmwareAction::Delay(Duration::from_millis(200)))]);
    let t = m.clock().now();
    let nic = Nic::open(&*m, 0).unwrap();
    assert!(m.clock().now() - t >= Duration::from_millis(200));
    assert_eq!(nic.identity().mac, m.world().nic_state(0).mac);
}

#[test]
fn a_refusal_at_each_bring_up_request_fails_the_open_naming_the_request_and_the_code() {
    let code = ErrorCode::ResourceAllocError;
    for request in [
        "VER_GET",
        "FUNC_RESET",
        "FUNC_QCAPS",
        "FUNC_DRV_RGTR",
        "QUEUE_QPORTCFG",
        "FUNC_BACKING_STORE_QCAPS_V2",
        "FUNC_BACKING_STORE_CFG_V2",
        "FUNC_QCFG",
        "PORT_PHY_QCAPS",
        "PORT_PHY_QCFG",
    ] {
        let m = machine(1, vec![fault(0, request, Some(1), FirmwareAction::Error(code.value()))]);
        let err = Nic::open(&*m, 0).unwrap_err();
        assert_eq!(err, Error::Refused { nic: "BNXT".into(), request: request.into(), code }, "{err}");
        let msg = err.to_string();
        assert!(msg.starts_with("BNXT: ") && msg.contains(request) && msg.contains("RESOURCE_ALLOC_ERROR"), "{msg}");
        assert_released(&m, 0);
        assert!(!m.world().nic_state(0).driver_registered, "{request}: a registered open unregisters as it fails");
    }
}

#[test]
fn context_configuration_that_is_never_answered_keeps_only_what_it_named() {
    let m = machine(1, vec![fault(0, "FUNC_BACKING_STORE_CFG_V2", Some(3), FirmwareAction::NoResponse)]);
    let err = Nic::open(&*m, 0).unwrap_err();
    assert!(matches!(&err, Error::Timeout { request, .. } if request == "FUNC_BACKING_STORE_CFG_V2"), "{err}");
    let kept = m.world().nic_state(0).dma_mappings;
    // The HWRM buffer and the CQ context (the third type: data and its two table levels) stay;
    // the other types' memory is freed.
    assert!(kept >= 3, "{kept} mappings kept");
    let mut nic = Nic::open(&*m, 0).unwrap();
    assert!(m.world().nic_state(0).dma_mappings > kept, "a full open maps more than was kept");
    nic.close();
    assert_released(&m, 0);
}

#[test]
fn requests_from_several_threads_run_one_at_a_time() {
    let m = machine(1, vec![]);
    let nic = Arc::new(Nic::open(&*m, 0).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let nic = nic.clone();
            std::thread::spawn(move || {
                for _ in 0..10 {
                    nic.hwrm(HwrmFuncQcfgInput::new_zeroed()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(m.world().nic_state(0).pending_responses, 0);
    drop(Arc::into_inner(nic).expect("every thread is done"));
    assert_released(&m, 0);
}
