//! The responder (rdma_rxe rxe_resp.c's job): executes the peer's requests and answers them.
//!
//! * PSN check (IBA Vol 1 §9.7.1 splits the PSNs around the expected one; rxe_resp.c
//!   `check_psn`): the expected PSN is executed; an earlier one is a duplicate: a SEND or WRITE is acknowledged again, a READ has
//!   its responses sent again from that PSN if the READ is among the last `max_dest_rd_atomic`
//!   (rxe_resp.c `duplicate_request`); a later one is a sequence error, NAKed once until the
//!   expected PSN arrives.
//! * Opcode sequence (a Middle or Last must continue a First of the same operation, and nothing
//!   else may) and length checks (First and Middle packets carry exactly the MTU, a Last 1 to
//!   MTU bytes; rxe_resp.c `check_op_seq`, `check_length`) fail with NAK invalid request.
//! * A SEND lands in the oldest posted receive at increasing offsets; with no receive posted its
//!   First or Only packet gets an RNR NAK carrying `min_rnr_timer` (IBA §9.7.5.2.8). A message
//!   longer than the receive completes it with local-length and is NAKed invalid request.
//! * An RDMA WRITE or READ is checked against the QP's remote access flags (NAK invalid request)
//!   and its region (NAK remote access error) for its whole length on its first packet.
//! * A READ is answered with First/Middle/Last or Only response packets, AETH on First, Last
//!   and Only (IBA §9.3.5), the MSN counting the READ when it is executed (IBA C9-148 via
//!   rxe_resp.c `execute`).
//! * An atomic (CmpSwap, FetchAdd: IBA §9.4.5) is checked against the QP's remote atomic flag
//!   and `max_dest_rd_atomic` (NAK invalid request), its address's natural alignment (8 bytes:
//!   NAK invalid request, as rxe_resp.c `check_rkey` for a misaligned atomic) and its region
//!   (NAK remote access error); executed on the 8 bytes at its address and answered by an ATOMIC
//!   Acknowledge carrying the original value (AtomicAckETH). READs and atomics share the
//!   responder's resources (the last `max_dest_rd_atomic` of them, the IRRQ): a duplicate atomic
//!   among them is answered again from the saved original value, not executed again (IBA
//!   §9.4.5, the responder's atomic resources; rxe_resp.c `duplicate_request`), one no longer
//!   among them is dropped.
//! * ACKs carry the PSN of the latest packet executed and the MSN (messages completed); they go
//!   on AckReq and after [`Limits::ack_every`](super::attrs::Limits::ack_every) packets, and one
//!   not yet sent is replaced by a newer one (coalescing). Responses leave in PSN order.
//! * An invalid request or access error completes the receive in use (if any) with its error,
//!   sends the NAK and moves the QP to the error state (rxe_resp.c `do_class_ac_error`).

use std::collections::VecDeque;

use crate::net::bth::BthRepr;
use crate::net::ext::{ACK_NO_CREDITS, AethRepr, NakCode, Syndrome};
use crate::net::roce::{Transport, build_frame_overwrite};
use crate::net::{Opcode, RoceFrame, WireError};

use super::attrs::{Mtu, RemoteAccess};
use super::completer::read_response_opcode;
use super::completion::{RecvCompletion, RecvKind};
use super::memory::AtomicOp;
use super::memory::{AccessError, Memory, scatter_sges};
use super::psn::{PSN_MASK, Seq};
use super::qp::RcQp;
use super::status::RespStatus;
use super::wr::{MAX_MESSAGE, RecvWqe};

/// A READ the responder executed: what its responses carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ReadResource {
    first: Seq,
    /// The path MTU its responses are cut at (the QP's when it was executed).
    mtu: Mtu,
    npkts: u32,
    va: u64,
    rkey: u32,
    len: u32,
}

/// A READ or atomic the responder executed, kept for duplicates (its IRRQ entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resource {
    /// A READ.
    Read(ReadResource),
    /// An atomic at `psn`, and the original value it answered with.
    Atomic { psn: Seq, orig: u64 },
}

/// A response waiting to be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Response {
    /// An Acknowledge packet.
    Ack { syndrome: Syndrome, psn: Seq },
    /// READ response packets from `next` on.
    Read { res: ReadResource, next: u32 },
    /// An ATOMIC Acknowledge with the original value.
    Atomic { psn: Seq, orig: u64 },
}

/// The message being received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Current {
    /// None: the next packet must start a message.
    Idle,
    /// A SEND landing in the oldest receive, `offset` bytes so far, begun at path MTU `mtu`.
    Send { offset: u64, mtu: Mtu },
    /// An RDMA WRITE: where the next byte goes and how many remain, begun at path MTU `mtu`.
    Write { va: u64, rkey: u32, remaining: u32, total: u32, mtu: Mtu },
}

/// Responder state of a QP.
#[derive(Debug, Clone)]
pub(super) struct RespState {
    /// Posted receives, oldest first.
    pub(super) rq: VecDeque<RecvWqe>,
    /// PSN expected next.
    epsn: Seq,
    /// Messages completed (24 bits).
    msn: u32,
    /// A sequence error or RNR NAK was sent and the expected PSN has not come since.
    nak_sent: bool,
    current: Current,
    /// The latest READs and atomics, for duplicates.
    reads: VecDeque<Resource>,
    out: VecDeque<Response>,
    /// Packets executed since the last ACK was queued.
    unacked: u32,
}

impl RespState {
    /// The PSN expected next, as on the wire.
    pub(super) fn expected_psn(&self) -> u32 {
        self.epsn.wire()
    }

    pub(super) fn new(epsn: Seq) -> RespState {
        RespState {
            rq: VecDeque::new(),
            epsn,
            msn: 0,
            nak_sent: false,
            current: Current::Idle,
            reads: VecDeque::new(),
            out: VecDeque::new(),
            unacked: 0,
        }
    }

    /// Drop every response not yet sent.
    pub(super) fn clear_output(&mut self) {
        self.out.clear();
    }

    /// Keep only the latest `n` executed READs and atomics for duplicates (the responder depth
    /// changed).
    pub(super) fn keep_reads(&mut self, n: usize) {
        while self.reads.len() > n {
            self.reads.pop_front();
        }
    }

    /// Queue an Acknowledge, replacing one queued last and not yet sent.
    fn queue_ack(&mut self, syndrome: Syndrome, psn: Seq) {
        let ack = Response::Ack { syndrome, psn };
        match self.out.back_mut() {
            Some(last @ Response::Ack { .. }) => *last = ack,
            _ => self.out.push_back(ack),
        }
        self.unacked = 0;
    }
}

/// Why a request fails: the NAK to send and the status of the receive in use, if any.
struct Fatal {
    nak: NakCode,
    recv: Option<RespStatus>,
}

const fn fatal(nak: NakCode, recv: Option<RespStatus>) -> Fatal {
    Fatal { nak, recv }
}

impl RcQp {
    /// A request packet from the peer's requester.
    pub(super) fn on_request<M: Memory + ?Sized>(&mut self, frame: &RoceFrame<'_>, mem: &mut M) {
        let bth = &frame.transport.bth;
        let epsn = self.resp.epsn;
        let p = epsn.unwrap_near(bth.psn);
        if p > epsn {
            self.stats.out_of_sequence += 1;
            if !self.resp.nak_sent {
                self.resp.nak_sent = true;
                self.stats.sequence_naks_sent += 1;
                self.resp.queue_ack(Syndrome::Nak(NakCode::PsnSequenceError), epsn);
            }
            return;
        }
        if p < epsn {
            self.stats.duplicates += 1;
            self.duplicate(p, frame);
            return;
        }
        self.resp.nak_sent = false;
        let op = bth.opcode;
        let in_send = matches!(self.resp.current, Current::Send { .. });
        let in_write = matches!(self.resp.current, Current::Write { .. });
        let continues_send = matches!(op, Opcode::SendMiddle | Opcode::SendLast | Opcode::SendLastImm);
        let continues_write = matches!(op, Opcode::WriteMiddle | Opcode::WriteLast | Opcode::WriteLastImm);
        let in_order = if in_send {
            continues_send
        } else if in_write {
            continues_write
        } else {
            !continues_send && !continues_write
        };
        let result = if !in_order {
            Err(fatal(NakCode::InvalidRequest, in_send.then_some(RespStatus::RemoteInvalidRequest)))
        } else {
            match op {
                Opcode::ReadRequest => self.execute_read(p, frame, mem),
                Opcode::CompareSwap | Opcode::FetchAdd => self.execute_atomic(p, frame, mem),
                Opcode::SendFirst
                | Opcode::SendMiddle
                | Opcode::SendLast
                | Opcode::SendLastImm
                | Opcode::SendOnly
                | Opcode::SendOnlyImm => self.execute_send(p, frame, mem),
                Opcode::WriteFirst
                | Opcode::WriteMiddle
                | Opcode::WriteLast
                | Opcode::WriteLastImm
                | Opcode::WriteOnly
                | Opcode::WriteOnlyImm => self.execute_write(p, frame, mem),
                _ => Err(fatal(NakCode::InvalidRequest, None)),
            }
        };
        match result {
            Ok(Executed::Done) => {
                self.resp.epsn = p.plus(1);
                self.resp.unacked += 1;
                if bth.ack_req || self.resp.unacked >= self.limits.ack_every {
                    self.resp.queue_ack(Syndrome::Ack { credits: ACK_NO_CREDITS }, p);
                }
            }
            Ok(Executed::Responded) | Ok(Executed::NotReady) => {}
            Err(f) => self.fail_request(p, f),
        }
    }

    /// Complete the receive in use with the error, queue the NAK, move to the error state.
    fn fail_request(&mut self, p: Seq, f: Fatal) {
        if let Some(status) = f.recv
            && let Some(r) = self.resp.rq.pop_front()
        {
            self.recv_cq.push_back(RecvCompletion {
                id: r.id,
                status,
                kind: RecvKind::Send,
                bytes: 0,
                imm: None,
                solicited: false,
            });
        }
        tracing::debug!(qpn = self.attrs.qpn, psn = p.wire(), nak = ?f.nak, "request refused; QP to error");
        self.enter_error();
        self.resp.queue_ack(Syndrome::Nak(f.nak), p);
    }

    /// An RNR NAK for `p`: no receive is posted.
    fn not_ready(&mut self, p: Seq) -> Result<Executed, Fatal> {
        self.stats.rnr_naks_sent += 1;
        self.resp.nak_sent = true;
        self.resp.queue_ack(Syndrome::RnrNak { timer: self.attrs.min_rnr_timer }, p);
        Ok(Executed::NotReady)
    }

    fn execute_send<M: Memory + ?Sized>(
        &mut self,
        p: Seq,
        frame: &RoceFrame<'_>,
        mem: &mut M,
    ) -> Result<Executed, Fatal> {
        let op = frame.transport.bth.opcode;
        if op.is_first() && self.resp.rq.is_empty() {
            return self.not_ready(p);
        }
        let (offset, mtu) = match self.resp.current {
            Current::Send { offset, mtu } => (offset, mtu),
            _ => (0, self.attrs.mtu),
        };
        check_packet_length(mtu, op, frame.payload.len())
            .map_err(|()| fatal(NakCode::InvalidRequest, Some(RespStatus::RemoteInvalidRequest)))?;
        let Some(recv) = self.resp.rq.front() else {
            return Err(fatal(NakCode::InvalidRequest, None));
        };
        match scatter_sges(mem, &recv.sges, offset, frame.payload) {
            Ok(true) => {}
            Ok(false) => {
                return Err(fatal(NakCode::InvalidRequest, Some(RespStatus::LocalLength)));
            }
            Err(err) => {
                tracing::debug!(qpn = self.attrs.qpn, %err, "receive scatter refused");
                return Err(fatal(NakCode::RemoteOperationalError, Some(RespStatus::LocalProtection)));
            }
        }
        let offset = offset + frame.payload.len() as u64;
        if op.is_last() {
            let r = self.resp.rq.pop_front().expect("checked above");
            self.recv_cq.push_back(RecvCompletion {
                id: r.id,
                status: RespStatus::Ok,
                kind: RecvKind::Send,
                bytes: offset as u32,
                imm: frame.transport.immdt,
                solicited: frame.transport.bth.solicited,
            });
            self.resp.msn = (self.resp.msn + 1) & PSN_MASK;
            self.resp.current = Current::Idle;
        } else {
            self.resp.current = Current::Send { offset, mtu };
        }
        Ok(Executed::Done)
    }

    fn execute_write<M: Memory + ?Sized>(
        &mut self,
        p: Seq,
        frame: &RoceFrame<'_>,
        mem: &mut M,
    ) -> Result<Executed, Fatal> {
        let op = frame.transport.bth.opcode;
        if op.has_immdt() && self.resp.rq.is_empty() {
            return self.not_ready(p);
        }
        let (mut va, rkey, remaining, total, path_mtu) = match (self.resp.current, frame.transport.reth) {
            (Current::Write { va, rkey, remaining, total, mtu }, _) => (va, rkey, remaining, total, mtu),
            (_, Some(reth)) => {
                if !self.attrs.access.write || reth.dma_len > MAX_MESSAGE {
                    return Err(fatal(NakCode::InvalidRequest, None));
                }
                if reth.dma_len > 0 {
                    let access = RemoteAccess { write: true, ..RemoteAccess::default() };
                    mem.check_remote(reth.rkey, reth.va, reth.dma_len, access).map_err(remote_access)?;
                }
                (reth.va, reth.rkey, reth.dma_len, reth.dma_len, self.attrs.mtu)
            }
            (_, None) => return Err(fatal(NakCode::InvalidRequest, None)),
        };
        let mtu = path_mtu.bytes();
        let len = frame.payload.len();
        let ends = remaining <= mtu;
        if len != remaining.min(mtu) as usize || ends != op.is_last() {
            return Err(fatal(NakCode::InvalidRequest, None));
        }
        if len > 0 {
            mem.remote_write(rkey, va, frame.payload).map_err(remote_access)?;
        }
        va = va.wrapping_add(len as u64);
        if op.is_last() {
            self.resp.msn = (self.resp.msn + 1) & PSN_MASK;
            self.resp.current = Current::Idle;
            if op.has_immdt() {
                let r = self.resp.rq.pop_front().expect("checked above");
                self.recv_cq.push_back(RecvCompletion {
                    id: r.id,
                    status: RespStatus::Ok,
                    kind: RecvKind::RdmaWriteImm,
                    bytes: total,
                    imm: frame.transport.immdt,
                    solicited: frame.transport.bth.solicited,
                });
            }
        } else {
            let remaining = remaining - len as u32;
            self.resp.current = Current::Write { va, rkey, remaining, total, mtu: path_mtu };
        }
        Ok(Executed::Done)
    }

    fn execute_read<M: Memory + ?Sized>(
        &mut self,
        p: Seq,
        frame: &RoceFrame<'_>,
        mem: &mut M,
    ) -> Result<Executed, Fatal> {
        let Some(reth) = frame.transport.reth else {
            return Err(fatal(NakCode::InvalidRequest, None));
        };
        if !self.attrs.access.read || self.attrs.max_dest_rd_atomic == 0 || reth.dma_len > MAX_MESSAGE {
            return Err(fatal(NakCode::InvalidRequest, None));
        }
        if reth.dma_len > 0 {
            let access = RemoteAccess { read: true, ..RemoteAccess::default() };
            mem.check_remote(reth.rkey, reth.va, reth.dma_len, access).map_err(remote_access)?;
        }
        let mtu = self.attrs.mtu;
        let npkts = mtu.packets(reth.dma_len);
        let res = ReadResource { first: p, mtu, npkts, va: reth.va, rkey: reth.rkey, len: reth.dma_len };
        self.keep_resource(Resource::Read(res));
        self.resp.msn = (self.resp.msn + 1) & PSN_MASK;
        self.resp.epsn = p.plus(u64::from(npkts));
        self.resp.out.push_back(Response::Read { res, next: 0 });
        self.resp.unacked = 0;
        Ok(Executed::Responded)
    }

    /// Keep `res` among the last `max_dest_rd_atomic` READs and atomics.
    fn keep_resource(&mut self, res: Resource) {
        if self.resp.reads.len() >= usize::from(self.attrs.max_dest_rd_atomic) {
            self.resp.reads.pop_front();
        }
        self.resp.reads.push_back(res);
    }

    fn execute_atomic<M: Memory + ?Sized>(
        &mut self,
        p: Seq,
        frame: &RoceFrame<'_>,
        mem: &mut M,
    ) -> Result<Executed, Fatal> {
        let Some(a) = frame.transport.atomic else {
            return Err(fatal(NakCode::InvalidRequest, None));
        };
        if !self.attrs.access.atomic || self.attrs.max_dest_rd_atomic == 0 || a.va % 8 != 0 {
            return Err(fatal(NakCode::InvalidRequest, None));
        }
        let op = if frame.transport.bth.opcode == Opcode::CompareSwap {
            AtomicOp::CompareSwap { compare: a.compare, swap: a.swap_add }
        } else {
            AtomicOp::FetchAdd { add: a.swap_add }
        };
        let orig = mem.remote_atomic(a.rkey, a.va, op).map_err(remote_access)?;
        self.keep_resource(Resource::Atomic { psn: p, orig });
        self.resp.msn = (self.resp.msn + 1) & PSN_MASK;
        self.resp.epsn = p.plus(1);
        self.resp.out.push_back(Response::Atomic { psn: p, orig });
        self.resp.unacked = 0;
        self.stats.atomics_executed += 1;
        Ok(Executed::Responded)
    }

    /// A request with a PSN before the expected one.
    fn duplicate(&mut self, p: Seq, frame: &RoceFrame<'_>) {
        let t = &frame.transport;
        if t.bth.opcode.is_atomic() {
            // Answered again from the saved result, never executed twice.
            let saved = self.resp.reads.iter().find_map(|r| match *r {
                Resource::Atomic { psn, orig } if psn == p => Some(orig),
                _ => None,
            });
            if let Some(orig) = saved {
                self.stats.atomics_replayed += 1;
                self.resp.out.push_back(Response::Atomic { psn: p, orig });
            }
            return;
        }
        if t.bth.opcode != Opcode::ReadRequest {
            // Acknowledge again what was executed (C9-105 via rxe_resp.c `duplicate_request`).
            self.resp.queue_ack(Syndrome::Ack { credits: ACK_NO_CREDITS }, self.resp.epsn.minus(1));
            return;
        }
        let Some(reth) = t.reth else { return };
        let found = self.resp.reads.iter().find_map(|r| match *r {
            Resource::Read(r) if p >= r.first && p < r.first.plus(u64::from(r.npkts)) => Some(r),
            _ => None,
        });
        let Some(res) = found else { return };
        let k = p.since(res.first);
        let mtu = u64::from(res.mtu.bytes());
        let resumes = reth.rkey == res.rkey
            && reth.va == res.va.wrapping_add(k * mtu)
            && u64::from(reth.dma_len) == u64::from(res.len).saturating_sub(k * mtu);
        if !resumes {
            return;
        }
        let k = k as u32;
        for r in self.resp.out.iter_mut() {
            if let Response::Read { res: queued, next } = r
                && queued.first == res.first
            {
                *next = (*next).min(k);
                return;
            }
        }
        self.resp.out.push_back(Response::Read { res, next: k });
    }

    /// Build the next response into `out`, if any is waiting.
    pub(super) fn next_response<M: Memory + ?Sized>(&mut self, mem: &mut M, out: &mut Vec<u8>) -> bool {
        let Some(front) = self.resp.out.front_mut() else {
            return false;
        };
        let path = self.attrs.path;
        let msn = self.resp.msn;
        match *front {
            Response::Ack { syndrome, psn } => {
                self.resp.out.pop_front();
                let t = Transport {
                    aeth: Some(AethRepr { syndrome, msn }),
                    ..Transport::bth(BthRepr::new(Opcode::Acknowledge, self.attrs.dest_qpn, psn.wire()))
                };
                self.send_acknowledge(&t, out)
            }
            Response::Atomic { psn, orig } => {
                self.resp.out.pop_front();
                let t = Transport {
                    aeth: Some(AethRepr { syndrome: Syndrome::Ack { credits: ACK_NO_CREDITS }, msn }),
                    atomic_ack: Some(orig),
                    ..Transport::bth(BthRepr::new(Opcode::AtomicAcknowledge, self.attrs.dest_qpn, psn.wire()))
                };
                self.send_acknowledge(&t, out)
            }
            Response::Read { res, next } => {
                let mtu = res.mtu.bytes();
                let op = read_response_opcode(next, res.npkts);
                let offset = u64::from(next) * u64::from(mtu);
                let len = (u64::from(res.len) - offset).min(u64::from(mtu)) as usize;
                let psn = res.first.plus(u64::from(next));
                let aeth =
                    op.has_aeth().then_some(AethRepr { syndrome: Syndrome::Ack { credits: ACK_NO_CREDITS }, msn });
                let t = Transport { aeth, ..Transport::bth(BthRepr::new(op, self.attrs.dest_qpn, psn.wire())) };
                if next + 1 >= res.npkts {
                    self.resp.out.pop_front();
                } else if let Response::Read { next, .. } = front {
                    *next += 1;
                }
                let built = build_frame_overwrite::<ReadFail>(&path, &t, len, out, |dst| {
                    if dst.is_empty() {
                        return Ok(());
                    }
                    mem.remote_read(res.rkey, res.va.wrapping_add(offset), dst).map_err(ReadFail::Access)
                });
                match built {
                    Ok(()) => {
                        self.stats.read_responses_sent += 1;
                        true
                    }
                    Err(e) => {
                        // The region went away after the READ was checked (rxe_resp.c
                        // `read_reply`: an R_Key violation).
                        match &e {
                            ReadFail::Wire(err) => {
                                tracing::error!(qpn = self.attrs.qpn, %err, "READ response could not be built")
                            }
                            ReadFail::Access(err) => {
                                tracing::debug!(qpn = self.attrs.qpn, %err, "READ source refused")
                            }
                        }
                        self.fail_request(psn, fatal(NakCode::RemoteAccessError, None));
                        self.next_response(mem, out)
                    }
                }
            }
        }
    }
}

impl RcQp {
    /// Build an Acknowledge or ATOMIC Acknowledge (no payload) into `out`.
    fn send_acknowledge(&mut self, t: &Transport, out: &mut Vec<u8>) -> bool {
        match build_frame_overwrite::<WireError>(&self.attrs.path, t, 0, out, |_| Ok(())) {
            Ok(()) => {
                self.stats.acks_sent += 1;
                true
            }
            Err(err) => {
                tracing::error!(qpn = self.attrs.qpn, %err, opcode = ?t.bth.opcode, "acknowledge could not be built");
                false
            }
        }
    }
}

/// Length rules of SEND packets at path MTU `mtu`: First and Middle exactly the MTU, Last 1 to
/// MTU, Only up to the MTU.
fn check_packet_length(mtu: Mtu, op: Opcode, len: usize) -> Result<(), ()> {
    let mtu = mtu.bytes() as usize;
    let ok = match (op.is_first(), op.is_last()) {
        (true, true) => len <= mtu,
        (_, false) => len == mtu,
        (false, true) => (1..=mtu).contains(&len),
    };
    if ok { Ok(()) } else { Err(()) }
}

/// What executing a request packet led to.
enum Executed {
    /// Executed: the expected PSN moves on by one.
    Done,
    /// A READ or an atomic, answered by its own responses: the expected PSN moved past them.
    Responded,
    /// An RNR NAK was queued; nothing changed.
    NotReady,
}

/// Why a READ response could not be built.
enum ReadFail {
    Wire(WireError),
    Access(AccessError),
}

impl From<WireError> for ReadFail {
    fn from(e: WireError) -> Self {
        ReadFail::Wire(e)
    }
}

fn remote_access(err: AccessError) -> Fatal {
    tracing::debug!(%err, "remote access refused");
    fatal(NakCode::RemoteAccessError, None)
}
