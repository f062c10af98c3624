//! The faults of the language: `firmware` (an HWRM request or a RoCE command of one NIC answered
//! late, never or with an error) and `wire` (frames lost, duplicated, reordered, corrupted or
//! delayed). The vocabulary is the model's ([`bnxt_model::faults`]: the action names, the wire
//! fault kinds) and the names of requests, error codes and statuses are the headers'
//! ([`super::firmware_names`]); each entry becomes the model's own fault plan.

use std::borrow::Cow;
use std::time::Duration;

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::roce::rcfw::CreqStatus;
use bnxt_model::faults::{self as model, ActionKind, FaultPlan, WireFaultKind};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};

use super::firmware_names::{self as names, NameError, Target};
use super::kinds::{
    At, FromText, Kind, Named, NicIndex, Nth, NthFrame, Opcode, Opt, Probability, Psn, Time, text_schema,
};
use crate::suggest::closest;
use crate::yaml::{DecodeError, Located, Pos, Problem};

/// A fault, with where it is written.
#[derive(Debug, Clone)]
pub struct Fault {
    /// Where the fault is written.
    pub at: Pos,
    /// Its path (`faults[1]`).
    pub path: String,
    /// What it does.
    pub kind: FaultKind,
}

impl<'de> Deserialize<'de> for Fault {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fault, D::Error> {
        let fault = Located::<FaultKind>::deserialize(d)?;
        Ok(Fault { at: fault.at, path: fault.path, kind: fault.value })
    }
}

impl JsonSchema for Fault {
    fn schema_name() -> Cow<'static, str> {
        "Fault".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        FaultKind::json_schema(g)
    }
}

super::kinds::list!(
    /// `faults:`: a list of faults.
    Faults: Fault, "a list of faults"
);
super::kinds::list!(
    /// `rules:` of a `wire` fault.
    Rules: WireRule, "a list of rules"
);

/// The kinds of fault: a mapping with one of these keys.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum FaultKind {
    /// The firmware misbehaves on one HWRM request, or one RoCE firmware command, of one NIC.
    Firmware(Located<FirmwareEntry>),
    /// The wire between the NICs loses, duplicates, reorders, corrupts or delays frames, by
    /// chance (drawn from the scenario's seed) or by rule.
    Wire(Located<WireEntry>),
}

/// `firmware`: the firmware misbehaves on one HWRM request, or one RoCE firmware command, of
/// one NIC.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FirmwareEntry {
    /// The NIC's index.
    #[serde(with = "At::<NicIndex>")]
    pub nic: Located<usize>,
    /// The HWRM request, by its name in bnxt_hsi.h without `HWRM_` (`FUNC_DRV_RGTR`), or the RoCE
    /// firmware command, by its name in roce_hsi.h without `CMDQ_BASE_OPCODE_` (`CREATE_QP`).
    /// No name is both; with its prefix a name is only the one.
    #[serde(with = "Request")]
    pub request: Target,
    /// `no-response` (never answer, nor act), `acts-no-response` (act, never answer), `error`
    /// (answer with `code` instead of acting) or `delay` (answer `by` later); for HWRM requests
    /// also the malformed answers `wrong-resp-len`, `wrong-seq-id` and `no-valid-byte`.
    #[serde(with = "At::<Named<ActionKind>>")]
    pub action: Located<ActionKind>,
    /// With `action: error`: for an HWRM request, the HWRM error code's name
    /// (`RESOURCE_ALLOC_ERROR`); for a RoCE command, the CREQ status's name in roce_hsi.h without
    /// `CREQ_QP_EVENT_STATUS_` (`RESOURCES`).
    #[serde(default, with = "Opt::<At<Code>>")]
    pub code: Option<Located<String>>,
    /// With `action: delay`: how much later.
    #[serde(default, with = "Opt::<At<Time>>")]
    pub by: Option<Located<Duration>>,
    /// Which occurrence of the request or command on the NIC (1 is the first); every one when
    /// absent.
    #[serde(default, with = "Opt::<Nth>")]
    pub nth: Option<u32>,
}

/// A firmware fault as the model takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelFault {
    /// On an HWRM request.
    Hwrm(model::FirmwareFault),
    /// On a RoCE firmware command.
    Roce(model::CommandFault),
}

impl ModelFault {
    /// The NIC it names.
    pub fn nic(&self) -> usize {
        match self {
            ModelFault::Hwrm(f) => f.nic,
            ModelFault::Roce(f) => f.nic,
        }
    }

    /// As a fault armed mid-run takes it ([`bnxt_model::armed`]): what it acts on, its `nth`
    /// and what it does.
    pub fn armed(&self) -> (bnxt_model::armed::Target, Option<u32>, bnxt_model::armed::Action) {
        use bnxt_model::armed::{Action, Target};
        match self {
            ModelFault::Hwrm(f) => (Target::Hwrm(f.req_type), f.nth, Action::Hwrm(f.action.clone())),
            ModelFault::Roce(f) => (Target::Roce(f.opcode), f.nth, Action::Roce(f.action.clone())),
        }
    }
}

/// The word a value of the model's vocabulary is written as (`no-response`, `drop`).
pub fn word<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// The fault `entry` says as the model takes it, or why the entry does not hold together
/// (`code` without `action: error`, an error code of the other channel), said at the field at
/// fault.
pub fn firmware_fault(entry: &Located<FirmwareEntry>) -> Result<ModelFault, DecodeError> {
    entry.value.to_model(entry.at, &entry.path)
}

impl FirmwareEntry {
    /// As [`firmware_fault`], for the entry written at `at` (field `path`).
    fn to_model(&self, at: Pos, path: &str) -> Result<ModelFault, DecodeError> {
        let action = self.action.value;
        let only_with = |key: &str, field: Option<(Pos, &str)>, with: ActionKind| match field {
            Some((at, path)) if action != with => Err(DecodeError {
                at,
                field: path.to_string(),
                problem: Problem::Conflict(format!(
                    "`{key}` goes only with `action: {}` (this fault's action is `{}`)",
                    word(&with),
                    word(&action)
                )),
            }),
            _ => Ok(()),
        };
        only_with("code", self.code.as_ref().map(|c| (c.at, c.path.as_str())), ActionKind::Error)?;
        only_with("by", self.by.as_ref().map(|b| (b.at, b.path.as_str())), ActionKind::Delay)?;
        let missing = |key: &str| DecodeError {
            at,
            field: path.to_string(),
            problem: Problem::MissingKey { key: key.to_string() },
        };
        let (nic, nth) = (self.nic.value, self.nth);
        Ok(match self.request {
            Target::Hwrm { req_type, .. } => ModelFault::Hwrm(model::FirmwareFault {
                nic,
                req_type,
                nth,
                action: match action {
                    ActionKind::NoResponse => model::FirmwareAction::NoResponse,
                    ActionKind::ActsNoResponse => model::FirmwareAction::ActsNoResponse,
                    ActionKind::Delay => {
                        model::FirmwareAction::Delay(self.by.as_ref().ok_or_else(|| missing("by"))?.value)
                    }
                    ActionKind::Error => model::FirmwareAction::Error(
                        hwrm_code(self.code.as_ref().ok_or_else(|| missing("code"))?)?.value(),
                    ),
                    ActionKind::WrongRespLen => model::FirmwareAction::WrongRespLen,
                    ActionKind::WrongSeqId => model::FirmwareAction::WrongSeqId,
                    ActionKind::NoValidByte => model::FirmwareAction::NoValidByte,
                },
            }),
            Target::Roce { opcode, name } => ModelFault::Roce(model::CommandFault {
                nic,
                opcode,
                nth,
                action: match action {
                    ActionKind::NoResponse => model::CommandAction::NoResponse,
                    ActionKind::ActsNoResponse => model::CommandAction::ActsNoResponse,
                    ActionKind::Delay => {
                        model::CommandAction::Delay(self.by.as_ref().ok_or_else(|| missing("by"))?.value)
                    }
                    ActionKind::Error => model::CommandAction::Error(
                        roce_status(self.code.as_ref().ok_or_else(|| missing("code"))?, name)?.value(),
                    ),
                    ActionKind::WrongRespLen | ActionKind::WrongSeqId | ActionKind::NoValidByte => {
                        return Err(at_field(
                            &self.action,
                            Problem::Conflict(format!(
                                "`action: {}` is a malformed HWRM response; RoCE command {name} takes \
                                 no-response, acts-no-response, error or delay",
                                word(&action)
                            )),
                        ));
                    }
                },
            }),
        })
    }
}

/// An HWRM request or a RoCE command, by name.
pub struct Request;

impl Kind for Request {
    type Value = Target;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Target, D::Error> {
        let make: fn(&str) -> Result<Target, String> = |written| {
            names::resolve(written).map_err(|e| match e {
                NameError::Unknown { what, suggestion } => {
                    super::kinds::unknown_name(what, written, suggestion.as_deref())
                }
                NameError::Ambiguous { name } => format!(
                    "`{name}` is both an HWRM request and a RoCE command: write `{}{name}` or `{}{name}`",
                    names::HWRM_PREFIX,
                    names::ROCE_PREFIX
                ),
            })
        };
        let what = "an HWRM request or RoCE command name, as FUNC_DRV_RGTR or CREATE_QP";
        FromText { what, make }.read(d)
    }
}

super::kinds::schema!(Request, |g| text_schema());

/// The name of an HWRM error code or a CREQ status (which, the request decides).
pub struct Code;

impl Kind for Code {
    type Value = String;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        let what = "an HWRM error code or CREQ status name, as RESOURCE_ALLOC_ERROR or RESOURCES";
        FromText { what, make: |code| Ok(code.to_string()) }.read(d)
    }
}

super::kinds::schema!(Code, |g| text_schema());

/// An error at `field`.
fn at_field<T>(field: &Located<T>, problem: Problem) -> DecodeError {
    DecodeError { at: field.at, field: field.path.clone(), problem }
}

/// `code` of an HWRM request's fault: an HWRM error code other than SUCCESS.
fn hwrm_code(field: &Located<String>) -> Result<ErrorCode, DecodeError> {
    let name = field.value.as_str();
    let code = ErrorCode::by_name(name).ok_or_else(|| {
        at_field(
            field,
            Problem::UnknownName {
                what: "HWRM error code".into(),
                name: name.into(),
                suggestion: closest(name, ErrorCode::ALL.iter().map(|(_, n)| *n)).map(str::to_string),
            },
        )
    })?;
    if code == ErrorCode::Success {
        return Err(at_field(
            field,
            Problem::Invalid {
                value: format!("{name:?}"),
                expected: "an HWRM error code".into(),
                reason: "SUCCESS is not an error".into(),
            },
        ));
    }
    Ok(code)
}

/// `code` of a RoCE command's fault: a CREQ status other than SUCCESS.
fn roce_status(field: &Located<String>, command: &str) -> Result<CreqStatus, DecodeError> {
    let name = field.value.as_str();
    let invalid =
        |reason: String| Problem::Invalid { value: format!("{name:?}"), expected: "a CREQ status".into(), reason };
    match names::status_by_name(name) {
        Some(CreqStatus::Success) => Err(at_field(field, invalid("SUCCESS is not an error".into()))),
        Some(status) => Ok(status),
        None => {
            let statuses: Vec<&str> = names::error_statuses().map(CreqStatus::name).collect();
            Err(at_field(
                field,
                match closest(name, statuses.iter().copied()) {
                    Some(s) => Problem::UnknownName {
                        what: "CREQ status".into(),
                        name: name.into(),
                        suggestion: Some(s.to_string()),
                    },
                    None => invalid(format!(
                        "RoCE command {command} is refused with a CREQ status (roce_hsi.h CREQ_QP_EVENT_STATUS_*): {}",
                        statuses.join(", ")
                    )),
                },
            ))
        }
    }
}

/// `wire`: the wire between the NICs loses, duplicates, reorders, corrupts or delays frames, by
/// chance (drawn from the scenario's seed) or by rule.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WireEntry {
    /// Chance a frame is lost (0 to 1).
    #[serde(default, with = "Probability")]
    pub drop: f64,
    /// Chance a frame arrives twice.
    #[serde(default, with = "Probability")]
    pub duplicate: f64,
    /// Chance a frame is held back and goes after the next one.
    #[serde(default, with = "Probability")]
    pub reorder: f64,
    /// Chance a frame has one bit flipped (its ICRC then fails).
    #[serde(default, with = "Probability")]
    pub corrupt: f64,
    /// Chance a frame arrives late.
    #[serde(default, with = "Probability")]
    pub delay: f64,
    /// How much later a delayed frame arrives (100us when absent).
    #[serde(default, with = "Opt::<Time>")]
    pub delay_by: Option<Duration>,
    /// Longest a reordered frame waits for a next one (50us when absent).
    #[serde(default, with = "Opt::<Time>")]
    pub reorder_hold: Option<Duration>,
    /// Rules for chosen frames, looked at before the chances; the first that fires wins.
    #[serde(default, with = "Rules")]
    pub rules: Vec<WireRule>,
}

/// A wire fault on chosen frames; every condition left out matches every frame.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WireRule {
    /// Frames this NIC sends (its index).
    #[serde(default, with = "Opt::<At<NicIndex>>")]
    pub nic: Option<Located<usize>>,
    /// Frames with this BTH opcode: a number or a name (`SEND_ONLY`, `ACKNOWLEDGE`).
    #[serde(default, with = "Opt::<Opcode>")]
    pub opcode: Option<u8>,
    /// Frames with this PSN.
    #[serde(default, with = "Opt::<Psn>")]
    pub psn: Option<u32>,
    /// Only the nth matching frame (1 is the first); every one when absent.
    #[serde(default, with = "Opt::<NthFrame>")]
    pub nth: Option<u64>,
    /// What happens to the frame.
    #[serde(with = "Named::<WireFaultKind>")]
    pub kind: WireFaultKind,
    /// For `delay`: by how much (`delay_by` when absent).
    #[serde(default, with = "Opt::<At<Time>>")]
    pub delay: Option<Located<Duration>>,
}

impl WireEntry {
    /// Whether the entry makes the wire do anything.
    pub fn does_something(&self) -> bool {
        !self.to_model().is_empty()
    }

    /// The wire plan as the model takes it.
    pub fn to_model(&self) -> model::WirePlan {
        model::WirePlan {
            drop: self.drop,
            duplicate: self.duplicate,
            reorder: self.reorder,
            corrupt: self.corrupt,
            delay: self.delay,
            delay_by: self.delay_by,
            reorder_hold: self.reorder_hold,
            rules: self
                .rules
                .iter()
                .map(|r| model::WireRule {
                    nic: r.nic.as_ref().map(|n| n.value),
                    opcode: r.opcode,
                    psn: r.psn,
                    dest_qp: None,
                    nth: r.nth,
                    kind: r.kind,
                    delay: r.delay.as_ref().map(|d| d.value),
                })
                .collect(),
        }
    }
}

/// Every fault of `faults` as the model takes them. The faults have passed the checks (a fault
/// that does not hold together stops a scenario from loading), so each converts.
pub fn fault_plan(faults: &[Fault]) -> FaultPlan {
    let mut plan = FaultPlan::default();
    for fault in faults {
        match &fault.kind {
            FaultKind::Firmware(f) => match firmware_fault(f).expect("a loaded scenario's faults hold together") {
                ModelFault::Hwrm(f) => plan.firmware.push(f),
                ModelFault::Roce(f) => plan.roce_commands.push(f),
            },
            FaultKind::Wire(w) => plan.wire = w.value.to_model(),
        }
    }
    plan
}
