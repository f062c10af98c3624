//! The transport of one reliable-connected QP and how the slow path drives it.
//!
//! Inputs: [`RcQp::post_send`], [`RcQp::post_recv`], [`RcQp::handle_frame`] (a parsed frame for
//! this QP), [`RcQp::on_timer`], the state changes [`RcQp::ready_to_send`],
//! [`RcQp::drain_send_queue`] and [`RcQp::set_error`], and attribute changes
//! ([`RcQp::modify`]). Outputs: frames from
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

/// The state of a QP as far as its transport is concerned (IBA Vol 1 §10.3.1, the QP state
/// diagram: the responder works from RTR on, the requester only in RTS and, for what it has
/// begun, in SQD).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QpState {
    /// Ready to receive (RTR): requests from the peer are executed and answered (ACKs, NAKs,
    /// RNR NAKs, READ responses, duplicates); nothing is requested. Software may leave a
    /// receive-only QP here (perftest's bandwidth servers do), and rdma_rxe takes requests from
    /// RTR on (rxe_recv.c `check_type_state`).
    ReadyToReceive,
    /// Ready to send (RTS): requests go out, requests from the peer are answered.
    ReadyToSend,
    /// Send queue drain (SQD): requests already begun are carried to their end (retransmitted
    /// if need be), none is begun; the responder works as in RTS (IBA §10.3.1, "Send Queue
    /// Drain state").
    SendQueueDrain,
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
    /// Atomic requests executed (each answered by an ATOMIC Acknowledge).
    pub atomics_executed: u64,
    /// Duplicate atomics answered again from their saved result.
    pub atomics_replayed: u64,
}

/// The RC transport of one QP: requester, responder and completer.
#[derive(Debug, Clone)]
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
        let mut qp = RcQp::receiving(attrs, limits)?;
        qp.state = QpState::ReadyToSend;
        Ok(qp)
    }

    /// The transport of a QP moved to RTR with `attrs` and `limits`: a responder. The requester's
    /// attributes (`sq_psn`, `timeout`, `retry_cnt`, `rnr_retry`, `max_rd_atomic`) are not used
    /// until [`RcQp::ready_to_send`] gives them.
    pub fn receiving(attrs: QpAttrs, limits: Limits) -> Result<RcQp, AttrError> {
        attrs.validate()?;
        limits.validate()?;
        Ok(RcQp {
            req: ReqState::new(&attrs),
            resp: RespState::new(Seq::start(attrs.rq_psn)),
            attrs,
            limits,
            state: QpState::ReadyToReceive,
            send_cq: VecDeque::new(),
            recv_cq: VecDeque::new(),
            stats: TransportStats::default(),
        })
    }

    /// RTR→RTS: the requester starts with `attrs`' SQ PSN, timeout, retry counts and initiator
    /// depth (the rest of `attrs` is applied as [`RcQp::modify`] applies it). Nothing happens in
    /// another state than RTR.
    pub fn ready_to_send(&mut self, attrs: QpAttrs) -> Result<(), AttrError> {
        if self.state != QpState::ReadyToReceive {
            return Ok(());
        }
        self.modify(attrs)?;
        self.req = ReqState::new(&self.attrs);
        self.state = QpState::ReadyToSend;
        Ok(())
    }

    /// RTS→SQD: begin no new request; carry those begun to their end. SQD→RTS is
    /// [`RcQp::resume_sending`].
    pub fn drain_send_queue(&mut self) {
        if self.state == QpState::ReadyToSend {
            self.state = QpState::SendQueueDrain;
        }
    }

    /// SQD→RTS: requests are begun again.
    pub fn resume_sending(&mut self) {
        if self.state == QpState::SendQueueDrain {
            self.state = QpState::ReadyToSend;
        }
    }

    /// In SQD, whether every request begun has completed (the send queue is drained; IBA
    /// §10.3.1 has the CI notified then, if it asked to be).
    pub fn send_queue_drained(&self) -> bool {
        self.state == QpState::SendQueueDrain && self.req.sq.front().is_none_or(|e| !e.started)
    }

    /// Change attributes of a QP in RTS or SQD (MODIFY_QP without a state change, RTS→RTS,
    /// SQD→SQD, SQD→RTS): `attrs` replaces the current ones. What each change does:
    ///
    /// * `timeout`: the next time the retransmission timer is started;
    /// * `retry_cnt`, `rnr_retry`: the counts start again from the new values (rdma_rxe
    ///   rxe_qp.c `rxe_qp_from_attr` sets `comp.retry_cnt` and `comp.rnr_retry` the same way);
    /// * `min_rnr_timer`, `access`: the next RNR NAK and the next request checked;
    /// * `mtu`: messages posted from now on, and messages the peer begins from now on (those
    ///   under way keep the MTU they began with);
    /// * `path`: every frame sent from now on, and which frames are taken as the peer's;
    /// * `max_rd_atomic`, `max_dest_rd_atomic`: the next READ begun, and how many executed READs
    ///   a duplicate can still replay.
    ///
    /// The QP numbers and PSNs cannot change here (IBA §11.2.4.2 lists none of them past RTR):
    /// those of `attrs` are ignored.
    pub fn modify(&mut self, attrs: QpAttrs) -> Result<(), AttrError> {
        attrs.validate()?;
        let old = self.attrs;
        self.attrs = QpAttrs {
            qpn: old.qpn,
            dest_qpn: old.dest_qpn,
            rq_psn: old.rq_psn,
            sq_psn: if self.state == QpState::ReadyToReceive { attrs.sq_psn } else { old.sq_psn },
            ..attrs
        };
        if attrs.retry_cnt != old.retry_cnt {
            self.req.retry_left = attrs.retry_cnt;
        }
        if attrs.rnr_retry != old.rnr_retry {
            self.req.rnr_left = attrs.rnr_retry;
        }
        self.resp.keep_reads(usize::from(attrs.max_dest_rd_atomic));
        Ok(())
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

    /// Queue a send request. In the error state it completes flushed at once; in RTR, where a
    /// QP may not request (IBA §10.3.1; rdma_rxe refuses posting before RTS), it completes with
    /// LOCAL_QP_OPERATION_ERR at once and the QP stays as it is. A request that cannot be
    /// started (see [`SendWqe::check`]) completes with its error when it becomes the oldest, and
    /// moves the QP to the error state then. In SQD it waits until [`RcQp::resume_sending`].
    pub fn post_send(&mut self, wqe: SendWqe) {
        match self.state {
            QpState::Error => {
                self.send_cq.push_back(flushed_send(&wqe));
                return;
            }
            QpState::ReadyToReceive => {
                let c =
                    SendCompletion { id: wqe.id, status: ReqStatus::LocalQpOperation, op: wqe.op, bytes: wqe.length };
                self.send_cq.push_back(c);
                return;
            }
            QpState::ReadyToSend | QpState::SendQueueDrain => {}
        }
        let mut failed = wqe.check().err();
        if failed.is_none() && wqe.op.takes_responder_resources() && self.attrs.max_rd_atomic == 0 {
            failed = Some(ReqStatus::LocalQpOperation);
        }
        let mtu = self.attrs.mtu;
        let npkts = if failed.is_some() { 0 } else { mtu.packets(wqe.length) };
        self.req.sq.push(wqe, mtu, npkts, failed);
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
        } else if self.state == QpState::ReadyToReceive {
            // Nothing was requested before RTS: nothing can be answered.
            self.stats.stale_responses += 1;
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
        let requesting = matches!(self.state, QpState::ReadyToSend | QpState::SendQueueDrain);
        let sent = self.next_response(mem, out) || (requesting && self.next_request(now, mem, out));
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
