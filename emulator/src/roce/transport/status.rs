//! Completion statuses, one enum per side, each value mapping 1:1 to the BCM57608's CQE status
//! code (roce_hsi.h: `CQ_REQ_STATUS_*` of `struct cq_req` for the send side,
//! `CQ_RES_RC_STATUS_*` of `struct cq_res_rc` for the receive side; hardware-map.md §5.4), with a
//! stable kebab-case name for scenarios and reports.

use std::fmt;

/// Status of a send-side (requester) completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ReqStatus {
    /// `CQ_REQ_STATUS_OK` (0): done.
    Ok = 0x0,
    /// `CQ_REQ_STATUS_BAD_RESPONSE_ERR` (1): the responder answered with an unexpected opcode,
    /// length or syndrome.
    BadResponse = 0x1,
    /// `CQ_REQ_STATUS_LOCAL_LENGTH_ERR` (2): the message is longer than its SGEs or the limit.
    LocalLength = 0x2,
    /// `CQ_REQ_STATUS_LOCAL_QP_OPERATION_ERR` (3): the QP could not carry out the request.
    LocalQpOperation = 0x3,
    /// `CQ_REQ_STATUS_LOCAL_PROTECTION_ERR` (4): a local SGE could not be read (send/write) or
    /// written (read).
    LocalProtection = 0x4,
    /// `CQ_REQ_STATUS_MEMORY_MGT_OPERATION_ERR` (5): a memory-management request failed.
    MemoryMgtOperation = 0x5,
    /// `CQ_REQ_STATUS_REMOTE_INVALID_REQUEST_ERR` (6): NAK invalid request (e.g. a message longer
    /// than the peer's receive, or an operation the peer QP does not allow).
    RemoteInvalidRequest = 0x6,
    /// `CQ_REQ_STATUS_REMOTE_ACCESS_ERR` (7): NAK remote access error (R_Key, rights or bounds).
    RemoteAccess = 0x7,
    /// `CQ_REQ_STATUS_REMOTE_OPERATION_ERR` (8): NAK remote operational error.
    RemoteOperation = 0x8,
    /// `CQ_REQ_STATUS_RNR_NAK_RETRY_CNT_ERR` (9): RNR NAKs past the RNR retry count.
    RnrRetryExceeded = 0x9,
    /// `CQ_REQ_STATUS_TRANSPORT_RETRY_CNT_ERR` (0xa): timeouts or sequence errors past the retry
    /// count.
    RetryExceeded = 0xa,
    /// `CQ_REQ_STATUS_WORK_REQUEST_FLUSHED_ERR` (0xb): not carried out because the QP is in
    /// the error state.
    Flushed = 0xb,
}

/// Every [`ReqStatus`], in code order.
pub const ALL_REQ_STATUSES: [ReqStatus; 12] = [
    ReqStatus::Ok,
    ReqStatus::BadResponse,
    ReqStatus::LocalLength,
    ReqStatus::LocalQpOperation,
    ReqStatus::LocalProtection,
    ReqStatus::MemoryMgtOperation,
    ReqStatus::RemoteInvalidRequest,
    ReqStatus::RemoteAccess,
    ReqStatus::RemoteOperation,
    ReqStatus::RnrRetryExceeded,
    ReqStatus::RetryExceeded,
    ReqStatus::Flushed,
];

impl ReqStatus {
    /// The CQE status code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The status of a CQE status code.
    pub fn from_code(code: u8) -> Option<ReqStatus> {
        ALL_REQ_STATUSES.get(usize::from(code)).copied()
    }

    /// The stable name scenarios use.
    pub fn name(self) -> &'static str {
        match self {
            ReqStatus::Ok => "ok",
            ReqStatus::BadResponse => "bad-response",
            ReqStatus::LocalLength => "local-length",
            ReqStatus::LocalQpOperation => "local-qp-operation",
            ReqStatus::LocalProtection => "local-protection",
            ReqStatus::MemoryMgtOperation => "memory-management",
            ReqStatus::RemoteInvalidRequest => "remote-invalid-request",
            ReqStatus::RemoteAccess => "remote-access",
            ReqStatus::RemoteOperation => "remote-operation",
            ReqStatus::RnrRetryExceeded => "rnr-retry-exceeded",
            ReqStatus::RetryExceeded => "retry-exceeded",
            ReqStatus::Flushed => "flushed",
        }
    }

    /// The status named `name`.
    pub fn from_name(name: &str) -> Option<ReqStatus> {
        ALL_REQ_STATUSES.into_iter().find(|s| s.name() == name)
    }

    /// Whether the request succeeded.
    pub fn is_ok(self) -> bool {
        self == ReqStatus::Ok
    }
}

impl fmt::Display for ReqStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Status of a receive-side (responder) completion of an RC QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum RespStatus {
    /// `CQ_RES_RC_STATUS_OK` (0): a message landed.
    Ok = 0x0,
    /// `CQ_RES_RC_STATUS_LOCAL_ACCESS_ERROR` (1): a local access error.
    LocalAccess = 0x1,
    /// `CQ_RES_RC_STATUS_LOCAL_LENGTH_ERR` (2): the message was longer than the receive.
    LocalLength = 0x2,
    /// `CQ_RES_RC_STATUS_LOCAL_PROTECTION_ERR` (3): a receive SGE could not be written.
    LocalProtection = 0x3,
    /// `CQ_RES_RC_STATUS_LOCAL_QP_OPERATION_ERR` (4): the QP could not carry out the receive.
    LocalQpOperation = 0x4,
    /// `CQ_RES_RC_STATUS_MEMORY_MGT_OPERATION_ERR` (5): a memory-management operation failed.
    MemoryMgt = 0x5,
    /// `CQ_RES_RC_STATUS_REMOTE_INVALID_REQUEST_ERR` (6): the peer sent an invalid request.
    RemoteInvalidRequest = 0x6,
    /// `CQ_RES_RC_STATUS_WORK_REQUEST_FLUSHED_ERR` (7): not carried out because the QP is in the
    /// error state.
    Flushed = 0x7,
    /// `CQ_RES_RC_STATUS_HW_FLUSH_ERR` (8): flushed by the hardware.
    HwFlush = 0x8,
}

/// Every [`RespStatus`], in code order.
pub const ALL_RESP_STATUSES: [RespStatus; 9] = [
    RespStatus::Ok,
    RespStatus::LocalAccess,
    RespStatus::LocalLength,
    RespStatus::LocalProtection,
    RespStatus::LocalQpOperation,
    RespStatus::MemoryMgt,
    RespStatus::RemoteInvalidRequest,
    RespStatus::Flushed,
    RespStatus::HwFlush,
];

impl RespStatus {
    /// The CQE status code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The status of a CQE status code.
    pub fn from_code(code: u8) -> Option<RespStatus> {
        ALL_RESP_STATUSES.get(usize::from(code)).copied()
    }

    /// The stable name scenarios use.
    pub fn name(self) -> &'static str {
        match self {
            RespStatus::Ok => "ok",
            RespStatus::LocalAccess => "local-access",
            RespStatus::LocalLength => "local-length",
            RespStatus::LocalProtection => "local-protection",
            RespStatus::LocalQpOperation => "local-qp-operation",
            RespStatus::MemoryMgt => "memory-management",
            RespStatus::RemoteInvalidRequest => "remote-invalid-request",
            RespStatus::Flushed => "flushed",
            RespStatus::HwFlush => "hw-flushed",
        }
    }

    /// The status named `name`.
    pub fn from_name(name: &str) -> Option<RespStatus> {
        ALL_RESP_STATUSES.into_iter().find(|s| s.name() == name)
    }

    /// Whether the receive succeeded.
    pub fn is_ok(self) -> bool {
        self == RespStatus::Ok
    }
}

impl fmt::Display for RespStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_cqe_status_codes() {
        // roce_hsi.h CQ_REQ_STATUS_*: RNR_NAK_RETRY_CNT_ERR 0x9, TRANSPORT_RETRY_CNT_ERR 0xa,
        // WORK_REQUEST_FLUSHED_ERR 0xb; CQ_RES_RC_STATUS_*: WORK_REQUEST_FLUSHED_ERR 0x7,
        // HW_FLUSH_ERR 0x8.
        assert_eq!(ReqStatus::RnrRetryExceeded.code(), 0x9);
        assert_eq!(ReqStatus::RetryExceeded.code(), 0xa);
        assert_eq!(ReqStatus::Flushed.code(), 0xb);
        assert_eq!(RespStatus::Flushed.code(), 0x7);
        assert_eq!(RespStatus::HwFlush.code(), 0x8);
        for (i, s) in ALL_REQ_STATUSES.iter().enumerate() {
            assert_eq!(usize::from(s.code()), i);
            assert_eq!(ReqStatus::from_code(s.code()), Some(*s));
        }
        for (i, s) in ALL_RESP_STATUSES.iter().enumerate() {
            assert_eq!(usize::from(s.code()), i);
            assert_eq!(RespStatus::from_code(s.code()), Some(*s));
        }
        assert_eq!(ReqStatus::from_code(0xc), None);
        assert_eq!(RespStatus::from_code(9), None);
    }

    #[test]
    fn names_are_unique_kebab_case_and_round_trip() {
        let mut seen = std::collections::BTreeSet::new();
        for s in ALL_REQ_STATUSES {
            assert!(s.name().chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{s}");
            assert_eq!(ReqStatus::from_name(s.name()), Some(s));
            assert!(seen.insert(s.name()), "{s} twice");
        }
        let mut seen = std::collections::BTreeSet::new();
        for s in ALL_RESP_STATUSES {
            assert!(s.name().chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{s}");
            assert_eq!(RespStatus::from_name(s.name()), Some(s));
            assert!(seen.insert(s.name()), "{s} twice");
        }
        assert_eq!(ReqStatus::from_name("retry-exceeded"), Some(ReqStatus::RetryExceeded));
        assert_eq!(RespStatus::from_name("local-length"), Some(RespStatus::LocalLength));
        assert_eq!(ReqStatus::from_name("nope"), None);
    }
}
