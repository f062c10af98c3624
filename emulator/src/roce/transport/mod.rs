//! The reliable-connected transport of the RoCE engine, without I/O and without any knowledge of
//! the BCM57608's work-queue, completion or doorbell formats.
//!
//! It is split as Linux's software RoCE (drivers/infiniband/sw/rxe) splits it:
//!
//! * the [`requester`](self#requester) cuts send requests into packets, numbers them, limits
//!   what is in flight and retransmits (rxe_req.c);
//! * the [`responder`](self#responder) checks and executes the peer's requests and acknowledges
//!   them (rxe_resp.c);
//! * the [`completer`](self#completer) takes the peer's acknowledgements and READ responses and
//!   completes send requests in order (rxe_comp.c);
//!
//! and follows the InfiniBand Architecture Specification Vol 1, chapter 9 (transport layer):
//! §9.7 reliable service (PSNs, ACK/NAK and the AETH syndromes, retries, the RNR NAK timer
//! table) and §9.4 (SEND, RDMA WRITE, RDMA READ and the atomics, §9.4.5), over RoCE v2 framing
//! from [`crate::net`].
//!
//! # How the slow path drives it
//!
//! The slow path (command queue, QP/CQ/MR tables, doorbells) owns one [`RcQp`] per RC QP from RTR
//! on (IBA Vol 1 §10.3.1: an RTR QP is a responder; only requesting needs RTS):
//!
//! 1. at MODIFY_QP to RTR, [`RcQp::receiving`] with the QP's [`QpAttrs`] (its
//!    [`Path`](crate::net::Path) from [`Path::between`](crate::net::Path::between)); at RTS,
//!    [`RcQp::ready_to_send`] with the requester's attributes; RTS→SQD and back,
//!    [`RcQp::drain_send_queue`] and [`RcQp::resume_sending`]; attribute changes after RTR,
//!    [`RcQp::modify`]. [`RcQp::new`] is a QP in RTS at once;
//! 2. on an SQ or RQ doorbell, it reads the new WQEs from the ring and hands them over as
//!    [`SendWqe`] / [`RecvWqe`], with the ring slot or WR id as their `id`;
//! 3. it implements [`Memory`] over its region table and host memory (lkey/rkey, access rights,
//!    bounds, page lists, DMA), and passes it to every call that moves bytes;
//! 4. frames from the wire are parsed once with [`RoceFrame::parse`](crate::net::RoceFrame::parse)
//!    (ICRC checked; bad frames counted and dropped there), routed by destination QP, and given to
//!    [`RcQp::handle_frame`];
//! 5. after any input, it calls [`RcQp::poll_transmit`] until it returns `false`, sending each
//!    frame with [`Switch::send`](crate::net::switch::Switch::send) (the buffer can be reused
//!    for the next call), turns [`RcQp::pop_send_completion`] and [`RcQp::pop_recv_completion`]
//!    into CQEs (statuses map 1:1 to the CQE codes), and asks [`RcQp::next_deadline`] when to
//!    call [`RcQp::on_timer`];
//! 6. MODIFY_QP to ERR (or DESTROY_QP with work outstanding) is [`RcQp::set_error`].
//!
//! # Requester
//!
//! See the `requester` module: segmentation, PSNs, AckReq, the window, timeouts and retries.
//!
//! # Responder
//!
//! See the `responder` module: PSN checks, duplicates, RNR, access checks, READ responses, ACK
//! coalescing.
//!
//! # Completer
//!
//! See the `completer` module: cumulative ACKs, NAKs, READ responses, in-order completion.

pub mod attrs;
mod completer;
pub mod completion;
pub mod memory;
pub mod psn;
pub mod qp;
mod requester;
mod responder;
mod sq;
pub mod status;
pub mod wr;

pub use attrs::{AttrError, Limits, Mtu, QpAttrs, RemoteAccess, local_ack_timeout};
pub use completion::{RecvCompletion, RecvKind, SendCompletion};
pub use memory::AtomicOp;
pub use memory::{AccessError, Memory};
pub use qp::{QpState, RcQp, TransportStats};
pub use status::{ReqStatus, RespStatus};
pub use wr::{ATOMIC_BYTES, INLINE_SGES, MAX_MESSAGE, RecvWqe, SendOp, SendWqe, Sge, SgeList};

#[cfg(test)]
mod tests;
