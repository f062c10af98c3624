//! The requester (rdma_rxe rxe_req.c's job): turns send requests into request packets.
//!
//! * SEND and RDMA WRITE messages are cut at the path MTU into First/Middle/Last packets, or one
//!   Only packet (with Immediate variants carrying ImmDt on the Last or Only packet), one PSN
//!   each; a WRITE's First or Only packet carries the RETH with the whole length (IBA Vol 1
//!   §9.4.1-9.4.3; rdma_rxe rxe_req.c `next_opcode_rc`, `init_req_packet`).
//! * An RDMA READ is one READ request packet whose PSN is that of its first response; it
//!   reserves one PSN per response packet (rxe_req.c `update_wqe_psn`).
//! * An atomic is one CmpSwap or FetchAdd packet with an AtomicETH (remote address and key,
//!   swap or add data, compare data: IBA §9.4.5), one PSN, answered by one ATOMIC Acknowledge.
//! * AckReq is set on the last packet of each message and on every
//!   [`Limits::ack_req_every`](super::attrs::Limits::ack_req_every)-th packet (rxe_req.c
//!   `init_req_packet`, `RXE_MAX_PKT_PER_ACK`).
//! * At most [`Limits::max_unacked_psns`](super::attrs::Limits::max_unacked_psns) PSNs go out
//!   past the oldest unacknowledged one (rxe_req.c, `RXE_MAX_UNACKED_PSNS`), and at most
//!   `max_rd_atomic` READs and atomics are outstanding (the initiator depth of the Modify QP
//!   verb, IBA §11.2.4.2; rxe_req.c `check_init_depth`).
//! * Retransmission is go-back-N from the oldest unacknowledged PSN: after the local ACK timeout
//!   (IBA §9.7.6.1.3), a PSN sequence error NAK, or a gap in READ responses, counting the retry
//!   count; after an RNR NAK, when the NAK's timer has run, counting the RNR retry count
//!   (IBA §9.7.5.2.8). A packet resent from the middle of a message is the same packet as before;
//!   a READ resent from the middle asks for the rest only (rxe_req.c `req_retry`).

use std::time::Duration;

use crate::net::bth::BthRepr;
use crate::net::ext::{AtomicEthRepr, RethRepr};
use crate::net::roce::{Transport, build_frame_overwrite};
use crate::net::{Opcode, WireError};

use super::attrs::{QpAttrs, RNR_RETRY_INFINITE};
use super::memory::{AccessError, Memory, gather_sges};
use super::psn::Seq;
use super::qp::{QpState, RcQp};
use super::sq::SendQueue;
use super::status::ReqStatus;
use super::wr::SendOp;

/// Requester and completer state of a QP.
#[derive(Debug, Clone)]
pub(super) struct ReqState {
    /// Requests not completed, with the transmit cursor.
    pub(super) sq: SendQueue,
    /// Oldest PSN not acknowledged.
    pub(super) una: Seq,
    /// One past the latest PSN sent (for a READ, reserved for its responses).
    pub(super) sent_end: Seq,
    /// READs and atomics started and not completed.
    pub(super) reads_in_flight: u32,
    /// Packets sent since the last with AckReq.
    pub(super) since_ack_req: u32,
    /// Transport retries left before retry-exceeded.
    pub(super) retry_left: u8,
    /// RNR retries left before rnr-retry-exceeded (not counted down when the count is 7).
    pub(super) rnr_left: u8,
    /// A go-back-N retry has started and nothing has been acknowledged since: further sequence
    /// NAKs and gaps are consequences of it (rdma_rxe rxe_comp.c `started_retry`).
    pub(super) retrying: bool,
    /// When the retransmission timer expires.
    pub(super) retx_at: Option<Duration>,
    /// Until when an RNR NAK holds transmission back.
    pub(super) rnr_until: Option<Duration>,
}

impl ReqState {
    pub(super) fn new(attrs: &QpAttrs) -> ReqState {
        let start = Seq::start(attrs.sq_psn);
        ReqState {
            sq: SendQueue::new(start),
            una: start,
            sent_end: start,
            reads_in_flight: 0,
            since_ack_req: 0,
            retry_left: attrs.retry_cnt,
            rnr_left: attrs.rnr_retry,
            retrying: false,
            retx_at: None,
            rnr_until: None,
        }
    }
}

/// Why a frame could not be built.
enum BuildError {
    Wire(WireError),
    Access(AccessError),
}

impl From<WireError> for BuildError {
    fn from(e: WireError) -> Self {
        BuildError::Wire(e)
    }
}

/// The opcode of packet `k` of `n` of a SEND or WRITE.
fn segment_opcode(op: &SendOp, k: u32, n: u32) -> Opcode {
    let (first, last) = (k == 0, k + 1 == n);
    match (op, first, last) {
        (SendOp::Send { imm: None }, true, true) => Opcode::SendOnly,
        (SendOp::Send { imm: Some(_) }, true, true) => Opcode::SendOnlyImm,
        (SendOp::Send { .. }, true, false) => Opcode::SendFirst,
        (SendOp::Send { .. }, false, false) => Opcode::SendMiddle,
        (SendOp::Send { imm: None }, false, true) => Opcode::SendLast,
        (SendOp::Send { imm: Some(_) }, false, true) => Opcode::SendLastImm,
        (SendOp::RdmaWrite { imm: None, .. }, true, true) => Opcode::WriteOnly,
        (SendOp::RdmaWrite { imm: Some(_), .. }, true, true) => Opcode::WriteOnlyImm,
        (SendOp::RdmaWrite { .. }, true, false) => Opcode::WriteFirst,
        (SendOp::RdmaWrite { .. }, false, false) => Opcode::WriteMiddle,
        (SendOp::RdmaWrite { imm: None, .. }, false, true) => Opcode::WriteLast,
        (SendOp::RdmaWrite { imm: Some(_), .. }, false, true) => Opcode::WriteLastImm,
        (SendOp::RdmaRead { .. }, _, _) => Opcode::ReadRequest,
        (SendOp::CompareSwap { .. }, _, _) => Opcode::CompareSwap,
        (SendOp::FetchAdd { .. }, _, _) => Opcode::FetchAdd,
    }
}

impl RcQp {
    /// Build the next request packet into `out`, if the cursor has one and the window, the READ
    /// depth and any RNR wait allow it.
    pub(super) fn next_request<M: Memory + ?Sized>(&mut self, now: Duration, mem: &mut M, out: &mut Vec<u8>) -> bool {
        if self.req.rnr_until.is_some() {
            return false;
        }
        let Some((entry, k)) = self.req.sq.current() else {
            return false;
        };
        if entry.failed.is_some() {
            return false;
        }
        // In SQD only what was begun goes on (IBA §10.3.1).
        if self.state == QpState::SendQueueDrain && !entry.started {
            return false;
        }
        let psn = entry.first.plus(u64::from(k));
        if psn.since(self.req.una) >= u64::from(self.limits.max_unacked_psns) {
            return false;
        }
        if entry.awaits_response() && !entry.started && self.req.reads_in_flight >= u32::from(self.attrs.max_rd_atomic)
        {
            return false;
        }
        let mtu = entry.mtu.bytes();
        let wqe = &entry.wqe;
        let op = segment_opcode(&wqe.op, k, entry.npkts);
        let last = op.is_last();
        self.req.since_ack_req += 1;
        let ack_req = last || self.req.since_ack_req >= self.limits.ack_req_every;
        if ack_req {
            self.req.since_ack_req = 0;
        }
        let mut bth = BthRepr::new(op, self.attrs.dest_qpn, psn.wire());
        bth.ack_req = ack_req;
        let offset = u64::from(k) * u64::from(mtu);
        let built = match wqe.op {
            SendOp::RdmaRead { va, rkey } => {
                // A READ resent from response k asks for the rest only (rxe_req.c `req_retry`).
                let reth = RethRepr { va: va.wrapping_add(offset), rkey, dma_len: wqe.length - offset as u32 };
                let t = Transport { reth: Some(reth), ..Transport::bth(bth) };
                build_frame_overwrite::<BuildError>(&self.attrs.path, &t, 0, out, |_| Ok(()))
            }
            SendOp::CompareSwap { va, rkey, compare, swap } => {
                let atomic = AtomicEthRepr { va, rkey, swap_add: swap, compare };
                let t = Transport { atomic: Some(atomic), ..Transport::bth(bth) };
                build_frame_overwrite::<BuildError>(&self.attrs.path, &t, 0, out, |_| Ok(()))
            }
            SendOp::FetchAdd { va, rkey, add } => {
                let atomic = AtomicEthRepr { va, rkey, swap_add: add, compare: 0 };
                let t = Transport { atomic: Some(atomic), ..Transport::bth(bth) };
                build_frame_overwrite::<BuildError>(&self.attrs.path, &t, 0, out, |_| Ok(()))
            }
            SendOp::Send { imm } | SendOp::RdmaWrite { imm, .. } => {
                let len = (wqe.length - offset as u32).min(mtu) as usize;
                // SE goes on the last packet of a SEND or a WRITE with immediate (rxe_req.c
                // `init_req_packet`).
                bth.solicited = wqe.solicited && last && (matches!(wqe.op, SendOp::Send { .. }) || imm.is_some());
                let reth = match wqe.op {
                    SendOp::RdmaWrite { va, rkey, .. } if op.has_reth() => {
                        Some(RethRepr { va, rkey, dma_len: wqe.length })
                    }
                    _ => None,
                };
                let t = Transport { reth, immdt: imm.filter(|_| op.has_immdt()), ..Transport::bth(bth) };
                build_frame_overwrite::<BuildError>(&self.attrs.path, &t, len, out, |dst| {
                    gather_sges(mem, &wqe.sges, offset, dst).map_err(BuildError::Access)
                })
            }
        };
        match built {
            Ok(()) => {}
            Err(e) => {
                let status = match e {
                    BuildError::Access(err) => {
                        tracing::debug!(qpn = self.attrs.qpn, id = wqe.id, %err, "send gather refused");
                        ReqStatus::LocalProtection
                    }
                    BuildError::Wire(err) => {
                        tracing::error!(qpn = self.attrs.qpn, id = wqe.id, %err, "request packet could not be built");
                        ReqStatus::LocalQpOperation
                    }
                };
                if let Some(e) = self.req.sq.current_mut() {
                    e.failed = Some(status);
                }
                return false;
            }
        }
        let end = if op == Opcode::ReadRequest { entry.end() } else { psn.plus(1) };
        if psn < self.req.sent_end {
            self.stats.retransmitted += 1;
        }
        self.stats.requests_sent += 1;
        if let Some(e) = self.req.sq.current_mut()
            && !e.started
        {
            e.started = true;
            if e.awaits_response() {
                self.req.reads_in_flight += 1;
            }
        }
        self.req.sq.advance();
        self.req.sent_end = self.req.sent_end.max(end);
        if self.req.retx_at.is_none() {
            self.req.retx_at = self.attrs.ack_timeout().map(|t| now + t);
        }
        true
    }

    /// Run the requester's timers at `now`.
    pub(super) fn requester_timers(&mut self, now: Duration) {
        if self.req.rnr_until.is_some_and(|t| t <= now) {
            self.req.rnr_until = None;
        }
        if self.req.retx_at.is_some_and(|t| t <= now) {
            self.req.retx_at = None;
            if self.req.una < self.req.sent_end {
                self.stats.timeouts += 1;
                self.retry(true);
            }
        }
    }

    /// Go back to the oldest unacknowledged PSN, counting a transport retry (IBA §9.7.6.1.3 for
    /// timeouts; rdma_rxe rxe_comp.c `COMPST_ERROR_RETRY` for sequence errors too). A sequence
    /// retry while one is already under way is not started again.
    pub(super) fn retry(&mut self, timeout: bool) {
        if !timeout && self.req.retrying {
            return;
        }
        if self.req.retry_left == 0 {
            self.fail_oldest(ReqStatus::RetryExceeded);
            return;
        }
        self.req.retry_left -= 1;
        if !timeout {
            self.stats.sequence_retries += 1;
        }
        self.req.retrying = true;
        let una = self.req.una;
        self.req.sq.seek(una);
    }

    /// An RNR NAK for the oldest unacknowledged PSN: wait `delay`, then resend from it; or fail
    /// the oldest request with rnr-retry-exceeded once the RNR retry count is spent.
    pub(super) fn rnr_wait(&mut self, now: Duration, delay: Duration) {
        if self.req.rnr_left == 0 {
            self.fail_oldest(ReqStatus::RnrRetryExceeded);
            return;
        }
        if self.attrs.rnr_retry != RNR_RETRY_INFINITE {
            self.req.rnr_left -= 1;
        }
        self.stats.rnr_retries += 1;
        self.req.retrying = true;
        let una = self.req.una;
        self.req.sq.seek(una);
        self.req.rnr_until = Some(now + delay);
        self.req.retx_at = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_get_the_opcodes_of_their_position() {
        let send = SendOp::Send { imm: None };
        let send_imm = SendOp::Send { imm: Some(1) };
        let write = SendOp::RdmaWrite { va: 0, rkey: 0, imm: None };
        let write_imm = SendOp::RdmaWrite { va: 0, rkey: 0, imm: Some(1) };
        let ops = |op: &SendOp, n| (0..n).map(|k| segment_opcode(op, k, n)).collect::<Vec<_>>();
        assert_eq!(ops(&send, 1), [Opcode::SendOnly]);
        assert_eq!(ops(&send_imm, 3), [Opcode::SendFirst, Opcode::SendMiddle, Opcode::SendLastImm]);
        assert_eq!(ops(&write, 2), [Opcode::WriteFirst, Opcode::WriteLast]);
        assert_eq!(ops(&write_imm, 1), [Opcode::WriteOnlyImm]);
        assert_eq!(ops(&write_imm, 3)[2], Opcode::WriteLastImm);
        assert_eq!(segment_opcode(&SendOp::RdmaRead { va: 0, rkey: 0 }, 0, 9), Opcode::ReadRequest);
    }
}
