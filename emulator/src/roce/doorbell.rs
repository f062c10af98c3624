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

use bnxt_hsi::roce::doorbell::{DbPath, DbType, Doorbell, DoorbellError};
use bnxt_hsi::roce::qp::QpState;

use crate::events::{EventKind, Recorder};
use crate::firmware::func::{L2_DOORBELL_BAR_SIZE_KB, LEGACY_L2_DB_SIZE_KB};

use super::caps::DPI_PAGE;
use super::cq::CqDoorbellError;
use super::engine::Env;
use super::nq::NqDoorbellError;
use super::qp::{Qp, QpKind, RingPos};
use super::shared::{Report, Shared};
use super::state::RoceState;

/// BAR2 offset of the kernel doorbell page (`db_offset`).
pub const KERNEL_DB_OFFSET: u64 = LEGACY_L2_DB_SIZE_KB as u64 * 1024;
/// BAR2 offset of the first user doorbell page.
pub const USER_DB_OFFSET: u64 = L2_DOORBELL_BAR_SIZE_KB as u64 * 1024;

/// Why a store of `len` bytes at BAR2 `offset` is not a doorbell the model takes, if it is not.
pub(super) fn misplaced(offset: u64, len: usize) -> Option<&'static str> {
    let page = offset & !(DPI_PAGE - 1);
    let where_ok = page == KERNEL_DB_OFFSET || page >= USER_DB_OFFSET;
    if len != 8 {
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
    }
}

/// A doorbell ignored for `reason`: counted, warned about once, recorded.
pub(super) fn ignored(
    report: &mut Report,
    now: Duration,
    offset: u64,
    value: u64,
    reason: &'static str,
    rec: &mut Recorder,
) {
    report.counters.bad_doorbell(reason);
    report.warn_once(format!("doorbell ignored: {reason}"));
    rec.record(now, EventKind::DoorbellIgnored { offset, value, reason: reason.to_string() });
}

/// A doorbell of a kind the model does not carry out: counted, warned about once, recorded.
fn unimplemented(report: &mut Report, now: Duration, offset: u64, value: u64, what: &'static str, rec: &mut Recorder) {
    report.counters.unimplemented_doorbells += 1;
    report.warn_once(format!("doorbell not implemented: {what}"));
    rec.record(now, EventKind::DoorbellIgnored { offset, value, reason: format!("not implemented: {what}") });
}

/// Carry out a queued doorbell.
pub(super) fn apply(sh: &mut Shared, now: Duration, offset: u64, value: u64, env: &mut Env<'_>) {
    let db = match Doorbell::decode(value) {
        Ok(d) => d,
        Err(e) => {
            let r = match e {
                DoorbellError::UndefinedType(_) => "undefined doorbell type",
                DoorbellError::UndefinedPath(_) => "undefined doorbell path",
            };
            return ignored(&mut sh.report, now, offset, value, r, env.rec);
        }
    };
    if !db.valid {
        let r = "valid bit (58) clear: P7 ignores such doorbells";
        return ignored(&mut sh.report, now, offset, value, r, env.rec);
    }
    let nq_type = matches!(db.ty, DbType::Nq | DbType::NqArm | DbType::NqMask);
    let path_not_carried_out = match db.path {
        DbPath::Roce => None,
        DbPath::L2 if nq_type => None,
        DbPath::L2 => Some("L2-path doorbells other than NQ"),
        DbPath::Engine => Some("engine-path doorbells"),
    };
    if let Some(what) = path_not_carried_out {
        return unimplemented(&mut sh.report, now, offset, value, what, env.rec);
    }
    let raw_qp = |q: &Qp| q.kind == QpKind::RawEth;
    if matches!(db.ty, DbType::Sq | DbType::Rq) && sh.st.qps.get(&db.xid).is_some_and(raw_qp) {
        let what = "send and receive WQEs of a raw Ethernet QP";
        return unimplemented(&mut sh.report, now, offset, value, what, env.rec);
    }
    sh.report.counters.doorbells += 1;
    if sh.report.data_path_events {
        env.rec.record(now, EventKind::Doorbell { ty: db.ty.name(), xid: db.xid, index: db.index });
    }
    let result: Result<(), &'static str> = match db.ty {
        DbType::Sq => producer(&mut sh.st, &db, true),
        DbType::Rq => producer(&mut sh.st, &db, false),
        DbType::Cq | DbType::CqArmEna | DbType::CqArmAll | DbType::CqArmSe => cq(sh, now, &db, env),
        // NQ_MASK (0xe) is what bnxt_en rings on P7 to take NQ entries without re-arming
        // (bnxt.h `BNXT_DB_NQ_P7`): the same as NQ for the consumer and the arm state.
        DbType::Nq | DbType::NqArm | DbType::NqMask => {
            let arm = db.ty == DbType::NqArm;
            match sh.nqs.doorbell(db.xid, db.index, db.epoch, arm, env.fw, env.mem) {
                Ok(_) => Ok(()),
                Err(NqDoorbellError::NoRing(_)) => Err("no NQ ring with this xid"),
                Err(NqDoorbellError::IndexTooLarge { .. }) => Err("NQ consumer index beyond the ring"),
                Err(NqDoorbellError::AheadOfProducer { .. }) => Err("NQ consumer ahead of the producer"),
            }
        }
        DbType::Null => Ok(()),
        DbType::Srq => srq_producer(&mut sh.st, &db),
        DbType::SrqArm => srq_arm(sh, now, &db, env),
        // Taken and without further effect (see `super::srq`).
        DbType::SrqArmEna => sh.st.srqs.get(&db.xid).map(|_| ()).ok_or("no SRQ with this xid"),
        // After a resize, with the CUT_OFF CQE's resize toggle (libbnxt_re db.c
        // `bnxt_re_ring_cq_coff_ack_db`; qplib_res.h `bnxt_qplib_cq_coffack_db`).
        DbType::CqCutoffAck => match sh.st.cqs.get(&db.xid) {
            None => Err("no CQ with this xid"),
            Some(cq) if cq.resizes == 0 => Err("CQ_CUTOFF_ACK on a CQ never resized"),
            Some(cq) if db.toggle != cq.resize_toggle() => Err("CQ_CUTOFF_ACK with a stale resize toggle"),
            Some(_) => Ok(()),
        },
        DbType::PushStart | DbType::PushEnd => {
            return unimplemented(&mut sh.report, now, offset, value, "push WQEs", env.rec);
        }
    };
    if let Err(reason) = result {
        sh.report.counters.doorbells -= 1;
        ignored(&mut sh.report, now, offset, value, reason, env.rec);
    }
    sh.collect_irqs(now, env.rec);
}

/// An SQ (`send`) or RQ producer doorbell.
fn producer(st: &mut RoceState, db: &Doorbell, send: bool) -> Result<(), &'static str> {
    let qp = st.qps.get_mut(&db.xid).ok_or("no QP with this xid")?;
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
    st.dirty.insert(db.xid);
    Ok(())
}

/// An SRQ producer doorbell: the receive WQEs up to `index` are posted.
fn srq_producer(st: &mut RoceState, db: &Doorbell) -> Result<(), &'static str> {
    let srq = st.srqs.get_mut(&db.xid).ok_or("no SRQ with this xid")?;
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
fn srq_arm(sh: &mut Shared, now: Duration, db: &Doorbell, env: &mut Env<'_>) -> Result<(), &'static str> {
    let srq = sh.st.srqs.get_mut(&db.xid).ok_or("no SRQ with this xid")?;
    srq.limit = db.index;
    srq.armed = true;
    sh.srq_limit_check(now, db.xid, env);
    Ok(())
}

/// A CQ consumer or arm doorbell; an arm the CQ already owes a notification for posts it.
fn cq(sh: &mut Shared, now: Duration, db: &Doorbell, env: &mut Env<'_>) -> Result<(), &'static str> {
    let cq = sh.st.cqs.get_mut(&db.xid).ok_or("no CQ with this xid")?;
    let r = match db.ty {
        DbType::Cq => cq.consumed(db.index, db.epoch).map(|()| None),
        DbType::CqArmEna => cq.arm_enable(db.toggle).map(|()| None),
        DbType::CqArmAll => cq.arm_request(false, db.index, db.epoch, db.toggle),
        _ => cq.arm_request(true, db.index, db.epoch, db.toggle),
    };
    match r {
        Ok(Some(cn)) => {
            let (id, nq, toggle) = (cq.id, cq.nq, cq.toggle());
            sh.notify(now, id, nq, toggle, cn, env);
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(CqDoorbellError::IndexTooLarge { .. }) => Err("CQ consumer index beyond cq_size"),
        Err(CqDoorbellError::AheadOfProducer { .. }) => Err("CQ consumer ahead of the producer"),
        Err(CqDoorbellError::StaleToggle { .. }) => Err("CQ arm with a stale toggle"),
        Err(CqDoorbellError::ArmNotEnabled) => Err("CQ arm before CQ_ARMENA"),
    }
}
