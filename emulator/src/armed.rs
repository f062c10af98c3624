//! Faults armed while the model runs (`bnxt-model ctl fault add`, a `--faults` file of
//! `bnxt-model serve`): each names a request (an HWRM `req_type` or a RoCE command opcode), the
//! occurrence it starts at and how many times it fires, counted from the moment it was armed.
//!
//! Semantics, chosen to read as the plan's faults do:
//! - `nth` N: the fault starts at the Nth request of that type after it was armed (1 = the next
//!   one); absent, at the next one;
//! - `count` C: it fires on C requests from there; absent, once when `nth` is given and on every
//!   request when it is not (as a plan's fault with or without `nth`);
//! - armed faults are looked at before the run's plan, oldest first; the first that applies
//!   fires. A fault that has fired its count stays listed (spent) until cleared.

use serde::{Deserialize, Serialize};

use crate::faults::{ActionKind, CommandAction, FirmwareAction};

/// What an armed fault acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Target {
    /// An HWRM request, by `req_type`.
    Hwrm(u16),
    /// A RoCE firmware command, by CMDQ opcode.
    Roce(u8),
}

/// What an armed fault does: an HWRM action for an HWRM request, a command action for a RoCE
/// command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// For an HWRM request.
    Hwrm(FirmwareAction),
    /// For a RoCE command.
    Roce(CommandAction),
}

impl Action {
    /// The action's name.
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::Hwrm(a) => a.kind(),
            Action::Roce(a) => a.kind(),
        }
    }
}

/// Why an action's name and values do not make an action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    /// The action needs a value that is not there (`code` for `error`, the delay for `delay`).
    #[error("action `{action}` needs `{key}`")]
    Missing {
        /// The action.
        action: &'static str,
        /// The value's key.
        key: &'static str,
    },
    /// A value that goes with another action.
    #[error("`{key}` goes only with action `{with}` (this fault's action is `{action}`)")]
    Unexpected {
        /// The value's key.
        key: &'static str,
        /// The action it goes with.
        with: &'static str,
        /// The fault's action.
        action: &'static str,
    },
    /// An error code or status that names nothing.
    #[error("unknown {what} `{name}`{}", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    UnknownCode {
        /// What was looked for (`HWRM error code`, `CREQ status`).
        what: &'static str,
        /// The name written.
        name: String,
        /// The closest known name.
        suggestion: Option<String>,
    },
    /// SUCCESS given as an error.
    #[error("`{name}` is SUCCESS, not an error")]
    NotAnError {
        /// The name written.
        name: String,
    },
    /// A malformed answer asked of a RoCE command.
    #[error(
        "action `{action}` is an HWRM response's; RoCE commands take no-response, acts-no-response, error and delay"
    )]
    HwrmOnly {
        /// The action.
        action: &'static str,
    },
}

/// The name an action is written as.
pub fn action_name(kind: ActionKind) -> &'static str {
    match kind {
        ActionKind::NoResponse => "no-response",
        ActionKind::ActsNoResponse => "acts-no-response",
        ActionKind::Error => "error",
        ActionKind::Delay => "delay",
        ActionKind::WrongRespLen => "wrong-resp-len",
        ActionKind::WrongSeqId => "wrong-seq-id",
        ActionKind::NoValidByte => "no-valid-byte",
    }
}

/// The action `kind` on `target`, with its error code's name (`code`, for `error`: an HWRM error
/// code for an HWRM request, a CREQ status for a RoCE command) and delay (for `delay`): the one
/// way every writer of faults (scenario files, `--faults` files, `bnxt-model ctl`) turns names
/// into the model's actions.
pub fn action(
    kind: ActionKind,
    target: Target,
    code: Option<&str>,
    delay: Option<std::time::Duration>,
) -> Result<Action, ActionError> {
    use bnxt_hsi::hwrm::ErrorCode;
    use bnxt_hsi::roce::rcfw::CreqStatus;
    let name = action_name(kind);
    if code.is_some() && kind != ActionKind::Error {
        return Err(ActionError::Unexpected { key: "code", with: "error", action: name });
    }
    if delay.is_some() && kind != ActionKind::Delay {
        return Err(ActionError::Unexpected { key: "delay", with: "delay", action: name });
    }
    let missing = |key| ActionError::Missing { action: name, key };
    Ok(match target {
        Target::Hwrm(_) => Action::Hwrm(match kind {
            ActionKind::NoResponse => FirmwareAction::NoResponse,
            ActionKind::ActsNoResponse => FirmwareAction::ActsNoResponse,
            ActionKind::Delay => FirmwareAction::Delay(delay.ok_or_else(|| missing("delay"))?),
            ActionKind::WrongRespLen => FirmwareAction::WrongRespLen,
            ActionKind::WrongSeqId => FirmwareAction::WrongSeqId,
            ActionKind::NoValidByte => FirmwareAction::NoValidByte,
            ActionKind::Error => {
                let written = code.ok_or_else(|| missing("code"))?;
                let code = ErrorCode::by_name(written).ok_or_else(|| ActionError::UnknownCode {
                    what: "HWRM error code",
                    name: written.to_string(),
                    suggestion: crate::names::closest(written, ErrorCode::ALL.iter().map(|(_, n)| *n))
                        .map(str::to_string),
                })?;
                if code == ErrorCode::Success {
                    return Err(ActionError::NotAnError { name: written.to_string() });
                }
                FirmwareAction::Error(code.value())
            }
        }),
        Target::Roce(_) => Action::Roce(match kind {
            ActionKind::NoResponse => CommandAction::NoResponse,
            ActionKind::ActsNoResponse => CommandAction::ActsNoResponse,
            ActionKind::Delay => CommandAction::Delay(delay.ok_or_else(|| missing("delay"))?),
            ActionKind::WrongRespLen | ActionKind::WrongSeqId | ActionKind::NoValidByte => {
                return Err(ActionError::HwrmOnly { action: name });
            }
            ActionKind::Error => {
                let written = code.ok_or_else(|| missing("code"))?;
                match crate::names::status_by_name(written) {
                    Some(CreqStatus::Success) => return Err(ActionError::NotAnError { name: written.to_string() }),
                    Some(status) => CommandAction::Error(status.value()),
                    None => {
                        let statuses: Vec<&str> = crate::names::error_statuses().map(CreqStatus::name).collect();
                        return Err(ActionError::UnknownCode {
                            what: "CREQ status",
                            name: written.to_string(),
                            suggestion: crate::names::closest(written, statuses).map(str::to_string),
                        });
                    }
                }
            }
        }),
    })
}

/// Why a fault cannot be armed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArmError {
    /// The action is of the other channel (an HWRM action on a RoCE command or the reverse).
    #[error("the action is for {action} but the request is {target}")]
    Mismatch {
        /// What the action is for.
        action: &'static str,
        /// What the request is.
        target: &'static str,
    },
    /// `nth` or `count` is 0.
    #[error("{field} must be 1 or more")]
    Zero {
        /// Which.
        field: &'static str,
    },
}

/// A fault as armed, for listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmedFault {
    /// Its id (unique in the NIC's life; `fault clear ID` names it).
    pub id: u64,
    /// What it acts on.
    pub target: Target,
    /// The occurrence it starts at, counted from its arming (1 = the next request).
    pub nth: u32,
    /// How many times it fires; every time when absent.
    pub count: Option<u32>,
    /// How many times it has fired.
    pub fired: u32,
    /// Requests of its type seen before it was armed.
    pub base: u32,
    /// What it does.
    pub action: Action,
}

impl ArmedFault {
    /// A fault with `id` on `target`, armed when `seen` requests of that type had been taken.
    pub fn new(
        id: u64,
        target: Target,
        seen: u32,
        nth: Option<u32>,
        count: Option<u32>,
        action: Action,
    ) -> Result<ArmedFault, ArmError> {
        match (&target, &action) {
            (Target::Hwrm(_), Action::Hwrm(_)) | (Target::Roce(_), Action::Roce(_)) => {}
            (Target::Hwrm(_), Action::Roce(_)) => {
                return Err(ArmError::Mismatch { action: "a RoCE command", target: "an HWRM request" });
            }
            (Target::Roce(_), Action::Hwrm(_)) => {
                return Err(ArmError::Mismatch { action: "an HWRM request", target: "a RoCE command" });
            }
        }
        if nth == Some(0) {
            return Err(ArmError::Zero { field: "nth" });
        }
        if count == Some(0) {
            return Err(ArmError::Zero { field: "count" });
        }
        let count = count.or(nth.map(|_| 1));
        Ok(ArmedFault { id, target, nth: nth.unwrap_or(1), count, fired: 0, base: seen, action })
    }

    /// Whether it has fired its count.
    pub fn spent(&self) -> bool {
        self.count.is_some_and(|c| self.fired >= c)
    }

    /// Whether occurrence `occurrence` (1-based, since the NIC was made) of `target` sets it off.
    fn applies(&self, target: Target, occurrence: u32) -> bool {
        self.target == target && !self.spent() && occurrence.saturating_sub(self.base) >= self.nth
    }
}

/// The faults armed on one NIC.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArmedFaults {
    faults: Vec<ArmedFault>,
}

impl ArmedFaults {
    /// Arm `fault`.
    pub fn arm(&mut self, fault: ArmedFault) {
        self.faults.push(fault);
    }

    /// The action for occurrence `occurrence` of `target`, with the id of the fault that fired
    /// (counted as fired), if one applies.
    pub fn fire(&mut self, target: Target, occurrence: u32) -> Option<(u64, Action)> {
        let f = self.faults.iter_mut().find(|f| f.applies(target, occurrence))?;
        f.fired = f.fired.saturating_add(1);
        Some((f.id, f.action.clone()))
    }

    /// Remove the fault `id`; whether it was armed.
    pub fn clear(&mut self, id: u64) -> bool {
        let before = self.faults.len();
        self.faults.retain(|f| f.id != id);
        self.faults.len() != before
    }

    /// Remove every fault; how many there were.
    pub fn clear_all(&mut self) -> usize {
        std::mem::take(&mut self.faults).len()
    }

    /// The faults, oldest first.
    pub fn list(&self) -> &[ArmedFault] {
        &self.faults
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hwrm(id: u64, seen: u32, nth: Option<u32>, count: Option<u32>) -> ArmedFault {
        ArmedFault::new(id, Target::Hwrm(0x15), seen, nth, count, Action::Hwrm(FirmwareAction::NoResponse)).unwrap()
    }

    #[test]
    fn nth_and_count_are_counted_from_the_arming() {
        let mut armed = ArmedFaults::default();
        // Armed after 10 requests: the 2nd from now (occurrence 12) and the one after.
        armed.arm(hwrm(1, 10, Some(2), Some(2)));
        let fired: Vec<u32> = (11..=15).filter(|&n| armed.fire(Target::Hwrm(0x15), n).is_some()).collect();
        assert_eq!(fired, vec![12, 13]);
        assert!(armed.list()[0].spent() && armed.list()[0].fired == 2);
        assert!(armed.fire(Target::Hwrm(0x16), 1).is_none());
    }

    #[test]
    fn defaults_are_once_with_nth_and_always_without() {
        let mut armed = ArmedFaults::default();
        armed.arm(hwrm(1, 0, Some(3), None));
        assert_eq!(armed.list()[0].count, Some(1));
        armed.arm(hwrm(2, 0, None, None));
        let ids: Vec<u64> = (1..=5).filter_map(|n| armed.fire(Target::Hwrm(0x15), n).map(|(id, _)| id)).collect();
        assert_eq!(ids, vec![2, 2, 1, 2, 2], "the older fault first where both apply");
        assert!(armed.clear(2) && !armed.clear(2));
        assert_eq!(armed.clear_all(), 1);
        assert!(armed.list().is_empty());
    }

    #[test]
    fn actions_are_built_from_names_and_values_that_hold_together() {
        let hw = Target::Hwrm(0x15);
        let roce = Target::Roce(0x01);
        assert_eq!(
            action(ActionKind::Error, hw, Some("RESOURCE_ALLOC_ERROR"), None),
            Ok(Action::Hwrm(FirmwareAction::Error(4)))
        );
        assert_eq!(action(ActionKind::Error, roce, Some("resources"), None), Ok(Action::Roce(CommandAction::Error(2))));
        let d = std::time::Duration::from_millis(5);
        assert_eq!(action(ActionKind::Delay, roce, None, Some(d)), Ok(Action::Roce(CommandAction::Delay(d))));
        let e = action(ActionKind::Error, hw, Some("RESOURCE_ALOC_ERROR"), None).unwrap_err();
        assert!(e.to_string().contains("did you mean `RESOURCE_ALLOC_ERROR`"), "{e}");
        assert!(matches!(action(ActionKind::Error, hw, Some("SUCCESS"), None), Err(ActionError::NotAnError { .. })));
        assert!(matches!(action(ActionKind::Error, hw, None, None), Err(ActionError::Missing { key: "code", .. })));
        assert!(matches!(action(ActionKind::NoResponse, hw, Some("FAIL"), None), Err(ActionError::Unexpected { .. })));
        assert!(matches!(action(ActionKind::WrongSeqId, roce, None, None), Err(ActionError::HwrmOnly { .. })));
        assert_eq!(action(ActionKind::NoValidByte, hw, None, None), Ok(Action::Hwrm(FirmwareAction::NoValidByte)));
        for kind in [
            ActionKind::NoResponse,
            ActionKind::ActsNoResponse,
            ActionKind::Error,
            ActionKind::Delay,
            ActionKind::WrongRespLen,
            ActionKind::WrongSeqId,
            ActionKind::NoValidByte,
        ] {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json.as_str(), Some(action_name(kind)), "one spelling");
        }
    }

    #[test]
    fn actions_of_the_other_channel_and_zeros_are_refused() {
        let roce = Action::Roce(CommandAction::NoResponse);
        let e = ArmedFault::new(1, Target::Hwrm(0), 0, None, None, roce).unwrap_err();
        assert!(e.to_string().contains("RoCE command"), "{e}");
        let hw = Action::Hwrm(FirmwareAction::NoResponse);
        assert!(ArmedFault::new(1, Target::Roce(1), 0, None, None, hw.clone()).is_err());
        assert_eq!(
            ArmedFault::new(1, Target::Hwrm(0), 0, Some(0), None, hw.clone()),
            Err(ArmError::Zero { field: "nth" })
        );
        assert_eq!(ArmedFault::new(1, Target::Hwrm(0), 0, None, Some(0), hw), Err(ArmError::Zero { field: "count" }));
    }
}
