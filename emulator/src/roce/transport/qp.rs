//! The transport of one reliable-connected QP and how the slow path drives it.
//!
//! Inputs: [`RcQp::post_send`], [`RcQp::post_recv`], [`RcQp::handle_frame`] (a parsed frame for
//! this QP), [`RcQp::on_timer`] and [`RcQp::set_error`]. Outputs: frames from
//! [`RcQp::poll_transmit`], completions from [`RcQp::pop_send_completion`] and
//! [`RcQp::pop_recv_completion`], and [`RcQp::next_deadline`]. Calls that touch memory take it as
//! an argument. Nothing here reads a clock, spawns a thread or keeps global state: the same
//! calls give the same frames and completions.

use std::collections::VecDeque;
use std::time::Duration;

use crate::net::RoceFrame;
use crate::net::sealed::SealedFrame;

use super::attrs::{AttrError, Limits, QpAttrs};
use super::completion::{RecvCompletion, RecvKind, SendCompletion};
use super::memory::Memory;
use super::psn::Seq;
use super::requester::ReqState;
use super::responder::RespState;
use super::status::{ReqStatus, RespStatus};
use super::wr::{RecvWqe, SendWqe};

/// The state of a QP as far as its transport is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QpState {
    /// Ready to send (RTS): requests go out, requests from the peer are answered.
    ReadyToSend,
    /// Error: every outstanding and every later work request completes flushed; frames from the
    /// peer are dropped; nothing is sent but a NAK that caused the error.
    Error,
}

/// Counters of one QP's transport.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransportStats {
    /// Request packets sent (first transmissions and retransmissions).
    pub requests_sent: u64,
    /// Of those, retransmissions (PSNs sent before).
    pub retransmitted: u64,
    /// Acknowledge packets sent (ACKs, NAKs, RNR NAKs).
    pub acks_sent: u64,
    /// READ response packets sent.
    pub read_responses_sent: u64,
    /// Retransmission timer expiries that led to a retry.
    pub timeouts: u64,
    /// Retries started by a PSN sequence error NAK or a gap in READ responses.
    pub sequence_retries: u64,
    /// RNR NAKs received that led to a wait and a retry.
    pub rnr_retries: u64,
    /// RNR NAKs sent.
    pub rnr_naks_sent: u64,
    /// PSN sequence error NAKs sent.
    pub sequence_naks_sent: u64,
    /// Duplicate requests received (re-acknowledged or replayed).
    pub duplicates: u64,
    /// Requests received after a gap (dropped; NAKed once).
    pub out_of_sequence: u64,
    /// Responses that acknowledged nothing new or belonged to nothing outstanding.
    pub stale_responses: u64,
    /// Frames for another QP or from another peer.
    pub misdirected: u64,
    /// Frames dropped because the QP is in the error state.
    pub dropped_in_error: u64,
}

/// The RC transport of one QP: requester, responder and completer.
#[derive(Debug)]
pub struct RcQp {
    pub(super) attrs: QpAttrs,
    pub(super) limits: Limits,
    pub(super) state: QpState,
    pub(super) req: ReqState,
    pub(super) resp: RespState,
    pub(super) send_cq: VecDeque<SendCompletion>,
    pub(super) recv_cq: VecDeque<RecvCompletion>,
    pub(super) stats: TransportStats,
}

impl RcQp {
    /// The transport of a QP moved to RTS with `attrs`, with the default [`Limits`].
    pub fn new(attrs: QpAttrs) -> Result<RcQp, AttrError> {
        RcQp::with_limits(attrs, Limits::default())
    }

    /// The transport of a QP moved to RTS with `attrs` and `limits`.
    pub fn with_limits(attrs: QpAttrs, limits: Limits) -> Result<RcQp, AttrError> {
        attrs.validate()?;
        limits.validate()?;
        Ok(RcQp {
            req: ReqState::new(&attrs),
            resp: RespState::new(Seq::start(attrs.rq_psn)),
            attrs,
            limits,
            state: QpState::ReadyToSend,
            send_cq: VecDeque::new(),
            recv_cq: VecDeque::new(),
            stats: TransportStats::default(),
        })
    }

    /// The attributes.
    pub fn attrs(&self) -> &QpAttrs {
        &self.attrs
    }

    /// The state.
    pub fn state(&self) -> QpState {
        self.state
    }

    /// Counters.
    pub fn stats(&self) -> TransportStats {
        self.stats
    }

    /// Send requests not yet completed.
    pub fn sends_outstanding(&self) -> usize {
        self.req.sq.len()
    }

    /// Receives posted and not yet completed.
    pub fn recvs_outstanding(&self) -> usize {
        self.resp.rq.len()
    }

    /// Queue a send request. In the error state it completes flushed at once; a request that
    /// cannot be started (see [`SendWqe::check`]) completes with its error when it becomes the
    /// oldest, and moves the QP to the error state then.
    pub fn post_send(&mut self, wqe: SendWqe) {
        if self.state == QpState::Error {
            self.send_cq.push_back(flushed_send(&wqe));
            return;
        }
        let mut failed = wqe.check().err();
        if failed.is_none() && wqe.op.is_read() && self.attrs.max_rd_atomic == 0 {
            failed = Some(ReqStatus::LocalQpOperation);
        }
        let npkts = if failed.is_some() { 0 } else { self.attrs.mtu.packets(wqe.length) };
        self.req.sq.push(wqe, npkts, failed);
        self.settle();
    }

    /// Whether `frame` is the next request (the expected PSN) and takes a receive WQE when it
    /// arrives (SEND First or Only, RDMA WRITE Only or Last with immediate) while none is posted:
    /// what a QP on a shared receive queue has one taken from it for first.
    pub fn needs_receive(&self, frame: &RoceFrame<'_>) -> bool {
        use crate::net::Opcode as O;
        let b = &frame.transport.bth;
        let takes = matches!(b.opcode, O::SendFirst | O::SendOnly | O::SendOnlyImm | O::WriteOnlyImm | O::WriteLastImm);
        takes && self.state != QpState::Error && self.resp.rq.is_empty() && self.resp.expected_psn() == b.psn
    }

    /// Queue a receive. In the error state it completes flushed at once.
    pub fn post_recv(&mut self, wqe: RecvWqe) {
        if self.state == QpState::Error {
            self.recv_cq.push_back(flushed_recv(wqe.id));
            return;
        }
        self.resp.rq.push_back(wqe);
    }

    /// Take in a frame from the wire, parsed and checked (ICRC included) by
    /// [`RoceFrame::parse`]. Frames for another QP or from another peer are counted and dropped.
    pub fn handle_frame<M: Memory + ?Sized>(&mut self, now: Duration, frame: &RoceFrame<'_>, mem: &mut M) {
        if self.state == QpState::Error {
            self.stats.dropped_in_error += 1;
            return;
        }
        let p = &self.attrs.path;
        // A UD opcode at an RC QP fails the transport header validation (IBA §9.6: the opcode's
        // transport must be the QP's) and is silently dropped.
        let foreign = frame.transport.bth.opcode.is_ud();
        if foreign
            || frame.transport.bth.dest_qp != self.attrs.qpn
            || frame.ip.src != p.dst_ip
            || frame.ip.dst != p.src_ip
        {
            self.stats.misdirected += 1;
            return;
        }
        if frame.transport.bth.opcode.is_request() {
            self.on_request(frame, mem);
        } else {
            self.on_response(now, frame, mem);
        }
        self.settle();
    }

    /// Let time pass to `now`: an RNR wait that is over ends, an expired retransmission timer
    /// retries from the oldest unacknowledged PSN (or fails the oldest request with
    /// retry-exceeded once the retry count is spent).
    pub fn on_timer(&mut self, now: Duration) {
        if self.state == QpState::Error {
            return;
        }
        self.requester_timers(now);
        self.settle();
    }

    /// When [`RcQp::on_timer`] wants to be called next.
    pub fn next_deadline(&self) -> Option<Duration> {
        if self.state == QpState::Error {
            return None;
        }
        match (self.req.retx_at, self.req.rnr_until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Build the next frame to send into `out` (its contents replaced; its capacity, and its
    /// bytes when long enough, are reused) and
    /// return `true`, or return `false` when there is nothing to send now. Responses (ACKs,
    /// NAKs, READ responses) go before requests. Call until it returns `false`.
    pub fn poll_transmit<M: Memory + ?Sized>(&mut self, now: Duration, mem: &mut M, out: &mut Vec<u8>) -> bool {
        let sent =
            self.next_response(mem, out) || (self.state == QpState::ReadyToSend && self.next_request(now, mem, out));
        self.settle();
        sent
    }

    /// As [`RcQp::poll_transmit`], with the frame sealed ([`SealedFrame`]): its ICRC was computed
    /// over exactly its bytes by the frame builder, the last thing to write them when
    /// `poll_transmit` returns `true`. The frame takes `buf`'s allocation (`buf` is left empty);
    /// on `None`, `buf` is as it was. Send it with
    /// [`Switch::send_sealed`](crate::net::switch::Switch::send_sealed).
    pub fn poll_transmit_sealed<M: Memory + ?Sized>(
        &mut self,
        now: Duration,
        mem: &mut M,
        buf: &mut Vec<u8>,
    ) -> Option<SealedFrame> {
        self.poll_transmit(now, mem, buf).then(|| SealedFrame::of_built(std::mem::take(buf)))
    }

    /// The oldest send completion not yet taken.
    pub fn pop_send_completion(&mut self) -> Option<SendCompletion> {
        self.send_cq.pop_front()
    }

    /// The oldest receive completion not yet taken.
    pub fn pop_recv_completion(&mut self) -> Option<RecvCompletion> {
        self.recv_cq.pop_front()
    }

    /// Move to the error state (MODIFY_QP to ERR): every outstanding send and receive completes
    /// flushed, in order.
    pub fn set_error(&mut self) {
        self.enter_error();
    }

    /// Complete the oldest send request with `status` and move to the error state.
    pub(super) fn fail_oldest(&mut self, status: ReqStatus) {
        if let Some(e) = self.req.sq.pop_front() {
            self.send_cq.push_back(SendCompletion { id: e.wqe.id, status, op: e.wqe.op, bytes: e.wqe.length });
        }
        self.enter_error();
    }

    /// The error state: flush both queues, stop the timers, drop pending responses.
    pub(super) fn enter_error(&mut self) {
        if self.state == QpState::Error {
            return;
        }
        self.state = QpState::Error;
        for e in self.req.sq.drain() {
            self.send_cq.push_back(flushed_send(&e.wqe));
        }
        for r in self.resp.rq.drain(..) {
            self.recv_cq.push_back(flushed_recv(r.id));
        }
        self.req.retx_at = None;
        self.req.rnr_until = None;
        self.resp.clear_output();
    }

    /// Complete the oldest send request if it failed locally (it can go no further).
    fn settle(&mut self) {
        if self.state == QpState::Error {
            return;
        }
        if let Some(status) = self.req.sq.front().and_then(|e| e.failed) {
            self.fail_oldest(status);
        }
    }
}

fn flushed_send(wqe: &SendWqe) -> SendCompletion {
    SendCompletion { id: wqe.id, status: ReqStatus::Flushed, op: wqe.op, bytes: wqe.length }
}

fn flushed_recv(id: u64) -> RecvCompletion {
    RecvCompletion { id, status: RespStatus::Flushed, kind: RecvKind::Send, bytes: 0, imm: None, solicited: false }
}
