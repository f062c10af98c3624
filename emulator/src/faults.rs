//! Faults the model injects on request: what the hardware cannot be made to do on demand.
//!
//! Firmware faults act on HWRM requests of one NIC ([`FirmwareFault`]) or on the commands of its
//! RoCE firmware channel ([`CommandFault`], by CMDQ opcode); wire faults act on the
//! frames the NICs send on the shared segment ([`WirePlan`]): each frame is dropped, duplicated,
//! held back behind the next (reordered), has a bit flipped (corrupted) or is delayed, by chance
//! (probabilities drawn from a generator seeded from the run's seed) or by rule (the nth frame
//! of a NIC, of an opcode, of a PSN, to a QP). [`crate::net::fault`] carries them out.

use std::time::Duration;

use bnxt_hsi::roce::rcfw::CreqStatus;
use serde::{Deserialize, Serialize};

use crate::net::fault::{FaultConfigError, FaultKind, FaultRule, FaultStage, FrameMatch, WireFaults};
use crate::net::switch::PortId;

/// What a faulty firmware does, by name: the word fault plans and scenario files write for a
/// firmware or RoCE command fault's action (whose values, the error code or the delay, come with
/// it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema), schemars(rename = "FirmwareFaultAction"))]
#[serde(rename = "firmware fault action", rename_all = "kebab-case")]
pub enum ActionKind {
    /// Take the request (or command) and never answer it, nor act on it.
    NoResponse,
    /// Take the request (or command) and act on it, but never answer it: a firmware that does
    /// not answer in time may still have acted (the contract's rule for a wedged NIC's memory).
    ActsNoResponse,
    /// Answer with an error instead of acting on it (an HWRM error code, or a CREQ status for
    /// a RoCE command).
    Error,
    /// Answer normally, but later than usual.
    Delay,
    /// HWRM only: act and answer, but with a `resp_len` 16 bytes longer than the response
    /// written (a driver that finds the valid byte through `resp_len` looks past the response).
    WrongRespLen,
    /// HWRM only: act and answer, but with a `seq_id` other than the request's (the request's
    /// plus one).
    WrongSeqId,
    /// HWRM only: act and write the response, all of it but its valid byte, which is never
    /// written.
    NoValidByte,
}

impl ActionKind {
    /// Whether the action exists for RoCE commands too (the malformed answers are HWRM
    /// responses' own: a CREQ completion has no `resp_len`, `seq_id` or valid byte of that kind).
    pub fn applies_to_roce(self) -> bool {
        !matches!(self, ActionKind::WrongRespLen | ActionKind::WrongSeqId | ActionKind::NoValidByte)
    }
}

/// What the firmware does instead of answering a request normally.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FirmwareAction {
    /// Take the request and never answer it (nor act on it).
    NoResponse,
    /// Take the request and act on it, but never answer it.
    ActsNoResponse,
    /// Answer normally, but this much later than usual (at most [`MAX_DELAY`]).
    Delay(#[serde(deserialize_with = "bounded_delay")] Duration),
    /// Answer with this HWRM error code (its wire value) instead of acting on the request.
    Error(u16),
    /// Act and answer, with a `resp_len` 16 bytes longer than the response written.
    WrongRespLen,
    /// Act and answer, with the request's `seq_id` plus one.
    WrongSeqId,
    /// Act and write the response but never its valid byte.
    NoValidByte,
}

impl FirmwareAction {
    /// What it does, by name.
    pub fn kind(&self) -> ActionKind {
        match self {
            FirmwareAction::NoResponse => ActionKind::NoResponse,
            FirmwareAction::ActsNoResponse => ActionKind::ActsNoResponse,
            FirmwareAction::Delay(_) => ActionKind::Delay,
            FirmwareAction::Error(_) => ActionKind::Error,
            FirmwareAction::WrongRespLen => ActionKind::WrongRespLen,
            FirmwareAction::WrongSeqId => ActionKind::WrongSeqId,
            FirmwareAction::NoValidByte => ActionKind::NoValidByte,
        }
    }
}

/// A fault on one HWRM request type of one NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirmwareFault {
    /// Index of the NIC in the machine.
    pub nic: usize,
    /// The request's `req_type`.
    pub req_type: u16,
    /// Which occurrence (1 = the first request of that type since the model was created); every
    /// occurrence when `None`.
    pub nth: Option<u32>,
    /// What to do instead.
    pub action: FirmwareAction,
}

/// What the RoCE firmware does instead of completing a command normally.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommandAction {
    /// Take the command from the CMDQ and never complete it on the CREQ (nor act on it).
    NoResponse,
    /// Take the command from the CMDQ and act on it, but never complete it on the CREQ.
    ActsNoResponse,
    /// Act on the command and complete it normally, but this much later than usual (at most
    /// [`MAX_DELAY`]).
    Delay(#[serde(deserialize_with = "bounded_delay")] Duration),
    /// Complete the command with this CREQ status (its wire value, `CREQ_QP_EVENT_STATUS_*` in
    /// roce_hsi.h: 1 FAIL to 7 INTERNAL_ERROR) instead of acting on it.
    #[serde(deserialize_with = "creq_error_status")]
    Error(u8),
}

impl CommandAction {
    /// What it does, by name.
    pub fn kind(&self) -> ActionKind {
        match self {
            CommandAction::NoResponse => ActionKind::NoResponse,
            CommandAction::ActsNoResponse => ActionKind::ActsNoResponse,
            CommandAction::Delay(_) => ActionKind::Delay,
            CommandAction::Error(_) => ActionKind::Error,
        }
    }
}

/// The longest delay a fault may have: far past every timeout a driver waits (bnxt_en's longest
/// HWRM timeout is minutes, not hours), and small enough that adding it to any clock reading the
/// model reaches cannot overflow. A plan that asks for more is refused when it is read.
pub const MAX_DELAY: Duration = Duration::from_secs(3600);

/// Why a delay cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a delay of {delay:?} is more than the longest delay a fault may have ({max:?})", max = MAX_DELAY)]
pub struct DelayTooLong {
    /// The delay asked for.
    pub delay: Duration,
}

/// `delay` if it is at most [`MAX_DELAY`].
pub fn check_delay(delay: Duration) -> Result<Duration, DelayTooLong> {
    if delay <= MAX_DELAY { Ok(delay) } else { Err(DelayTooLong { delay }) }
}

/// Read a delay of a plan, refusing one longer than [`MAX_DELAY`].
fn bounded_delay<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    check_delay(Duration::deserialize(d)?).map_err(serde::de::Error::custom)
}

/// [`bounded_delay`] for a delay that may be left out.
fn bounded_delay_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    Option::<Duration>::deserialize(d)?.map(check_delay).transpose().map_err(serde::de::Error::custom)
}

/// Take a CREQ status that is an error roce_hsi.h defines (`CREQ_QP_EVENT_STATUS_FAIL` 1 to
/// `CREQ_QP_EVENT_STATUS_INTERNAL_ERROR` 7); SUCCESS (0) and undefined values are refused.
fn creq_error_status<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    let v = u8::deserialize(d)?;
    match CreqStatus::from_value(v) {
        Some(CreqStatus::Success) => Err(serde::de::Error::custom("CREQ status 0 is SUCCESS, not an error")),
        Some(_) => Ok(v),
        None => Err(serde::de::Error::custom(format!(
            "CREQ status {v} is not one roce_hsi.h defines (1 FAIL to 7 INTERNAL_ERROR)"
        ))),
    }
}

/// A fault on one RoCE firmware command (a CMDQ opcode, `CMDQ_BASE_OPCODE_*`) of one NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandFault {
    /// Index of the NIC in the machine.
    pub nic: usize,
    /// The command's `opcode`.
    pub opcode: u8,
    /// Which occurrence (1 = the first command with that opcode since the model was created);
    /// every occurrence when `None`.
    #[serde(default)]
    pub nth: Option<u32>,
    /// What to do instead.
    pub action: CommandAction,
}

/// Every fault a run injects.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultPlan {
    /// Firmware faults on HWRM requests, checked in order; the first that matches a request
    /// applies.
    pub firmware: Vec<FirmwareFault>,
    /// Firmware faults on RoCE commands, checked in order; the first that matches a command
    /// applies. Absent from plans written before they existed (and left out of plans that have
    /// none, so such plans read as they always did).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roce_commands: Vec<CommandFault>,
    /// Wire faults (none by default).
    #[serde(default)]
    pub wire: WirePlan,
}

/// What a wire fault does to a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema), schemars(rename = "WireFaultKind"))]
#[serde(rename = "wire fault", rename_all = "kebab-case")]
pub enum WireFaultKind {
    /// The frame is lost.
    Drop,
    /// The frame arrives twice.
    Duplicate,
    /// The frame is held back and goes after the next frame from its NIC.
    Reorder,
    /// One bit of the frame (past the Ethernet header) is flipped; the receiver's checksums or
    /// ICRC catch it.
    Corrupt,
    /// The frame arrives later than it would.
    Delay,
}

impl WireFaultKind {
    fn kind(self) -> FaultKind {
        match self {
            WireFaultKind::Drop => FaultKind::Drop,
            WireFaultKind::Duplicate => FaultKind::Duplicate,
            WireFaultKind::Reorder => FaultKind::Reorder,
            WireFaultKind::Corrupt => FaultKind::Corrupt,
            WireFaultKind::Delay => FaultKind::Delay,
        }
    }
}

/// A wire fault applied to chosen frames; every field left out matches anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WireRule {
    /// Frames sent by this NIC (index in the machine).
    #[serde(default)]
    pub nic: Option<usize>,
    /// Frames with this BTH opcode byte.
    #[serde(default)]
    pub opcode: Option<u8>,
    /// Frames with this BTH PSN.
    #[serde(default)]
    pub psn: Option<u32>,
    /// Frames to this destination QP.
    #[serde(default)]
    pub dest_qp: Option<u32>,
    /// Only the nth matching frame (1 = the first); every matching frame if left out.
    #[serde(default)]
    pub nth: Option<u64>,
    /// What to do.
    pub kind: WireFaultKind,
    /// For `delay`: by how much (the plan's `delay_by` if left out; at most [`MAX_DELAY`]).
    #[serde(default, deserialize_with = "bounded_delay_opt")]
    pub delay: Option<Duration>,
}

/// Wire faults: a probability per kind (0 to 1, per frame) and rules.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct WirePlan {
    /// Chance a frame is lost.
    pub drop: f64,
    /// Chance a frame arrives twice.
    pub duplicate: f64,
    /// Chance a frame is held back behind the next.
    pub reorder: f64,
    /// Chance a frame has a bit flipped.
    pub corrupt: f64,
    /// Chance a frame is delayed.
    pub delay: f64,
    /// Extra latency of a delayed frame (100 µs if left out; at most [`MAX_DELAY`]).
    #[serde(deserialize_with = "bounded_delay_opt")]
    pub delay_by: Option<Duration>,
    /// Longest a reordered frame waits for a next frame (50 µs if left out; at most
    /// [`MAX_DELAY`]).
    #[serde(deserialize_with = "bounded_delay_opt")]
    pub reorder_hold: Option<Duration>,
    /// Rules, looked at before the probabilities; the first that fires wins.
    pub rules: Vec<WireRule>,
}

// Probabilities compare as numbers. A NaN one (the only value for which `==` is not reflexive) is
// refused by `WirePlan::stage`, so plans that are used compare as an equivalence.
impl Eq for WirePlan {}

/// Why a wire plan cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WirePlanError {
    /// A probability or rule the fault stage refuses.
    #[error(transparent)]
    Config(#[from] FaultConfigError),
    /// A rule names a NIC the machine does not have.
    #[error("wire fault rule {rule} names NIC {nic}, but the machine has {nics}")]
    NoSuchNic {
        /// Position of the rule.
        rule: usize,
        /// The NIC named.
        nic: usize,
        /// NICs in the machine.
        nics: usize,
    },
}

impl WirePlan {
    /// Whether the plan injects nothing.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
            && [self.drop, self.duplicate, self.reorder, self.corrupt, self.delay].iter().all(|&p| p == 0.0)
    }

    /// The fault stage of a segment whose NIC `i` sends through `ports[i]`, drawing from a
    /// generator seeded with `seed`.
    pub fn stage(&self, seed: u64, ports: &[PortId]) -> Result<FaultStage, WirePlanError> {
        let d = WireFaults::default();
        let chance = WireFaults {
            drop: self.drop,
            duplicate: self.duplicate,
            reorder: self.reorder,
            corrupt: self.corrupt,
            delay: self.delay,
            delay_by: self.delay_by.unwrap_or(d.delay_by),
            reorder_hold: self.reorder_hold.unwrap_or(d.reorder_hold),
        };
        let mut rules = Vec::with_capacity(self.rules.len());
        for (i, r) in self.rules.iter().enumerate() {
            let port = match r.nic {
                Some(nic) => {
                    Some(*ports.get(nic).ok_or(WirePlanError::NoSuchNic { rule: i, nic, nics: ports.len() })?)
                }
                None => None,
            };
            rules.push(FaultRule {
                matching: FrameMatch { port, opcode: r.opcode, psn: r.psn, dest_qp: r.dest_qp },
                nth: r.nth,
                kind: r.kind.kind(),
                delay: r.delay,
            });
        }
        Ok(FaultStage::new(seed, chance, rules)?)
    }
}

impl FaultPlan {
    /// The action for occurrence `nth` (1-based) of `req_type` on `nic`, if a fault matches.
    pub fn firmware_action(&self, nic: usize, req_type: u16, nth: u32) -> Option<&FirmwareAction> {
        self.firmware
            .iter()
            .find(|f| f.nic == nic && f.req_type == req_type && f.nth.is_none_or(|n| n == nth))
            .map(|f| &f.action)
    }

    /// The action for occurrence `nth` (1-based) of RoCE command `opcode` on `nic`, if a fault
    /// matches.
    pub fn command_action(&self, nic: usize, opcode: u8, nth: u32) -> Option<&CommandAction> {
        self.roce_commands
            .iter()
            .find(|f| f.nic == nic && f.opcode == opcode && f.nth.is_none_or(|n| n == nth))
            .map(|f| &f.action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_fault_applies_and_nth_selects_one_occurrence() {
        let plan = FaultPlan {
            firmware: vec![
                FirmwareFault { nic: 0, req_type: 0x1d, nth: Some(2), action: FirmwareAction::NoResponse },
                FirmwareFault { nic: 0, req_type: 0x1d, nth: None, action: FirmwareAction::Error(4) },
            ],
            roce_commands: vec![
                CommandFault { nic: 1, opcode: 0x01, nth: Some(2), action: CommandAction::NoResponse },
                CommandFault { nic: 1, opcode: 0x01, nth: None, action: CommandAction::Error(2) },
            ],
            ..FaultPlan::default()
        };
        assert_eq!(plan.firmware_action(0, 0x1d, 1), Some(&FirmwareAction::Error(4)));
        assert_eq!(plan.firmware_action(0, 0x1d, 2), Some(&FirmwareAction::NoResponse));
        assert_eq!(plan.firmware_action(1, 0x1d, 2), None);
        assert_eq!(plan.firmware_action(0, 0x15, 1), None);
        // RoCE commands by opcode, the same way; HWRM and RoCE faults never match each other's
        // numbers.
        assert_eq!(plan.command_action(1, 0x01, 1), Some(&CommandAction::Error(2)));
        assert_eq!(plan.command_action(1, 0x01, 2), Some(&CommandAction::NoResponse));
        assert_eq!(plan.command_action(0, 0x01, 2), None);
        assert_eq!(plan.command_action(1, 0x03, 1), None);
        assert_eq!(plan.firmware_action(1, 0x01, 1), None);
        assert_eq!(plan.command_action(0, 0x1d, 1), None);
    }

    #[test]
    fn the_action_names_are_the_actions_own() {
        let actions = [
            (FirmwareAction::NoResponse, CommandAction::NoResponse),
            (FirmwareAction::ActsNoResponse, CommandAction::ActsNoResponse),
            (FirmwareAction::Error(4), CommandAction::Error(2)),
            (FirmwareAction::Delay(Duration::from_millis(1)), CommandAction::Delay(Duration::from_millis(1))),
        ];
        for (firmware, command) in actions {
            let name = serde_json::to_value(firmware.kind()).unwrap();
            assert_eq!(serde_json::to_value(command.kind()).unwrap(), name);
            // A unit variant is its name; one with a value is a mapping with its name as key.
            for written in [serde_json::to_value(&firmware).unwrap(), serde_json::to_value(&command).unwrap()] {
                let key = written.as_object().map_or(written.clone(), |o| o.keys().next().unwrap().clone().into());
                assert_eq!(key, name, "{written}");
            }
        }
    }

    #[test]
    fn plans_without_command_faults_read_and_write_as_before() {
        let old = r#"{"firmware":[{"nic":0,"req_type":29,"nth":null,"action":"no-response"}]}"#;
        let plan: FaultPlan = serde_json::from_str(old).unwrap();
        assert!(plan.roce_commands.is_empty() && plan.wire.is_empty());
        assert_eq!(plan.firmware[0].req_type, 0x1d);
        let written = serde_json::to_string(&plan).unwrap();
        assert!(!written.contains("roce_commands"), "{written}");
        let back: FaultPlan = serde_json::from_str(&written).unwrap();
        assert_eq!(back, plan);
    }

    #[test]
    fn command_faults_round_trip_and_refuse_statuses_that_are_not_errors() {
        let text = r#"{"firmware":[],"roce_commands":[
            {"nic":0,"opcode":1,"action":"no-response"},
            {"nic":0,"opcode":15,"nth":3,"action":{"error":2}},
            {"nic":1,"opcode":3,"action":{"delay":{"secs":1,"nanos":0}}}]}"#;
        let plan: FaultPlan = serde_json::from_str(text).unwrap();
        assert_eq!(
            plan.roce_commands[1],
            CommandFault { nic: 0, opcode: 0x0f, nth: Some(3), action: CommandAction::Error(2) }
        );
        assert_eq!(plan.roce_commands[2].action, CommandAction::Delay(Duration::from_secs(1)));
        let back: FaultPlan = serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
        assert_eq!(back, plan);
        for (status, why) in [(0, "SUCCESS"), (8, "not one roce_hsi.h defines")] {
            let bad =
                format!(r#"{{"firmware":[],"roce_commands":[{{"nic":0,"opcode":1,"action":{{"error":{status}}}}}]}}"#);
            let e = serde_json::from_str::<FaultPlan>(&bad).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
        let typo = r#"{"firmware":[],"roce_commands":[{"nic":0,"opcod":1,"action":"no-response"}]}"#;
        assert!(serde_json::from_str::<FaultPlan>(typo).unwrap_err().to_string().contains("opcod"));
    }

    /// A fault plan whose firmware fault has the delay `d` (JSON of a `Duration`).
    fn firmware_delay(d: &str) -> String {
        format!(r#"{{"firmware":[{{"nic":0,"req_type":0,"nth":null,"action":{{"delay":{d}}}}}]}}"#)
    }

    #[test]
    fn a_delay_of_an_hour_is_the_longest_a_plan_may_hold() {
        let hour: FaultPlan = serde_json::from_str(&firmware_delay(r#"{"secs":3600,"nanos":0}"#)).unwrap();
        assert_eq!(hour.firmware[0].action, FirmwareAction::Delay(MAX_DELAY));
    }

    #[rstest::rstest]
    #[case::firmware(firmware_delay(r#"{"secs":3600,"nanos":1}"#))]
    #[case::command(r#"{"firmware":[],"roce_commands":[{"nic":0,"opcode":1,"action":{"delay":{"secs":18446744073709551615,"nanos":0}}}]}"#.to_string())]
    #[case::delay_by(r#"{"firmware":[],"wire":{"delay_by":{"secs":4000,"nanos":0}}}"#.to_string())]
    #[case::reorder_hold(r#"{"firmware":[],"wire":{"reorder_hold":{"secs":4000,"nanos":0}}}"#.to_string())]
    #[case::rule(r#"{"firmware":[],"wire":{"rules":[{"kind":"delay","delay":{"secs":4000,"nanos":0}}]}}"#.to_string())]
    fn delays_longer_than_an_hour_are_refused_where_the_plan_is_read(#[case] text: String) {
        let e = serde_json::from_str::<FaultPlan>(&text).unwrap_err().to_string();
        assert!(e.contains("longest delay a fault may have"), "{e}");
    }

    #[test]
    fn a_wire_plan_built_in_code_is_checked_when_its_stage_is_made() {
        let ports = [PortId(0)];
        let long = WirePlan { delay_by: Some(Duration::MAX), ..WirePlan::default() };
        let e = long.stage(1, &ports).unwrap_err().to_string();
        assert!(e.contains("delay_by") && e.contains("longest delay"), "{e}");
    }

    #[test]
    fn wire_plans_check_probabilities_and_nics() {
        let ports = [PortId(0), PortId(1)];
        let ok = WirePlan { drop: 0.5, ..WirePlan::default() };
        assert!(ok.stage(1, &ports).is_ok());
        assert!(!ok.is_empty() && WirePlan::default().is_empty());
        let bad = WirePlan { corrupt: 1.5, ..WirePlan::default() };
        assert!(matches!(bad.stage(1, &ports), Err(WirePlanError::Config(_))));
        let rule = WireRule {
            nic: Some(2),
            opcode: None,
            psn: None,
            dest_qp: None,
            nth: None,
            kind: WireFaultKind::Drop,
            delay: None,
        };
        let far = WirePlan { rules: vec![rule], ..WirePlan::default() };
        assert_eq!(far.stage(1, &ports).unwrap_err(), WirePlanError::NoSuchNic { rule: 0, nic: 2, nics: 2 });
    }
}
