//! CREATE_CQ, RESIZE_CQ and DESTROY_CQ (hardware-map §4.5; bnxt_re qplib_fp.c
//! `bnxt_qplib_create_cq`, `bnxt_qplib_resize_cq`, `bnxt_qplib_destroy_cq`).
//!
//! A CQ is `cq_size` 32-byte entries in pages of the size `pg_size_lvl` names, behind a page
//! table of `lvl` levels (table pages of `pbl_pg_size` when `PBL_PG_SIZE_VALID`, else 4 KiB). Its
//! notifications go to the NQ ring `cq_fco_cnq_id` bits 11:0 names, which HWRM RING_ALLOC must
//! have made. CQ ids are CQ context entries past the L2 completion rings' (CQ split 0), so a
//! function has at most `ContextLimits::roce_cqs` of them. A first-page offset (bits 31:12) and
//! infinite-CQ mode are not modelled (NOT_IMPLEMENTED); interrupt coalescing settings are taken
//! and have no effect (the model notifies at once, which coalescing allows).

use bnxt_hsi::roce::layouts::{
    CmdqCreateCq as C, CmdqDestroyCq, CmdqResizeCq as R, CreqCreateCqResp, CreqDestroyCqResp, CreqResizeCqResp,
};

use super::{Cmd, CmdCtx, Outcome, Refusal, answer, parse, table_shape};
use crate::firmware::state::RingType;
use crate::roce::caps::MAX_CQE;
use crate::roce::cq::Cq;
use crate::roce::pages::{PageList, PblSpec};
use crate::roce::state::RoceState;

/// DPIs are BAR2 pages: 8 MiB of 4 KiB pages.
pub(super) const MAX_DPI_NUMBER: u32 = (crate::config_space::BAR2_SIZE / 4096) as u32;

/// CREATE_CQ.
pub(super) fn create_cq(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: C = parse(cmd, 0x30)?;
    let flags = req.flags.get();
    if flags & C::FLAGS_INFINITE_CQ_MODE != 0 {
        return Err(Refusal::not_implemented("infinite CQ mode is not modelled"));
    }
    let pbl_valid = flags & C::FLAGS_PBL_PG_SIZE_VALID != 0;
    let (level, page_shift, table_shift) = table_shape(req.pg_size_lvl.get(), pbl_valid, req.pbl_pg_size)?;
    let fco_cnq = req.cq_fco_cnq_id.get();
    if fco_cnq & C::CQ_FCO_MASK != 0 {
        return Err(Refusal::not_implemented(format!("first-page offset {} is not modelled", fco_cnq >> 12)));
    }
    let nq = (fco_cnq & C::CNQ_ID_MASK) as u16;
    match cx.fw.rings.get(&nq) {
        Some(r) if r.ty == RingType::Nq => {}
        _ => return Err(Refusal::invalid(format!("cnq_id {nq} is not an NQ ring (HWRM RING_ALLOC type NQ)"))),
    }
    // bnxt_re asks for one entry more than the consumer wants and caps the ring at the
    // advertised `max_cqe` plus one (Linux drivers/infiniband/hw/bnxt_re/ib_verbs.c,
    // `bnxt_re_create_cq`: `entries > dev_attr->max_cq_wqes + 1`), and sends that as `cq_size`
    // (qplib_fp.c `bnxt_qplib_create_cq`): so a ring of `max_cqe + 1` entries is taken.
    let size = req.cq_size.get();
    let largest = MAX_CQE + 1;
    if size == 0 || size > largest {
        return Err(Refusal::invalid(format!("cq_size {size} outside 1..={largest} (max_cqe + 1)")));
    }
    let dpi = req.dpi.get();
    if dpi >= MAX_DPI_NUMBER {
        return Err(Refusal::invalid(format!("dpi {dpi} is not a doorbell page of BAR2")));
    }
    let base = cx.limits.l2_cqs;
    let count = cx.limits.roce_cqs();
    if st.cqs.len() as u64 >= u64::from(count) {
        return Err(Refusal::resources(format!("all {count} CQs the context memory holds are in use")));
    }
    let spec = PblSpec { root: req.pbl.get(), level, page_shift, table_shift };
    let mem =
        PageList::walk(cx.mem, spec, u64::from(size) * 32).map_err(|e| Refusal::invalid(format!("CQ memory: {e}")))?;
    // The smallest free id: every one below `free_from.cq` is in use.
    let id = (st.free_from.cq.max(base)..base + count)
        .find(|id| !st.cqs.contains_key(id))
        .ok_or_else(|| Refusal::resources("no CQ id left"))?;
    let unchecked = flags & C::FLAGS_DISABLE_CQ_OVERFLOW_DETECTION != 0;
    st.cqs.insert(id, Cq::new(id, req.cq_handle.get(), nq, size, dpi, unchecked, mem));
    // The smallest free id was taken: every one up to it is in use.
    st.free_from.cq = id + 1;
    answer::<CreqCreateCqResp>(|r| r.xid = id.into())
}

/// RESIZE_CQ (bnxt_re qplib_fp.c `bnxt_qplib_resize_cq`): the new ring's size, page size,
/// level and PBL, checked as CREATE_CQ checks them (bnxt_re sends `cqe + 1` entries capped at
/// `max_cqe + 1`, ib_verbs.c `bnxt_re_resize_cq`); the engine carries it out after the answer
/// is queued ([`crate::roce::cq`]).
pub(super) fn resize_cq(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: R = parse(cmd, 0x28)?;
    let id = req.cq_cid.get();
    if !st.cqs.contains_key(&id) {
        return Err(Refusal::invalid(format!("cq_cid {id} is not a CQ")));
    }
    if st.cq_resizes.iter().any(|r| r.0 == id) {
        return Err(Refusal::invalid(format!("CQ {id} is already being resized")));
    }
    let v = req.new_cq_size_pg_size_lvl.get();
    let pbl_valid = req.flags.get() & R::FLAGS_PBL_PG_SIZE_VALID != 0;
    let (level, page_shift, table_shift) =
        table_shape(v & (R::LVL_MASK | R::PG_SIZE_MASK), pbl_valid, req.pbl_pg_size)?;
    if req.new_cq_fco.get() & R::CQ_FCO_MASK != 0 {
        return Err(Refusal::not_implemented(format!(
            "first-page offset {} is not modelled",
            req.new_cq_fco.get() & R::CQ_FCO_MASK
        )));
    }
    let size = (v & R::NEW_CQ_SIZE_MASK) >> R::NEW_CQ_SIZE_MASK.trailing_zeros();
    let largest = MAX_CQE + 1;
    if size == 0 || size > largest {
        return Err(Refusal::invalid(format!("new_cq_size {size} outside 1..={largest} (max_cqe + 1)")));
    }
    let spec = PblSpec { root: req.new_pbl.get(), level, page_shift, table_shift };
    let mem = PageList::walk(cx.mem, spec, u64::from(size) * 32)
        .map_err(|e| Refusal::invalid(format!("new CQ memory: {e}")))?;
    st.cq_resizes.push((id, mem, size));
    answer::<CreqResizeCqResp>(|r| r.xid = id.into())
}

/// DESTROY_CQ. A CQ a QP still completes to cannot go.
pub(super) fn destroy_cq(st: &mut RoceState, cmd: &Cmd<'_>) -> Outcome {
    let req: CmdqDestroyCq = parse(cmd, 0x18)?;
    let id = req.cq_cid.get();
    if !st.cqs.contains_key(&id) {
        return Err(Refusal::invalid(format!("cq_cid {id} is not a CQ")));
    }
    if let Some(qp) = st.qp_using_cq(id) {
        return Err(Refusal::invalid(format!("CQ {id} is still used by QP {qp}")));
    }
    let cq = st.cqs.remove(&id).expect("checked above");
    st.free_from.cq = st.free_from.cq.min(id);
    answer::<CreqDestroyCqResp>(|r| {
        r.xid = id.into();
        r.total_cnq_events = (cq.notifications.min(u64::from(u16::MAX)) as u16).into();
    })
}
