//! `firmware` faults on RoCE commands: how the language names them (RoCE command names beside
//! HWRM request names, CREQ statuses beside HWRM error codes), the errors a misspelt or misplaced
//! name gets, the static checks, the plan the model is given, and a run on the model that leaves
//! the fault in its transcript.

use std::path::Path;
use std::time::Duration;

use bnxt_hsi::roce::rcfw::CreqStatus;
use bnxt_model::faults as model;
use bnxt_rig::run::outcome::Verdict;
use bnxt_rig::run::{RunOptions, run_scenario};
use bnxt_rig::scenario::firmware_names::Target;
use bnxt_rig::scenario::load::load_str;
use bnxt_rig::scenario::{FaultKind, Scenario, fault_plan as plan_of};
use bnxt_rig::target::MachinePlan;
use bnxt_rig::target::model::{ModelTarget, fault_plan};

/// A scenario of `nics` NICs with `faults` (YAML list items) and one harmless step.
fn with_faults(nics: usize, faults: &str) -> String {
    format!("name: t\nabout: x.\nnics: {nics}\nfaults:\n{faults}steps:\n  - count: {{at_least: 1}}\n")
}

fn load(text: &str) -> Scenario {
    load_str(Path::new("t.yaml"), text).unwrap_or_else(|e| panic!("{e:#?}")).remove(0)
}

/// The one error `text` gives, as `LINE:COLUMN: FIELD: PROBLEM`.
fn error(text: &str) -> String {
    let errors = load_str(Path::new("t.yaml"), text).expect_err("the file is refused");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = &errors[0].error;
    format!("{}:{}: {}: {}", e.at.line, e.at.column, e.field, e.problem)
}

/// What the `i`th fault's `request` names.
fn request(s: &Scenario, i: usize) -> Target {
    match &s.faults[i].kind {
        FaultKind::Firmware(f) => f.value.request,
        other => panic!("a firmware fault: {other:?}"),
    }
}

#[test]
fn roce_command_names_decode_with_their_opcode_and_actions() {
    let s = load(&with_faults(
        2,
        "  - firmware: {nic: 1, request: CREATE_QP, action: no-response}\n  - firmware: {nic: 0, request: register_mr, action: error, code: resources, nth: 3}\n  - firmware: {nic: 0, request: CMDQ_BASE_OPCODE_MODIFY_QP, action: delay, by: 30s}\n  - firmware: {nic: 0, request: ADD_GID, action: error, code: CREQ_QP_EVENT_STATUS_HARDWARE_ERROR}\n",
    ));
    let command = |nic, opcode, nth, action| model::CommandFault { nic, opcode, nth, action };
    assert_eq!(
        plan_of(&s.faults).roce_commands,
        [
            command(1, 0x01, None, model::CommandAction::NoResponse),
            command(0, 0x0f, Some(3), model::CommandAction::Error(CreqStatus::Resources.value())),
            command(0, 0x03, None, model::CommandAction::Delay(Duration::from_secs(30))),
            command(0, 0x11, None, model::CommandAction::Error(CreqStatus::HardwareError.value())),
        ]
    );
    assert_eq!(request(&s, 0), Target::Roce { opcode: 0x01, name: "CREATE_QP" });
    assert_eq!(request(&s, 1), Target::Roce { opcode: 0x0f, name: "REGISTER_MR" });
    // The capability they need is the firmware faults'.
    assert_eq!(s.needs(), vec![bnxt_rig::scenario::Capability::Faults]);
}

#[test]
fn hwrm_names_still_decode_as_hwrm_requests() {
    let s = load(&with_faults(1, "  - firmware: {nic: 0, request: HWRM_FUNC_QCAPS, action: error, code: BUSY}\n"));
    assert_eq!(request(&s, 0), Target::Hwrm { req_type: 0x15, name: "FUNC_QCAPS" });
    let busy = bnxt_hsi::hwrm::ErrorCode::by_name("BUSY").unwrap().value();
    let want = model::FirmwareFault { nic: 0, req_type: 0x15, nth: None, action: model::FirmwareAction::Error(busy) };
    assert_eq!(plan_of(&s.faults).firmware, [want]);
}

#[test]
fn misspelt_commands_and_statuses_are_named_where_they_are_written() {
    let t = |fault: &str| error(&with_faults(1, &format!("  - firmware: {fault}\n")));
    assert_eq!(
        t("{nic: 0, request: CREATE_QPP, action: no-response}"),
        "5:33: faults[0].firmware.request: unknown RoCE command `CREATE_QPP` (did you mean `CREATE_QP`?)"
    );
    assert_eq!(
        t("{nic: 0, request: FUNC_DRV_RGSTR, action: no-response}"),
        "5:33: faults[0].firmware.request: unknown HWRM request `FUNC_DRV_RGSTR` (did you mean `FUNC_DRV_RGTR`?)"
    );
    assert_eq!(
        t("{nic: 0, request: NOTHING_LIKE_IT, action: no-response}"),
        "5:33: faults[0].firmware.request: unknown HWRM request or RoCE command `NOTHING_LIKE_IT`"
    );
    // A prefix keeps the name to its own kind.
    assert!(
        t("{nic: 0, request: HWRM_CREATE_QP, action: no-response}").contains("unknown HWRM request `HWRM_CREATE_QP`")
    );
    assert!(t("{nic: 0, request: CMDQ_BASE_OPCODE_VER_GET, action: no-response}").contains("unknown RoCE command"));
    assert_eq!(
        t("{nic: 0, request: CREATE_QP, action: error, code: RESOURCS}"),
        "5:65: faults[0].firmware.code: unknown CREQ status `RESOURCS` (did you mean `RESOURCES`?)"
    );
    // An HWRM error code where a CREQ status belongs says what does.
    let e = t("{nic: 0, request: CREATE_QP, action: error, code: CMD_NOT_SUPPORTED}");
    assert!(e.starts_with("5:65: faults[0].firmware.code: \"CMD_NOT_SUPPORTED\" is not a CREQ status: RoCE command CREATE_QP is refused with a CREQ status"), "{e}");
    assert!(
        e.ends_with("FAIL, RESOURCES, INVALID_CMD, NOT_IMPLEMENTED, INVALID_PARAMETER, HARDWARE_ERROR, INTERNAL_ERROR"),
        "{e}"
    );
    assert!(t("{nic: 0, request: CREATE_QP, action: error, code: SUCCESS}").contains("SUCCESS is not an error"));
    // And a CREQ status where an HWRM error code belongs.
    assert!(
        t("{nic: 0, request: VER_GET, action: error, code: RESOURCES}").contains("unknown HWRM error code `RESOURCES`")
    );
    assert_eq!(
        t("{nic: 0, request: DESTROY_QP, action: no-response, by: 1s}"),
        "5:70: faults[0].firmware.by: `by` goes only with `action: delay` (this fault's action is `no-response`)"
    );
    assert!(t("{nic: 0, request: DESTROY_QP, action: error}").contains("missing key `code`"));
}

#[test]
fn roce_command_faults_must_name_existing_nics() {
    let e = error(&with_faults(2, "  - firmware: {nic: 2, request: CREATE_CQ, action: no-response}\n"));
    assert!(e.starts_with("5:21: faults[0].firmware.nic: NIC 2 does not exist"), "{e}");
}

#[test]
fn the_model_is_given_the_opcode_the_status_value_and_the_nth() {
    let s = load(&with_faults(
        2,
        "  - firmware: {nic: 0, request: VER_GET, action: no-response}\n  - firmware: {nic: 1, request: DEALLOCATE_KEY, action: error, code: INVALID_CMD, nth: 2}\n  - firmware: {nic: 0, request: QUERY_FUNC, action: delay, by: 2s}\n",
    ));
    let plan = fault_plan(&MachinePlan {
        nics: 2,
        seed: 0,
        faults: &s.faults,
        live_faults: &[],
        firmware: s.firmware,
        pcap: None,
        events: false,
    });
    assert_eq!(plan.firmware.len(), 1);
    assert_eq!(
        plan.roce_commands,
        vec![
            model::CommandFault { nic: 1, opcode: 0x0e, nth: Some(2), action: model::CommandAction::Error(3) },
            model::CommandFault {
                nic: 0,
                opcode: 0x83,
                nth: None,
                action: model::CommandAction::Delay(Duration::from_secs(2))
            },
        ]
    );
}

#[test]
fn a_run_on_the_model_leaves_the_fault_and_the_refusal_in_its_transcript() {
    let text = "name: roce-fault-transcript
about: A refused CREATE_QP, in the transcript.
nics: 1
faults:
  - firmware: {nic: 0, request: CREATE_QP, action: error, code: RESOURCES}
steps:
  - open: {nic: 0, as: a}
  - qp: {on: a, as: q}
    expect: {error: \"^BNXT: CREATE_QP refused by the RoCE firmware: RESOURCES \\\\(status 0x02\\\\)$\"}
";
    let s = load(text);
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions { transcript: Some(dir.path().to_path_buf()), ..RunOptions::default() };
    let outcome = run_scenario(&s, &ModelTarget, &options);
    assert_eq!(outcome.verdict, Verdict::Pass, "{outcome:#?}");
    let transcript = std::fs::read_to_string(dir.path().join("roce-fault-transcript.transcript")).unwrap();
    assert!(transcript.contains("roce fault on CREATE_QP #1: error RESOURCES"), "{transcript}");
    assert!(transcript.contains("roce-completion CREATE_QP"), "{transcript}");
    assert!(
        transcript.lines().any(|l| l.contains("roce-completion CREATE_QP") && l.contains("RESOURCES")),
        "{transcript}"
    );
}
