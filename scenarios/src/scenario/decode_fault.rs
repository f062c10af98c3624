//! Decoding `faults:` entries.

use std::time::Duration;

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::roce::rcfw::CreqStatus;

use super::firmware_names::{self as names, NameError, Target};
use super::language::faults::{self as lang, FIRMWARE_ACTIONS as ACTIONS};
use super::language::{fault_kinds, keys};
use super::opcodes::{RC_OPCODES, opcode_by_name};
use super::{
    CommandAction, Fault, FaultKind, FirmwareAction, FirmwareFault, MAX_NICS, RoceCommandFault, WireFault,
    WireFaultKind, WireRule,
};
use crate::suggest::closest;
use crate::yaml::{DecodeError, Field, MapReader, Problem, Value};

/// Decode one entry of `faults`.
pub(super) fn fault(item: &Field<'_>) -> Result<Fault, DecodeError> {
    let entry = item.map(fault_kinds())?;
    let mut kinds = entry.keys();
    let Some(kind) = kinds.next() else {
        return Err(entry.error(Problem::MissingKey { key: fault_kinds().join(" or ") }));
    };
    if let Some(second) = kinds.next() {
        return Err(entry.error(Problem::Conflict(format!("one fault per entry: found `{kind}` and `{second}`"))));
    }
    let f = entry.required(kind)?;
    let kind = match kind {
        "firmware" => firmware(&f)?,
        "wire" => FaultKind::Wire(wire(&f)?),
        other => unreachable!("fault kind {other} was checked against the language's fault kinds"),
    };
    Ok(Fault { at: item.node.at, path: item.path().to_string(), kind })
}

fn firmware(f: &Field<'_>) -> Result<FaultKind, DecodeError> {
    let m = f.map(keys::<lang::Firmware>())?;
    let nic_field = m.required("nic")?;
    let nic = nic_field.int("a NIC index", 0, MAX_NICS as u64 - 1)? as usize;

    let request_field = m.required("request")?;
    let written = request_field.string("an HWRM request or RoCE command name, as FUNC_DRV_RGTR or CREATE_QP")?;
    let target = names::resolve(written).map_err(|e| match e {
        NameError::Unknown { what, suggestion } => {
            request_field.error(Problem::UnknownName { what: what.into(), name: written.into(), suggestion })
        }
        NameError::Ambiguous { name } => request_field.error(Problem::Conflict(format!(
            "`{name}` is both an HWRM request and a RoCE command: write `{}{name}` or `{}{name}`",
            names::HWRM_PREFIX,
            names::ROCE_PREFIX
        ))),
    })?;

    let nth = m
        .optional("nth")
        .map(|n| n.int("which occurrence (1 is the first)", 1, u64::from(u32::MAX)))
        .transpose()?
        .map(|n| n as u32);

    let nic_at = nic_field.node.at;
    Ok(match target {
        Target::Hwrm { req_type, name } => {
            let action = match action(&m, hwrm_code)? {
                Action::NoResponse => FirmwareAction::NoResponse,
                Action::Error(code) => FirmwareAction::Error(code),
                Action::Delay(d) => FirmwareAction::Delay(d),
            };
            FaultKind::Firmware(FirmwareFault { nic, nic_at, req_type, request: name.to_string(), nth, action })
        }
        Target::Roce { opcode, name } => {
            let action = match action(&m, |f| roce_status(f, name))? {
                Action::NoResponse => CommandAction::NoResponse,
                Action::Error(status) => CommandAction::Error(status),
                Action::Delay(d) => CommandAction::Delay(d),
            };
            FaultKind::RoceCommand(RoceCommandFault { nic, nic_at, opcode, command: name.to_string(), nth, action })
        }
    })
}

/// A `firmware` fault's action, its `code` read by `code` (an HWRM error code or a CREQ status).
enum Action<C> {
    NoResponse,
    Error(C),
    Delay(Duration),
}

/// `action` of a `firmware` fault, with `code` or `by` as it calls for (and neither otherwise).
fn action<C>(
    m: &MapReader<'_>,
    code: impl FnOnce(&Field<'_>) -> Result<C, DecodeError>,
) -> Result<Action<C>, DecodeError> {
    let action_field = m.required("action")?;
    let action_name = action_field.string("no-response, error or delay")?;
    let only_with = |key: &str, action: &str| -> Result<(), DecodeError> {
        match m.optional(key) {
            Some(extra) if action_name != action => Err(extra.error(Problem::Conflict(format!(
                "`{key}` goes only with `action: {action}` (this fault's action is `{action_name}`)"
            )))),
            _ => Ok(()),
        }
    };
    only_with("code", "error")?;
    only_with("by", "delay")?;
    Ok(match action_name {
        "no-response" => Action::NoResponse,
        "error" => Action::Error(code(&m.required("code")?)?),
        "delay" => Action::Delay(m.required("by")?.duration()?),
        other => {
            return Err(action_field.error(Problem::UnknownName {
                what: "firmware fault action".into(),
                name: other.into(),
                suggestion: closest(other, ACTIONS.iter().copied()).map(str::to_string),
            }));
        }
    })
}

/// `code` of an HWRM request's fault: an HWRM error code other than SUCCESS.
fn hwrm_code(field: &Field<'_>) -> Result<ErrorCode, DecodeError> {
    let name = field.string("an HWRM error code name, as RESOURCE_ALLOC_ERROR")?;
    let code = ErrorCode::by_name(name).ok_or_else(|| {
        field.error(Problem::UnknownName {
            what: "HWRM error code".into(),
            name: name.into(),
            suggestion: closest(name, ErrorCode::ALL.iter().map(|(_, n)| *n)).map(str::to_string),
        })
    })?;
    if code == ErrorCode::Success {
        return Err(field.invalid("an HWRM error code", "SUCCESS is not an error"));
    }
    Ok(code)
}

/// `code` of a RoCE command's fault: a CREQ status other than SUCCESS.
fn roce_status(field: &Field<'_>, command: &str) -> Result<CreqStatus, DecodeError> {
    let name = field.string("a CREQ status name, as RESOURCES")?;
    let expected = "a CREQ status";
    match names::status_by_name(name) {
        Some(CreqStatus::Success) => Err(field.invalid(expected, "SUCCESS is not an error")),
        Some(status) => Ok(status),
        None => {
            let statuses: Vec<&str> = names::error_statuses().map(CreqStatus::name).collect();
            match closest(name, statuses.iter().copied()) {
                Some(s) => Err(field.error(Problem::UnknownName {
                    what: "CREQ status".into(),
                    name: name.into(),
                    suggestion: Some(s.to_string()),
                })),
                None => Err(field.invalid(
                    expected,
                    format!(
                        "RoCE command {command} is refused with a CREQ status (roce_hsi.h CREQ_QP_EVENT_STATUS_*): {}",
                        statuses.join(", ")
                    ),
                )),
            }
        }
    }
}

fn wire(f: &Field<'_>) -> Result<WireFault, DecodeError> {
    let m = f.map(keys::<lang::Wire>())?;
    let chance = |key: &str| m.optional(key).map(|v| v.probability()).transpose().map(Option::unwrap_or_default);
    let mut plan = WireFault {
        drop: chance("drop")?,
        duplicate: chance("duplicate")?,
        reorder: chance("reorder")?,
        corrupt: chance("corrupt")?,
        delay: chance("delay")?,
        delay_by: m.optional("delay_by").map(|v| v.duration()).transpose()?,
        reorder_hold: m.optional("reorder_hold").map(|v| v.duration()).transpose()?,
        rules: Vec::new(),
    };
    if let Some(rules) = m.optional("rules") {
        for item in rules.list("a list of rules")? {
            plan.rules.push(wire_rule(&item)?);
        }
    }
    if plan == (WireFault::default()) {
        return Err(m.error(Problem::Conflict(
            "`wire` does nothing: give a chance (drop, duplicate, reorder, corrupt, delay) or rules".into(),
        )));
    }
    Ok(plan)
}

fn wire_rule(f: &Field<'_>) -> Result<WireRule, DecodeError> {
    let m = f.map(keys::<lang::WireRule>())?;
    let (nic, nic_at) = match m.optional("nic") {
        Some(v) => (Some(v.int("a NIC index", 0, MAX_NICS as u64 - 1)? as usize), v.node.at),
        None => (None, m.at()),
    };
    let opcode = match m.optional("opcode") {
        None => None,
        Some(v) => Some(match &v.node.value {
            Value::Int(_) => v.int("a BTH opcode", 0, 255)? as u8,
            Value::Str(name) => opcode_by_name(name).ok_or_else(|| {
                v.error(Problem::UnknownName {
                    what: "RC opcode".into(),
                    name: name.clone(),
                    suggestion: closest(name, RC_OPCODES.iter().map(|(_, n)| *n)).map(str::to_string),
                })
            })?,
            _ => return Err(v.wrong_type("a BTH opcode: a number or a name as SEND_ONLY")),
        }),
    };
    let psn = m.optional("psn").map(|v| v.int("a PSN (24 bits)", 0, 0xff_ffff)).transpose()?.map(|p| p as u32);
    let nth = m.optional("nth").map(|v| v.int("which matching frame (1 is the first)", 1, u64::MAX)).transpose()?;
    let kind_field = m.required("kind")?;
    let name = kind_field.string("drop, duplicate, reorder, corrupt or delay")?;
    let kind = WireFaultKind::ALL.iter().find(|(_, n)| *n == name).map(|(k, _)| *k).ok_or_else(|| {
        kind_field.error(Problem::UnknownName {
            what: "wire fault".into(),
            name: name.into(),
            suggestion: closest(name, WireFaultKind::ALL.map(|(_, n)| n)).map(str::to_string),
        })
    })?;
    let delay = match m.optional("delay") {
        Some(v) if kind != WireFaultKind::Delay => {
            return Err(v.error(Problem::Conflict(format!(
                "`delay` goes only with `kind: delay` (this rule's kind is `{name}`)"
            ))));
        }
        Some(v) => Some(v.duration()?),
        None => None,
    };
    Ok(WireRule { nic, nic_at, opcode, psn, nth, kind, delay })
}
