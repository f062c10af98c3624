//! The names a firmware fault takes, wherever it is written (a scenario's `faults:`, `bnxt-model
//! serve --faults`, `bnxt-model ctl fault add`): what its request names (an HWRM request or a
//! RoCE firmware command) and, for a refused RoCE command, the CREQ status it is refused with;
//! and "did you mean …?" for a misspelt name ([`closest`]).
//!
//! HWRM requests are bnxt_hsi.h's `HWRM_*` request types without the prefix (`FUNC_DRV_RGTR`);
//! RoCE commands are roce_hsi.h's `CMDQ_BASE_OPCODE_*` without the prefix (`CREATE_QP`); CREQ
//! statuses are roce_hsi.h's `CREQ_QP_EVENT_STATUS_*` without the prefix (`RESOURCES`). Any case
//! is accepted, and so is the prefix. A bare name is looked up as an HWRM request first and as a
//! RoCE command second; the two sets share no name today (a test keeps it so), and should a
//! header ever add one to both, the bare name is refused as ambiguous and the prefix decides.

use bnxt_hsi::hwrm::{req_type, req_type_by_name};
use bnxt_hsi::roce::rcfw::{CreqStatus, OPCODES};

/// The prefix that makes a name an HWRM request's.
pub const HWRM_PREFIX: &str = "HWRM_";
/// The prefix that makes a name a RoCE command's.
pub const ROCE_PREFIX: &str = "CMDQ_BASE_OPCODE_";
/// The prefix of a CREQ status's name in roce_hsi.h.
pub const STATUS_PREFIX: &str = "CREQ_QP_EVENT_STATUS_";

/// What a `firmware` fault's `request` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// An HWRM request.
    Hwrm {
        /// Its `req_type`.
        req_type: u16,
        /// Its name without `HWRM_`.
        name: &'static str,
    },
    /// A command of the RoCE firmware channel.
    Roce {
        /// Its CMDQ `opcode`.
        opcode: u8,
        /// Its name without `CMDQ_BASE_OPCODE_`.
        name: &'static str,
    },
}

/// Why a name names nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameError {
    /// Neither an HWRM request nor a RoCE command; the closest of either, if one is close, with
    /// what it is (`HWRM request`, `RoCE command`).
    Unknown {
        /// What the name was looked for as.
        what: &'static str,
        /// The closest known name.
        suggestion: Option<String>,
    },
    /// A bare name that both an HWRM request and a RoCE command carry.
    Ambiguous {
        /// The name.
        name: &'static str,
    },
}

/// What the kinds of name are called in messages.
pub const HWRM_REQUEST: &str = "HWRM request";
/// As [`HWRM_REQUEST`], for RoCE commands.
pub const ROCE_COMMAND: &str = "RoCE command";

/// `name` without `prefix`, ignoring case.
fn strip<'n>(name: &'n str, prefix: &str) -> Option<&'n str> {
    name.get(..prefix.len()).filter(|head| head.eq_ignore_ascii_case(prefix)).map(|_| &name[prefix.len()..])
}

fn hwrm(name: &str) -> Option<Target> {
    let req_type = req_type_by_name(name)?;
    let name = req_type::REQ_TYPES.iter().find(|(_, v)| *v == req_type).map(|(n, _)| *n)?;
    Some(Target::Hwrm { req_type, name })
}

fn roce(name: &str) -> Option<Target> {
    OPCODES.iter().find(|(_, n)| n.eq_ignore_ascii_case(name)).map(|&(opcode, name)| Target::Roce { opcode, name })
}

/// Every HWRM request name.
pub fn hwrm_names() -> impl Iterator<Item = &'static str> {
    req_type::REQ_TYPES.iter().map(|(n, _)| *n)
}

/// Every RoCE command name.
pub fn roce_names() -> impl Iterator<Item = &'static str> {
    OPCODES.iter().map(|(_, n)| *n)
}

/// What `written` names.
pub fn resolve(written: &str) -> Result<Target, NameError> {
    let close = |name: &str, candidates: Vec<&'static str>| closest(name, candidates).map(str::to_string);
    if let Some(bare) = strip(written, HWRM_PREFIX) {
        return hwrm(bare)
            .ok_or_else(|| NameError::Unknown { what: HWRM_REQUEST, suggestion: close(bare, hwrm_names().collect()) });
    }
    if let Some(bare) = strip(written, ROCE_PREFIX) {
        return roce(bare)
            .ok_or_else(|| NameError::Unknown { what: ROCE_COMMAND, suggestion: close(bare, roce_names().collect()) });
    }
    match (hwrm(written), roce(written)) {
        (Some(Target::Hwrm { name, .. }), Some(_)) => Err(NameError::Ambiguous { name }),
        (Some(t), None) | (None, Some(t)) => Ok(t),
        (_, _) => {
            // Said as what the closest known name is; as both when none is close.
            let suggestion = closest(written, hwrm_names().chain(roce_names()));
            let what = match suggestion {
                Some(s) if roce(s).is_some() => ROCE_COMMAND,
                Some(_) => HWRM_REQUEST,
                None => "HWRM request or RoCE command",
            };
            Err(NameError::Unknown { what, suggestion: suggestion.map(str::to_string) })
        }
    }
}

/// The candidate closest to `name` (ignoring case), if it is close enough to be a likely typo.
pub fn closest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    /// Jaro-Winkler similarity at or above which a candidate counts as a typo of the name.
    const LIKELY_TYPO: f64 = 0.8;
    let name = name.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&name, &c.to_ascii_lowercase()), c))
        .filter(|(score, _)| *score >= LIKELY_TYPO)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// The CREQ statuses a RoCE command may be refused with, with their names.
pub fn error_statuses() -> impl Iterator<Item = CreqStatus> {
    (0..=u8::MAX).filter_map(CreqStatus::from_value).filter(|s| *s != CreqStatus::Success)
}

/// The CREQ status named `name` (any case, `CREQ_QP_EVENT_STATUS_` optional), SUCCESS included.
pub fn status_by_name(name: &str) -> Option<CreqStatus> {
    let bare = strip(name, STATUS_PREFIX).unwrap_or(name);
    (0..=u8::MAX).filter_map(CreqStatus::from_value).find(|s| s.name().eq_ignore_ascii_case(bare))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_name_is_both_an_hwrm_request_and_a_roce_command() {
        let clashes: Vec<&str> = roce_names().filter(|n| hwrm(n).is_some()).collect();
        assert!(clashes.is_empty(), "names in both bnxt_hsi.h and roce_hsi.h: {clashes:?}");
        // The prefixed forms never reach the other set either.
        for n in roce_names() {
            assert!(hwrm(&format!("{ROCE_PREFIX}{n}")).is_none());
        }
    }

    #[test]
    fn names_resolve_to_their_channel_in_any_case_and_with_prefixes() {
        assert_eq!(resolve("FUNC_DRV_RGTR"), Ok(Target::Hwrm { req_type: 0x1d, name: "FUNC_DRV_RGTR" }));
        assert_eq!(resolve("hwrm_ver_get"), Ok(Target::Hwrm { req_type: 0, name: "VER_GET" }));
        assert_eq!(resolve("CREATE_QP"), Ok(Target::Roce { opcode: 0x01, name: "CREATE_QP" }));
        assert_eq!(resolve("cmdq_base_opcode_query_func"), Ok(Target::Roce { opcode: 0x83, name: "QUERY_FUNC" }));
        assert_eq!(resolve("register_mr"), Ok(Target::Roce { opcode: 0x0f, name: "REGISTER_MR" }));
    }

    #[test]
    fn misspelt_names_suggest_the_closest_of_the_right_kind() {
        let unknown = |what, s: &str| Err(NameError::Unknown { what, suggestion: Some(s.to_string()) });
        assert_eq!(resolve("FUNC_DRV_RGSTR"), unknown(HWRM_REQUEST, "FUNC_DRV_RGTR"));
        assert_eq!(resolve("CREATE_QPP"), unknown(ROCE_COMMAND, "CREATE_QP"));
        assert_eq!(resolve("DEALOCATE_KEY"), unknown(ROCE_COMMAND, "DEALLOCATE_KEY"));
        // A prefix keeps the search to its own kind.
        assert_eq!(
            resolve("HWRM_CREATE_QP").unwrap_err(),
            NameError::Unknown {
                what: HWRM_REQUEST,
                suggestion: closest("CREATE_QP", hwrm_names()).map(str::to_string)
            }
        );
        assert_eq!(
            resolve("CMDQ_BASE_OPCODE_VER_GET").map_err(|e| matches!(e, NameError::Unknown { what: ROCE_COMMAND, .. })),
            Err(true)
        );
        assert_eq!(resolve("ZZZZ"), Err(NameError::Unknown { what: "HWRM request or RoCE command", suggestion: None }));
    }

    #[test]
    fn statuses_are_roce_hsi_h_names() {
        let names: Vec<&str> = error_statuses().map(CreqStatus::name).collect();
        assert_eq!(
            names,
            [
                "FAIL",
                "RESOURCES",
                "INVALID_CMD",
                "NOT_IMPLEMENTED",
                "INVALID_PARAMETER",
                "HARDWARE_ERROR",
                "INTERNAL_ERROR"
            ]
        );
        assert_eq!(status_by_name("resources"), Some(CreqStatus::Resources));
        assert_eq!(status_by_name("CREQ_QP_EVENT_STATUS_HARDWARE_ERROR"), Some(CreqStatus::HardwareError));
        assert_eq!(status_by_name("SUCCESS"), Some(CreqStatus::Success));
        assert_eq!(status_by_name("RESOURCE_ALLOC_ERROR"), None);
    }
}
