//! The send side of a queue pair: SENDs and RDMA READs posted to the SQ, their completions taken
//! from the send CQ.
//!
//! Posting is stores to memory and one doorbell store (qplib_fp.c `bnxt_qplib_post_send`,
//! `bnxt_qplib_fill_msn_search`, `bnxt_qplib_fill_psn_search`, `bnxt_qplib_post_send_db`): the
//! 128-byte WQE at the producer's slot, the MSN (or PSN) table entry that lets the NIC
//! retransmit it, then the SQ doorbell with the producer in WQEs and its epoch.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bnxt_hsi::roce::cqe::CqeType;
use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use bnxt_hsi::roce::layouts::SqBase;
use bnxt_hsi::roce::layouts::{CqReq, CqTerminal, SqPsnSearchExt};
use bnxt_hsi::roce::msn::MsnEntry;
use zerocopy::{FromBytes, IntoBytes};

use super::Side;
use super::core::{QpCore, SideMem};
use super::endpoint::PSN_MASK;
use super::half::Half;
use super::ledger::Ledger;
use super::modify::PATH_MTU;
use super::status::Status;
use super::wqe::{self, SQ_WQE_SLOTS};
use crate::region::{Region, Sge};
use crate::roce::device::RING_SLOTS;

/// Packets a message of `len` bytes takes at `mtu` bytes each, at least one: how far its PSNs
/// go (bnxt_qplib_post_send, `pkt_num`).
fn packets(len: u64, mtu: u32) -> u32 {
    len.div_ceil(u64::from(mtu)).max(1) as u32
}

/// The longest message (the contract's 2^31 bytes).
pub const MAX_MESSAGE: usize = 1 << 31;

/// The send side of a queue pair. Its calls run one at a time (`&mut self`); it may live on
/// another thread than the receive side.
pub struct SendQueue {
    half: Half,
    core: Arc<QpCore>,
    psn: u32,
    msn: u32,
}

impl std::fmt::Debug for SendQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendQueue").field("qpn", &self.core.qpn).field("outstanding", &self.half.outstanding()).finish()
    }
}

impl SendQueue {
    pub(crate) fn new(core: Arc<QpCore>, psn: u32) -> SendQueue {
        SendQueue { half: Half::new(core.clone(), Side::Send, on_cqe), core, psn, msn: 0 }
    }

    /// Send `len` bytes of `region` from `at` to the peer, into the receive it posted next.
    ///
    /// # Panics
    ///
    /// On a closed NIC, a destroyed or unconnected queue pair, a full ring, a deregistered region
    /// or one of another NIC, bytes past the region's end, or more than 2^31 bytes.
    pub fn send(&mut self, region: &Region, at: usize, len: usize) {
        self.check_post("send", len);
        let sge = region.sge(&self.core.roce, "send", at, len);
        self.post(SqBase::WQE_TYPE_SEND, len, || wqe::send(&sge));
    }

    /// Read `len` bytes of `from` at `from_at` into `region` at `at`, over a queue pair connected
    /// to another of the same NIC (both regions are this NIC's).
    ///
    /// # Panics
    ///
    /// As [`SendQueue::send`], for both regions, and if the peer is not on this NIC.
    pub fn read(&mut self, region: &Region, at: usize, from: &Region, from_at: usize, len: usize) {
        self.check_post("read", len);
        if !self.core.peer_local.load(Ordering::Acquire) {
            panic!(
                "{}: read over a queue pair connected to another NIC's (reads are between regions of one NIC)",
                self.core.roce.name
            );
        }
        let local = region.sge(&self.core.roce, "read", at, len);
        let remote: Sge = from.sge(&self.core.roce, "read", from_at, len);
        self.post(SqBase::WQE_TYPE_READ_WQE, len, || wqe::read(&local, remote.va, remote.key));
    }

    fn check_post(&self, what: &str, len: usize) {
        self.core.check_connected(what);
        if len > MAX_MESSAGE {
            panic!("{}: a {what} of {len} bytes is longer than a message may be (2^31 bytes)", self.core.roce.name);
        }
        if self.half.ledger.room() == 0 {
            panic!("{}: {what} on a full send ring ({} entries outstanding)", self.core.roce.name, RING_SLOTS - 1);
        }
    }

    fn post(&mut self, wqe_type: u8, len: usize, build: impl FnOnce() -> [u8; wqe::SQ_WQE_BYTES]) {
        self.half.ledger.post(len as u64);
        if self.core.errored.load(Ordering::Acquire) {
            // In the error state nothing reaches the NIC; the entry completes flushed
            // (bnxt_qplib_post_send: `queue_err`).
            return;
        }
        // The fields borrowed apart: the memory's guard borrows the core while the producer,
        // PSN and MSN change.
        let SendQueue { half, core, psn, msn } = self;
        let guard = core.send_mem();
        let mem = guard.as_ref().expect("a usable queue pair has its memory");
        let slot = half.prod.index;
        mem.queue.data().write(mem.queue.offset(slot), &build());
        let start = *psn;
        *psn = (start + packets(len as u64, PATH_MTU)) & PSN_MASK;
        table_entry(core, mem, msn, wqe_type, slot, start, *psn);
        let prod = &mut half.prod;
        prod.advance(SQ_WQE_SLOTS, mem.queue.shape.depth);
        let db = Doorbell::roce(DbType::Sq, core.qpn, prod.index / SQ_WQE_SLOTS, prod.epoch, 0);
        core.roce.db.ring(db);
    }
}

/// Write the MSN entry at the running MSN `msn` (P7 host MSN table, then the MSN moves on), or
/// the PSN entry at the WQE's index, for a WQE at `slot` whose PSNs run from `start` to before
/// `next`.
fn table_entry(core: &QpCore, mem: &SideMem, msn: &mut u32, wqe_type: u8, slot: u32, start: u32, next: u32) {
    let aux = mem.queue.shape.aux_offset();
    if core.msn_entries > 0 {
        let e = MsnEntry { start_slot: slot as u16, next_psn: next, start_psn: start };
        mem.queue.data().write_u64(aux + *msn as usize * size_of::<u64>(), e.encode());
        *msn = (*msn + 1) % core.msn_entries;
    } else {
        let e = SqPsnSearchExt {
            opcode_start_psn: ((start & SqPsnSearchExt::START_PSN_MASK) | (u32::from(wqe_type) << 24)).into(),
            flags_next_psn: (next & SqPsnSearchExt::NEXT_PSN_MASK).into(),
            start_slot_idx: (slot as u16).into(),
            ..zerocopy::FromZeros::new_zeroed()
        };
        let index = (slot / SQ_WQE_SLOTS) as usize;
        mem.queue.data().write(aux + index * size_of::<SqPsnSearchExt>(), e.as_bytes());
    }
}

super::half::ring_methods!(SendQueue);

/// Take one CQE of the send CQ (bnxt_qplib_cq_process_req, bnxt_qplib_cq_process_terminal).
fn on_cqe(core: &QpCore, ledger: &mut Ledger, cqe: &[u8; 32]) {
    let nic = &core.roce.name;
    let ty = CqeType::of(cqe[bnxt_hsi::roce::cqe::CQE_TYPE_TOGGLE_OFFSET]);
    match ty {
        Some(CqeType::Req) => {
            let req = CqReq::read_from_bytes(cqe).expect("32 bytes");
            if req.qp_handle.get() != core.handle {
                tracing::warn!(nic = %nic, qpn = core.qpn, handle = req.qp_handle.get(), "send CQE of another queue pair");
                return;
            }
            if core.errored.load(Ordering::Acquire) {
                // Flushing: the rest completes from the ledger (bnxt_re skips CQEs of flushed QPs).
                return;
            }
            let status = Status::of_requester(req.status);
            let upto = u32::from(req.sq_cons_idx.get()) % RING_SLOTS;
            if let Err(stale) = ledger.complete_upto(upto, status) {
                tracing::warn!(nic = %nic, qpn = core.qpn, ?stale, "send CQE names no outstanding entry");
            }
            if status != Status::Ok {
                core.errored.store(true, Ordering::Release);
            }
        }
        Some(CqeType::Terminal) => {
            let t = CqTerminal::read_from_bytes(cqe).expect("32 bytes");
            if t.qp_handle.get() != core.handle {
                return;
            }
            if !core.errored.load(Ordering::Acquire) && t.sq_cons_idx.get() != 0xffff {
                let upto = u32::from(t.sq_cons_idx.get()) % RING_SLOTS;
                let _ = ledger.complete_upto(upto, Status::Ok);
            }
            core.errored.store(true, Ordering::Release);
        }
        Some(CqeType::CutOff | CqeType::NoOp) => {}
        other => tracing::warn!(nic = %nic, qpn = core.qpn, ?other, "unexpected CQE on the send CQ"),
    }
}
