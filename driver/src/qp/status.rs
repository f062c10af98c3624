//! What a completion says: the status of a ring entry, with a stable name, mapped from the CQE
//! status codes as bnxt_re maps them to the verbs' work-completion statuses (ib_verbs.c
//! `__req_to_ib_wc_status`, `__rc_to_ib_wc_status`).

use bnxt_hsi::roce::layouts::{CqReq as Req, CqResRc as Res};

/// How a ring entry ended.
///
/// | name | requester CQE (`cq_req.status`) | responder CQE (`cq_res_rc.status`) |
/// |---|---|---|
/// | `ok` | 0 OK | 0 OK |
/// | `bad-response` | 1 BAD_RESPONSE_ERR | |
/// | `local-length` | 2 LOCAL_LENGTH_ERR | 2 LOCAL_LENGTH_ERR |
/// | `local-qp-operation` | 3 LOCAL_QP_OPERATION_ERR | 4 LOCAL_QP_OPERATION_ERR |
/// | `local-protection` | 4 LOCAL_PROTECTION_ERR | 3 LOCAL_PROTECTION_ERR |
/// | `local-access` | | 1 LOCAL_ACCESS_ERROR |
/// | `general` | 5 MEMORY_MGT_OPERATION_ERR, undefined codes | 5 MEMORY_MGT_OPERATION_ERR, undefined codes |
/// | `remote-invalid-request` | 6 REMOTE_INVALID_REQUEST_ERR | 6 REMOTE_INVALID_REQUEST_ERR |
/// | `remote-access` | 7 REMOTE_ACCESS_ERR | |
/// | `remote-operation` | 8 REMOTE_OPERATION_ERR | |
/// | `rnr-retry-exceeded` | 9 RNR_NAK_RETRY_CNT_ERR | |
/// | `retry-exceeded` | 0xa TRANSPORT_RETRY_CNT_ERR | |
/// | `flushed` | 0xb WORK_REQUEST_FLUSHED_ERR | 7 WORK_REQUEST_FLUSHED_ERR, 8 HW_FLUSH_ERR |
///
/// `flushed` is also what every entry still outstanding gets once its queue pair has gone to
/// the error state, as bnxt_re completes them from its flush lists (qplib_fp.c `__flush_sq`,
/// `__flush_rq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Done.
    Ok,
    /// The responder's answer made no sense.
    BadResponse,
    /// The message did not fit the local buffer (or the receive's buffer).
    LocalLength,
    /// The local queue pair could not do it.
    LocalQpOperation,
    /// The local buffer's key or rights did not allow it.
    LocalProtection,
    /// The receive's buffer could not be written.
    LocalAccess,
    /// A memory-management error, or a code the interface does not define.
    General,
    /// The responder refused the request as malformed.
    RemoteInvalidRequest,
    /// The responder's region did not allow it.
    RemoteAccess,
    /// The responder failed doing it.
    RemoteOperation,
    /// The responder had no receive posted, for every retry.
    RnrRetryExceeded,
    /// No answer came, for every retry.
    RetryExceeded,
    /// The queue pair went to the error state before this entry was done.
    Flushed,
}

impl Status {
    /// Every status, with its name.
    pub const ALL: [(Status, &'static str); 13] = [
        (Status::Ok, "ok"),
        (Status::BadResponse, "bad-response"),
        (Status::LocalLength, "local-length"),
        (Status::LocalQpOperation, "local-qp-operation"),
        (Status::LocalProtection, "local-protection"),
        (Status::LocalAccess, "local-access"),
        (Status::General, "general"),
        (Status::RemoteInvalidRequest, "remote-invalid-request"),
        (Status::RemoteAccess, "remote-access"),
        (Status::RemoteOperation, "remote-operation"),
        (Status::RnrRetryExceeded, "rnr-retry-exceeded"),
        (Status::RetryExceeded, "retry-exceeded"),
        (Status::Flushed, "flushed"),
    ];

    /// The stable name (`retry-exceeded`).
    pub fn name(self) -> &'static str {
        Status::ALL.iter().find(|(s, _)| *s == self).map(|(_, n)| *n).expect("every status is named")
    }

    /// The status named `name`.
    pub fn by_name(name: &str) -> Option<Status> {
        Status::ALL.iter().find(|(_, n)| *n == name).map(|(s, _)| *s)
    }

    /// The status of a requester CQE's `status`.
    pub fn of_requester(code: u8) -> Status {
        match code {
            Req::STATUS_OK => Status::Ok,
            Req::STATUS_BAD_RESPONSE_ERR => Status::BadResponse,
            Req::STATUS_LOCAL_LENGTH_ERR => Status::LocalLength,
            Req::STATUS_LOCAL_QP_OPERATION_ERR => Status::LocalQpOperation,
            Req::STATUS_LOCAL_PROTECTION_ERR => Status::LocalProtection,
            Req::STATUS_REMOTE_INVALID_REQUEST_ERR => Status::RemoteInvalidRequest,
            Req::STATUS_REMOTE_ACCESS_ERR => Status::RemoteAccess,
            Req::STATUS_REMOTE_OPERATION_ERR => Status::RemoteOperation,
            Req::STATUS_RNR_NAK_RETRY_CNT_ERR => Status::RnrRetryExceeded,
            Req::STATUS_TRANSPORT_RETRY_CNT_ERR => Status::RetryExceeded,
            Req::STATUS_WORK_REQUEST_FLUSHED_ERR => Status::Flushed,
            _ => Status::General,
        }
    }

    /// The status of an RC responder CQE's `status`.
    pub fn of_responder(code: u8) -> Status {
        match code {
            Res::STATUS_OK => Status::Ok,
            Res::STATUS_LOCAL_ACCESS_ERROR => Status::LocalAccess,
            Res::STATUS_LOCAL_LENGTH_ERR => Status::LocalLength,
            Res::STATUS_LOCAL_PROTECTION_ERR => Status::LocalProtection,
            Res::STATUS_LOCAL_QP_OPERATION_ERR => Status::LocalQpOperation,
            Res::STATUS_REMOTE_INVALID_REQUEST_ERR => Status::RemoteInvalidRequest,
            Res::STATUS_WORK_REQUEST_FLUSHED_ERR | Res::STATUS_HW_FLUSH_ERR => Status::Flushed,
            _ => Status::General,
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The completion of one ring entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// Bytes: the message's length for a send or read, what arrived for a receive (0 when
    /// flushed).
    pub bytes: u64,
    /// How it ended.
    pub status: Status,
}

impl Completion {
    /// The bytes if it ended well, else its status.
    pub fn result(&self) -> Result<u64, Status> {
        if self.status == Status::Ok { Ok(self.bytes) } else { Err(self.status) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kebab_case_and_round_trip_through_serde() {
        for (s, name) in Status::ALL {
            assert_eq!(s.name(), name);
            assert_eq!(Status::by_name(name), Some(s));
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<Status>(&format!("\"{name}\"")).unwrap(), s);
        }
        assert_eq!(Status::by_name("OK"), None);
    }

    #[test]
    fn codes_map_as_bnxt_re_maps_them() {
        assert_eq!(Status::of_requester(0), Status::Ok);
        assert_eq!(Status::of_requester(0x9), Status::RnrRetryExceeded);
        assert_eq!(Status::of_requester(0xa), Status::RetryExceeded);
        assert_eq!(Status::of_requester(0xb), Status::Flushed);
        assert_eq!(Status::of_requester(0x7), Status::RemoteAccess);
        assert_eq!(Status::of_requester(0x5), Status::General);
        assert_eq!(Status::of_requester(0x42), Status::General);
        assert_eq!(Status::of_responder(0x2), Status::LocalLength);
        assert_eq!(Status::of_responder(0x3), Status::LocalProtection);
        assert_eq!(Status::of_responder(0x8), Status::Flushed);
        assert_eq!(Status::of_responder(0x1), Status::LocalAccess);
        let c = Completion { bytes: 5, status: Status::Ok };
        assert_eq!(c.result(), Ok(5));
        assert_eq!(Completion { bytes: 0, status: Status::Flushed }.result(), Err(Status::Flushed));
    }
}
