//! FUNC_BACKING_STORE_QCAPS_V2 and FUNC_BACKING_STORE_CFG_V2: the context-memory type walk and
//! the driver handing over context memory (hardware-map §3.3).
//!
//! QCAPS_V2 (bnxt.c `bnxt_hwrm_func_backing_store_qcaps_v2`): the driver starts at type 0 and
//! follows `next_valid_type` until 0xffff; a type without `TYPE_VALID` is skipped. A type the
//! interface defines but the model does not offer answers without `TYPE_VALID` and points on to
//! the next offered one; a value the interface does not define is refused with INVALID_PARAMS.
//!
//! CFG_V2 (bnxt.c `bnxt_hwrm_func_backing_store_cfg_v2`, `bnxt_hwrm_set_pg_attr`): one request
//! per (type, instance) with `num_entries`, `entry_size`, `page_size_pbl_level` and `page_dir`;
//! the last carries BS_CFG_ALL_DONE. The model checks the type is offered, the instance is one
//! of its `instance_bit_map`, the entry size is the one QCAPS_V2 reported, the entry count lies
//! within [max(min, 1), max], the split entries fit inside the entries, then walks the page
//! tables ([`super::page_table`]; a level-1 table may run past one page, as DPDK's
//! `bnxt_alloc_ctx_mem_blk` lays it out: one contiguous table of `nr_pages` entries, named by
//! `bnxt_hwrm_set_pg_attr`; the HSI says only that `page_dir` points at the PTE table) and keeps
//! the data pages. Every refusal is INVALID_PARAMS with
//! the type's `FUNC_BACKING_STORE_CFG_V2_CMD_ERR_CODE_*_FAIL` in `cmd_err` (no public source
//! states which code real firmware returns for each fault; INVALID_PARAMS is the HSI's code for a
//! bad field).

use bnxt_hsi::backing_store::{CtxType, PAGE_SIZE_SHIFT, PBL_LEVEL_MASK, page_size_bytes};
use bnxt_hsi::hwrm::layouts::{
    HwrmFuncBackingStoreCfgV2CmdErr as CmdErr, HwrmFuncBackingStoreCfgV2Input, HwrmFuncBackingStoreCfgV2Output,
    HwrmFuncBackingStoreQcapsV2Input, HwrmFuncBackingStoreQcapsV2Output,
};

use super::Ctx;
use super::caps::{CtxCaps, ctx_caps, next_offered_after, type_defined};
use super::context_mem::ContextRegion;
use super::options::FirmwareOptions;
use super::page_table::{TableSpec, walk_long_level1};
use super::response::{Outcome, Reject, parse, reply};

/// FUNC_BACKING_STORE_QCAPS_V2 for one type.
pub fn qcaps_v2(bytes: &[u8], opts: &FirmwareOptions) -> Outcome {
    let req: HwrmFuncBackingStoreQcapsV2Input = parse(bytes);
    let ty = req.type_.get();
    if !type_defined(ty) {
        return Err(Reject::invalid(format!("context type 0x{ty:x} is not defined")));
    }
    let next = next_offered_after(ty);
    let Some(c) = ctx_caps(ty) else {
        return reply::<HwrmFuncBackingStoreQcapsV2Output>(|o| {
            o.type_ = ty.into();
            o.next_valid_type = next.into();
        });
    };
    reply::<HwrmFuncBackingStoreQcapsV2Output>(|o| {
        o.type_ = ty.into();
        o.entry_size = c.entry_size.into();
        o.flags = HwrmFuncBackingStoreQcapsV2Output::FLAGS_TYPE_VALID.into();
        o.instance_bit_map = c.instance_bit_map.into();
        o.entry_multiple = c.entry_multiple;
        o.max_num_entries = c.offered_max_entries(opts).into();
        o.min_num_entries = c.min_entries.into();
        o.next_valid_type = next.into();
        let (splits, count) = c.offered_splits(opts);
        o.subtype_valid_cnt = count;
        o.split_entry_0 = splits[0].into();
        o.split_entry_1 = splits[1].into();
        o.split_entry_2 = splits[2].into();
        o.split_entry_3 = splits[3].into();
        o.max_instance_count = (c.instances().count() as u16).into();
    })
}

/// The `cmd_err` code naming the type whose configuration failed.
fn fail_code(ty: CtxType) -> u8 {
    match ty {
        CtxType::Qp => CmdErr::CODE_QP_FAIL,
        CtxType::Srq => CmdErr::CODE_SRQ_FAIL,
        CtxType::Cq => CmdErr::CODE_CQ_FAIL,
        CtxType::Vnic => CmdErr::CODE_VNIC_FAIL,
        CtxType::Stat => CmdErr::CODE_STAT_FAIL,
        CtxType::SpTqmRing => CmdErr::CODE_TQM_SPR_FAIL,
        CtxType::FpTqmRing => CmdErr::CODE_TQM_FPR_FAIL,
        CtxType::Mrav => CmdErr::CODE_MRAV_FAIL,
        CtxType::Tim => CmdErr::CODE_TIM_FAIL,
        CtxType::TxCk => CmdErr::CODE_TXCK_FAIL,
        CtxType::RxCk => CmdErr::CODE_RXCK_FAIL,
        CtxType::MpTqmRing => CmdErr::CODE_MPC_FAIL,
    }
}

/// FUNC_BACKING_STORE_CFG_V2 for one (type, instance).
pub fn cfg_v2(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmFuncBackingStoreCfgV2Input = parse(bytes);
    let ty = req.type_.get();
    let Some(caps) = ctx_caps(ty) else {
        return Err(Reject::invalid(format!("context type 0x{ty:x} is not one FUNC_BACKING_STORE_QCAPS_V2 offers")));
    };
    let fail = |reason: String| {
        Reject::invalid(format!("{} instance {}: {reason}", caps.ty.name(), req.instance.get()))
            .cmd_err(fail_code(caps.ty))
    };
    let region = check(&req, caps, caps.offered_max_entries(ctx.opts)).map_err(fail)?;
    let bytes_needed = region.bytes();
    let spec = TableSpec { root: req.page_dir.get(), level: region.level, page_size: region.page_size };
    let pages = walk_long_level1(ctx.mem, spec, bytes_needed).map_err(|e| fail(e.to_string()))?;
    ctx.state.context.configure(ContextRegion { pages, ..region });
    if req.flags.get() & HwrmFuncBackingStoreCfgV2Input::FLAGS_BS_CFG_ALL_DONE != 0 {
        ctx.state.context.set_all_done();
    }
    reply::<HwrmFuncBackingStoreCfgV2Output>(|_| {})
}

/// Check the request's fields against what QCAPS_V2 offered; the region it describes (pages not
/// yet walked).
fn check(req: &HwrmFuncBackingStoreCfgV2Input, caps: &CtxCaps, max: u32) -> Result<ContextRegion, String> {
    let instance = req.instance.get();
    if !caps.instances().any(|i| i == instance) {
        return Err(format!("instance {instance} is not in instance_bit_map 0x{:x}", caps.instance_bit_map));
    }
    let entry_size = req.entry_size.get();
    if entry_size != caps.entry_size {
        return Err(format!("entry_size {entry_size} differs from the {} QCAPS_V2 reports", caps.entry_size));
    }
    let num_entries = req.num_entries.get();
    let min = caps.min_entries.max(1);
    if num_entries < min || num_entries > max {
        return Err(format!("num_entries {num_entries} outside [{min}, {max}]"));
    }
    let attr = req.page_size_pbl_level;
    let level = attr & PBL_LEVEL_MASK;
    let code = attr >> PAGE_SIZE_SHIFT;
    let page_size = page_size_bytes(code).ok_or_else(|| format!("page size code {code} is not defined"))?;
    let cnt = req.subtype_valid_cnt as usize;
    if cnt > 4 {
        return Err(format!("subtype_valid_cnt {cnt} exceeds the 4 split entries"));
    }
    let all = [req.split_entry_0.get(), req.split_entry_1.get(), req.split_entry_2.get(), req.split_entry_3.get()];
    let splits = all[..cnt].to_vec();
    let reserved: u64 = splits.iter().map(|&s| u64::from(s)).sum();
    if reserved > u64::from(num_entries) {
        return Err(format!("split entries {splits:?} add up to more than num_entries {num_entries}"));
    }
    Ok(ContextRegion { ty: caps.ty, instance, num_entries, entry_size, page_size, level, pages: Vec::new(), splits })
}

/// Key fields of a CFG_V2 request, for the event log.
pub fn cfg_v2_summary(bytes: &[u8]) -> String {
    let req: HwrmFuncBackingStoreCfgV2Input = parse(bytes);
    let attr = req.page_size_pbl_level;
    format!(
        "type=0x{:x} instance={} entries={} entry_size={} level={} page_code={} page_dir=0x{:x} flags=0x{:x}",
        req.type_.get(),
        req.instance.get(),
        req.num_entries.get(),
        req.entry_size.get(),
        attr & PBL_LEVEL_MASK,
        attr >> PAGE_SIZE_SHIFT,
        req.page_dir.get(),
        req.flags.get()
    )
}

/// Key fields of a QCAPS_V2 request, for the event log.
pub fn qcaps_v2_summary(bytes: &[u8]) -> String {
    let req: HwrmFuncBackingStoreQcapsV2Input = parse(bytes);
    format!("type=0x{:x}", req.type_.get())
}

/// FUNC_BACKING_STORE_QCAPS and FUNC_BACKING_STORE_CFG (the V1 pair): not served on P7. FUNC_QCAPS
/// says so (`flags_ext` BS_V2_REQUIRED); DPDK's P7 support (commit fe2f715ca5, "net/bnxt: support
/// backing store v2": "The firmware supports the new backing store scheme for P7 and newer
/// devices ... Older P5 device family continues to support the version 1") and bnxt_en (bnxt.c
/// `bnxt_hwrm_func_backing_store_qcaps`, V2 whenever `BNXT_FW_CAP_BACKING_STORE_V2`) use V2 on
/// P7. Answered CMD_NOT_SUPPORTED, as firmware answers a command it does not have.
pub fn v1_refused(req_type: u16) -> Outcome {
    let name = bnxt_hsi::hwrm::req_name(req_type).unwrap_or("FUNC_BACKING_STORE_*");
    Err(Reject::new(
        bnxt_hsi::hwrm::ErrorCode::CmdNotSupported,
        format!("{name}: P7 firmware serves only the V2 backing-store requests (FUNC_QCAPS flags_ext BS_V2_REQUIRED)"),
    ))
}
