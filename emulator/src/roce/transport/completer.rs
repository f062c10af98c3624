//! The completer (rdma_rxe rxe_comp.c's job): takes ACKs, NAKs and READ responses and completes
//! send requests, strictly in order.
//!
//! * An ACK acknowledges every PSN up to its own (IBA Vol 1 §9.7.5.1; coalesced ACKs); requests
//!   whose last PSN it covers complete ok (reported when signaled; IBA §10.7.3.1).
//! * A READ's responses are scattered into its SGEs in PSN order; a response also acknowledges
//!   every request before the READ (an implied ACK). A response past the next expected one, or
//!   an ACK past a READ whose responses are missing, means responses were lost: the requester
//!   retries from the oldest unacknowledged PSN (rxe_comp.c `check_psn`).
//! * An ATOMIC Acknowledge completes the atomic with its PSN: the original remote value in its
//!   AtomicAckETH lands in the atomic's local buffer as a host-order u64 (IBA Vol 1 §9.4.5;
//!   rxe_comp.c `do_atomic`), and it acknowledges the requests before it, as a READ response
//!   does. A plain ACK past an atomic not yet answered means the answer was lost (retry).
//! * A PSN sequence error NAK acknowledges the PSNs before it and retries from it; an RNR NAK
//!   does the same after the NAK's timer (IBA §9.7.5.2.8); a NAK invalid request, remote access
//!   or remote operational error completes the oldest request with that error and moves the QP
//!   to the error state (rxe_comp.c `check_ack`).
//! * A response that does not fit (a READ response where a SEND was, the wrong opcode or length
//!   for its position, an AETH that is not an ACK) completes the oldest request with
//!   bad-response.

use std::time::Duration;

use crate::net::ext::{NakCode, Syndrome};
use crate::net::{Opcode, RoceFrame};

use super::attrs::rnr_timer_delay;
use super::completion::SendCompletion;
use super::memory::{Memory, scatter_sges};
use super::psn::Seq;
use super::qp::{QpState, RcQp};
use super::status::ReqStatus;

/// The opcode of response packet `k` of `n` of a READ.
pub(super) fn read_response_opcode(k: u32, n: u32) -> Opcode {
    match (k == 0, k + 1 == n) {
        (true, true) => Opcode::ReadResponseOnly,
        (true, false) => Opcode::ReadResponseFirst,
        (false, false) => Opcode::ReadResponseMiddle,
        (false, true) => Opcode::ReadResponseLast,
    }
}

impl RcQp {
    /// A response packet from the peer's responder.
    pub(super) fn on_response<M: Memory + ?Sized>(&mut self, now: Duration, frame: &RoceFrame<'_>, mem: &mut M) {
        let t = &frame.transport;
        let p = self.req.una.unwrap_near(t.bth.psn);
        if p >= self.req.sent_end {
            // Nothing was sent with that PSN.
            self.stats.stale_responses += 1;
            return;
        }
        if t.bth.opcode == Opcode::AtomicAcknowledge {
            self.on_atomic_ack(now, p, frame, mem);
            return;
        }
        if t.bth.opcode != Opcode::Acknowledge {
            self.on_read_response(now, p, frame, mem);
            return;
        }
        let Some(aeth) = t.aeth else { return };
        match aeth.syndrome {
            Syndrome::Ack { .. } => {
                if !self.acked_through(now, p) {
                    self.stats.stale_responses += 1;
                }
            }
            Syndrome::RnrNak { timer } => {
                self.acked_through(now, p.minus(1));
                if self.state == QpState::Error || p != self.req.una || self.req.rnr_until.is_some() {
                    self.stats.stale_responses += 1;
                    return;
                }
                self.rnr_wait(now, rnr_timer_delay(timer));
            }
            Syndrome::Nak(code) => {
                self.acked_through(now, p.minus(1));
                if self.state == QpState::Error || p < self.req.una {
                    self.stats.stale_responses += 1;
                    return;
                }
                match code {
                    NakCode::PsnSequenceError => self.retry(false),
                    NakCode::InvalidRequest => self.fail_oldest(ReqStatus::RemoteInvalidRequest),
                    NakCode::RemoteAccessError => self.fail_oldest(ReqStatus::RemoteAccess),
                    NakCode::RemoteOperationalError | NakCode::InvalidRdRequest => {
                        self.fail_oldest(ReqStatus::RemoteOperation)
                    }
                }
            }
        }
    }

    /// Acknowledge every PSN up to `a`: complete the requests it covers, move the oldest
    /// unacknowledged PSN on, and on progress reset the retry counts and restart the timer.
    /// `false` when it acknowledged nothing new.
    fn acked_through(&mut self, now: Duration, a: Seq) -> bool {
        let before = self.req.una;
        let next = a.plus(1);
        while let Some(front) = self.req.sq.front() {
            if front.failed.is_some() {
                break;
            }
            if front.awaits_response() {
                if next > front.first.plus(u64::from(front.read_got)) {
                    // An ACK past a READ whose responses have not all come (or an atomic not
                    // answered): they were lost.
                    self.retry(false);
                }
                break;
            }
            if front.end() > next || !front.started {
                break;
            }
            self.complete_oldest();
        }
        let mut una = self.req.una.max(next);
        if let Some(front) = self.req.sq.front().filter(|f| f.awaits_response()) {
            una = una.min(front.first.plus(u64::from(front.read_got)).max(self.req.una));
        }
        self.req.una = una;
        let progress = una > before;
        if progress {
            self.progress(now);
        }
        progress
    }

    /// Something new was acknowledged: the retry counts start again (rdma_rxe rxe_comp.c
    /// `reset_retry_counters`), the cursor skips what needs no resending, and the timer runs
    /// again if anything is still outstanding.
    fn progress(&mut self, now: Duration) {
        self.req.retry_left = self.attrs.retry_cnt;
        self.req.rnr_left = self.attrs.rnr_retry;
        self.req.retrying = false;
        let una = self.req.una;
        if self.req.sq.cursor_psn() < una {
            self.req.sq.seek(una);
        }
        self.req.retx_at = if una < self.req.sent_end { self.attrs.ack_timeout().map(|t| now + t) } else { None };
    }

    /// The oldest request is done: report it if signaled, and drop it.
    fn complete_oldest(&mut self) {
        let Some(e) = self.req.sq.pop_front() else {
            return;
        };
        if e.awaits_response() {
            self.req.reads_in_flight = self.req.reads_in_flight.saturating_sub(1);
        }
        if e.wqe.signaled {
            self.send_cq.push_back(SendCompletion {
                id: e.wqe.id,
                status: ReqStatus::Ok,
                op: e.wqe.op,
                bytes: e.wqe.length,
            });
        }
    }

    /// A READ response or ATOMIC Acknowledge with PSN `p` acknowledges the requests before its
    /// READ or atomic: complete them. Whether the oldest request is left to answer (`false`
    /// for a stale response, nothing outstanding, or a request that already failed).
    fn before_response(&mut self, p: Seq) -> bool {
        if p < self.req.una {
            self.stats.stale_responses += 1;
            return false;
        }
        while let Some(front) = self.req.sq.front() {
            if front.failed.is_some() || front.awaits_response() || front.end() > p || !front.started {
                break;
            }
            self.complete_oldest();
        }
        match self.req.sq.front() {
            None => {
                self.stats.stale_responses += 1;
                false
            }
            Some(front) => front.failed.is_none(),
        }
    }

    /// A READ response packet with PSN `p`.
    fn on_read_response<M: Memory + ?Sized>(&mut self, now: Duration, p: Seq, frame: &RoceFrame<'_>, mem: &mut M) {
        if !self.before_response(p) {
            return;
        }
        let Some(front) = self.req.sq.front() else { return };
        if !front.is_read() || p < front.first {
            self.fail_oldest(ReqStatus::BadResponse);
            return;
        }
        let k = p.since(front.first);
        if k != u64::from(front.read_got) {
            // A response after a gap (or for a later READ): the missing ones were lost.
            self.stats.stale_responses += 1;
            self.req.una = self.req.una.max(front.first.plus(u64::from(front.read_got)));
            self.retry(false);
            return;
        }
        let k = k as u32;
        let mtu = front.mtu.bytes();
        let want_len = (front.wqe.length - k * mtu).min(mtu) as usize;
        let t = &frame.transport;
        let aeth_ok = t.aeth.is_none_or(|a| matches!(a.syndrome, Syndrome::Ack { .. }));
        if t.bth.opcode != read_response_opcode(k, front.npkts) || frame.payload.len() != want_len || !aeth_ok {
            self.fail_oldest(ReqStatus::BadResponse);
            return;
        }
        match scatter_sges(mem, &front.wqe.sges, u64::from(k) * u64::from(mtu), frame.payload) {
            Ok(true) => {}
            Ok(false) | Err(_) => {
                self.fail_oldest(ReqStatus::LocalProtection);
                return;
            }
        }
        let done = {
            let Some(front) = self.req.sq.front_mut() else {
                return;
            };
            front.read_got += 1;
            front.read_got == front.npkts
        };
        self.req.una = p.plus(1);
        if done {
            self.complete_oldest();
        }
        self.progress(now);
    }
}

impl RcQp {
    /// An ATOMIC Acknowledge with PSN `p`.
    fn on_atomic_ack<M: Memory + ?Sized>(&mut self, now: Duration, p: Seq, frame: &RoceFrame<'_>, mem: &mut M) {
        if !self.before_response(p) {
            return;
        }
        let Some(front) = self.req.sq.front() else { return };
        if front.awaits_response() && p > front.first.plus(u64::from(front.read_got)) {
            // An answer for a later request: the oldest one's responses were lost.
            self.stats.stale_responses += 1;
            self.retry(false);
            return;
        }
        let t = &frame.transport;
        let aeth_ok = t.aeth.is_some_and(|a| matches!(a.syndrome, Syndrome::Ack { .. }));
        let (true, Some(orig), true) = (front.is_atomic() && p == front.first, t.atomic_ack, aeth_ok) else {
            self.fail_oldest(ReqStatus::BadResponse);
            return;
        };
        match scatter_sges(mem, &front.wqe.sges, 0, &orig.to_le_bytes()) {
            Ok(true) => {}
            Ok(false) | Err(_) => {
                self.fail_oldest(ReqStatus::LocalProtection);
                return;
            }
        }
        self.req.una = p.plus(1);
        self.complete_oldest();
        self.progress(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_responses_are_first_middle_last_or_only() {
        let ops: Vec<Opcode> = (0..4).map(|k| read_response_opcode(k, 4)).collect();
        assert_eq!(
            ops,
            [
                Opcode::ReadResponseFirst,
                Opcode::ReadResponseMiddle,
                Opcode::ReadResponseMiddle,
                Opcode::ReadResponseLast
            ]
        );
        assert_eq!(read_response_opcode(0, 1), Opcode::ReadResponseOnly);
    }
}
