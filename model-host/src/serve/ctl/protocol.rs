//! The control channel's messages: one JSON object a line each way, a [`Request`] from the
//! client and a [`Reply`] to each, in order. `bnxt-model ctl --schema` prints their JSON Schema.
//!
//! Faults are written as scenario files and `--faults` files write them ([`FaultSpec`]):
//! requests by name (bnxt_hsi.h's `HWRM_*` without the prefix, roce_hsi.h's
//! `CMDQ_BASE_OPCODE_*` without the prefix; [`bnxt_model::names`]), the action by the model's
//! word for it ([`ActionKind`]), error codes by name.

use std::time::Duration;

use bnxt_model::armed::{self, Action, ArmedFault, Target};
use bnxt_model::faults::{ActionKind, CommandAction, FirmwareAction};
use bnxt_model::names::{self, NameError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A fault on a firmware request, as a user writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// The HWRM request (`FUNC_QCFG`, `PORT_QSTATS_EXT`) or RoCE command (`CREATE_QP`) by name,
    /// any case, `HWRM_` / `CMDQ_BASE_OPCODE_` prefix optional.
    pub request: String,
    /// What the firmware does instead of answering normally.
    pub action: ActionKind,
    /// With `error`: the HWRM error code (`RESOURCE_ALLOC_ERROR`) or, for a RoCE command, the
    /// CREQ status (`RESOURCES`) by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// With `delay`: how much later the answer comes, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// The occurrence, counted from the moment the fault is armed, it starts at (1 = the next
    /// request of that type); the next one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u32>,
    /// How many requests it fires on; once with `nth`, every one without, when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// A fault spec that names nothing or does not hold together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The request names nothing (or both kinds of request).
    #[error("request `{written}`: {why}")]
    Request {
        /// As written.
        written: String,
        /// Why.
        why: String,
    },
    /// The delay is longer than a fault may have ([`bnxt_model::faults::MAX_DELAY`]).
    #[error("request `{request}`: delay_ms: {source}")]
    Delay {
        /// The request.
        request: String,
        /// Why.
        source: bnxt_model::faults::DelayTooLong,
    },
    /// The action and its values do not hold together.
    #[error("request `{request}`: {source}")]
    Action {
        /// The request.
        request: String,
        /// Why.
        source: armed::ActionError,
    },
}

impl FaultSpec {
    /// What it acts on and what it does.
    pub fn resolve(&self) -> Result<(Target, Action), SpecError> {
        let target = match names::resolve(&self.request) {
            Ok(names::Target::Hwrm { req_type, .. }) => Target::Hwrm(req_type),
            Ok(names::Target::Roce { opcode, .. }) => Target::Roce(opcode),
            Err(e) => {
                let why = match e {
                    NameError::Unknown { what, suggestion: Some(s) } => format!("no such {what} (did you mean `{s}`?)"),
                    NameError::Unknown { what, suggestion: None } => format!("no such {what}"),
                    NameError::Ambiguous { name } => format!(
                        "`{name}` is both an HWRM request and a RoCE command: write `{}{name}` or `{}{name}`",
                        names::HWRM_PREFIX,
                        names::ROCE_PREFIX
                    ),
                };
                return Err(SpecError::Request { written: self.request.clone(), why });
            }
        };
        let delay = match self.delay_ms.map(Duration::from_millis) {
            Some(d) => Some(
                bnxt_model::faults::check_delay(d)
                    .map_err(|source| SpecError::Delay { request: self.request.clone(), source })?,
            ),
            None => None,
        };
        let action = armed::action(self.action, target, self.code.as_deref(), delay)
            .map_err(|source| SpecError::Action { request: self.request.clone(), source })?;
        Ok((target, action))
    }
}

/// A `bnxt-model serve --faults` file: firmware faults by name, armed when the server starts
/// (their `nth` counted from the NIC's power-on), and the wire plan for the frames the NIC sends
/// to the segment (as [`bnxt_model::faults::WirePlan`] reads it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultFile {
    /// Firmware faults.
    #[serde(default)]
    pub firmware: Vec<FaultSpec>,
    /// Wire faults.
    #[serde(default)]
    pub wire: bnxt_model::faults::WirePlan,
}

/// A request on the control channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "cmd", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Request {
    /// Arm a fault from now on; the reply carries its `id`.
    FaultAdd {
        /// The fault.
        #[serde(flatten)]
        fault: FaultSpec,
    },
    /// Clear the fault `id`, or every fault when `id` is absent; the reply says how many.
    FaultClear {
        /// The fault's id.
        #[serde(default)]
        id: Option<u64>,
    },
    /// The armed faults, with how often each fired.
    FaultList {},
    /// What the model holds: the NIC's state (registration, rings, DMA mappings, RoCE counters,
    /// link, armed faults) and the server's.
    State {},
    /// The port's peer comes (`up: true`) or goes (`up: false`, the cable pulled).
    Link {
        /// Whether the peer is there.
        up: bool,
    },
    /// The firmware resets (`fatal: false`: a management reset request, the firmware serves the
    /// driver's close first; `fatal: true`: a firmware exception, dead at once): RESET_NOTIFY to
    /// the driver, the firmware restarts a second later and tells the driver's next
    /// FUNC_DRV_IF_CHANGE up HOT_FW_RESET_DONE (docs/faults.md).
    FwReset {
        /// A fatal exception rather than a solicited reset.
        #[serde(default)]
        fatal: bool,
    },
    /// The card is yanked: from now on every read returns all-ones, writes are dropped and the
    /// NIC does no DMA and raises no interrupt (until the server's next client, or a
    /// `BNXT_RIG_RESTART`, finds a new one).
    PcieSurpriseRemoval {},
}

/// A fault as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ListedFault {
    /// Its id.
    pub id: u64,
    /// The request's name (`FUNC_QCFG`), or its number when the headers name none.
    pub request: String,
    /// `hwrm` or `roce`.
    pub channel: String,
    /// What it does.
    pub action: ActionKind,
    /// For `error`: the code's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// For `delay`: milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// The occurrence it starts at, counted from its arming.
    pub nth: u32,
    /// How many times it fires (every time when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// How many times it fired.
    pub fired: u32,
}

impl From<&ArmedFault> for ListedFault {
    fn from(f: &ArmedFault) -> ListedFault {
        let (request, channel) = match f.target {
            Target::Hwrm(t) => (bnxt_model::events::req_label(t), "hwrm"),
            Target::Roce(o) => (bnxt_model::events::opcode_label(o), "roce"),
        };
        let (code, delay) = match &f.action {
            Action::Hwrm(FirmwareAction::Error(c)) => {
                (Some(bnxt_hsi::hwrm::ErrorCode::from_value(*c).to_string()), None)
            }
            Action::Roce(CommandAction::Error(s)) => (
                Some(bnxt_hsi::roce::rcfw::CreqStatus::from_value(*s).map_or(s.to_string(), |s| s.name().into())),
                None,
            ),
            Action::Hwrm(FirmwareAction::Delay(d)) | Action::Roce(CommandAction::Delay(d)) => {
                (None, Some(d.as_millis() as u64))
            }
            _ => (None, None),
        };
        ListedFault {
            id: f.id,
            request,
            channel: channel.into(),
            action: f.action.kind(),
            code,
            delay_ms: delay,
            nth: f.nth,
            count: f.count,
            fired: f.fired,
        }
    }
}

/// The answer to a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reply {
    /// Whether the request was carried out.
    pub ok: bool,
    /// Why not, when it was not (bad JSON, an unknown name, a fault that does not hold
    /// together), naming what was wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `fault-add`: the fault's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// `fault-clear`: how many faults were cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleared: Option<usize>,
    /// `fault-list`: the faults, oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<Vec<ListedFault>>,
    /// `fw-reset`: whether a reset started (false: one was already under way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_started: Option<bool>,
    /// `link`: whether the link state changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_changed: Option<bool>,
    /// `state`: the NIC and server state (the `BNXT_RIG_STATE` reply's fields, and `removed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Value>")]
    pub state: Option<serde_json::Value>,
}

impl Reply {
    /// A success with nothing more to say.
    pub fn ok() -> Reply {
        Reply { ok: true, ..Reply::default() }
    }

    /// A refusal saying why.
    pub fn refused(why: impl Into<String>) -> Reply {
        Reply { ok: false, error: Some(why.into()), ..Reply::default() }
    }
}

/// The JSON Schema of requests and replies, as one document: serve's channel's (`{"request": …,
/// "reply": …}`), and the segment hub's under `segment` ([`super::hub`]).
pub fn schema() -> serde_json::Value {
    serde_json::json!({
        "request": schemars::schema_for!(Request),
        "reply": schemars::schema_for!(Reply),
        "segment": {
            "request": schemars::schema_for!(super::hub::HubRequest),
            "reply": schemars::schema_for!(super::hub::HubReply),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_as_documented() {
        let add: Request = serde_json::from_str(
            r#"{"cmd":"fault-add","request":"func_qcfg","action":"error","code":"RESOURCE_ALLOC_ERROR","nth":2}"#,
        )
        .unwrap();
        let Request::FaultAdd { fault } = &add else { panic!("{add:?}") };
        assert_eq!(fault.resolve().unwrap(), (Target::Hwrm(0x16), Action::Hwrm(FirmwareAction::Error(4))));
        assert_eq!(
            serde_json::from_str::<Request>(r#"{"cmd":"link","up":false}"#).unwrap(),
            Request::Link { up: false }
        );
        assert_eq!(
            serde_json::from_str::<Request>(r#"{"cmd":"fault-clear"}"#).unwrap(),
            Request::FaultClear { id: None }
        );
        let e = serde_json::from_str::<Request>(r#"{"cmd":"fault-add","request":"VER_GET","action":"explode"}"#)
            .unwrap_err();
        assert!(e.to_string().contains("explode"), "{e}");
        assert!(serde_json::from_str::<Request>(r#"{"cmd":"state","extra":1}"#).is_err());
    }

    #[test]
    fn specs_name_what_is_wrong() {
        let spec = |request: &str, action, code: Option<&str>| FaultSpec {
            request: request.into(),
            action,
            code: code.map(str::to_string),
            delay_ms: None,
            nth: None,
            count: None,
        };
        let e = spec("FUNC_QCFGG", ActionKind::NoResponse, None).resolve().unwrap_err().to_string();
        assert!(e.contains("did you mean `FUNC_QCFG`"), "{e}");
        let e = spec("CREATE_QP", ActionKind::WrongSeqId, None).resolve().unwrap_err().to_string();
        assert!(e.contains("HWRM response"), "{e}");
        let (t, a) = spec("CREATE_QP", ActionKind::Error, Some("RESOURCES")).resolve().unwrap();
        assert_eq!((t, a.clone()), (Target::Roce(0x01), Action::Roce(CommandAction::Error(2))));
        let listed = ListedFault::from(&ArmedFault::new(3, t, 0, Some(2), None, a).unwrap());
        assert_eq!(
            (listed.request.as_str(), listed.code.as_deref(), listed.count),
            ("CREATE_QP", Some("RESOURCES"), Some(1))
        );
    }
}
