//! The send queue as the requester and the completer share it (rdma_rxe keeps the same state in
//! `struct rxe_send_wqe`: `first_psn`, `last_psn`, `state`): the work requests not yet
//! completed, oldest first, each with its PSN range, and the requester's transmit cursor.
//!
//! PSNs are given out when a request is posted: a SEND or WRITE takes one PSN per packet, a READ
//! one PSN per response packet it asks for (IBA Vol 1 §9.7.1.? via rdma_rxe rxe_req.c
//! `update_wqe_psn`: `req.psn = first_psn + num_pkt` for a READ). Retransmission moves the cursor
//! back to the oldest unacknowledged PSN (go-back-N).

use std::collections::VecDeque;

use super::attrs::Mtu;
use super::psn::Seq;
use super::status::ReqStatus;
use super::wr::SendWqe;

/// A posted send request and its progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SqEntry {
    /// The request.
    pub(super) wqe: SendWqe,
    /// The path MTU it was cut at (the QP's when it was posted: a later change of the path MTU
    /// applies to later requests).
    pub(super) mtu: Mtu,
    /// PSN of its first packet (for a READ, of the request and of its first response).
    pub(super) first: Seq,
    /// Request packets (SEND, WRITE) or response packets (READ); 0 for a request that failed
    /// before it was given PSNs.
    pub(super) npkts: u32,
    /// Whether the request has been transmitted at least in part.
    pub(super) started: bool,
    /// READ: response packets received in order so far.
    pub(super) read_got: u32,
    /// The status it completes with as soon as it is the oldest: a local error found at post or
    /// while gathering its payload.
    pub(super) failed: Option<ReqStatus>,
}

impl SqEntry {
    /// One past its last PSN.
    pub(super) fn end(&self) -> Seq {
        self.first.plus(u64::from(self.npkts))
    }

    /// Whether it is an RDMA READ.
    pub(super) fn is_read(&self) -> bool {
        self.wqe.op.is_read()
    }

    /// Whether it is an atomic.
    pub(super) fn is_atomic(&self) -> bool {
        self.wqe.op.is_atomic()
    }

    /// Whether responses of its own complete it (a READ or an atomic), not a plain ACK.
    pub(super) fn awaits_response(&self) -> bool {
        self.wqe.op.takes_responder_resources()
    }
}

/// The send queue and the transmit cursor.
#[derive(Debug, Clone)]
pub(super) struct SendQueue {
    entries: VecDeque<SqEntry>,
    /// PSN the next posted request starts at.
    next_psn: Seq,
    /// Index of the request being transmitted (`entries.len()` when all are sent).
    tx_index: usize,
    /// Its next packet.
    tx_pkt: u32,
}

impl SendQueue {
    /// An empty queue whose first request starts at `first`.
    pub(super) fn new(first: Seq) -> SendQueue {
        SendQueue { entries: VecDeque::new(), next_psn: first, tx_index: 0, tx_pkt: 0 }
    }

    /// Append a request cut at `mtu` into `npkts` PSNs (0 for one that `failed` at post).
    pub(super) fn push(&mut self, wqe: SendWqe, mtu: Mtu, npkts: u32, failed: Option<ReqStatus>) {
        let first = self.next_psn;
        self.next_psn = first.plus(u64::from(npkts));
        self.entries.push_back(SqEntry { wqe, mtu, first, npkts, started: false, read_got: 0, failed });
    }

    /// Requests not completed.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The oldest request.
    pub(super) fn front(&self) -> Option<&SqEntry> {
        self.entries.front()
    }

    /// The oldest request, to update.
    pub(super) fn front_mut(&mut self) -> Option<&mut SqEntry> {
        self.entries.front_mut()
    }

    /// Remove the oldest request (completed), keeping the cursor on the same request (or on the
    /// next one, if it was on the removed one).
    pub(super) fn pop_front(&mut self) -> Option<SqEntry> {
        let e = self.entries.pop_front()?;
        if self.tx_index > 0 {
            self.tx_index -= 1;
        } else {
            self.tx_pkt = 0;
        }
        Some(e)
    }

    /// Remove every request, oldest first.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = SqEntry> + '_ {
        self.tx_index = 0;
        self.tx_pkt = 0;
        self.entries.drain(..)
    }

    /// The request under the cursor and its next packet.
    pub(super) fn current(&self) -> Option<(&SqEntry, u32)> {
        self.entries.get(self.tx_index).map(|e| (e, self.tx_pkt))
    }

    /// Mark the request under the cursor started.
    pub(super) fn current_mut(&mut self) -> Option<&mut SqEntry> {
        self.entries.get_mut(self.tx_index)
    }

    /// PSN of the next packet the cursor sends.
    pub(super) fn cursor_psn(&self) -> Seq {
        match self.entries.get(self.tx_index) {
            Some(e) => e.first.plus(u64::from(self.tx_pkt)),
            None => self.next_psn,
        }
    }

    /// Move the cursor past the packet just sent: to the next packet, or to the next request
    /// after the last packet (a READ request is the only packet of its request).
    pub(super) fn advance(&mut self) {
        let Some(e) = self.entries.get(self.tx_index) else {
            return;
        };
        if e.is_read() || self.tx_pkt + 1 >= e.npkts {
            self.tx_index += 1;
            self.tx_pkt = 0;
        } else {
            self.tx_pkt += 1;
        }
    }

    /// Put the cursor on PSN `psn` (go-back-N, or forward past what was acknowledged): the
    /// request whose range holds it, at that packet; past every request if none does.
    pub(super) fn seek(&mut self, psn: Seq) {
        let i = self.entries.partition_point(|e| e.end() <= psn && e.failed.is_none());
        self.tx_index = i;
        self.tx_pkt = match self.entries.get(i) {
            Some(e) if e.failed.is_none() => psn.since(e.first).min(u64::from(e.npkts.saturating_sub(1))) as u32,
            _ => 0,
        };
    }

    /// PSN the next posted request starts at.
    #[cfg(test)]
    pub(super) fn next_psn(&self) -> Seq {
        self.next_psn
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roce::transport::wr::{SendOp, Sge};

    fn wqe(op: SendOp) -> SendWqe {
        SendWqe {
            id: 0,
            op,
            sges: smallvec::smallvec![Sge { addr: 0, lkey: 0, len: 0 }],
            length: 0,
            signaled: true,
            solicited: false,
        }
    }

    #[test]
    fn the_cursor_walks_packets_then_requests_and_seeks_back() {
        let mut q = SendQueue::new(Seq::start(100));
        q.push(wqe(SendOp::Send { imm: None }), Mtu::Mtu1024, 3, None);
        q.push(wqe(SendOp::RdmaRead { va: 0, rkey: 0 }), Mtu::Mtu1024, 4, None);
        q.push(wqe(SendOp::Send { imm: None }), Mtu::Mtu1024, 1, None);
        assert_eq!(q.next_psn().wire(), 108);
        let mut psns = Vec::new();
        while q.current().is_some() {
            psns.push(q.cursor_psn().wire());
            q.advance();
        }
        assert_eq!(psns, vec![100, 101, 102, 103, 107], "a READ is one request packet for four PSNs");
        q.seek(Seq::start(105));
        assert_eq!((q.cursor_psn().wire(), q.current().unwrap().0.is_read()), (105, true), "a READ resumes mid-way");
        q.seek(Seq::start(101));
        assert_eq!(q.cursor_psn().wire(), 101);
        q.pop_front();
        assert_eq!(q.cursor_psn().wire(), 103, "the cursor's request was completed: on to the next");
        q.seek(Seq::start(108));
        assert!(q.current().is_none());
    }
}
