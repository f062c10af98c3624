//! What a queue pair is in the firmware and in memory, shared by its two halves and the NIC:
//! making it (two CQs, the SQ with its MSN or PSN table, the RQ, ORRQ and IRRQ, CREATE_QP,
//! MODIFY_QP to INIT) and destroying it (DESTROY_QP, DESTROY_CQ), as bnxt_re does
//! (ib_verbs.c `bnxt_re_create_qp`, `bnxt_re_init_qp_attr`, `bnxt_re_setup_qp_hwqs`,
//! `bnxt_re_qp_alloc_init_xrrq`, `bnxt_re_qp_calculate_msn_psn_size`, `bnxt_re_destroy_qp`;
//! qplib_fp.c `bnxt_qplib_create_qp`; hardware-map §4.5, §5.1-§5.3).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bnxt_hsi::roce::layouts::{CmdqCreateQp as Q, CmdqDestroyQp, SqMsnSearch, SqPsnSearchExt, XrrqIrrq, XrrqOrrq};
use bnxt_hsi::roce::msn::table_entries;
use bnxt_hsi::roce::qp::QpState;
use zerocopy::FromZeros;

use super::cq;
use super::modify::{self, Fixed};
use super::wqe::{SLOT_BYTES, SQ_WQE_SLOTS};
use crate::error::Error;
use crate::roce::device::RING_SLOTS;
use crate::roce::pbl::PblKind;
use crate::roce::queue::{Queue, Shape};
use crate::roce::{Memory, Object, Roce};
use bnxt_pci::dma::{DmaBuffer, PAGE_SIZE};

/// SGEs a send asks for (`max_send_sge`): one, since a region is one virtual range.
const SQ_SGE: u16 = 1;
/// SGEs a receive asks for (`max_recv_sge`).
const RQ_SGE: u16 = 1;
/// The most SGEs a static WQE holds (`BNXT_RE_STATIC_WQE_MAX_SGE`): 128 bytes less the header.
pub(crate) const STATIC_MAX_SGE: u8 = 6;
/// Bytes of a CQE.
const CQE_BYTES: usize = 32;
/// `state` once destroyed.
const DESTROYED: u8 = 0xff;

/// One side's memory.
pub(crate) struct SideMem {
    /// The SQ or RQ.
    pub queue: Queue,
    /// Its CQ.
    pub cq: Queue,
}

impl SideMem {
    fn into_memory(self) -> Memory {
        let bytes = self.queue.bytes() + self.cq.bytes();
        Memory::new(self, bytes)
    }
}

/// A queue pair's shared state.
pub(crate) struct QpCore {
    /// Its id among the NIC's objects.
    pub id: u64,
    /// The NIC's engine.
    pub roce: Arc<Roce>,
    /// Its number.
    pub qpn: u32,
    /// The handle CREATE_QP gave, which its CQEs echo.
    pub handle: u64,
    /// The send CQ's id.
    pub scq: u32,
    /// The receive CQ's id.
    pub rcq: u32,
    /// Slots of one receive WQE.
    pub rq_wqe_slots: u32,
    /// Entries of the MSN table after the SQ, or 0 when the SQ carries a PSN table.
    pub msn_entries: u32,
    /// What every MODIFY_QP carries.
    pub fixed: Fixed,
    send: Mutex<Option<SideMem>>,
    recv: Mutex<Option<SideMem>>,
    xrrq: Mutex<Option<(DmaBuffer, DmaBuffer)>>,
    /// Set when the queue pair goes to the error state (an error CQE, a terminal CQE, the
    /// firmware's QP error event); both sides then flush.
    pub errored: Arc<AtomicBool>,
    state: AtomicU8,
    /// The peer is a queue pair of this NIC (so RDMA READs between its regions are meaningful).
    pub peer_local: AtomicBool,
}

/// Sizes of a queue pair's memory.
struct Sizes {
    sq: Shape,
    rq: Shape,
    cq: Shape,
    rq_wqe_slots: u32,
    rq_sge_hw: u16,
    msn_entries: u32,
    orrq_slots: u8,
    irrq_slots: u8,
}

fn sizes(roce: &Roce) -> Sizes {
    let caps = &roce.caps;
    let sge = caps.max_sge.min(STATIC_MAX_SGE);
    // A static RQ WQE holds the device's SGEs (bnxt_re_get_rwqe_size: `rsge = max`).
    let rq_wqe_slots = 2 + u32::from(sge);
    let sq_slots = RING_SLOTS * SQ_WQE_SLOTS;
    let (aux_depth, aux_stride, msn_entries) = if caps.host_msn_table() {
        let n = table_entries(RING_SLOTS, false);
        (n, size_of::<SqMsnSearch>(), n)
    } else {
        (RING_SLOTS, size_of::<SqPsnSearchExt>(), 0)
    };
    // A CQ holds every completion of a full ring, and the terminal entry after them (bnxt_re
    // asks for one entry more than requested: `entries = cqe + 1`).
    let cq_depth = (RING_SLOTS + 1).min(caps.max_cqe.saturating_add(1));
    let ord = caps.max_rd_atom.max(1);
    let ird = caps.max_init_rd_atom.max(1);
    Sizes {
        sq: Shape { depth: sq_slots, stride: SLOT_BYTES, aux_depth, aux_stride },
        rq: Shape::ring(RING_SLOTS * rq_wqe_slots, SLOT_BYTES),
        cq: Shape::ring(cq_depth, CQE_BYTES),
        rq_wqe_slots,
        rq_sge_hw: u16::from(sge),
        msn_entries,
        // ORD_LIMIT_TO_ORRQ_SLOTS and IRD_LIMIT_TO_IRRQ_SLOTS.
        orrq_slots: ord.saturating_add(1),
        irrq_slots: ird.saturating_mul(2).saturating_add(2),
    }
}

/// A page-aligned buffer of `n` entries of `size` bytes (an ORRQ or IRRQ: one contiguous
/// buffer, level 0).
fn xrrq(roce: &Roce, n: u8, size: usize) -> Result<DmaBuffer, Error> {
    let len = (usize::from(n) * size).next_multiple_of(PAGE_SIZE);
    roce.function().alloc_dma(len).map_err(|source| Error::Pci { nic: roce.name.clone(), source })
}

/// What making a queue pair got as far as, for undoing.
#[derive(Default)]
struct Made {
    scq: Option<u32>,
    rcq: Option<u32>,
    qpn: Option<u32>,
    memory: Vec<Memory>,
}

impl QpCore {
    /// Make an RC queue pair on `roce` and take it to INIT.
    pub(crate) fn make(roce: &Arc<Roce>) -> Result<Arc<QpCore>, Error> {
        let mut made = Made::default();
        match QpCore::build(roce, &mut made) {
            Ok(core) => Ok(core),
            Err(e) => {
                QpCore::undo(roce, made, &e);
                Err(e)
            }
        }
    }

    fn undo(roce: &Roce, made: Made, e: &Error) {
        if matches!(e, Error::Timeout { .. } | Error::Wedged { .. }) {
            // A command left unanswered may still act on what it named. On a NIC wedged before
            // this queue pair's first command, nothing was named: that memory goes at once.
            if matches!(e, Error::Wedged { .. }) && made.scq.is_none() {
                drop(made.memory);
            } else {
                roce.keep(made.memory);
            }
            return;
        }
        let destroyed = match made.qpn {
            Some(qpn) => destroy_qp(roce, qpn).is_ok(),
            None => true,
        };
        for id in [made.scq, made.rcq].into_iter().flatten() {
            if destroyed && let Err(e) = cq::destroy(roce, id) {
                tracing::warn!(nic = %roce.name, cq = id, error = %e, "destroying a CQ after a failed make failed");
            }
        }
        if destroyed {
            drop(made.memory);
        } else {
            roce.keep(made.memory);
        }
    }

    fn build(roce: &Arc<Roce>, made: &mut Made) -> Result<Arc<QpCore>, Error> {
        let pci = |source| Error::Pci { nic: roce.name.clone(), source };
        let function = roce.function();
        let f = &*function;
        let s = sizes(roce);
        let id = roce.next_id();
        let handle = id;

        let scq_mem = Queue::alloc(f, s.cq, PblKind::Queue).map_err(pci)?;
        let rcq_mem = Queue::alloc(f, s.cq, PblKind::Queue).map_err(pci)?;
        let held = |q: Queue| {
            let bytes = q.bytes();
            Memory::new(q, bytes)
        };
        let scq = match cq::create(roce, &scq_mem, handle << 1) {
            Ok(id) => id,
            Err(e) => {
                made.memory.extend([held(scq_mem), held(rcq_mem)]);
                return Err(e);
            }
        };
        made.scq = Some(scq);
        let rcq = match cq::create(roce, &rcq_mem, handle << 1 | 1) {
            Ok(id) => id,
            Err(e) => {
                made.memory.extend([held(scq_mem), held(rcq_mem)]);
                return Err(e);
            }
        };
        made.rcq = Some(rcq);

        let sq = Queue::alloc(f, s.sq, PblKind::Queue).map_err(pci)?;
        let rq = Queue::alloc(f, s.rq, PblKind::Queue).map_err(pci)?;
        let orrq = xrrq(roce, s.orrq_slots, size_of::<XrrqOrrq>())?;
        let irrq = xrrq(roce, s.irrq_slots, size_of::<XrrqIrrq>())?;

        let mut req = Q::new_zeroed();
        req.type_ = Q::TYPE_RC;
        req.qp_handle = handle.into();
        let mut flags = Q::QP_FLAGS_RESERVED_LKEY_ENABLE | Q::QP_FLAGS_FR_PMR_ENABLED | Q::QP_FLAGS_FORCE_COMPLETION;
        if roce.caps.ext_stats() {
            flags |= Q::QP_FLAGS_EXT_STATS_ENABLED;
        }
        if roce.caps.pbl_page_size() {
            flags |= Q::QP_FLAGS_SQ_PBL_PG_SIZE_VALID | Q::QP_FLAGS_RQ_PBL_PG_SIZE_VALID;
            req.sq_pbl_pg_size = Q::SQ_PBL_PG_SIZE_PG_4K;
            req.rq_pbl_pg_size = Q::RQ_PBL_PG_SIZE_PG_4K;
        }
        req.qp_flags = flags.into();
        req.sq_pg_size_sq_lvl = Q::SQ_PG_SIZE_PG_4K | (sq.level() & Q::SQ_LVL_MASK);
        req.rq_pg_size_rq_lvl = Q::RQ_PG_SIZE_PG_4K | (rq.level() & Q::RQ_LVL_MASK);
        req.dpi = roce.db.dpi().into();
        req.sq_size = RING_SLOTS.into();
        req.rq_size = RING_SLOTS.into();
        req.sq_fwo_sq_sge = (SQ_SGE & Q::SQ_SGE_MASK).into();
        req.rq_fwo_rq_sge = (s.rq_sge_hw & Q::RQ_SGE_MASK).into();
        req.scq_cid = scq.into();
        req.rcq_cid = rcq.into();
        req.pd_id = roce.pd_id.into();
        req.sq_pbl = sq.base().into();
        req.rq_pbl = rq.base().into();
        req.irrq_addr = irrq.iova().into();
        req.orrq_addr = orrq.iova().into();
        let send = SideMem { queue: sq, cq: scq_mem };
        let recv = SideMem { queue: rq, cq: rcq_mem };
        let qpn = match roce.command(req) {
            Ok(r) => r.xid.get(),
            Err(e) => {
                made.memory.extend(memory_of(Some(send), Some(recv), Some((orrq, irrq))));
                return Err(e);
            }
        };
        made.qpn = Some(qpn);

        let fixed = Fixed {
            qpn,
            sq_slots: s.sq.depth,
            rq_slots: s.rq.depth,
            sq_sge: SQ_SGE,
            rq_sge: RQ_SGE,
            orrq_slots: s.orrq_slots,
            irrq_slots: s.irrq_slots,
        };
        if let Err(e) = roce.command(modify::to_init(&fixed)) {
            made.memory.extend(memory_of(Some(send), Some(recv), Some((orrq, irrq))));
            return Err(e);
        }
        let core = Arc::new(QpCore {
            id,
            roce: roce.clone(),
            qpn,
            handle,
            scq,
            rcq,
            rq_wqe_slots: s.rq_wqe_slots,
            msn_entries: s.msn_entries,
            fixed,
            send: Mutex::new(Some(send)),
            recv: Mutex::new(Some(recv)),
            xrrq: Mutex::new(Some((orrq, irrq))),
            errored: Arc::new(AtomicBool::new(false)),
            state: AtomicU8::new(QpState::Init.field()),
            peer_local: AtomicBool::new(false),
        });
        roce.watch_qp(qpn, &core.errored);
        tracing::debug!(nic = %roce.name, qpn, scq, rcq, "queue pair made");
        Ok(core)
    }

    /// The queue pair's state, or `None` once destroyed.
    pub(crate) fn state(&self) -> Option<QpState> {
        QpState::from_field(self.state.load(Ordering::Acquire))
    }

    /// Record the state a MODIFY_QP took it to.
    pub(crate) fn set_state(&self, s: QpState) {
        self.state.store(s.field(), Ordering::Release);
    }

    /// Panic unless the NIC is open and the queue pair not destroyed (`what` names the call).
    pub(crate) fn check_usable(&self, what: &str) {
        self.roce.check_open();
        if self.state.load(Ordering::Acquire) == DESTROYED {
            panic!("{}: {what} on a destroyed queue pair", self.roce.name);
        }
    }

    /// As `check_usable`, and the queue pair must be connected.
    pub(crate) fn check_connected(&self, what: &str) {
        self.check_usable(what);
        if self.state() != Some(QpState::Rts) {
            panic!("{}: {what} on a queue pair that is not connected", self.roce.name);
        }
    }

    /// The send side's memory, locked.
    pub(crate) fn send_mem(&self) -> MutexGuard<'_, Option<SideMem>> {
        self.send.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The receive side's memory, locked.
    pub(crate) fn recv_mem(&self) -> MutexGuard<'_, Option<SideMem>> {
        self.recv.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Mark the queue pair destroyed and take its memory back.
    fn take_memory(&self) -> Vec<Memory> {
        self.state.store(DESTROYED, Ordering::Release);
        self.roce.unwatch_qp(self.qpn);
        let side = |m: &Mutex<Option<SideMem>>| m.lock().unwrap_or_else(|e| e.into_inner()).take();
        let xrrq = self.xrrq.lock().unwrap_or_else(|e| e.into_inner()).take();
        memory_of(side(&self.send), side(&self.recv), xrrq)
    }

    /// Destroy the queue pair and then its CQs in the firmware, and take its memory back. The
    /// first refusal (after which nothing more is sent), and the memory.
    pub(crate) fn tear(&self) -> (Result<(), Error>, Vec<Memory>) {
        let memory = self.take_memory();
        let r = destroy_qp(&self.roce, self.qpn)
            .and_then(|()| cq::destroy(&self.roce, self.scq))
            .and_then(|()| cq::destroy(&self.roce, self.rcq));
        (r, memory)
    }
}

/// The memory of a queue pair's parts.
fn memory_of(send: Option<SideMem>, recv: Option<SideMem>, xrrq: Option<(DmaBuffer, DmaBuffer)>) -> Vec<Memory> {
    let mut memory: Vec<Memory> = [send, recv].into_iter().flatten().map(SideMem::into_memory).collect();
    if let Some((orrq, irrq)) = xrrq {
        let bytes = orrq.len() + irrq.len();
        memory.push(Memory::new((orrq, irrq), bytes));
    }
    memory
}

/// DESTROY_QP.
fn destroy_qp(roce: &Roce, qpn: u32) -> Result<(), Error> {
    roce.teardown_command(CmdqDestroyQp { qp_cid: qpn.into(), ..FromZeros::new_zeroed() }).map(|_| ())
}

impl Object for QpCore {
    fn teardown(&self, roce: &Roce) -> Vec<Memory> {
        if self.state.load(Ordering::Acquire) == DESTROYED {
            return Vec::new();
        }
        let (r, memory) = if roce.is_wedged() { (Ok(()), self.take_memory()) } else { self.tear() };
        if let Err(e) = r {
            tracing::warn!(nic = %roce.name, qpn = self.qpn, error = %e, "destroying a queue pair at close failed");
        }
        memory
    }
}
