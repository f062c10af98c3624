//! Completions the transport reports, in the order of the work requests on each side, for the
//! slow path to write as CQEs (the send side to the QP's send CQ as `cq_req`, the receive side
//! to its receive CQ as `cq_res_rc`).

use super::status::{ReqStatus, RespStatus};
use super::wr::SendOp;

/// The completion of a send work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendCompletion {
    /// The request's [`SendWqe::id`](super::wr::SendWqe::id).
    pub id: u64,
    /// Outcome.
    pub status: ReqStatus,
    /// The request's operation.
    pub op: SendOp,
    /// The request's message length (bytes sent, written or read when `status` is ok).
    pub bytes: u32,
}

/// What filled a receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecvKind {
    /// A SEND (with or without immediate data).
    Send,
    /// An RDMA WRITE with immediate data (the bytes went to the region the RETH named).
    RdmaWriteImm,
}

/// The completion of a receive work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvCompletion {
    /// The request's [`RecvWqe::id`](super::wr::RecvWqe::id).
    pub id: u64,
    /// Outcome.
    pub status: RespStatus,
    /// What filled it (`Send` for a receive that completed in error before any message).
    pub kind: RecvKind,
    /// Bytes of the message: landed in the receive for a SEND, written for an RDMA WRITE with
    /// immediate data (rdma_rxe rxe_resp.c `do_complete`: the RETH length). 0 on error.
    pub bytes: u32,
    /// Immediate data, if the message carried some.
    pub imm: Option<u32>,
    /// Whether the message's last packet had the solicited-event bit.
    pub solicited: bool,
}
