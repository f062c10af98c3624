//! The receive side of a queue pair: receives posted to the RQ, their completions taken from the
//! receive CQ (qplib_fp.c `bnxt_qplib_post_recv`, `bnxt_qplib_post_recv_db`,
//! `bnxt_qplib_cq_process_res_rc`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bnxt_hsi::roce::cqe::{CQE_TYPE_TOGGLE_OFFSET, CqeType};
use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use bnxt_hsi::roce::layouts::{CqResRc, CqTerminal};
use bnxt_hsi::roce::qp::QpState;
use zerocopy::FromBytes;

use super::Side;
use super::core::QpCore;
use super::half::Half;
use super::ledger::Ledger;
use super::send::MAX_MESSAGE;
use super::status::Status;
use super::wqe::{self, SLOT_BYTES};
use crate::region::Region;
use crate::roce::device::RING_SLOTS;
use crate::roce::queue::Cursor;

/// The receive side of a queue pair. Its calls run one at a time (`&mut self`); it may live on
/// another thread than the send side.
pub struct RecvQueue {
    half: Half,
    core: Arc<QpCore>,
}

impl std::fmt::Debug for RecvQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvQueue").field("qpn", &self.core.qpn).field("outstanding", &self.half.outstanding()).finish()
    }
}

impl RecvQueue {
    pub(crate) fn new(core: Arc<QpCore>) -> RecvQueue {
        RecvQueue { half: Half::new(core.clone(), Side::Receive, on_cqe), core }
    }

    /// Post a receive of up to `len` bytes into `region` at `at`: the peer's next send lands
    /// there.
    ///
    /// # Panics
    ///
    /// On a closed NIC, a destroyed or unconnected queue pair, a full ring, a deregistered region
    /// or one of another NIC, bytes past the region's end, or more than 2^31 bytes.
    pub fn receive(&mut self, region: &Region, at: usize, len: usize) {
        self.core.check_connected("receive");
        if len > MAX_MESSAGE {
            panic!("{}: a receive of {len} bytes is longer than a message may be (2^31 bytes)", self.core.roce.name);
        }
        if self.half.ledger.room() == 0 {
            panic!("{}: receive on a full receive ring ({} entries outstanding)", self.core.roce.name, RING_SLOTS - 1);
        }
        let sge = region.sge(&self.core.roce, "receive", at, len);
        let index = self.half.ledger.post(len as u64);
        if self.core.errored.load(Ordering::Acquire) {
            return;
        }
        let slots = self.core.rq_wqe_slots;
        {
            let guard = self.core.recv_mem();
            let mem = guard.as_ref().expect("a usable queue pair has its memory");
            let wqe = wqe::receive(&sge, index);
            mem.queue.data().write(mem.queue.offset(self.half.prod.index), &wqe[..slots as usize * SLOT_BYTES]);
            self.half.prod.advance(slots, mem.queue.shape.depth);
        }
        self.ring();
    }

    /// The RQ doorbell, unless the queue pair is still in INIT: the firmware updates its context
    /// on the way to RTR and must not see RQ doorbells before (bnxt_qplib_post_recv_db;
    /// `bnxt_re_modify_qp` rings it after RTR if receives were posted).
    pub(crate) fn ring(&self) {
        if self.core.state() == Some(QpState::Init) {
            return;
        }
        let prod = self.half.prod;
        let db = Doorbell::roce(DbType::Rq, self.core.qpn, prod.index / self.core.rq_wqe_slots, prod.epoch, 0);
        self.core.roce.db.ring(db);
    }

    /// Whether any receive was posted (the producer moved).
    pub(crate) fn posted_any(&self) -> bool {
        self.half.prod != Cursor::default()
    }
}

super::half::ring_methods!(RecvQueue);

/// Take one CQE of the receive CQ.
fn on_cqe(core: &QpCore, ledger: &mut Ledger, cqe: &[u8; 32]) {
    let nic = &core.roce.name;
    match CqeType::of(cqe[CQE_TYPE_TOGGLE_OFFSET]) {
        Some(CqeType::ResRc) => {
            let res = CqResRc::read_from_bytes(cqe).expect("32 bytes");
            if res.qp_handle.get() != core.handle {
                tracing::warn!(nic = %nic, qpn = core.qpn, handle = res.qp_handle.get(), "receive CQE of another queue pair");
                return;
            }
            if core.errored.load(Ordering::Acquire) {
                return;
            }
            let status = Status::of_responder(res.status);
            let index = res.srq_or_rq_wr_id.get() & CqResRc::SRQ_OR_RQ_WR_ID_MASK;
            if let Err(stale) = ledger.complete_one(index, status, u64::from(res.length.get())) {
                tracing::warn!(nic = %nic, qpn = core.qpn, ?stale, "receive CQE names no outstanding entry");
            }
            if status != Status::Ok {
                core.errored.store(true, Ordering::Release);
            }
        }
        Some(CqeType::Terminal) => {
            if CqTerminal::read_from_bytes(cqe).expect("32 bytes").qp_handle.get() == core.handle {
                core.errored.store(true, Ordering::Release);
            }
        }
        Some(CqeType::CutOff | CqeType::NoOp) => {}
        other => tracing::warn!(nic = %nic, qpn = core.qpn, ?other, "unexpected CQE on the receive CQ"),
    }
}
