//! ALLOCATE_MRW, REGISTER_MR (with and without ALLOC_MR), DEREGISTER_MR and DEALLOCATE_KEY
//! (hardware-map §4.5; bnxt_re qplib_sp.c `bnxt_qplib_alloc_mrw`, `bnxt_qplib_reg_mr`,
//! `bnxt_qplib_dereg_mrw`, `bnxt_qplib_free_mrw`).
//!
//! REGISTER_MR names the region's pages: `pbl` is the single data page (level 0) or the root of a
//! level-1/2 page table of `log2_pbl_pg_size` pages whose entries name data pages of
//! `log2_pg_size`; `va` is the region's first address, which may start inside the first page;
//! `mr_size` its length. Level 0 with `pbl` 0 is a DMA region: its addresses are bus addresses
//! (bnxt_re registers its DMA MR so, with `va` 0 and `mr_size` all-ones). With ALLOC_MR the key
//! field carries the PD and the firmware allocates the key (the answer's `xid`); without it the
//! key must come from ALLOCATE_MRW. The access byte uses REGISTER_MR's own bit order; remote
//! write requires local write (IBA §10.6.3.1). Zero-based regions are not modelled.
//! bnxt_re frees a registered region with DEALLOCATE_KEY alone; DEREGISTER_MR keeps the key.

use bnxt_hsi::roce::layouts::{
    CmdqAllocateMrw as A, CmdqDeallocateKey, CmdqDeregisterMr, CmdqRegisterMr as R, CreqAllocateMrwResp,
    CreqDeallocateKeyResp, CreqDeregisterMrResp, CreqRegisterMrResp,
};
use bnxt_hsi::roce::qp::Access;

use super::{Cmd, CmdCtx, Outcome, Refusal, answer, parse};
use crate::roce::caps::{MAX_MR_SIZE, MAX_PD};
use crate::roce::mr::{KeyKind, Region, RegionMemory};
use crate::roce::pages::{PageList, PblSpec};
use crate::roce::state::RoceState;

fn check_pd(pd: u32) -> Result<(), Refusal> {
    if pd >= MAX_PD {
        return Err(Refusal::invalid(format!("pd_id {pd} is not below max_pd {MAX_PD}")));
    }
    Ok(())
}

/// ALLOCATE_MRW: a key for a region or window, not yet registered.
pub(super) fn allocate_mrw(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: A = parse(cmd, 0x20)?;
    let kind = KeyKind::from_flags(req.mrw_flags & A::MRW_FLAGS_MASK).ok_or_else(|| {
        Refusal::invalid(format!("mrw_flags type {} is not defined", req.mrw_flags & A::MRW_FLAGS_MASK))
    })?;
    if req.access & A::ACCESS_CONSUMER_OWNED_KEY != 0 {
        return Err(Refusal::not_implemented("consumer-owned keys are not modelled"));
    }
    let pd = req.pd_id.get();
    check_pd(pd)?;
    let cap = cx.limits.regions;
    let key = st
        .keys
        .allocate(kind, pd, req.mrw_handle.get(), cap)
        .ok_or_else(|| Refusal::resources(format!("all {cap} MR/MW entries the context memory holds are in use")))?;
    answer::<CreqAllocateMrwResp>(|r| r.xid = key.into())
}

/// DEALLOCATE_KEY: free a key, registered or not.
pub(super) fn deallocate_key(st: &mut RoceState, cmd: &Cmd<'_>) -> Outcome {
    let req: CmdqDeallocateKey = parse(cmd, 0x18)?;
    let key = req.key.get();
    let kind = KeyKind::from_flags(req.mrw_flags)
        .ok_or_else(|| Refusal::invalid(format!("mrw_flags type {} is not defined", req.mrw_flags & 0xf)))?;
    let e = st.keys.get(key).ok_or_else(|| Refusal::invalid(format!("key 0x{key:x} is not allocated")))?;
    if e.kind.is_region() != kind.is_region() {
        return Err(Refusal::invalid(format!("key 0x{key:x} is a {:?}, not a {kind:?}", e.kind)));
    }
    st.keys.free(key);
    answer::<CreqDeallocateKeyResp>(|r| r.xid = key.into())
}

/// REGISTER_MR.
pub(super) fn register_mr(st: &mut RoceState, cmd: &Cmd<'_>, cx: &CmdCtx<'_>) -> Outcome {
    let req: R = parse(cmd, 0x30)?;
    let flags = req.flags.get();
    let alloc = flags & R::FLAGS_ALLOC_MR != 0;
    let lvl_pg = req.log2_pg_size_lvl;
    let level = lvl_pg & R::LVL_MASK;
    if level > 2 {
        return Err(Refusal::invalid(format!("level {level} is not 0, 1 or 2")));
    }
    let page_shift = u32::from((lvl_pg & R::LOG2_PG_SIZE_MASK) >> 2);
    if !(12..=30).contains(&page_shift) {
        return Err(Refusal::invalid(format!("log2_pg_size {page_shift} outside 12..=30")));
    }
    let table_shift = u32::from(req.log2_pbl_pg_size.get() & R::LOG2_PBL_PG_SIZE_MASK);
    if level > 0 && !(12..=30).contains(&table_shift) {
        return Err(Refusal::invalid(format!("log2_pbl_pg_size {table_shift} outside 12..=30")));
    }
    let raw = req.access;
    if raw & R::ACCESS_ZERO_BASED != 0 {
        return Err(Refusal::not_implemented("zero-based regions are not modelled"));
    }
    let access = Access::from_register_mr(raw);
    if (access.remote_write || access.remote_atomic) && !access.local_write {
        return Err(Refusal::invalid(format!("access 0x{raw:x}: remote write or atomic without local write")));
    }
    let va = req.va.get();
    let len = req.mr_size.get();
    let pbl = req.pbl.get();
    let memory = if level == 0 && pbl == 0 {
        RegionMemory::Physical
    } else {
        if len == 0 || len > MAX_MR_SIZE {
            return Err(Refusal::invalid(format!("mr_size {len} outside 1..={MAX_MR_SIZE}")));
        }
        if va.checked_add(len).is_none() {
            return Err(Refusal::invalid(format!("va 0x{va:x} + mr_size {len} wraps")));
        }
        let first = va & ((1u64 << page_shift) - 1);
        let spec = PblSpec { root: pbl, level, page_shift, table_shift };
        let pages =
            PageList::walk(cx.mem, spec, first + len).map_err(|e| Refusal::invalid(format!("region memory: {e}")))?;
        RegionMemory::Pages { pages, first }
    };
    let region = Region { va, len, access, memory };
    let key = if alloc {
        let pd = req.key.get();
        check_pd(pd)?;
        let cap = cx.limits.regions;
        st.keys
            .allocate(KeyKind::Mr, pd, 0, cap)
            .ok_or_else(|| Refusal::resources(format!("all {cap} MR/MW entries the context memory holds are in use")))?
    } else {
        let key = req.key.get();
        match st.keys.get(key) {
            Some(e) if e.kind.is_region() => key,
            Some(e) => return Err(Refusal::invalid(format!("key 0x{key:x} is a window ({:?}), not a region", e.kind))),
            None => return Err(Refusal::invalid(format!("key 0x{key:x} is not allocated (ALLOCATE_MRW)"))),
        }
    };
    st.keys.get_mut(key).expect("allocated or checked above").region = Some(region);
    answer::<CreqRegisterMrResp>(|r| r.xid = key.into())
}

/// DEREGISTER_MR: the region goes, the key stays allocated.
pub(super) fn deregister_mr(st: &mut RoceState, cmd: &Cmd<'_>) -> Outcome {
    let req: CmdqDeregisterMr = parse(cmd, 0x18)?;
    let key = req.lkey.get();
    match st.keys.get_mut(key) {
        Some(e) if e.region.is_some() => e.region = None,
        Some(_) => return Err(Refusal::invalid(format!("key 0x{key:x} is not registered"))),
        None => return Err(Refusal::invalid(format!("lkey 0x{key:x} is not allocated"))),
    }
    answer::<CreqDeregisterMrResp>(|r| r.xid = key.into())
}
