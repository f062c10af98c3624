//! CREATE_QP, MODIFY_QP, QUERY_QP and DESTROY_QP for reliable-connected QPs (hardware-map §4.5,
//! §5.1-5.3; bnxt_re qplib_fp.c `bnxt_qplib_create_qp`, `bnxt_qplib_modify_qp`,
//! `bnxt_qplib_query_qp`, `bnxt_qplib_destroy_qp`; ib_verbs.c `bnxt_re_modify_qp`,
//! `bnxt_re_setup_qp_hwqs`, `bnxt_re_qp_alloc_init_xrrq`).
//!
//! CREATE_QP: an RC QP (other types are NOT_IMPLEMENTED, as are SRQs and a first-page offset)
//! with its SQ and RQ behind page tables, the send and receive CQs, PD and DPI, and its ORRQ and
//! IRRQ buffers (page-aligned, sized for the device's maximum outstanding READs, as bnxt_re
//! allocates them). In static WQE mode `sq_size` counts WQEs of 8 slots; with
//! `VARIABLE_SIZED_WQE_ENABLED` it counts 16-byte slots. The SQ memory also holds the MSN table
//! right after the ring (the firmware offers HOST_MSN_TABLE retransmission): `sq_size` rounded up
//! to a power of two entries (static) or half that (variable), 8 bytes each. An RQ WQE is
//! `32 + 16 × rq_sge` bytes. QP numbers are QP context entries past the L2 and QP1 ones
//! (`ContextLimits`); when they are all used CREATE_QP answers RESOURCES.
//!
//! MODIFY_QP: the RC state machine RESET→INIT→RTR→RTS, INIT→INIT, RTS→RTS, any→ERR and any→RESET,
//! with the attributes each transition requires (RESET→INIT: ACCESS, PKEY; INIT→RTR: DGID,
//! SGID_INDEX, DEST_MAC, PATH_MTU, DEST_QP_ID, RQ_PSN, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER;
//! RTR→RTS: TIMEOUT, RETRY_CNT, RNR_RETRY, SQ_PSN, MAX_RD_ATOMIC). The network type must be
//! RoCEv2-IPv4 with IPv4-mapped GIDs (RoCEv1, IPv6 and VLAN ids other than 0 and 0xfff are
//! NOT_IMPLEMENTED; VLAN_ID with those carries only the priority, which is not modelled). The transport
//! starts at RTS; resizing a QP and changing transport attributes in RTS are NOT_IMPLEMENTED.

use bnxt_hsi::roce::gid::ipv4_of_gid;
use bnxt_hsi::roce::layouts::{
    CmdqCreateQp as C, CmdqDestroyQp, CmdqModifyQp as M, CmdqQueryQp, CreqCreateQpResp, CreqDestroyQpResp,
    CreqModifyQpResp, CreqQueryQpResp, CreqQueryQpRespSb as Sb,
};
use bnxt_hsi::roce::msn;
use bnxt_hsi::roce::qp::{Access, QpState};
use zerocopy::{FromZeros, IntoBytes};

use super::{Cmd, CmdCtx, Outcome, Refusal, answer, parse, write_side_buffer};
use crate::net::{MacAddr, Path, source_port::roce_source_port};
use crate::roce::caps::*;
use crate::roce::pages::{PageList, PblSpec};
use crate::roce::qp::{Qp, QpAttributes, RecvRing, RingPos, SendRing, transition_allowed};
use crate::roce::state::RoceState;
use crate::roce::transport::{Mtu, QpAttrs, RcQp, RemoteAccess};
use crate::roce::wqe::STATIC_WQE_SLOTS;

use super::cq::MAX_DPI_NUMBER;

/// Bytes of one ORRQ entry (bnxt_re `BNXT_QPLIB_MAX_ORRQE_ENTRY_SIZE`; roce_hsi.h `xrrq_orrq`).
pub const ORRQ_ENTRY: u64 = 32;
/// Bytes of one IRRQ entry (`BNXT_QPLIB_MAX_IRRQE_ENTRY_SIZE`; `xrrq_irrq`).
pub const IRRQ_ENTRY: u64 = 32;

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

/// CREATE_QP.
pub fn create_qp(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: C = parse(cmd, 0x60)?;
    if req.type_ != C::TYPE_RC {
        return Err(Refusal::not_implemented(format!("QP type {} (only RC, 2, is modelled)", req.type_)));
    }
    let flags = req.qp_flags.get();
    if flags & C::QP_FLAGS_SRQ_USED != 0 {
        return Err(Refusal::not_implemented("shared receive queues are not modelled"));
    }
    let variable = flags & C::QP_FLAGS_VARIABLE_SIZED_WQE_ENABLED != 0;
    let pd = req.pd_id.get();
    if pd >= MAX_PD {
        return Err(Refusal::invalid(format!("pd_id {pd} is not below max_pd {MAX_PD}")));
    }
    let dpi = req.dpi.get();
    if dpi >= MAX_DPI_NUMBER {
        return Err(Refusal::invalid(format!("dpi {dpi} is not a doorbell page of BAR2")));
    }
    let (scq, rcq) = (req.scq_cid.get(), req.rcq_cid.get());
    for (what, id) in [("scq_cid", scq), ("rcq_cid", rcq)] {
        if !st.cqs.contains_key(&id) {
            return Err(Refusal::invalid(format!("{what} {id} is not a CQ")));
        }
    }
    // Send queue.
    let sq_size = req.sq_size.get();
    if sq_size == 0 || sq_size > MAX_QUEUE_SIZE {
        return Err(Refusal::invalid(format!("sq_size {sq_size} outside 1..={MAX_QUEUE_SIZE}")));
    }
    let fwo_sge = req.sq_fwo_sq_sge.get();
    if fwo_sge & C::SQ_FWO_MASK != 0 || req.rq_fwo_rq_sge.get() & C::RQ_FWO_MASK != 0 {
        return Err(Refusal::not_implemented("a first-page offset of the SQ or RQ is not modelled"));
    }
    let sq_sge = u32::from(fwo_sge & C::SQ_SGE_MASK);
    let max_sge = if variable { u32::from(MAX_SGE_VAR_WQE) } else { u32::from(MAX_SGE) };
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
    let msn_entries = msn::table_entries(sq_size, variable);
    let sq_bytes = u64::from(depth) * 16 + u64::from(msn_entries) * msn::ENTRY_BYTES as u64;
    let sq_valid = flags & C::QP_FLAGS_SQ_PBL_PG_SIZE_VALID != 0;
    let sq_mem = queue_memory(
        cx,
        (req.sq_pg_size_sq_lvl, sq_valid, req.sq_pbl_pg_size),
        req.sq_pbl.get(),
        sq_bytes,
        "SQ ring and MSN table",
    )?;
    // Receive queue.
    let rq_size = req.rq_size.get();
    if rq_size == 0 || rq_size > MAX_QUEUE_SIZE {
        return Err(Refusal::invalid(format!("rq_size {rq_size} outside 1..={MAX_QUEUE_SIZE}")));
    }
    let rq_sge = u32::from(req.rq_fwo_rq_sge.get() & C::RQ_SGE_MASK);
    if rq_sge == 0 || rq_sge > max_sge {
        return Err(Refusal::invalid(format!("rq_sge {rq_sge} outside 1..={max_sge}")));
    }
    let stride_slots = 2 + rq_sge;
    let rq_bytes = u64::from(rq_size) * u64::from(stride_slots) * 16;
    let rq_valid = flags & C::QP_FLAGS_RQ_PBL_PG_SIZE_VALID != 0;
    let rq_mem =
        queue_memory(cx, (req.rq_pg_size_rq_lvl, rq_valid, req.rq_pbl_pg_size), req.rq_pbl.get(), rq_bytes, "RQ")?;
    // ORRQ and IRRQ, sized for the device's maximum as bnxt_re allocates them.
    let rd = u64::from(MAX_RD_ATOM);
    probe_buffer(cx, req.orrq_addr.get(), (rd + 1) * ORRQ_ENTRY, "orrq_addr")?;
    probe_buffer(cx, req.irrq_addr.get(), (2 * rd + 2) * IRRQ_ENTRY, "irrq_addr")?;
    // A QP context entry.
    let first = super::func::first_qpn(cx.limits);
    let count = cx.limits.qps.saturating_sub(first);
    if st.qps.len() as u64 >= u64::from(count) {
        return Err(Refusal::resources(format!("all {count} QPs the context memory holds are in use")));
    }
    let id =
        (first..first + count).find(|q| !st.qps.contains_key(q)).ok_or_else(|| Refusal::resources("no QP id left"))?;
    let sq = SendRing {
        mem: sq_mem,
        size: sq_size,
        depth,
        variable,
        max_sge: sq_sge,
        msn_entries,
        prod: RingPos::default(),
        taken: RingPos::default(),
        wqes: 0,
        msn_next: 0,
    };
    let rq = RecvRing {
        mem: rq_mem,
        size: rq_size,
        stride_slots,
        max_sge: rq_sge,
        prod: RingPos::default(),
        taken: RingPos::default(),
    };
    let qp = Qp {
        id,
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
        src_mac: None,
        transport: None,
        early_recvs: Default::default(),
        inline: Default::default(),
        in_flight: Default::default(),
    };
    st.qps.insert(id, qp);
    answer::<CreqCreateQpResp>(|r| r.xid = id.into())
}

/// Mask bits MODIFY_QP takes (those bnxt_re sends, and the ones it leaves to their defaults).
const TAKEN: u32 = M::MODIFY_MASK_STATE
    | M::MODIFY_MASK_EN_SQD_ASYNC_NOTIFY
    | M::MODIFY_MASK_ACCESS
    | M::MODIFY_MASK_PKEY
    | M::MODIFY_MASK_QKEY
    | M::MODIFY_MASK_DGID
    | M::MODIFY_MASK_FLOW_LABEL
    | M::MODIFY_MASK_SGID_INDEX
    | M::MODIFY_MASK_HOP_LIMIT
    | M::MODIFY_MASK_TRAFFIC_CLASS
    | M::MODIFY_MASK_DEST_MAC
    | M::MODIFY_MASK_PATH_MTU
    | M::MODIFY_MASK_TIMEOUT
    | M::MODIFY_MASK_RETRY_CNT
    | M::MODIFY_MASK_RNR_RETRY
    | M::MODIFY_MASK_RQ_PSN
    | M::MODIFY_MASK_MAX_RD_ATOMIC
    | M::MODIFY_MASK_MIN_RNR_TIMER
    | M::MODIFY_MASK_SQ_PSN
    | M::MODIFY_MASK_MAX_DEST_RD_ATOMIC
    | M::MODIFY_MASK_SQ_SIZE
    | M::MODIFY_MASK_RQ_SIZE
    | M::MODIFY_MASK_SQ_SGE
    | M::MODIFY_MASK_RQ_SGE
    | M::MODIFY_MASK_MAX_INLINE_DATA
    | M::MODIFY_MASK_DEST_QP_ID
    | M::MODIFY_MASK_SRC_MAC
    | M::MODIFY_MASK_VLAN_ID
    | M::MODIFY_MASK_ENABLE_CC
    | M::MODIFY_MASK_TOS_ECN
    | M::MODIFY_MASK_TOS_DSCP;

/// Attributes the transport is built from at RTS; changing them in RTS is not modelled.
const TRANSPORT_ATTRS: u32 = M::MODIFY_MASK_DGID
    | M::MODIFY_MASK_SGID_INDEX
    | M::MODIFY_MASK_DEST_MAC
    | M::MODIFY_MASK_PATH_MTU
    | M::MODIFY_MASK_TIMEOUT
    | M::MODIFY_MASK_RETRY_CNT
    | M::MODIFY_MASK_RNR_RETRY
    | M::MODIFY_MASK_RQ_PSN
    | M::MODIFY_MASK_SQ_PSN
    | M::MODIFY_MASK_MAX_RD_ATOMIC
    | M::MODIFY_MASK_MAX_DEST_RD_ATOMIC
    | M::MODIFY_MASK_MIN_RNR_TIMER
    | M::MODIFY_MASK_DEST_QP_ID
    | M::MODIFY_MASK_ACCESS;

fn required(from: QpState, to: QpState) -> u32 {
    match (from, to) {
        (QpState::Reset, QpState::Init) => M::MODIFY_MASK_ACCESS | M::MODIFY_MASK_PKEY,
        (QpState::Init, QpState::Rtr) => {
            M::MODIFY_MASK_DGID
                | M::MODIFY_MASK_SGID_INDEX
                | M::MODIFY_MASK_DEST_MAC
                | M::MODIFY_MASK_PATH_MTU
                | M::MODIFY_MASK_DEST_QP_ID
                | M::MODIFY_MASK_RQ_PSN
                | M::MODIFY_MASK_MAX_DEST_RD_ATOMIC
                | M::MODIFY_MASK_MIN_RNR_TIMER
        }
        (QpState::Rtr, QpState::Rts) => {
            M::MODIFY_MASK_TIMEOUT
                | M::MODIFY_MASK_RETRY_CNT
                | M::MODIFY_MASK_RNR_RETRY
                | M::MODIFY_MASK_SQ_PSN
                | M::MODIFY_MASK_MAX_RD_ATOMIC
        }
        _ => 0,
    }
}

/// Mask bit names for refusals.
fn mask_names(mask: u32) -> String {
    const NAMES: [&str; 32] = [
        "STATE",
        "EN_SQD_ASYNC_NOTIFY",
        "ACCESS",
        "PKEY",
        "QKEY",
        "DGID",
        "FLOW_LABEL",
        "SGID_INDEX",
        "HOP_LIMIT",
        "TRAFFIC_CLASS",
        "DEST_MAC",
        "PINGPONG_PUSH_MODE",
        "PATH_MTU",
        "TIMEOUT",
        "RETRY_CNT",
        "RNR_RETRY",
        "RQ_PSN",
        "MAX_RD_ATOMIC",
        "MIN_RNR_TIMER",
        "SQ_PSN",
        "MAX_DEST_RD_ATOMIC",
        "SQ_SIZE",
        "RQ_SIZE",
        "SQ_SGE",
        "RQ_SGE",
        "MAX_INLINE_DATA",
        "DEST_QP_ID",
        "SRC_MAC",
        "VLAN_ID",
        "ENABLE_CC",
        "TOS_ECN",
        "TOS_DSCP",
    ];
    (0..32).filter(|b| mask & (1 << b) != 0).map(|b| NAMES[b]).collect::<Vec<_>>().join("|")
}

/// Check the fields `mask` names and apply them to a copy of the attributes.
fn apply(req: &M, mask: u32, qp: &Qp) -> Result<QpAttributes, Refusal> {
    let mut a = qp.attrs;
    let has = |bit: u32| mask & bit != 0;
    if has(M::MODIFY_MASK_ACCESS) {
        if req.access & !0xf != 0 {
            return Err(Refusal::invalid(format!("access 0x{:x} has undefined bits", req.access)));
        }
        a.access = Access::from_modify_qp(req.access);
    }
    if has(M::MODIFY_MASK_PKEY) {
        a.pkey = req.pkey.get();
    }
    if has(M::MODIFY_MASK_QKEY) {
        a.qkey = req.qkey.get();
    }
    if has(M::MODIFY_MASK_DGID) {
        a.dgid.copy_from_slice(req.dgid.as_bytes());
        a.network_type = req.network_type_en_sqd_async_notify_new_state & M::NETWORK_TYPE_MASK;
    }
    if has(M::MODIFY_MASK_FLOW_LABEL) {
        a.flow_label = req.flow_label.get() & 0xf_ffff;
    }
    if has(M::MODIFY_MASK_SGID_INDEX) {
        a.sgid_index = req.sgid_index.get();
    }
    if has(M::MODIFY_MASK_HOP_LIMIT) {
        a.hop_limit = req.hop_limit;
    }
    if has(M::MODIFY_MASK_TRAFFIC_CLASS) {
        a.traffic_class = req.traffic_class;
    }
    if has(M::MODIFY_MASK_DEST_MAC) {
        a.dest_mac.copy_from_slice(req.dest_mac.as_bytes());
        if a.dest_mac[0] & 1 != 0 {
            return Err(Refusal::invalid(format!("dest_mac {:02x?} is a group address", a.dest_mac)));
        }
    }
    if has(M::MODIFY_MASK_PATH_MTU) {
        let code = (req.path_mtu_pingpong_push_enable & M::PATH_MTU_MASK) >> 4;
        if code > 4 {
            return Err(Refusal::invalid(format!(
                "path MTU code {code}: the fabric carries at most 4096-byte payloads"
            )));
        }
        a.path_mtu = code;
    }
    let field = |v: u8, max: u8, name: &str| -> Result<u8, Refusal> {
        if v > max { Err(Refusal::invalid(format!("{name} {v} exceeds {max}"))) } else { Ok(v) }
    };
    if has(M::MODIFY_MASK_TIMEOUT) {
        a.timeout = field(req.timeout, 31, "timeout")?;
    }
    if has(M::MODIFY_MASK_RETRY_CNT) {
        a.retry_cnt = field(req.retry_cnt, 7, "retry_cnt")?;
    }
    if has(M::MODIFY_MASK_RNR_RETRY) {
        a.rnr_retry = field(req.rnr_retry, 7, "rnr_retry")?;
    }
    if has(M::MODIFY_MASK_MIN_RNR_TIMER) {
        a.min_rnr_timer = field(req.min_rnr_timer, 31, "min_rnr_timer")?;
    }
    let psn = |v: u32, name: &str| -> Result<u32, Refusal> {
        if v > 0xff_ffff { Err(Refusal::invalid(format!("{name} 0x{v:x} is wider than 24 bits"))) } else { Ok(v) }
    };
    if has(M::MODIFY_MASK_RQ_PSN) {
        a.rq_psn = psn(req.rq_psn.get(), "rq_psn")?;
    }
    if has(M::MODIFY_MASK_SQ_PSN) {
        a.sq_psn = psn(req.sq_psn.get(), "sq_psn")?;
    }
    if has(M::MODIFY_MASK_DEST_QP_ID) {
        a.dest_qp = psn(req.dest_qp_id.get(), "dest_qp_id")?;
    }
    if has(M::MODIFY_MASK_MAX_RD_ATOMIC) {
        // ORRQ slots: ORD + 1 (bnxt_re ORD_LIMIT_TO_ORRQ_SLOTS).
        let slots = req.max_rd_atomic;
        if slots < 1 || slots - 1 > MAX_RD_ATOM {
            return Err(Refusal::invalid(format!("max_rd_atomic {slots} ORRQ slots: ORD must be 0..={MAX_RD_ATOM}")));
        }
        a.max_rd_atomic = slots;
    }
    if has(M::MODIFY_MASK_MAX_DEST_RD_ATOMIC) {
        // IRRQ slots: 2 IRD + 2 (IRD_LIMIT_TO_IRRQ_SLOTS).
        let slots = req.max_dest_rd_atomic;
        if slots < 2 || slots / 2 - 1 > MAX_RD_ATOM {
            return Err(Refusal::invalid(format!(
                "max_dest_rd_atomic {slots} IRRQ slots: IRD must be 0..={MAX_RD_ATOM}"
            )));
        }
        a.max_dest_rd_atomic = slots;
    }
    if has(M::MODIFY_MASK_VLAN_ID) {
        // bnxt_re sends VLAN_ID at RTR for the priority (PCP = SL) with the source GID's VLAN id,
        // 0xfff when it has none (ib_verbs.c `bnxt_re_update_ah_dscp_sl`, qplib_fp.c
        // `bnxt_qplib_modify_qp`). Ids 0 (priority only) and 0xfff (none) send untagged frames;
        // a real VLAN is not modelled.
        let id = req.vlan_pcp_vlan_dei_vlan_id.get() & M::VLAN_ID_MASK;
        if id != 0 && id != M::VLAN_ID_MASK {
            return Err(Refusal::not_implemented(format!("VLAN id {id}: VLANs are not modelled")));
        }
    }
    if has(M::MODIFY_MASK_TOS_ECN) || has(M::MODIFY_MASK_TOS_DSCP) {
        a.tos = req.tos_dscp_tos_ecn;
    }
    let resize = [
        (M::MODIFY_MASK_SQ_SIZE, req.sq_size.get(), qp.sq.size, "sq_size"),
        (M::MODIFY_MASK_RQ_SIZE, req.rq_size.get(), qp.rq.size, "rq_size"),
        (M::MODIFY_MASK_SQ_SGE, u32::from(req.sq_sge.get()), qp.sq.max_sge, "sq_sge"),
        (M::MODIFY_MASK_RQ_SGE, u32::from(req.rq_sge.get()), qp.rq.max_sge, "rq_sge"),
    ];
    for (bit, new, old, name) in resize {
        if has(bit) && new != old {
            return Err(Refusal::not_implemented(format!(
                "changing {name} from {old} to {new} (QP resize) is not modelled"
            )));
        }
    }
    Ok(a)
}

/// The transport attributes of `qp` with `a` at RTS.
fn transport_attrs(qp: &Qp, a: &QpAttributes, src_mac: MacAddr, src_ip: [u8; 4]) -> Result<QpAttrs, Refusal> {
    let dst_ip =
        ipv4_of_gid(&a.dgid).ok_or_else(|| Refusal::not_implemented("a destination GID that is not IPv4-mapped"))?;
    let dst_mac = MacAddr(a.dest_mac);
    let (src_ip, dst_ip) = (std::net::Ipv4Addr::from(src_ip), std::net::Ipv4Addr::from(dst_ip));
    let path = Path {
        src_mac,
        dst_mac,
        src_ip,
        dst_ip,
        src_port: roce_source_port(dst_mac, src_mac, dst_ip, src_ip, a.dest_qp),
    };
    let mtu = Mtu::from_bytes(256u32 << a.path_mtu).expect("checked at apply");
    Ok(QpAttrs {
        qpn: qp.id,
        dest_qpn: a.dest_qp,
        path,
        mtu,
        sq_psn: a.sq_psn,
        rq_psn: a.rq_psn,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        min_rnr_timer: a.min_rnr_timer,
        max_rd_atomic: a.max_rd_atomic.saturating_sub(1),
        max_dest_rd_atomic: (a.max_dest_rd_atomic / 2).saturating_sub(1),
        access: RemoteAccess { read: a.access.remote_read, write: a.access.remote_write },
    })
}

/// MODIFY_QP.
pub fn modify_qp(st: &mut RoceState, cmd: &Cmd<'_>, _cx: &CmdCtx<'_>) -> Outcome {
    let req: M = parse(cmd, 0x70)?;
    let id = req.qp_cid.get();
    if req.qp_type != 0 && req.qp_type != M::QP_TYPE_RC {
        return Err(Refusal::invalid(format!("qp_type {} does not match the RC QP", req.qp_type)));
    }
    let mask = req.modify_mask.get();
    let unsupported = mask & !TAKEN;
    if unsupported != 0 {
        return Err(Refusal::not_implemented(format!("modify_mask bits {} are not modelled", mask_names(unsupported))));
    }
    let ext = req.ext_modify_mask.get();
    if ext != 0 {
        return Err(Refusal::invalid(format!("ext_modify_mask 0x{ext:x} asks for features QUERY_FUNC does not offer")));
    }
    let gids = st.gids.clone();
    let qp = st.qps.get_mut(&id).ok_or_else(|| Refusal::invalid(format!("qp_cid {id} is not a QP")))?;
    let from = qp.state;
    let to = if mask & M::MODIFY_MASK_STATE != 0 {
        let f = req.network_type_en_sqd_async_notify_new_state & M::NEW_STATE_MASK;
        let to = QpState::from_field(f).ok_or_else(|| Refusal::invalid(format!("new_state {f} is not defined")))?;
        if matches!(to, QpState::Sqd | QpState::Sqe) {
            return Err(Refusal::not_implemented(format!("the {} state is not modelled", to.name())));
        }
        if !transition_allowed(from, to) {
            return Err(Refusal::invalid(format!("{} to {} is not an RC QP transition", from.name(), to.name())));
        }
        to
    } else {
        from
    };
    let missing = required(from, to) & !mask;
    if missing != 0 {
        return Err(Refusal::invalid(format!("{} to {} needs {}", from.name(), to.name(), mask_names(missing))));
    }
    if from == QpState::Rts && to == QpState::Rts && mask & TRANSPORT_ATTRS != 0 {
        return Err(Refusal::not_implemented(format!(
            "changing {} of a QP in RTS is not modelled",
            mask_names(mask & TRANSPORT_ATTRS)
        )));
    }
    let a = apply(&req, mask, qp)?;
    match to {
        QpState::Rtr if from == QpState::Init => {
            if a.network_type != M::NETWORK_TYPE_ROCEV2_IPV4 {
                return Err(Refusal::not_implemented(format!(
                    "network type 0x{:x}: only RoCEv2 over IPv4 is modelled",
                    a.network_type >> 6
                )));
            }
            let sgid = gids
                .get(a.sgid_index)
                .ok_or_else(|| Refusal::invalid(format!("sgid_index {} holds no GID", a.sgid_index)))?;
            if ipv4_of_gid(&sgid.gid).is_none() || ipv4_of_gid(&a.dgid).is_none() {
                return Err(Refusal::not_implemented("RoCEv2 with GIDs that are not IPv4-mapped (IPv6)"));
            }
            qp.src_mac = Some(MacAddr(sgid.mac));
            qp.state = QpState::Rtr;
        }
        QpState::Rts if from == QpState::Rtr => {
            let sgid = gids
                .get(a.sgid_index)
                .ok_or_else(|| Refusal::invalid(format!("sgid_index {} holds no GID any more", a.sgid_index)))?;
            let src_ip = ipv4_of_gid(&sgid.gid).ok_or_else(|| {
                Refusal::not_implemented("the source GID is no longer IPv4-mapped (MODIFY_GID since RTR)")
            })?;
            let src_mac = qp.src_mac.ok_or_else(|| Refusal::invalid("no path resolved at RTR"))?;
            let attrs = transport_attrs(qp, &a, src_mac, src_ip)?;
            let t = RcQp::new(attrs).map_err(|e| Refusal::invalid(e.to_string()))?;
            qp.transport = Some(t);
            qp.state = QpState::Rts;
        }
        QpState::Err => {
            if let Some(t) = qp.transport.as_mut() {
                t.set_error();
            }
            qp.state = QpState::Err;
        }
        QpState::Reset => {
            qp.transport = None;
            qp.early_recvs.clear();
            qp.inline.clear();
            qp.in_flight.clear();
            qp.sq.prod = RingPos::default();
            qp.sq.taken = RingPos::default();
            qp.sq.wqes = 0;
            qp.sq.msn_next = 0;
            qp.rq.prod = RingPos::default();
            qp.rq.taken = RingPos::default();
            qp.src_mac = None;
            qp.attrs = QpAttributes::default();
            qp.set_mask = 0;
            qp.state = QpState::Reset;
            return answer::<CreqModifyQpResp>(|r| r.xid = id.into());
        }
        _ => qp.state = to,
    }
    qp.attrs = a;
    qp.set_mask |= mask;
    st.dirty.insert(id);
    answer::<CreqModifyQpResp>(|r| r.xid = id.into())
}

/// QUERY_QP: the QP's state and attributes in the side buffer.
pub fn query_qp(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: CmdqQueryQp = parse(cmd, 0x18)?;
    let id = req.qp_cid.get();
    let qp = st.qps.get(&id).ok_or_else(|| Refusal::invalid(format!("qp_cid {id} is not a QP")))?;
    let a = &qp.attrs;
    let mut sb = Sb::new_zeroed();
    sb.xid = id.into();
    sb.en_sqd_async_notify_state = qp.state.field();
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
pub fn destroy_qp(st: &mut RoceState, cmd: &Cmd<'_>) -> Outcome {
    let req: CmdqDestroyQp = parse(cmd, 0x18)?;
    let id = req.qp_cid.get();
    if st.qps.remove(&id).is_none() {
        return Err(Refusal::invalid(format!("qp_cid {id} is not a QP")));
    }
    st.dirty.remove(&id);
    answer::<CreqDestroyQpResp>(|r| r.xid = id.into())
}
