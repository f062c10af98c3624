//! CREATE_QP, QUERY_QP and DESTROY_QP for reliable-connected QPs and the GSI QP (hardware-map
//! §4.5, §5.1-5.3; bnxt_re qplib_fp.c `bnxt_qplib_create_qp`, `bnxt_qplib_query_qp`,
//! `bnxt_qplib_destroy_qp`; ib_verbs.c `bnxt_re_create_qp`, `bnxt_re_init_qp_type`,
//! `bnxt_re_setup_qp_hwqs`, `bnxt_re_qp_alloc_init_xrrq`). MODIFY_QP is in [`super::modify_qp`].
//!
//! CREATE_QP: an RC, UD, raw Ethernet or the GSI QP (an SRQ for a QP other than RC and a
//! first-page offset are NOT_IMPLEMENTED; a raw Ethernet QP is kept, counted as accepted without a
//! source, and carries no frame: `QpKind::RawEth` in roce/qp.rs) with its SQ and RQ behind page tables (an RC QP with
//! `SRQ_USED` has no RQ: it takes receive WQEs from SRQ `srq_cid`, which must be in its PD), the send and receive CQs, PD and
//! DPI. In static WQE mode `sq_size` counts WQEs of 8 slots; with `VARIABLE_SIZED_WQE_ENABLED` it
//! counts 16-byte slots. An RQ WQE is `32 + 16 × rq_sge` bytes.
//!
//! - RC: the SQ memory also holds the MSN table right after the ring (the firmware offers
//!   HOST_MSN_TABLE retransmission): `sq_size` rounded up to a power of two entries (static) or
//!   half that (variable), 8 bytes each; and the QP has ORRQ and IRRQ buffers (page-aligned, sized
//!   for the device's maximum outstanding READs, as bnxt_re allocates them). QP numbers are QP
//!   context entries past the L2 and QP1 ones (`ContextLimits`); when they are all used CREATE_QP
//!   answers RESOURCES.
//! - UD: like GSI, no MSN table and no ORRQ/IRRQ (`psn_sz` is 0 but for RC); its number is a QP
//!   context entry past the L2 and QP1 ones, like an RC QP's.
//! - GSI: bnxt_re on P5/P7 creates ib_mad's QP1 with CREATE_QP of type GSI (not CREATE_QP1, which
//!   is for older chips); it gives no MSN table and no ORRQ/IRRQ (`psn_sz` is 0 for every type but
//!   RC in `bnxt_qplib_create_qp`, so the SQ holds only the ring and `orrq_addr`/`irrq_addr` stay
//!   0). The firmware names it QP 1 (bnxt_re keeps QP 1 apart in its QP table:
//!   qplib_res.h `map_qp_id_to_tbl_indx`), so there is one per function; a second is refused
//!   (RESOURCES), as is one when the context memory sets no QP1 entries aside (QP split 1).

use bnxt_hsi::roce::layouts::{
    CmdqCreateQp as C, CmdqDestroyQp, CmdqQueryQp, CreqCreateQpResp, CreqDestroyQpResp, CreqQueryQpResp,
    CreqQueryQpRespSb as Sb,
};
use bnxt_hsi::roce::msn;
use bnxt_hsi::roce::qp::QpState;
use zerocopy::{FromZeros, IntoBytes};

use super::{Cmd, CmdCtx, Outcome, Refusal, answer, check_pd_dpi, parse, write_side_buffer};
use crate::firmware::context_mem::ContextLimits;
use crate::roce::caps::*;
use crate::roce::pages::{PageList, PblSpec};
use crate::roce::qp::{Qp, QpAttributes, QpKind, RecvRing, RingPos, SendRing};
use crate::roce::state::RoceState;
use crate::roce::wqe::STATIC_WQE_SLOTS;

/// Bytes of one ORRQ entry (bnxt_re `BNXT_QPLIB_MAX_ORRQE_ENTRY_SIZE`; roce_hsi.h `xrrq_orrq`).
pub(super) const ORRQ_ENTRY: u64 = 32;
/// Bytes of one IRRQ entry (`BNXT_QPLIB_MAX_IRRQE_ENTRY_SIZE`; `xrrq_irrq`).
pub(super) const IRRQ_ENTRY: u64 = 32;

fn level_and_shift(byte: u8, flag_valid: bool, pbl_code: u8, what: &str) -> Result<(u8, u32, u32), Refusal> {
    let level = byte & C::SQ_LVL_MASK;
    if level > 2 {
        return Err(Refusal::invalid(format!("{what} level {level} is not 0, 1 or 2")));
    }
    let code = (byte & C::SQ_PG_SIZE_MASK) >> 4;
    let page_shift = page_shift_of_code(code)
        .ok_or_else(|| Refusal::invalid(format!("{what} page size code {code} is not defined")))?;
    let table_shift = if flag_valid {
        let c = pbl_code & C::SQ_PBL_PG_SIZE_MASK;
        page_shift_of_code(c)
            .ok_or_else(|| Refusal::invalid(format!("{what} PBL page size code {c} is not defined")))?
    } else {
        12
    };
    Ok((level, page_shift, table_shift))
}

/// The pages of a queue of `bytes` bytes whose page table `root` and (level/page size byte, PBL
/// page size valid, PBL page size code) describe.
fn queue_memory(
    cx: &CmdCtx<'_>,
    sizes: (u8, bool, u8),
    root: u64,
    bytes: u64,
    what: &str,
) -> Result<PageList, Refusal> {
    let (level, page_shift, table_shift) = level_and_shift(sizes.0, sizes.1, sizes.2, what)?;
    PageList::walk(cx.mem, PblSpec { root, level, page_shift, table_shift }, bytes)
        .map_err(|e| Refusal::invalid(format!("{what} memory ({bytes} bytes): {e}")))
}

fn probe_buffer(cx: &CmdCtx<'_>, addr: u64, len: u64, what: &str) -> Result<(), Refusal> {
    if addr == 0 || !addr.is_multiple_of(4096) {
        return Err(Refusal::invalid(format!("{what} 0x{addr:x} is not a page-aligned buffer")));
    }
    cx.mem.probe(addr, len).map_err(|e| Refusal::invalid(format!("{what}: {e}")))
}

/// The QP number the GSI QP gets: QP1, the general services QP (Linux rdma/ib_verbs.h `IB_QP1`,
/// which bnxt_re's ib_verbs.c `bnxt_re_build_qp1_send_v2` addresses MADs to; bnxt_re qplib_res.h
/// `map_qp_id_to_tbl_indx` keeps xid 1 apart for it).
pub(super) const GSI_QPN: u32 = 1;

/// CREATE_QP.
pub(super) fn create_qp(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: C = parse(cmd, 0x60)?;
    let kind = match req.type_ {
        C::TYPE_RC => QpKind::Rc,
        C::TYPE_GSI => QpKind::Gsi,
        C::TYPE_UD => QpKind::Ud,
        C::TYPE_RAW_ETHERTYPE => {
            st.note_unsourced(
                "CREATE_QP of a raw Ethernet QP (type 6): accepted, as upstream bnxt_re sends it for a user-space raw \
                 packet QP (ib_verbs.c `__from_ib_qp_type`) and no public source shows P7 firmware refusing it \
                 without MIRROR_ON_ROCE; the model carries no frame on it (its doorbells are unimplemented)"
                    .to_string(),
            );
            QpKind::RawEth
        }
        t => {
            return Err(Refusal::not_implemented(format!(
                "QP type {t} (only RC, 2, UD, 4, raw Ethernet, 6, and GSI, 7, are modelled)"
            )));
        }
    };
    let flags = req.qp_flags.get();
    let srq = if flags & C::QP_FLAGS_SRQ_USED != 0 {
        if kind != QpKind::Rc {
            return Err(Refusal::not_implemented("an SRQ for a QP other than RC is not modelled"));
        }
        let id = req.srq_cid.get();
        let s = st.srqs.get(&id).ok_or_else(|| Refusal::invalid(format!("srq_cid {id} is not an SRQ")))?;
        if s.pd != req.pd_id.get() {
            return Err(Refusal::invalid(format!("SRQ {id} is in PD {}, the QP in PD {}", s.pd, req.pd_id.get())));
        }
        Some(id)
    } else {
        None
    };
    let variable = flags & C::QP_FLAGS_VARIABLE_SIZED_WQE_ENABLED != 0;
    let (pd, dpi) = (req.pd_id.get(), req.dpi.get());
    check_pd_dpi(pd, dpi)?;
    let (scq, rcq) = (req.scq_cid.get(), req.rcq_cid.get());
    for (what, id) in [("scq_cid", scq), ("rcq_cid", rcq)] {
        if !st.cqs.contains_key(&id) {
            return Err(Refusal::invalid(format!("{what} {id} is not a CQ")));
        }
    }
    let sq = send_ring(cx, &req, kind, variable)?;
    // With an SRQ, bnxt_re leaves the RQ fields zero (`bnxt_qplib_create_qp`).
    let rq = match srq {
        None => recv_ring(cx, &req, variable)?,
        Some(_) => RecvRing {
            mem: PageList::default(),
            size: 0,
            stride_slots: 0,
            max_sge: 0,
            prod: RingPos::default(),
            taken: RingPos::default(),
        },
    };
    let (orrq_addr, irrq_addr) = match kind {
        QpKind::Rc => read_queues(st, cx, &req)?,
        QpKind::Ud | QpKind::Gsi | QpKind::RawEth => (0, 0),
    };
    let id = match kind {
        QpKind::Rc => rc_qpn(st, cx)?,
        QpKind::Ud | QpKind::RawEth => rc_qpn(st, cx)?,
        QpKind::Gsi => gsi_qpn(st, cx.limits)?,
    };
    let qp = Qp {
        id,
        kind,
        handle: req.qp_handle.get(),
        pd,
        dpi,
        scq,
        rcq,
        flags,
        state: QpState::Reset,
        attrs: QpAttributes::default(),
        set_mask: 0,
        sq,
        rq,
        srq,
        orrq_addr,
        irrq_addr,
        src_mac: None,
        transport: None,
        early_recvs: Default::default(),
        inline: Default::default(),
        in_flight: Default::default(),
    };
    st.qps.insert(id, qp);
    st.count_cq_users(scq, rcq, true);
    if kind != QpKind::Gsi {
        // The smallest free number was taken: every one up to it is in use.
        st.free_from.qp = id + 1;
    }
    answer::<CreqCreateQpResp>(|r| r.xid = id.into())
}

/// The ORRQ and IRRQ of an RC QP: each, when given, a page-aligned buffer sized for the device's
/// maximum outstanding READs, as bnxt_re allocates them (ib_verbs.c `bnxt_re_qp_alloc_init_xrrq`,
/// `ORD_LIMIT_TO_ORRQ_SLOTS`/`IRD_LIMIT_TO_IRRQ_SLOTS` of the device's `max_qp_rd_atom`). One left
/// 0 is accepted (bnxt_re always gives both for RC, but nothing public makes them mandatory) and
/// noted: the QP then has no READ resources on that side (see `transport_attrs` in
/// [`super::modify_qp`]).
fn read_queues(st: &mut RoceState, cx: &CmdCtx<'_>, req: &C) -> Result<(u64, u64), Refusal> {
    let rd = u64::from(MAX_RD_ATOM);
    let (orrq, irrq) = (req.orrq_addr.get(), req.irrq_addr.get());
    if orrq != 0 {
        probe_buffer(cx, orrq, (rd + 1) * ORRQ_ENTRY, "orrq_addr")?;
    }
    if irrq != 0 {
        probe_buffer(cx, irrq, (2 * rd + 2) * IRRQ_ENTRY, "irrq_addr")?;
    }
    for (addr, what, side) in [(orrq, "ORRQ", "RDMA READs it posts"), (irrq, "IRRQ", "RDMA READs it receives")] {
        if addr == 0 {
            st.note_unsourced(format!(
                "CREATE_QP of an RC QP without an {what} (its address 0): accepted, as no public source makes it \
                 mandatory; the QP has no room for {side}, which the model then treats as an initiator/responder \
                 depth of 0 (a guess: what P7 firmware does is not public)"
            ));
        }
    }
    Ok((orrq, irrq))
}

/// The send queue CREATE_QP describes: its sizes checked and its memory mapped (the ring, and for
/// an RC QP the MSN table after it).
fn send_ring(cx: &CmdCtx<'_>, req: &C, kind: QpKind, variable: bool) -> Result<SendRing, Refusal> {
    let sq_size = req.sq_size.get();
    if sq_size == 0 || sq_size > MAX_QUEUE_SIZE {
        return Err(Refusal::invalid(format!("sq_size {sq_size} outside 1..={MAX_QUEUE_SIZE}")));
    }
    let fwo_sge = req.sq_fwo_sq_sge.get();
    if fwo_sge & C::SQ_FWO_MASK != 0 || req.rq_fwo_rq_sge.get() & C::RQ_FWO_MASK != 0 {
        return Err(Refusal::not_implemented("a first-page offset of the SQ or RQ is not modelled"));
    }
    let sq_sge = u32::from(fwo_sge & C::SQ_SGE_MASK);
    let max_sge = max_sge(variable);
    if sq_sge > max_sge {
        return Err(Refusal::invalid(format!("sq_sge {sq_sge} exceeds the {max_sge} of this WQE mode")));
    }
    let depth = if variable {
        if sq_size < 2 {
            return Err(Refusal::invalid("a variable-mode SQ needs at least 2 slots"));
        }
        sq_size
    } else {
        sq_size * STATIC_WQE_SLOTS
    };
    let (msn_entries, what) = match kind {
        QpKind::Rc => (msn::table_entries(sq_size, variable), "SQ ring and MSN table"),
        QpKind::Gsi | QpKind::Ud | QpKind::RawEth => (0, "SQ ring"),
    };
    let sq_bytes = u64::from(depth) * 16 + u64::from(msn_entries) * msn::ENTRY_BYTES as u64;
    let sq_valid = req.qp_flags.get() & C::QP_FLAGS_SQ_PBL_PG_SIZE_VALID != 0;
    let mem =
        queue_memory(cx, (req.sq_pg_size_sq_lvl, sq_valid, req.sq_pbl_pg_size), req.sq_pbl.get(), sq_bytes, what)?;
    Ok(SendRing {
        mem,
        size: sq_size,
        depth,
        variable,
        max_sge: sq_sge,
        msn_entries,
        prod: RingPos::default(),
        taken: RingPos::default(),
        wqes: 0,
        msn_next: 0,
    })
}

/// The receive queue CREATE_QP describes, its sizes checked and its memory mapped.
fn recv_ring(cx: &CmdCtx<'_>, req: &C, variable: bool) -> Result<RecvRing, Refusal> {
    let rq_size = req.rq_size.get();
    if rq_size == 0 || rq_size > MAX_QUEUE_SIZE {
        return Err(Refusal::invalid(format!("rq_size {rq_size} outside 1..={MAX_QUEUE_SIZE}")));
    }
    let rq_sge = u32::from(req.rq_fwo_rq_sge.get() & C::RQ_SGE_MASK);
    let max_sge = max_sge(variable);
    if rq_sge == 0 || rq_sge > max_sge {
        return Err(Refusal::invalid(format!("rq_sge {rq_sge} outside 1..={max_sge}")));
    }
    let stride_slots = 2 + rq_sge;
    let rq_bytes = u64::from(rq_size) * u64::from(stride_slots) * 16;
    let rq_valid = req.qp_flags.get() & C::QP_FLAGS_RQ_PBL_PG_SIZE_VALID != 0;
    let mem =
        queue_memory(cx, (req.rq_pg_size_rq_lvl, rq_valid, req.rq_pbl_pg_size), req.rq_pbl.get(), rq_bytes, "RQ")?;
    Ok(RecvRing {
        mem,
        size: rq_size,
        stride_slots,
        max_sge: rq_sge,
        prod: RingPos::default(),
        taken: RingPos::default(),
    })
}

/// Most SGEs a WQE holds in this WQE mode.
fn max_sge(variable: bool) -> u32 {
    if variable { u32::from(MAX_SGE_VAR_WQE) } else { u32::from(MAX_SGE) }
}

/// A free RC or UD QP number: a QP context entry past the L2 and QP1 ones.
fn rc_qpn(st: &RoceState, cx: &CmdCtx<'_>) -> Result<u32, Refusal> {
    let first = super::func::first_qpn(cx.limits);
    let count = cx.limits.qps.saturating_sub(first);
    // The GSI QP (QP1, the only one of its kind) is not one of them.
    let gsi = st.qps.get(&GSI_QPN).is_some_and(|q| q.kind == QpKind::Gsi);
    let in_use = st.qps.len() - usize::from(gsi);
    if in_use as u64 >= u64::from(count) {
        return Err(Refusal::resources(format!("all {count} QPs the context memory holds are in use")));
    }
    // The smallest free number: every one below `free_from.qp` is in use.
    (st.free_from.qp.max(first)..first + count)
        .find(|q| !st.qps.contains_key(q))
        .ok_or_else(|| Refusal::resources("no QP id left"))
}

/// QP1 for the GSI QP, if the function has none yet and the context memory sets entries aside.
fn gsi_qpn(st: &RoceState, limits: ContextLimits) -> Result<u32, Refusal> {
    if limits.qp1_qps == 0 {
        return Err(Refusal::resources("the context memory sets no QP entries aside for QP1 (QP split 1 is 0)"));
    }
    if st.qps.contains_key(&GSI_QPN) {
        return Err(Refusal::resources("the function already has its GSI QP (QP1)"));
    }
    Ok(GSI_QPN)
}

/// QUERY_QP: the QP's state and attributes in the side buffer.
pub(super) fn query_qp(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: CmdqQueryQp = parse(cmd, 0x18)?;
    let id = req.qp_cid.get();
    let qp = st.qps.get(&id).ok_or_else(|| Refusal::invalid(format!("qp_cid {id} is not a QP")))?;
    let a = &qp.attrs;
    let mut sb = Sb::new_zeroed();
    sb.xid = id.into();
    sb.en_sqd_async_notify_state = qp.state.field() | if a.sqd_async_notify { Sb::EN_SQD_ASYNC_NOTIFY } else { 0 };
    sb.access = a.access.modify_qp();
    sb.pkey = a.pkey.into();
    sb.qkey = a.qkey.into();
    sb.dgid.as_mut_bytes().copy_from_slice(&a.dgid);
    sb.flow_label = a.flow_label.into();
    sb.sgid_index = a.sgid_index.into();
    sb.hop_limit = a.hop_limit;
    sb.traffic_class = a.traffic_class;
    sb.dest_mac.as_mut_bytes().copy_from_slice(&a.dest_mac);
    sb.path_mtu_dest_vlan_id = (u16::from(a.path_mtu) << 12).into();
    sb.timeout = a.timeout;
    sb.retry_cnt = a.retry_cnt;
    sb.rnr_retry = a.rnr_retry;
    sb.min_rnr_timer = a.min_rnr_timer;
    sb.rq_psn = a.rq_psn.into();
    sb.sq_psn = a.sq_psn.into();
    sb.max_rd_atomic = a.max_rd_atomic;
    sb.max_dest_rd_atomic = a.max_dest_rd_atomic;
    sb.tos_dscp_tos_ecn = a.tos;
    sb.sq_size = qp.sq.size.into();
    sb.rq_size = qp.rq.size.into();
    sb.sq_sge = (qp.sq.max_sge as u16).into();
    sb.rq_sge = (qp.rq.max_sge as u16).into();
    let inline = if qp.sq.variable { u32::from(MAX_INLINE_DATA_VAR_WQE) } else { MAX_INLINE_DATA };
    sb.max_inline_data = inline.into();
    sb.dest_qp_id = a.dest_qp.into();
    if let Some(m) = qp.src_mac {
        sb.src_mac.as_mut_bytes().copy_from_slice(&m.0);
    }
    if let Some(t) = &qp.transport {
        sb.udp_src_port = t.attrs().path.src_port.into();
    }
    write_side_buffer(cmd, cx, sb.as_bytes().to_vec())?;
    answer::<CreqQueryQpResp>(|r| r.size = ((size_of::<Sb>() / 16) as u32).into())
}

/// DESTROY_QP: the QP goes with whatever it had outstanding (no completions, as IBA §11.2.4.4
/// says of destroying a QP).
pub(super) fn destroy_qp(st: &mut RoceState, cmd: &Cmd<'_>) -> Outcome {
    let req: CmdqDestroyQp = parse(cmd, 0x18)?;
    let id = req.qp_cid.get();
    let Some(qp) = st.qps.remove(&id) else {
        return Err(Refusal::invalid(format!("qp_cid {id} is not a QP")));
    };
    st.count_cq_users(qp.scq, qp.rcq, false);
    st.free_from.qp = st.free_from.qp.min(id);
    st.dirty.remove(&id);
    answer::<CreqDestroyQpResp>(|r| r.xid = id.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bnxt_hsi::roce::rcfw::CreqStatus;

    #[test]
    fn the_gsi_qp_needs_qp1_entries_and_is_one_per_function() {
        let st = RoceState::default();
        let none = ContextLimits { qps: 64, l2_qps: 8, ..ContextLimits::default() };
        let refusal = gsi_qpn(&st, none).unwrap_err();
        assert_eq!(refusal.status, CreqStatus::Resources);
        assert!(refusal.reason.contains("QP split 1"), "{}", refusal.reason);
        let some = ContextLimits { qp1_qps: 2, ..none };
        assert_eq!(gsi_qpn(&st, some), Ok(GSI_QPN));
    }
}
