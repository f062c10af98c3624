//! QUERY_FUNC, QUERY_VERSION, INITIALIZE_FW and DEINITIALIZE_FW (hardware-map §4.1, §4.5;
//! bnxt_re qplib_sp.c `bnxt_qplib_get_dev_attr`, qplib_rcfw.c `bnxt_qplib_init_rcfw`,
//! `bnxt_qplib_deinit_rcfw`).
//!
//! On P7 the context memory came through HWRM backing store V2, so INITIALIZE_FW carries no page
//! directories: the model refuses one whose page-directory, count or level fields are set
//! (INVALID_PARAMETER), and one sent before the driver finished configuring context memory
//! (RESOURCES: the firmware has nowhere to keep its contexts).

use bnxt_hsi::roce::layouts::{
    CmdqDeinitializeFw, CmdqInitializeFw, CmdqQueryFunc, CmdqQueryVersion, CreqInitializeFwResp, CreqQueryFuncResp,
    CreqQueryFuncRespSb as Sb, CreqQueryVersionResp,
};
use zerocopy::{FromZeros, IntoBytes};

use crate::firmware::identity::FW_VERSION;

use super::{Cmd, CmdCtx, Outcome, Refusal, answer, answer_xid, parse, write_side_buffer};
use crate::roce::caps::*;
use crate::roce::state::{FwInit, RoceState};

/// RoCE SP HSI version the model implements (roce_hsi.h `ROCE_SP_HSI_VERSION_*`, 1.8.6).
pub(super) const ROCE_HSI_VERSION: (u8, u8, u8) = (1, 8, 6);

/// QUERY_FUNC: the function's RoCE capabilities in the side buffer.
pub(super) fn query_func(cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let _: CmdqQueryFunc = parse(cmd, 16)?;
    let l = cx.limits;
    let first_qp = first_qpn(l);
    let mut sb = Sb::new_zeroed();
    sb.max_mr_size = MAX_MR_SIZE.into();
    // bnxt_re adds QP1 to this itself ("max_qp value reported by FW does not include the QP1").
    sb.max_qp = l.qps.saturating_sub(first_qp).into();
    sb.max_qp_wr = MAX_QP_WR.into();
    sb.dev_cap_flags = (Sb::MR_REGISTER_ALLOC | Sb::HW_REQUESTER_RETX_ENABLED).into();
    sb.max_cq = l.roce_cqs().into();
    sb.max_cqe = MAX_CQE.into();
    sb.max_pd = MAX_PD.into();
    sb.max_sge = MAX_SGE;
    sb.max_srq_sge = MAX_SGE;
    sb.max_qp_rd_atom = MAX_RD_ATOM;
    sb.max_qp_init_rd_atom = MAX_RD_ATOM;
    sb.max_mr = l.regions.into();
    sb.max_mw = l.regions.into();
    sb.max_ah = l.avs.into();
    sb.max_srq_wr = MAX_SRQ_WR.into();
    sb.max_pkeys = MAX_PKEYS.into();
    sb.max_inline_data = MAX_INLINE_DATA.into();
    sb.max_srq = (l.roce_srqs().min(u32::from(u16::MAX)) as u16).into();
    sb.max_gid = MAX_GID.into();
    sb.max_dpi = MAX_DPI.into();
    sb.max_sge_var_wqe = MAX_SGE_VAR_WQE;
    // RC atomics are carried out (`super::super::transport`): ATOMIC_OPS_NOT_SUPPORTED is clear.
    // Neither bnxt_re nor libbnxt_re reads the flag: bnxt_re offers atomics when the PCIe
    // AtomicOp requester enable is set (qplib_sp.c `bnxt_qplib_is_atomic_cap`,
    // PCI_EXP_DEVCTL2_ATOMIC_REQ, which qplib_res.c `bnxt_qplib_enable_atomic_ops_to_root` asks
    // the kernel to set when the root port completes 32- and 64-bit AtomicOps).
    sb.dev_cap_ext_flags = 0;
    sb.max_inline_data_var_wqe = MAX_INLINE_DATA_VAR_WQE.into();
    sb.start_qid = first_qp.into();
    sb.max_msn_table_size = MAX_MSN_TABLE_SIZE_LOG2;
    sb.dev_cap_ext_flags_1 = Sb::PBL_PAGE_SIZE_SUPPORTED;
    sb.dev_cap_ext_flags_2 = Sb::REQ_RETRANSMISSION_SUPPORT_HOST_MSN_TABLE.into();
    write_side_buffer(cmd, cx, sb.as_bytes().to_vec())?;
    answer::<CreqQueryFuncResp>(|r| r.size = ((size_of::<Sb>() / 16) as u32).into())
}

/// The first QP number RoCE QPs get: past the L2 and QP1 context entries, and never 0 or 1
/// (QP0 and QP1 are the special QPs of the IBA).
pub(super) fn first_qpn(l: crate::firmware::context_mem::ContextLimits) -> u32 {
    (l.l2_qps + l.qp1_qps).max(2)
}

/// QUERY_VERSION: firmware and interface versions in the completion itself.
pub(super) fn query_version(cmd: &Cmd<'_>) -> Outcome {
    let _: CmdqQueryVersion = parse(cmd, 16)?;
    let (maj, min, bld, _) = FW_VERSION;
    answer::<CreqQueryVersionResp>(|r| {
        r.fw_maj = maj as u8;
        r.fw_minor = min as u8;
        r.fw_bld = bld as u8;
        (r.intf_maj, r.intf_minor, r.intf_bld) = ROCE_HSI_VERSION;
    })
}

/// INITIALIZE_FW.
pub(super) fn initialize_fw(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    type I = CmdqInitializeFw;
    let req: I = parse(cmd, 0x70)?;
    if st.init.is_some() {
        return Err(Refusal::fail("INITIALIZE_FW again without DEINITIALIZE_FW"));
    }
    let dirs =
        [req.qpc_page_dir, req.mrw_page_dir, req.srq_page_dir, req.cq_page_dir, req.tqm_page_dir, req.tim_page_dir];
    let lvls = [
        req.qpc_pg_size_qpc_lvl,
        req.mrw_pg_size_mrw_lvl,
        req.srq_pg_size_srq_lvl,
        req.cq_pg_size_cq_lvl,
        req.tqm_pg_size_tqm_lvl,
        req.tim_pg_size_tim_lvl,
    ];
    let counts = [req.number_of_qp, req.number_of_mrw, req.number_of_srq, req.number_of_cq];
    if dirs.iter().any(|d| d.get() != 0) || lvls.iter().any(|&l| l != 0) || counts.iter().any(|c| c.get() != 0) {
        return Err(Refusal::invalid(
            "page directories, levels or counts given, but P7 context memory comes through HWRM backing store V2",
        ));
    }
    let flags = req.flags.get();
    let known = I::FLAGS_MRAV_RESERVATION_SPLIT
        | I::FLAGS_HW_REQUESTER_RETX_SUPPORTED
        | I::FLAGS_DRV_VERSION
        | I::FLAGS_OPTIMIZE_MODIFY_QP_SUPPORTED
        | I::FLAGS_L2_VF_RESOURCE_MGMT
        | I::FLAGS_DESTROY_CONTEXT_SB_SUPPORTED
        | I::FLAGS_DESTROY_UDCC_SESSION_DATA_SB_SUPPORTED
        | I::FLAGS_MIRROR_ON_ROCE_SUPPORTED;
    if flags & !known != 0 {
        return Err(Refusal::invalid(format!("flags 0x{flags:x} has undefined bits")));
    }
    let offered_only = I::FLAGS_OPTIMIZE_MODIFY_QP_SUPPORTED
        | I::FLAGS_DESTROY_CONTEXT_SB_SUPPORTED
        | I::FLAGS_DESTROY_UDCC_SESSION_DATA_SB_SUPPORTED
        | I::FLAGS_L2_VF_RESOURCE_MGMT
        | I::FLAGS_MIRROR_ON_ROCE_SUPPORTED;
    if flags & offered_only != 0 {
        return Err(Refusal::invalid(format!(
            "flags 0x{:x} ask for features QUERY_FUNC does not offer",
            flags & offered_only
        )));
    }
    let stat_ctx_id = req.stat_ctx_id.get();
    if !cx.fw.stat_ctxs.contains_key(&stat_ctx_id) {
        return Err(Refusal::invalid(format!("stat_ctx_id {stat_ctx_id} is not an allocated statistics context")));
    }
    let log2_dbr_pg_size = req.log2_dbr_pg_size.get();
    if log2_dbr_pg_size > 4 {
        return Err(Refusal::invalid(format!(
            "log2_dbr_pg_size {log2_dbr_pg_size}: doorbell pages of 2^{} bytes do not fit BAR2 usefully",
            12 + log2_dbr_pg_size
        )));
    }
    if !cx.fw.context.all_done() {
        return Err(Refusal::resources(
            "context memory is not configured (no FUNC_BACKING_STORE_CFG_V2 with ALL_DONE)",
        ));
    }
    st.init = Some(FwInit { flags, stat_ctx_id, log2_dbr_pg_size });
    answer::<CreqInitializeFwResp>(|_| {})
}

/// DEINITIALIZE_FW: every RoCE object of the function is dropped.
pub(super) fn deinitialize_fw(st: &mut RoceState, cmd: &Cmd<'_>) -> Outcome {
    let _: CmdqDeinitializeFw = parse(cmd, 16)?;
    st.clear();
    answer_xid(0)
}
