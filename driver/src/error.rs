//! The driver's errors. Each names the NIC it happened on first, as the contract asks.

use std::time::Duration;

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::roce::rcfw::CreqStatus;

use bnxt_pci::{Interrupted, PciError};

/// The name of a CREQ status, or `undefined` for a value the interface does not define.
fn status_name(status: u8) -> &'static str {
    CreqStatus::from_value(status).map_or("undefined", CreqStatus::name)
}

/// Why a call on a NIC failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// The PCI function or machine refused something (listing, taking, config space, DMA memory).
    #[error("{nic}: {source}")]
    Pci {
        /// The NIC's name.
        nic: String,
        /// What the backend said.
        source: PciError,
    },
    /// The firmware refused a request.
    #[error("{nic}: {request} refused by the firmware: {code} (error code 0x{value:04x})", value = code.value())]
    Refused {
        /// The NIC's name.
        nic: String,
        /// The request's name (`FUNC_DRV_RGTR`).
        request: String,
        /// The error code it answered.
        code: ErrorCode,
    },
    /// The RoCE firmware refused a command on its command queue.
    #[error("{nic}: {command} refused by the RoCE firmware: {} (status 0x{status:02x})", status_name(*status))]
    CommandRefused {
        /// The NIC's name.
        nic: String,
        /// The command's name (`CREATE_QP`).
        command: String,
        /// The CREQ status it answered (`CREQ_QP_EVENT_STATUS_*`).
        status: u8,
    },
    /// The firmware did not answer a request (HWRM) or command (RoCE) in time. The NIC is wedged
    /// until close.
    #[error("{nic}: {request}: no answer from the firmware within {} ms; the NIC is wedged until close", timeout.as_millis())]
    Timeout {
        /// The NIC's name.
        nic: String,
        /// The request's name.
        request: String,
        /// The timeout the request had (the wait may have overrun it by a poll).
        timeout: Duration,
    },
    /// The wait for the firmware's answer to a request was cut short by the clock (a limit of
    /// whoever drives it: a scenario's timeout). Its fate is unknown, as after a timeout, so the
    /// NIC is wedged until close.
    #[error("{nic}: {request}: {reason} before the firmware answered; the NIC is wedged until close")]
    Interrupted {
        /// The NIC's name.
        nic: String,
        /// The request's name.
        request: String,
        /// What cut the wait short.
        reason: Interrupted,
    },
    /// An earlier request went unanswered, so this one was not sent.
    #[error("{nic}: {request} not sent: the NIC is wedged since {wedged_by} went unanswered")]
    Wedged {
        /// The NIC's name.
        nic: String,
        /// The request that was not sent.
        request: String,
        /// The request that timed out.
        wedged_by: String,
    },
    /// The firmware answered, but not as the interface says it must (short response, bad
    /// capability, not ready).
    #[error("{nic}: {what}")]
    Firmware {
        /// The NIC's name.
        nic: String,
        /// What was wrong.
        what: String,
    },
    /// A request is longer than the firmware takes (`-E2BIG` in bnxt_en's `__hwrm_send`); it was
    /// not sent.
    #[error("{nic}: {request} not sent: {len} bytes is longer than the firmware takes ({max} bytes)")]
    RequestTooLong {
        /// The NIC's name.
        nic: String,
        /// The request's name.
        request: String,
        /// The request's length.
        len: usize,
        /// The longest request the firmware takes.
        max: usize,
    },
    /// The NIC or its firmware lacks something this driver needs (a P7 chip, RoCE v2, backing
    /// store V2, a recent enough HWRM interface).
    #[error("{nic}: cannot be driven: {what}")]
    Unsupported {
        /// The NIC's name.
        nic: String,
        /// What is missing.
        what: String,
    },
    /// A limit set at open (queue pairs, regions) would be exceeded.
    #[error("{nic}: {what}: limit of {limit} reached")]
    Limit {
        /// The NIC's name.
        nic: String,
        /// What ran out.
        what: String,
        /// The limit.
        limit: u64,
    },
}
