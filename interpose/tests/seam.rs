//! The layer against the in-process model, which injects nothing itself: each fault is the
//! layer's, and the model's own record (its events, what it holds) shows what reached the
//! device. The driver is the real one (`bnxt`), on the model's virtual clock.

use std::sync::Arc;
use std::time::Duration;

use bnxt::{Nic, OpenOptions, Qp, Region};
use bnxt_hsi::hwrm::req_type_by_name;
use bnxt_hsi::roce::rcfw::OPCODES;
use bnxt_interpose::Interposed;
use bnxt_model::events::EventKind;
use bnxt_model::faults::{CommandAction, CommandFault, FaultPlan, FirmwareAction, FirmwareFault};
use bnxt_model_host::machine::ModelMachine;
use bnxt_model_host::world::WorldConfig;
use bnxt_pci::Clock;

const SHORT: OpenOptions = OpenOptions { command_timeout: Some(Duration::from_secs(2)) };

fn model(nics: usize) -> Arc<ModelMachine> {
    ModelMachine::new(WorldConfig { nics, seed: 3, ..WorldConfig::default() })
}

fn hwrm(nic: usize, request: &str, nth: Option<u32>, action: FirmwareAction) -> FaultPlan {
    let req_type = req_type_by_name(request).unwrap_or_else(|| panic!("no request {request}"));
    FaultPlan { firmware: vec![FirmwareFault { nic, req_type, nth, action }], ..FaultPlan::default() }
}

fn roce(nic: usize, command: &str, nth: Option<u32>, action: CommandAction) -> FaultPlan {
    let opcode = opcode_by_name(command).unwrap_or_else(|| panic!("no command {command}"));
    FaultPlan { roce_commands: vec![CommandFault { nic, opcode, nth, action }], ..FaultPlan::default() }
}

fn opcode_by_name(name: &str) -> Option<u8> {
    OPCODES.iter().find(|(_, n)| *n == name).map(|(o, _)| *o)
}

/// The model's events since the last call (the model's log is taken as it is read).
fn events(m: &ModelMachine) -> Vec<EventKind> {
    m.world().take_events().into_iter().map(|e| e.kind).collect()
}

/// How many requests of `request` the model was sent since the last look.
fn requests_seen(m: &ModelMachine, request: &str) -> usize {
    let want = req_type_by_name(request).unwrap();
    events(m).iter().filter(|e| matches!(e, EventKind::HwrmRequest { req_type, .. } if *req_type == want)).count()
}

/// How many commands of `command` the model took from its CMDQ since the last look.
fn commands_seen(m: &ModelMachine, command: &str) -> usize {
    let want = opcode_by_name(command).unwrap();
    events(m).iter().filter(|e| matches!(e, EventKind::RoceCommand { opcode, .. } if *opcode == want)).count()
}

/// Commands of each of `names` the model took since the last look.
fn commands_seen_of(m: &ModelMachine, names: &[&str]) -> Vec<usize> {
    let all = events(m);
    names
        .iter()
        .map(|n| {
            let want = opcode_by_name(n).unwrap();
            all.iter().filter(|e| matches!(e, EventKind::RoceCommand { opcode, .. } if *opcode == want)).count()
        })
        .collect()
}

fn elapsed(m: &ModelMachine, since: Duration) -> Duration {
    m.clock().now() - since
}

#[test]
fn an_hwrm_request_with_no_response_never_reaches_the_device() {
    let m = model(1);
    let seam = Interposed::new(m.clone(), hwrm(0, "FUNC_QCAPS", Some(1), FirmwareAction::NoResponse));
    let e = Nic::open(&seam, 0).unwrap_err().to_string();
    assert_eq!(e, "BNXT: FUNC_QCAPS: no answer from the firmware within 500 ms; the NIC is wedged until close");
    assert_eq!(requests_seen(&m, "FUNC_QCAPS"), 0, "the model never saw it");
    let log = seam.take_log();
    assert!(log.iter().any(|l| l.text == "FUNC_QCAPS #1: no-response: not passed on"), "{log:?}");
    // The second occurrence passes: the NIC opens and closes cleanly.
    let mut nic = Nic::open(&seam, 0).unwrap();
    assert_eq!(requests_seen(&m, "FUNC_QCAPS"), 1);
    nic.close();
    let s = m.world().nic_state(0);
    assert_eq!((s.dma_mappings, s.bus_master, s.driver_registered), (0, false, false), "{s:?}");
}

#[test]
fn an_hwrm_error_is_answered_by_the_layer_and_the_device_does_not_act() {
    let m = model(1);
    let code = bnxt_hsi::hwrm::ErrorCode::by_name("BUSY").unwrap().value();
    let seam = Interposed::new(m.clone(), hwrm(0, "FUNC_DRV_RGTR", None, FirmwareAction::Error(code)));
    let e = Nic::open(&seam, 0).unwrap_err().to_string();
    assert!(e.starts_with("BNXT: FUNC_DRV_RGTR refused by the firmware: BUSY"), "{e}");
    assert_eq!(requests_seen(&m, "FUNC_DRV_RGTR"), 0);
    assert!(!m.world().nic_state(0).driver_registered);
}

#[test]
fn an_hwrm_delay_hands_the_answer_over_that_much_later() {
    let m = model(1);
    let seam =
        Interposed::new(m.clone(), hwrm(0, "VER_GET", Some(2), FirmwareAction::Delay(Duration::from_millis(300))));
    // The first open's VER_GET is on time; the second's is 300 ms late, inside the 500 ms.
    let mut nic = Nic::open(&seam, 0).unwrap();
    nic.close();
    let t0 = m.clock().now();
    let mut nic = Nic::open(&seam, 0).unwrap();
    assert!(elapsed(&m, t0) >= Duration::from_millis(300), "{:?}", elapsed(&m, t0));
    nic.close();
    // Too late is a timeout, and the NIC opens again once the layer let the answer go.
    let seam = Interposed::new(m.clone(), hwrm(0, "FUNC_QCFG", Some(1), FirmwareAction::Delay(Duration::from_secs(1))));
    let e = Nic::open(&seam, 0).unwrap_err().to_string();
    assert!(e.contains("FUNC_QCFG: no answer from the firmware within 500 ms"), "{e}");
    m.clock().sleep(Duration::from_secs(2)).unwrap();
    Nic::open(&seam, 0).unwrap().close();
}

#[test]
fn an_hwrm_request_acted_on_but_not_answered_leaves_the_firmware_holding_what_it_did() {
    let m = model(1);
    let seam = Interposed::new(m.clone(), hwrm(0, "FUNC_DRV_RGTR", Some(1), FirmwareAction::ActsNoResponse));
    let e = Nic::open(&seam, 0).unwrap_err().to_string();
    assert!(e.contains("FUNC_DRV_RGTR: no answer from the firmware within 500 ms"), "{e}");
    assert_eq!(requests_seen(&m, "FUNC_DRV_RGTR"), 1, "the request reached the device");
    let s = m.world().nic_state(0);
    assert!(s.driver_registered, "the firmware acted on it: the driver is registered ({s:?})");
    assert!(!s.bus_master, "the failed open still turned bus mastering off");
    // The next open resets the NIC and registers afresh.
    let mut nic = Nic::open(&seam, 0).unwrap();
    nic.close();
    assert!(!m.world().nic_state(0).driver_registered);
}

#[test]
fn a_roce_command_with_no_response_never_reaches_the_device_and_costs_the_command_timeout() {
    let m = model(1);
    let seam = Interposed::new(m.clone(), roce(0, "CREATE_QP", Some(1), CommandAction::NoResponse));
    let mut nic = Nic::open_with(&seam, 0, &SHORT).unwrap();
    assert_eq!(nic.command_timeout(), Duration::from_secs(2));
    let t0 = m.clock().now();
    let e = Qp::make(&nic).unwrap_err().to_string();
    assert_eq!(e, "BNXT: CREATE_QP: no answer from the firmware within 2000 ms; the NIC is wedged until close");
    let took = elapsed(&m, t0);
    assert!(took >= Duration::from_secs(2) && took < Duration::from_millis(2100), "{took:?}");
    let [qps, cqs] = commands_seen_of(&m, &["CREATE_QP", "CREATE_CQ"])[..] else { unreachable!() };
    assert_eq!(qps, 0, "the model never took it");
    assert_eq!(cqs, 2, "the commands before it went through the layer's CMDQ");
    nic.close();
    assert_eq!(m.world().nic_state(0).dma_mappings, 0);
}

#[test]
fn a_refused_roce_command_is_completed_by_the_layer_and_the_channel_goes_on() {
    let m = model(1);
    let status = bnxt_hsi::roce::rcfw::CreqStatus::Resources.value();
    let seam = Interposed::new(m.clone(), roce(0, "REGISTER_MR", Some(1), CommandAction::Error(status)));
    let mut nic = Nic::open_with(&seam, 0, &SHORT).unwrap();
    let e = Region::host(&nic, 4096).unwrap_err().to_string();
    assert!(e.starts_with("BNXT: REGISTER_MR refused by the RoCE firmware: RESOURCES"), "{e}");
    assert_eq!(commands_seen(&m, "REGISTER_MR"), 0);
    // The next one reaches the device and is completed by it; so are later commands.
    let region = Region::host(&nic, 4096).unwrap();
    assert_eq!(commands_seen(&m, "REGISTER_MR"), 1);
    let mut qp = Qp::make(&nic).unwrap();
    qp.destroy().unwrap();
    region.deregister().unwrap();
    nic.close();
    let s = m.world().nic_state(0);
    assert_eq!((s.dma_mappings, s.driver_registered), (0, false), "{s:?}");
}

#[test]
fn a_delayed_roce_completion_is_handed_over_that_much_later() {
    let m = model(1);
    let seam = Interposed::new(m.clone(), roce(0, "CREATE_CQ", Some(1), CommandAction::Delay(Duration::from_secs(1))));
    let mut nic = Nic::open_with(&seam, 0, &SHORT).unwrap();
    let t0 = m.clock().now();
    let mut qp = Qp::make(&nic).unwrap();
    let took = elapsed(&m, t0);
    assert!(took >= Duration::from_secs(1) && took < Duration::from_millis(1500), "{took:?}");
    qp.destroy().unwrap();
    nic.close();
}

#[test]
fn a_roce_command_acted_on_but_not_completed_leaves_the_firmware_holding_its_object() {
    let m = model(1);
    let seam = Interposed::new(m.clone(), roce(0, "REGISTER_MR", Some(1), CommandAction::ActsNoResponse));
    let mut nic = Nic::open_with(&seam, 0, &SHORT).unwrap();
    let keys = m.world().device(0).roce().state().keys.len();
    let e = Region::host(&nic, 4096).unwrap_err().to_string();
    assert!(e.contains("REGISTER_MR: no answer from the firmware within 2000 ms"), "{e}");
    assert_eq!(commands_seen(&m, "REGISTER_MR"), 1, "the command reached the device");
    let now = m.world().device(0).roce().state().keys.len();
    assert_eq!(now, keys + 1, "the firmware made the region it never reported");
    let e = Region::host(&nic, 4096).unwrap_err().to_string();
    assert!(e.contains("not sent: the NIC is wedged since REGISTER_MR went unanswered"), "{e}");
    nic.close();
    let s = m.world().nic_state(0);
    assert!(!s.bus_master, "{s:?}");
    // The next open resets the NIC: it works as ever.
    let mut nic = Nic::open_with(&seam, 0, &SHORT).unwrap();
    Region::host(&nic, 4096).unwrap().deregister().unwrap();
    nic.close();
}

#[test]
fn nics_the_plan_does_not_name_are_handed_out_untouched() {
    let m = model(2);
    let seam = Interposed::new(m.clone(), hwrm(1, "VER_GET", None, FirmwareAction::NoResponse));
    let mut a = Nic::open(&seam, 0).unwrap();
    assert!(Nic::open(&seam, 1).is_err());
    a.close();
    assert!(seam.take_log().iter().all(|l| l.nic == 1));
}

#[test]
fn a_fault_armed_mid_run_counts_from_its_arming_and_fires_once_with_nth() {
    use bnxt_model::armed::{Action, Target};
    let m = model(1);
    let seam = Interposed::new(m.clone(), FaultPlan::default()).live(0, false);
    // Two opens before the fault: each sends FUNC_QCAPS, which the layer counts.
    for _ in 0..2 {
        Nic::open(&seam, 0).unwrap().close();
    }
    let busy = bnxt_hsi::hwrm::ErrorCode::by_name("BUSY").unwrap().value();
    let qcaps = Target::Hwrm(req_type_by_name("FUNC_QCAPS").unwrap());
    let id = seam.arm(0, qcaps, Some(1), None, Action::Hwrm(FirmwareAction::Error(busy))).unwrap();
    assert_eq!(id, 1);
    let e = Nic::open(&seam, 0).unwrap_err().to_string();
    assert!(e.starts_with("BNXT: FUNC_QCAPS refused by the firmware: BUSY"), "{e}");
    let log = seam.take_log();
    assert!(
        log.iter()
            .any(|l| l.text.starts_with("FUNC_QCAPS #3: error BUSY: not passed on")
                && l.text.ends_with("(armed fault 1)")),
        "the third FUNC_QCAPS, the first after the arming: {log:?}"
    );
    // Once: the next open works, and the model saw every FUNC_QCAPS but the refused one.
    Nic::open(&seam, 0).unwrap().close();
    assert_eq!(requests_seen(&m, "FUNC_QCAPS"), 3);
    // Without nth it fires on every one from then on.
    let id = seam.arm(0, qcaps, None, None, Action::Hwrm(FirmwareAction::NoResponse)).unwrap();
    assert_eq!(id, 2);
    for _ in 0..2 {
        assert!(Nic::open(&seam, 0).unwrap_err().to_string().contains("FUNC_QCAPS: no answer"));
    }
    assert_eq!(requests_seen(&m, "FUNC_QCAPS"), 0);
}

#[test]
fn a_roce_command_fault_armed_mid_run_meets_the_next_command_of_an_open_nic() {
    use bnxt_model::armed::{Action, Target};
    let m = model(1);
    let seam = Interposed::new(m.clone(), FaultPlan::default()).live(0, true);
    let mut nic = Nic::open_with(&seam, 0, &SHORT).unwrap();
    let mut first = Qp::make(&nic).unwrap();
    assert_eq!(commands_seen(&m, "CREATE_QP"), 1, "the layer's CMDQ passed it on");
    let create_qp = Target::Roce(opcode_by_name("CREATE_QP").unwrap());
    seam.arm(0, create_qp, Some(1), None, Action::Roce(CommandAction::NoResponse)).unwrap();
    let t0 = m.clock().now();
    let e = Qp::make(&nic).unwrap_err().to_string();
    assert_eq!(e, "BNXT: CREATE_QP: no answer from the firmware within 2000 ms; the NIC is wedged until close");
    assert!(elapsed(&m, t0) >= Duration::from_secs(2));
    assert_eq!(commands_seen(&m, "CREATE_QP"), 0, "the model never took the second");
    let log = seam.take_log();
    assert!(log.iter().any(|l| l.text == "CREATE_QP #2: no-response: not passed on (armed fault 1)"), "{log:?}");
    let _ = first.destroy();
    nic.close();
    assert_eq!(m.world().nic_state(0).dma_mappings, 0);
}

#[test]
fn faults_the_seam_cannot_arm_are_refused_naming_why() {
    use bnxt_interpose::LiveError;
    use bnxt_model::armed::{Action, ArmError, Target};
    let m = model(2);
    let seam = Interposed::new(m.clone(), FaultPlan::default()).live(0, false);
    let ver_get = Target::Hwrm(req_type_by_name("VER_GET").unwrap());
    let create_qp = Target::Roce(opcode_by_name("CREATE_QP").unwrap());
    let none = Action::Hwrm(FirmwareAction::NoResponse);
    assert_eq!(seam.arm(1, ver_get, None, None, none.clone()), Err(LiveError::NotLive { nic: 1 }));
    let e = seam.arm(0, create_qp, None, None, Action::Roce(CommandAction::NoResponse)).unwrap_err();
    assert_eq!(e, LiveError::NoCommandQueue { nic: 0 });
    assert!(e.to_string().contains("CMDQ and CREQ"), "{e}");
    let e = seam.arm(0, ver_get, None, None, Action::Hwrm(FirmwareAction::WrongSeqId)).unwrap_err();
    assert_eq!(e, LiveError::Malformed { action: "wrong-seq-id" });
    assert_eq!(seam.arm(0, ver_get, Some(0), None, none.clone()), Err(LiveError::Arm(ArmError::Zero { field: "nth" })));
    assert!(matches!(
        seam.arm(0, create_qp, None, None, none),
        Err(LiveError::NoCommandQueue { .. } | LiveError::Arm(_))
    ));
    // NIC 1, not live, is handed out without the layer; NIC 0 with it, and nothing fired.
    Nic::open(&seam, 1).unwrap().close();
    Nic::open(&seam, 0).unwrap().close();
    assert!(seam.take_log().is_empty());
    // A NIC the plan names carries the layer already: faults can be armed on it.
    let planned = Interposed::new(m.clone(), hwrm(1, "VER_GET", Some(99), FirmwareAction::NoResponse));
    assert_eq!(planned.arm(1, ver_get, Some(1), None, Action::Hwrm(FirmwareAction::NoResponse)), Ok(1));
    assert!(Nic::open(&planned, 1).unwrap_err().to_string().contains("VER_GET: no answer"));
}
