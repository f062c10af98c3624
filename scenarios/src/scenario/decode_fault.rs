//! Decoding `faults:` entries.

use bnxt_hsi::hwrm::{ErrorCode, req_name, req_type, req_type_by_name};

use super::{Fault, FaultKind, FirmwareAction, FirmwareFault, MAX_NICS};
use crate::suggest::closest;
use crate::yaml::{DecodeError, Field, Problem};

/// The kinds of fault, each a key of a `faults` entry.
const KINDS: &[&str] = &["firmware"];
/// The keys of a `firmware` fault.
const FIRMWARE_KEYS: &[&str] = &["nic", "request", "action", "code", "by", "nth"];
/// The firmware fault actions.
const ACTIONS: &[&str] = &["no-response", "error", "delay"];

/// Decode one entry of `faults`.
pub(super) fn fault(item: &Field<'_>) -> Result<Fault, DecodeError> {
    let entry = item.map(KINDS)?;
    let mut kinds = entry.keys();
    let Some(kind) = kinds.next() else {
        return Err(entry.error(Problem::MissingKey { key: KINDS.join(" or ") }));
    };
    if let Some(second) = kinds.next() {
        return Err(entry.error(Problem::Conflict(format!("one fault per entry: found `{kind}` and `{second}`"))));
    }
    let f = entry.required(kind)?;
    let kind = match kind {
        "firmware" => FaultKind::Firmware(firmware(&f)?),
        other => unreachable!("fault kind {other} was checked against KINDS"),
    };
    Ok(Fault { at: item.node.at, path: item.path().to_string(), kind })
}

fn firmware(f: &Field<'_>) -> Result<FirmwareFault, DecodeError> {
    let m = f.map(FIRMWARE_KEYS)?;
    let nic_field = m.required("nic")?;
    let nic = nic_field.int("a NIC index", 0, MAX_NICS as u64 - 1)? as usize;

    let request_field = m.required("request")?;
    let written = request_field.string("an HWRM request name, as FUNC_DRV_RGTR")?;
    let req_type = req_type_by_name(written).ok_or_else(|| {
        request_field.error(Problem::UnknownName {
            what: "HWRM request".into(),
            name: written.into(),
            suggestion: closest(written.strip_prefix("HWRM_").unwrap_or(written), req_type::REQ_TYPES.iter().map(|(n, _)| *n))
                .map(str::to_string),
        })
    })?;
    let request = req_name(req_type).unwrap_or(written).to_string();

    let nth = m.optional("nth").map(|n| n.int("which occurrence (1 is the first)", 1, u64::from(u32::MAX))).transpose()?;

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
    let action = match action_name {
        "no-response" => FirmwareAction::NoResponse,
        "error" => {
            let code_field = m.required("code")?;
            let name = code_field.string("an HWRM error code name, as RESOURCE_ALLOC_ERROR")?;
            let code = ErrorCode::by_name(name).ok_or_else(|| {
                code_field.error(Problem::UnknownName {
                    what: "HWRM error code".into(),
                    name: name.into(),
                    suggestion: closest(name, ErrorCode::ALL.iter().map(|(_, n)| *n)).map(str::to_string),
                })
            })?;
            if code == ErrorCode::Success {
                return Err(code_field.invalid("an HWRM error code", "SUCCESS is not an error"));
            }
            FirmwareAction::Error(code)
        }
        "delay" => FirmwareAction::Delay(m.required("by")?.duration()?),
        other => {
            return Err(action_field.error(Problem::UnknownName {
                what: "firmware fault action".into(),
                name: other.into(),
                suggestion: closest(other, ACTIONS.iter().copied()).map(str::to_string),
            }));
        }
    };
    Ok(FirmwareFault { nic, nic_at: nic_field.node.at, req_type, request, nth: nth.map(|n| n as u32), action })
}
