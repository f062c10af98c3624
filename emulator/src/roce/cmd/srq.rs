//! CREATE_SRQ, QUERY_SRQ and DESTROY_SRQ (roce_hsi.h `cmdq_create_srq`, `cmdq_query_srq`,
//! `cmdq_destroy_srq` and their completions; bnxt_re qplib_fp.c `bnxt_qplib_create_srq`,
//! `bnxt_qplib_query_srq`, `__qplib_destroy_srq`; ib_verbs.c `bnxt_re_create_srq`).
//!
//! There is no MODIFY_SRQ command: bnxt_re and libbnxt_re set the limit and arm an SRQ with
//! doorbells (`bnxt_qplib_modify_srq`, `bnxt_qplib_srq_arm_db`; rdma-core providers/bnxt_re
//! `bnxt_re_ring_srq_arm`), which [`super::super::doorbell`] carries out.
//!
//! CREATE_SRQ: `srq_size` WQEs behind a page table (`pg_size_lvl`, and `pbl_pg_size` when
//! `PBL_PG_SIZE_VALID`), a PD, a DPI and the NQ ring (`eventq_id`) for its limit events. A WQE is
//! `32 + 16 × srq_sge` bytes, `srq_sge` from `srq_fwo` bits 15:12 when the driver gives it (Broadcom's
//! bnxt_re does with small receive WQEs), else the device's `max_srq_sge` (6): Linux's bnxt_re
//! sizes SRQ WQEs for `max_srq_sges` (`bnxt_re_get_rwqe_size`) and libbnxt_re for 16 + 16 + 96
//! bytes (`bnxt_re_get_srqe_sz`), 128 bytes either way. A first-page offset (`srq_fwo` bits 11:0)
//! is not modelled (NOT_IMPLEMENTED). SRQ ids are SRQ context entries past the L2 ones (SRQ split
//! 0); when they are all used CREATE_SRQ answers RESOURCES. An SRQ a QP still uses cannot be
//! destroyed.

use bnxt_hsi::roce::layouts::{
    CmdqCreateSrq as C, CmdqDestroySrq, CmdqQuerySrq, CreqCreateSrqResp, CreqDestroySrqResp, CreqQuerySrqResp,
    CreqQuerySrqRespSb as Sb,
};
use zerocopy::{FromZeros, IntoBytes};

use super::{Cmd, CmdCtx, Outcome, Refusal, answer, check_pd_dpi, parse, table_shape, write_side_buffer};
use crate::firmware::state::RingType;
use crate::roce::caps::{MAX_SGE, MAX_SRQ_WR};
use crate::roce::pages::{PageList, PblSpec};
use crate::roce::qp::{RecvRing, RingPos};
use crate::roce::srq::Srq;
use crate::roce::state::RoceState;

/// CREATE_SRQ.
pub(super) fn create_srq(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: C = parse(cmd, 0x30)?;
    let flags = req.flags.get();
    let pbl_valid = flags & C::FLAGS_PBL_PG_SIZE_VALID != 0;
    let (level, page_shift, table_shift) = table_shape(u32::from(req.pg_size_lvl.get()), pbl_valid, req.pbl_pg_size)?;
    let fwo = req.srq_fwo.get();
    if fwo & C::SRQ_FWO_MASK != 0 {
        return Err(Refusal::not_implemented(format!("first-page offset {} is not modelled", fwo & C::SRQ_FWO_MASK)));
    }
    let sge = match u32::from((fwo & C::SRQ_SGE_MASK) >> 12) {
        0 => u32::from(MAX_SGE),
        n if n <= u32::from(MAX_SGE) => n,
        n => return Err(Refusal::invalid(format!("srq_sge {n} exceeds max_srq_sge {MAX_SGE}"))),
    };
    let size = u32::from(req.srq_size.get());
    if !(2..=MAX_SRQ_WR).contains(&size) {
        return Err(Refusal::invalid(format!("srq_size {size} outside 2..={MAX_SRQ_WR}")));
    }
    let (pd, dpi) = (req.pd_id.get(), req.dpi.get());
    check_pd_dpi(pd, dpi)?;
    let nq = req.eventq_id.get() & C::EVENTQ_ID_MASK;
    match cx.fw.rings.get(&nq) {
        Some(r) if r.ty == RingType::Nq => {}
        _ => return Err(Refusal::invalid(format!("eventq_id {nq} is not an NQ ring (HWRM RING_ALLOC type NQ)"))),
    }
    let base = cx.limits.l2_srqs;
    let count = cx.limits.roce_srqs();
    if st.srqs.len() as u64 >= u64::from(count) {
        return Err(Refusal::resources(format!("all {count} SRQs the context memory holds are in use")));
    }
    let stride_slots = 2 + sge;
    let bytes = u64::from(size) * u64::from(stride_slots) * 16;
    let spec = PblSpec { root: req.pbl.get(), level, page_shift, table_shift };
    let mem = PageList::walk(cx.mem, spec, bytes)
        .map_err(|e| Refusal::invalid(format!("SRQ memory ({bytes} bytes): {e}")))?;
    let id = (base..base + count)
        .find(|id| !st.srqs.contains_key(id))
        .ok_or_else(|| Refusal::resources("no SRQ id left"))?;
    let ring = RecvRing { mem, size, stride_slots, max_sge: sge, prod: RingPos::default(), taken: RingPos::default() };
    let srq = Srq { id, handle: req.srq_handle.get(), pd, dpi, nq, ring, limit: 0, armed: false, events: 0 };
    st.srqs.insert(id, srq);
    answer::<CreqCreateSrqResp>(|r| r.xid = id.into())
}

/// QUERY_SRQ: the limit in the side buffer (what `bnxt_qplib_query_srq` reads back).
pub(super) fn query_srq(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: CmdqQuerySrq = parse(cmd, 0x18)?;
    let id = req.srq_cid.get();
    let srq = st.srqs.get(&id).ok_or_else(|| Refusal::invalid(format!("srq_cid {id} is not an SRQ")))?;
    let mut sb = Sb::new_zeroed();
    sb.xid = id.into();
    sb.srq_limit = (srq.limit.min(u32::from(u16::MAX)) as u16).into();
    write_side_buffer(cmd, cx, sb.as_bytes().to_vec())?;
    answer::<CreqQuerySrqResp>(|r| r.size = ((size_of::<Sb>() / 16) as u32).into())
}

/// DESTROY_SRQ. An SRQ a QP still takes receive WQEs from cannot go.
pub(super) fn destroy_srq(st: &mut RoceState, cmd: &Cmd<'_>) -> Outcome {
    let req: CmdqDestroySrq = parse(cmd, 0x18)?;
    let id = req.srq_cid.get();
    if !st.srqs.contains_key(&id) {
        return Err(Refusal::invalid(format!("srq_cid {id} is not an SRQ")));
    }
    if let Some(qp) = st.qps.values().find(|q| q.srq == Some(id)) {
        return Err(Refusal::invalid(format!("SRQ {id} is still used by QP {}", qp.id)));
    }
    st.srqs.remove(&id);
    answer::<CreqDestroySrqResp>(|r| r.xid = id.into())
}
