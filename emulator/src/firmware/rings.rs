//! RING_ALLOC and RING_FREE (hardware-map §3.2; bnxt.c `hwrm_ring_alloc_send_msg`,
//! `hwrm_ring_free_send_msg`; bnxt_re main.c `bnxt_re_net_ring_alloc`).
//!
//! A ring is `length` 16-byte entries. With `page_tbl_depth` 0 it is one contiguous block at
//! `page_tbl_addr` (bnxt_en leaves `page_size` 0 then); with depth 1 or 2 `page_tbl_addr` is a
//! page table of 2^`page_size`-byte pages (bnxt_en: depth 1, page_size 12), walked as for context
//! memory. The model checks the type (L2_CMPL, TX, RX, RX_AGG, NQ; ROCE_CMPL is a pre-P5 type),
//! the length, the page size and depth, that every ring byte is reachable by DMA, the ids the
//! enables name (statistics context, NQ, completion ring) and the per-type maxima FUNC_QCAPS
//! reports. Refusals carry the HSI's `RING_ALLOC_CMD_ERR_CODE_*` where one fits.
//!
//! A ring past the function's FUNC_CFG reservation is refused (RESOURCE_ALLOC_ERROR,
//! `NO_RESOURCE_FOR_PF`): on P5 and later bnxt_en reserves every ring before it allocates one
//! and holds itself to what FUNC_QCFG says was granted (bnxt.c `bnxt_need_reserve_rings`,
//! `__bnxt_reserve_rings`, `bnxt_hwrm_get_rings`: "Able to reserve only ..." trims its rings),
//! and the RoCE driver's NQs come out of the same reservation (`bnxt_get_ulp_msix_num` in
//! `bnxt_nq_rings_in_use`). NQs count against `num_msix`, completion rings against
//! `num_cmpl_rings`, TX rings against `num_tx_rings`, RX and aggregation rings together against
//! `num_rx_rings` (bnxt_en doubles its RX count with aggregation rings). See
//! [`super::reservation`].

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::hwrm::layouts::{
    HwrmRingAllocCmdErr as AllocErr, HwrmRingAllocInput, HwrmRingAllocOutput, HwrmRingFreeCmdErr as FreeErr,
    HwrmRingFreeInput, HwrmRingFreeOutput,
};

use super::Ctx;
use super::caps::{MAX_CMPL_RINGS, MAX_NQS, MAX_RX_RINGS, MAX_TX_RINGS};
use super::page_table::{PageTableError, TableSpec, walk};
use super::reservation::{self, Reserved};
use super::response::{Outcome, Reject, parse, reply};
use super::state::{Ring, RingType};
use crate::config_space::MSIX_VECTORS;

/// Bytes per ring entry (`length` counts 16-byte units: TX/RX BDs, completions, NQ entries).
pub const ENTRY_BYTES: u64 = 16;
/// Alignment of a depth-0 ring (drivers allocate rings as whole pages).
pub const RING_ALIGN: u64 = 4096;
/// Smallest and largest `page_size` (log2) accepted with a page table: 4 KiB to 1 GiB.
pub const PAGE_SHIFTS: std::ops::RangeInclusive<u8> = 12..=30;

/// How many rings of a type the function may have.
fn max_rings(ty: RingType) -> usize {
    match ty {
        RingType::L2Cmpl => MAX_CMPL_RINGS.into(),
        RingType::Tx => MAX_TX_RINGS.into(),
        RingType::Rx | RingType::RxAgg => MAX_RX_RINGS.into(),
        RingType::Nq => MAX_NQS.into(),
    }
}

/// RING_ALLOC.
pub fn ring_alloc(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    type R = HwrmRingAllocInput;
    let req: R = parse(bytes);
    let ty = RingType::from_wire(req.ring_type)
        .ok_or_else(|| Reject::invalid(format!("ring_type {} is not a P7 ring type", req.ring_type)))?;
    let length = req.length.get();
    if length == 0 {
        return Err(Reject::invalid("length 0"));
    }
    if req.fbo.get() != 0 {
        return Err(Reject::invalid(format!("fbo {} (a first-byte offset is not modelled)", req.fbo.get()))
            .cmd_err(AllocErr::CODE_BAD_FBO_ALIGNMENT));
    }
    let used = match ty {
        RingType::Rx | RingType::RxAgg => ctx.state.ring_count(RingType::Rx) + ctx.state.ring_count(RingType::RxAgg),
        other => ctx.state.ring_count(other),
    };
    if used >= max_rings(ty) {
        return Err(Reject::new(
            ErrorCode::ResourceAllocError,
            format!("all {} {} rings are in use", max_rings(ty), ty.name()),
        )
        .cmd_err(AllocErr::CODE_NO_RESOURCE_FOR_PF));
    }
    reservation::check(&ctx.state.l2.reservation, Reserved::of_ring(ty), used)
        .map_err(|r| r.cmd_err(AllocErr::CODE_NO_RESOURCE_FOR_PF))?;
    let enables = req.enables.get();
    let stat_ctx_id = if enables & R::ENABLES_STAT_CTX_ID_VALID != 0 {
        let id = req.stat_ctx_id.get();
        if !ctx.state.stat_ctxs.contains_key(&id) {
            return Err(
                Reject::invalid(format!("stat_ctx_id {id} is not allocated")).cmd_err(AllocErr::CODE_BAD_STAT_XID)
            );
        }
        Some(id)
    } else if matches!(ty, RingType::Tx | RingType::Rx | RingType::RxAgg)
        && ctx.state.stat_ctxs.contains_key(&req.stat_ctx_id.get())
    {
        // bnxt_en names the ring's statistics context without the enable bit (bnxt.c
        // `hwrm_ring_alloc_send_msg`, `bnxt_set_rx_ring_params_p5`) and reads ring counters
        // from it, so the firmware takes `stat_ctx_id` of TX and RX rings when it names one.
        Some(req.stat_ctx_id.get())
    } else {
        None
    };
    let nq_ring_id = if enables & R::ENABLES_NQ_RING_ID_VALID != 0 {
        let id = req.nq_ring_id.get();
        if ctx.state.rings.get(&id).map(|r| r.ty) != Some(RingType::Nq) {
            return Err(Reject::invalid(format!("nq_ring_id {id} is not an allocated NQ"))
                .cmd_err(AllocErr::CODE_INVALID_NQ_RING_FOR_CQ));
        }
        Some(id)
    } else {
        None
    };
    let cmpl_ring_id = match (ty, req.cmpl_ring_id.get()) {
        (RingType::Tx, id) if id != u16::MAX => {
            if ctx.state.rings.get(&id).map(|r| r.ty) != Some(RingType::L2Cmpl) {
                return Err(Reject::invalid(format!("cmpl_ring_id {id} is not an allocated completion ring")));
            }
            Some(id)
        }
        _ => None,
    };
    // An aggregation ring serves one RX ring (bnxt.c `bnxt_set_rx_ring_params_p5`: `rx_ring_id`
    // with ENABLES_RX_RING_ID_VALID, `rx_buf_size` BNXT_RX_PAGE_SIZE; an RX ring's `rx_buf_size`
    // is its buffer size).
    let rx_ring_id = if ty == RingType::RxAgg && enables & R::ENABLES_RX_RING_ID_VALID != 0 {
        let id = req.rx_ring_id.get();
        if ctx.state.rings.get(&id).map(|r| r.ty) != Some(RingType::Rx) {
            return Err(Reject::invalid(format!("rx_ring_id {id} is not an allocated RX ring")));
        }
        Some(id)
    } else {
        if ty == RingType::RxAgg {
            tracing::warn!(
                "RING_ALLOC of an RX_AGG ring that names no RX ring (ENABLES_RX_RING_ID_VALID clear): accepted (no \
                 public source shows the firmware refusing it), but no frame is placed in its buffers"
            );
        }
        None
    };
    let rx_buf_size = (matches!(ty, RingType::Rx | RingType::RxAgg) && enables & R::ENABLES_RX_BUF_SIZE_VALID != 0)
        .then(|| req.rx_buf_size.get());
    let logical_id = req.logical_id.get();
    if ty == RingType::Nq {
        if logical_id >= MSIX_VECTORS {
            return Err(Reject::invalid(format!(
                "NQ logical_id {logical_id} is not an MSI-X vector (0..{MSIX_VECTORS})"
            )));
        }
        if !matches!(req.int_mode, R::INT_MODE_LEGACY | R::INT_MODE_MSIX | R::INT_MODE_POLL) {
            return Err(Reject::invalid(format!("int_mode {} is not defined", req.int_mode)));
        }
    }
    let (pages, page_size) = ring_pages(&req, ctx)?;
    let id = ctx.state.free_ring_id().ok_or_else(|| {
        Reject::new(ErrorCode::ResourceAllocError, "no ring id left").cmd_err(AllocErr::CODE_RESMGR_ALLOC_FAIL)
    })?;
    let serial = ctx.state.next_ring_serial;
    ctx.state.next_ring_serial += 1;
    let cq_handle = req.cq_handle.get();
    let ring = Ring {
        ty,
        length,
        logical_id,
        pages,
        page_size,
        nq_ring_id,
        cmpl_ring_id,
        stat_ctx_id,
        rx_ring_id,
        rx_buf_size,
        cq_handle,
        serial,
    };
    ctx.state.rings.insert(id, ring);
    reply::<HwrmRingAllocOutput>(|o| {
        o.ring_id = id.into();
        o.logical_ring_id = logical_id.into();
    })
}

/// The ring's data pages and page size, after checking they are all reachable.
fn ring_pages(req: &HwrmRingAllocInput, ctx: &Ctx<'_>) -> Result<(Vec<u64>, u64), Reject> {
    let bytes = u64::from(req.length.get()) * ENTRY_BYTES;
    let addr = req.page_tbl_addr.get();
    let bad = |e: PageTableError| {
        let code = match e {
            PageTableError::Unaligned { .. } => AllocErr::CODE_BAD_ADDR_ALIGNMENT,
            _ => AllocErr::CODE_UNKNOWN,
        };
        Reject::invalid(format!("ring memory: {e}")).cmd_err(code)
    };
    match req.page_tbl_depth {
        0 => {
            if !addr.is_multiple_of(RING_ALIGN) {
                return Err(bad(PageTableError::Unaligned { what: "ring", addr, align: RING_ALIGN }));
            }
            ctx.mem
                .probe(addr, bytes)
                .map_err(|error| bad(PageTableError::Unreachable { what: "ring", addr, error }))?;
            Ok((vec![addr], bytes.next_multiple_of(RING_ALIGN)))
        }
        depth @ (1 | 2) => {
            let shift = req.page_size;
            if !PAGE_SHIFTS.contains(&shift) {
                return Err(Reject::invalid(format!("page_size 2^{shift} outside 4 KiB..1 GiB"))
                    .cmd_err(AllocErr::CODE_BAD_PG_SIZE));
            }
            let page_size = 1u64 << shift;
            let pages = walk(ctx.mem, TableSpec { root: addr, level: depth, page_size }, bytes).map_err(bad)?;
            Ok((pages, page_size))
        }
        depth => Err(Reject::invalid(format!("page_tbl_depth {depth} is not 0, 1 or 2"))),
    }
}

/// RING_FREE.
pub fn ring_free(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmRingFreeInput = parse(bytes);
    let id = req.ring_id.get();
    let ty = RingType::from_wire(req.ring_type)
        .ok_or_else(|| Reject::invalid(format!("ring_type {} is not a P7 ring type", req.ring_type)))?;
    match ctx.state.rings.get(&id) {
        Some(r) if r.ty == ty => {}
        Some(r) => {
            return Err(Reject::invalid(format!("ring {id} is a {} ring, not {}", r.ty.name(), ty.name()))
                .cmd_err(FreeErr::CODE_NO_RING_ALLOCATED));
        }
        None => {
            return Err(Reject::invalid(format!("no {} ring {id} is allocated", ty.name()))
                .cmd_err(FreeErr::CODE_NO_RING_ALLOCATED));
        }
    }
    ctx.state.rings.remove(&id);
    // bnxt_en frees an RX ring before its aggregation ring (bnxt.c `bnxt_hwrm_rx_ring_free`, then
    // `bnxt_hwrm_rx_agg_ring_free`): the aggregation ring serves no ring from then on.
    for r in ctx.state.rings.values_mut().filter(|r| r.rx_ring_id == Some(id)) {
        r.rx_ring_id = None;
    }
    ctx.state.l2.coalescing.remove(&id);
    if ctx.state.l2.async_event_cr == Some(id) {
        ctx.state.l2.async_event_cr = None; // no ring left for async events until FUNC_CFG names one
    }
    reply::<HwrmRingFreeOutput>(|_| {})
}

/// Key fields of a RING_ALLOC request, for the event log.
pub fn ring_alloc_summary(bytes: &[u8]) -> String {
    let req: HwrmRingAllocInput = parse(bytes);
    let ty = RingType::from_wire(req.ring_type).map_or_else(|| req.ring_type.to_string(), |t| t.name().to_string());
    format!(
        "ring_type={ty} length={} depth={} page_size={} logical_id={} addr=0x{:x}",
        req.length.get(),
        req.page_tbl_depth,
        req.page_size,
        req.logical_id.get(),
        req.page_tbl_addr.get()
    )
}

/// Key fields of a RING_FREE request, for the event log.
pub fn ring_free_summary(bytes: &[u8]) -> String {
    let req: HwrmRingFreeInput = parse(bytes);
    format!("ring_type={} ring_id={}", req.ring_type, req.ring_id.get())
}
