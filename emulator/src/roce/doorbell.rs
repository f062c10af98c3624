//! Doorbells on BAR2 (hardware-map §5.6; bnxt_re qplib_res.h `bnxt_qplib_ring_db`,
//! `bnxt_qplib_ring_prod_db`, `bnxt_qplib_armen_db`, `bnxt_qplib_ring_nq_db`; bnxt_en
//! bnxt.c `bnxt_set_db`).
//!
//! Where: the kernel doorbell page at `db_offset` = FUNC_QCFG `legacy_l2_db_size_kb` × 1024 (the
//! page bnxt_en and bnxt_re share on P7), and the user doorbell pages from
//! `l2_doorbell_bar_size_kb` × 1024 to the end of BAR2, each at offset 0 of its page. Stores
//! elsewhere (the legacy area below `db_offset`, the rest of the L2 area, other offsets within a
//! page) are not doorbells the model takes: ignored and counted.
//!
//! What: one 64-bit store, decoded as `dbc_dbc64`. P7 requires the valid bit: a doorbell
//! without it is ignored and counted, as are undefined types and paths, 32-bit stores, and
//! doorbells naming objects that do not exist or indexes outside their ring. RoCE-path doorbells
//! of types SQ, RQ, SRQ, SRQ_ARM, SRQ_ARMENA, CQ, CQ_ARMENA, CQ_ARMALL, CQ_ARMSE, NQ and NQ_ARM
//! are carried out, and NQ and NQ_ARM on the L2 path too (an NQ serves both engines); cut-off,
//! push and other L2 doorbells, and SQ and RQ doorbells of a raw Ethernet QP, are not modelled
//! (counted as unimplemented). NULL does nothing.

use std::time::Duration;

use bnxt_hsi::roce::doorbell::{DbPath, DbType, Doorbell};
use bnxt_hsi::roce::qp::QpState;

use crate::events::EventKind;
use crate::firmware::func::{L2_DOORBELL_BAR_SIZE_KB, LEGACY_L2_DB_SIZE_KB};

use super::caps::DPI_PAGE;
use super::cq::CqDoorbellError;
use super::engine::{Env, Input, RoceEngine};
use super::qp::{Qp, QpKind, RingPos};

/// BAR2 offset of the kernel doorbell page (`db_offset`).
pub const KERNEL_DB_OFFSET: u64 = LEGACY_L2_DB_SIZE_KB as u64 * 1024;
/// BAR2 offset of the first user doorbell page.
pub const USER_DB_OFFSET: u64 = L2_DOORBELL_BAR_SIZE_KB as u64 * 1024;

impl RoceEngine {
    /// A store of `len` bytes (`value`) at BAR2 `offset` at time `now`.
    pub fn doorbell(&mut self, now: Duration, offset: u64, len: usize, value: u64, rec: &mut crate::events::Recorder) {
        let page = offset & !(DPI_PAGE - 1);
        let where_ok = page == KERNEL_DB_OFFSET || page >= USER_DB_OFFSET;
        let reason = if len != 8 {
            Some("a 32-bit store: P7 doorbells are single 64-bit stores")
        } else if !where_ok {
            Some(if offset < KERNEL_DB_OFFSET {
                "below the doorbell area (db_offset)"
            } else {
                "an L2 doorbell page RoCE does not use"
            })
        } else if offset != page {
            Some("not at offset 0 of its doorbell page")
        } else {
            None
        };
        if let Some(r) = reason {
            self.ignore_doorbell(now, offset, value, r, rec);
            return;
        }
        self.inputs.push_back((now, Input::Doorbell { offset, value }));
    }

    pub(super) fn ignore_doorbell(
        &mut self,
        now: Duration,
        offset: u64,
        value: u64,
        reason: &'static str,
        rec: &mut crate::events::Recorder,
    ) {
        self.counters.bad_doorbell(reason);
        self.warn_once(format!("doorbell ignored: {reason}"));
        rec.record(now, EventKind::DoorbellIgnored { offset, value, reason: reason.to_string() });
    }

    fn unimplemented_doorbell(
        &mut self,
        now: Duration,
        offset: u64,
        value: u64,
        what: &'static str,
        env: &mut Env<'_>,
    ) {
        self.counters.unimplemented_doorbells += 1;
        self.warn_once(format!("doorbell not implemented: {what}"));
        env.rec.record(now, EventKind::DoorbellIgnored { offset, value, reason: format!("not implemented: {what}") });
    }

    /// Carry out a queued doorbell.
    pub(super) fn apply_doorbell(&mut self, now: Duration, offset: u64, value: u64, env: &mut Env<'_>) {
        let db = match Doorbell::decode(value) {
            Ok(d) => d,
            Err(e) => {
                let r = match e {
                    bnxt_hsi::roce::doorbell::DoorbellError::UndefinedType(_) => "undefined doorbell type",
                    bnxt_hsi::roce::doorbell::DoorbellError::UndefinedPath(_) => "undefined doorbell path",
                };
                self.ignore_doorbell(now, offset, value, r, env.rec);
                return;
            }
        };
        if !db.valid {
            self.ignore_doorbell(now, offset, value, "valid bit (58) clear: P7 ignores such doorbells", env.rec);
            return;
        }
        let nq_type = matches!(db.ty, DbType::Nq | DbType::NqArm | DbType::NqMask);
        match db.path {
            DbPath::Roce => {}
            DbPath::L2 if nq_type => {}
            DbPath::L2 => {
                return self.unimplemented_doorbell(now, offset, value, "L2-path doorbells other than NQ", env);
            }
            DbPath::Engine => return self.unimplemented_doorbell(now, offset, value, "engine-path doorbells", env),
        }
        let raw_qp = |q: &Qp| q.kind == QpKind::RawEth;
        if matches!(db.ty, DbType::Sq | DbType::Rq) && self.st.qps.get(&db.xid).is_some_and(raw_qp) {
            return self.unimplemented_doorbell(now, offset, value, "send and receive WQEs of a raw Ethernet QP", env);
        }
        self.counters.doorbells += 1;
        if self.data_path_events {
            env.rec.record(now, EventKind::Doorbell { ty: db.ty.name(), xid: db.xid, index: db.index });
        }
        let result: Result<(), &'static str> = match db.ty {
            DbType::Sq => self.producer_doorbell(&db, true),
            DbType::Rq => self.producer_doorbell(&db, false),
            DbType::Cq | DbType::CqArmEna | DbType::CqArmAll | DbType::CqArmSe => self.cq_doorbell(now, &db, env),
            // NQ_MASK (0xe) is what bnxt_en rings on P7 to take NQ entries without re-arming
            // (bnxt.h `BNXT_DB_NQ_P7`): the same as NQ for the consumer and the arm state.
            DbType::Nq | DbType::NqArm | DbType::NqMask => {
                let arm = db.ty == DbType::NqArm;
                match self.nqs.doorbell(db.xid, db.index, db.epoch, arm, env.fw, env.mem) {
                    Ok(_) => Ok(()),
                    Err(super::nq::NqDoorbellError::NoRing(_)) => Err("no NQ ring with this xid"),
                    Err(super::nq::NqDoorbellError::IndexTooLarge { .. }) => Err("NQ consumer index beyond the ring"),
                    Err(super::nq::NqDoorbellError::AheadOfProducer { .. }) => Err("NQ consumer ahead of the producer"),
                }
            }
            DbType::Null => Ok(()),
            DbType::Srq => self.srq_producer_doorbell(&db),
            DbType::SrqArm => self.srq_arm_doorbell(now, &db, env),
            // Taken and without further effect (see `super::srq`).
            DbType::SrqArmEna => self.st.srqs.get(&db.xid).map(|_| ()).ok_or("no SRQ with this xid"),
            // After a resize, with the CUT_OFF CQE's resize toggle (libbnxt_re db.c
            // `bnxt_re_ring_cq_coff_ack_db`; qplib_res.h `bnxt_qplib_cq_coffack_db`).
            DbType::CqCutoffAck => match self.st.cqs.get(&db.xid) {
                None => Err("no CQ with this xid"),
                Some(cq) if cq.resizes == 0 => Err("CQ_CUTOFF_ACK on a CQ never resized"),
                Some(cq) if db.toggle != cq.resize_toggle() => Err("CQ_CUTOFF_ACK with a stale resize toggle"),
                Some(_) => Ok(()),
            },
            DbType::PushStart | DbType::PushEnd => {
                return self.unimplemented_doorbell(now, offset, value, "push WQEs", env);
            }
        };
        if let Err(reason) = result {
            self.counters.doorbells -= 1;
            self.ignore_doorbell(now, offset, value, reason, env.rec);
        }
        self.collect_irqs(now, env.rec);
    }

    /// An SQ (`send`) or RQ producer doorbell.
    fn producer_doorbell(&mut self, db: &Doorbell, send: bool) -> Result<(), &'static str> {
        let qp = self.st.qps.get_mut(&db.xid).ok_or("no QP with this xid")?;
        if qp.state == QpState::Reset {
            return Err("producer doorbell for a QP in RESET");
        }
        let (size, taken, prod) =
            if send { (qp.sq.size, qp.sq.taken, &mut qp.sq.prod) } else { (qp.rq.size, qp.rq.taken, &mut qp.rq.prod) };
        if db.index >= size {
            return Err("producer index beyond the queue size");
        }
        let new = RingPos { index: db.index, epoch: db.epoch };
        if taken.distance(new, size) > u64::from(size) {
            return Err("producer more than a ring ahead of the consumer");
        }
        *prod = new;
        self.st.dirty.insert(db.xid);
        Ok(())
    }

    /// An SRQ producer doorbell: the receive WQEs up to `index` are posted.
    fn srq_producer_doorbell(&mut self, db: &Doorbell) -> Result<(), &'static str> {
        let srq = self.st.srqs.get_mut(&db.xid).ok_or("no SRQ with this xid")?;
        let size = srq.ring.size;
        if db.index >= size {
            return Err("SRQ producer index beyond srq_size");
        }
        let new = RingPos { index: db.index, epoch: db.epoch };
        if srq.ring.taken.distance(new, size) > u64::from(size) {
            return Err("SRQ producer more than a ring ahead of the consumer");
        }
        srq.ring.prod = new;
        // QPs waiting for receive WQEs find them when the next request arrives (the requester
        // retries after an RNR NAK).
        Ok(())
    }

    /// SRQ_ARM: the limit is the index; the event fires at once if the SRQ is already below it.
    fn srq_arm_doorbell(&mut self, now: Duration, db: &Doorbell, env: &mut Env<'_>) -> Result<(), &'static str> {
        let srq = self.st.srqs.get_mut(&db.xid).ok_or("no SRQ with this xid")?;
        srq.limit = db.index;
        srq.armed = true;
        self.srq_limit_check(now, db.xid, env);
        Ok(())
    }

    fn cq_doorbell(&mut self, now: Duration, db: &Doorbell, env: &mut Env<'_>) -> Result<(), &'static str> {
        let cq = self.st.cqs.get_mut(&db.xid).ok_or("no CQ with this xid")?;
        let r = match db.ty {
            DbType::Cq => cq.consumed(db.index, db.epoch).map(|()| None),
            DbType::CqArmEna => cq.arm_enable(db.toggle).map(|()| None),
            DbType::CqArmAll => cq.arm_request(false, db.index, db.epoch, db.toggle),
            _ => cq.arm_request(true, db.index, db.epoch, db.toggle),
        };
        match r {
            Ok(Some(cn)) => {
                let (id, nq, toggle) = (cq.id, cq.nq, cq.toggle());
                self.notify(now, id, nq, toggle, cn, env);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(CqDoorbellError::IndexTooLarge { .. }) => Err("CQ consumer index beyond cq_size"),
            Err(CqDoorbellError::AheadOfProducer { .. }) => Err("CQ consumer ahead of the producer"),
            Err(CqDoorbellError::StaleToggle { .. }) => Err("CQ arm with a stale toggle"),
            Err(CqDoorbellError::ArmNotEnabled) => Err("CQ arm before CQ_ARMENA"),
        }
    }

    /// Post a CQ notification to NQ `nq`.
    pub(super) fn notify(&mut self, now: Duration, cq: u32, nq: u16, toggle: u8, cn: [u8; 16], env: &mut Env<'_>) {
        self.counters.notifications += 1;
        env.rec.record(now, EventKind::CqNotification { cq, nq, toggle });
        if let p @ (super::nq::Posted::NoRing | super::nq::Posted::Overflow | super::nq::Posted::DmaFailed) =
            self.nqs.post(nq, cn, env.fw, env.mem)
        {
            self.warn_once(format!("CQ notification lost: {p:?}"));
        }
    }
}
