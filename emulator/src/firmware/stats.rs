//! STAT_CTX_ALLOC, STAT_CTX_FREE, STAT_CTX_QUERY and STAT_CTX_CLR_STATS (hardware-map §3.2;
//! bnxt.c `bnxt_hwrm_stat_ctx_alloc`, bnxt_re main.c `bnxt_re_net_stats_ctx_alloc`; DPDK's PMD
//! reads its queue and port counters with STAT_CTX_QUERY, drivers/net/bnxt/bnxt_hwrm.c
//! `bnxt_hwrm_ring_stats`, and clears them with STAT_CTX_CLR_STATS, `bnxt_hwrm_ctx_clr_stats`...
//! `bnxt_clear_all_hwrm_stat_ctxs`).
//!
//! The driver names the host memory the counters go to (`stats_dma_addr`, `stats_dma_length`
//! bytes); the model checks it is reachable and hands out the lowest free id. A length of 0 means
//! the basic `ctx_hw_stats` block (bnxt_hsi.h, 20 counters of 8 bytes) as older drivers send it.
//! The L2 engine counts into a context its TX and RX rings name and writes the block there
//! periodically ([`crate::l2`]); STAT_CTX_QUERY answers with the same counters (zero for a
//! context no L2 ring counted into yet, and for the RoCE engine's contexts, `stat_ctx_flags`
//! bit 0, whose counters the RoCE engine keeps); STAT_CTX_CLR_STATS zeroes them.
//! A context past the function's FUNC_CFG reservation is refused ([`super::reservation`]).

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::hwrm::layouts::{
    HwrmStatCtxAllocCmdErr as AllocErr, HwrmStatCtxAllocInput, HwrmStatCtxAllocOutput, HwrmStatCtxClrStatsInput,
    HwrmStatCtxClrStatsOutput, HwrmStatCtxFreeInput, HwrmStatCtxFreeOutput, HwrmStatCtxQueryInput,
    HwrmStatCtxQueryOutput,
};

use super::Ctx;
use super::caps::MAX_STAT_CTX;
use super::reservation::{self, Reserved};
use super::response::{Outcome, Reject, parse, reply};
use super::state::StatCtx;

/// Bytes of `struct ctx_hw_stats` (bnxt_hsi.h), assumed when `stats_dma_length` is 0.
pub const DEFAULT_STATS_LEN: u32 = 20 * 8;

/// STAT_CTX_ALLOC.
pub fn stat_ctx_alloc(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmStatCtxAllocInput = parse(bytes);
    let addr = req.stats_dma_addr.get();
    let len = match u32::from(req.stats_dma_length.get()) {
        0 => DEFAULT_STATS_LEN,
        n => n,
    };
    if addr == 0 || !addr.is_multiple_of(8) {
        return Err(Reject::invalid(format!("stats_dma_addr 0x{addr:x} is null or not 8-byte aligned"))
            .cmd_err(AllocErr::CODE_INVALID_DMA_ADDR));
    }
    ctx.mem.probe(addr, len.into()).map_err(|e| {
        Reject::invalid(format!("stats memory of {len} bytes: {e}")).cmd_err(AllocErr::CODE_INVALID_DMA_ADDR)
    })?;
    if ctx.state.stat_ctxs.len() >= MAX_STAT_CTX.into() {
        return Err(Reject::new(
            ErrorCode::ResourceAllocError,
            format!("all {MAX_STAT_CTX} statistics contexts are in use"),
        )
        .cmd_err(AllocErr::CODE_RES_POOL_EXHAUSTED));
    }
    reservation::check(&ctx.state.l2.reservation, Reserved::StatCtxs, ctx.state.stat_ctxs.len())
        .map_err(|r| r.cmd_err(AllocErr::CODE_RES_POOL_EXHAUSTED))?;
    let id = ctx.state.free_stat_id().ok_or_else(|| {
        Reject::new(ErrorCode::ResourceAllocError, "no statistics context id left")
            .cmd_err(AllocErr::CODE_RES_POOL_EXHAUSTED)
    })?;
    let serial = ctx.state.next_ring_serial;
    ctx.state.next_ring_serial += 1;
    let (period_ms, flags) = (req.update_period_ms.get(), req.stat_ctx_flags);
    let stat = StatCtx { dma_addr: addr, dma_len: len, period_ms, flags, serial };
    ctx.state.stat_ctxs.insert(id, stat);
    reply::<HwrmStatCtxAllocOutput>(|o| o.stat_ctx_id = id.into())
}

/// STAT_CTX_FREE.
pub fn stat_ctx_free(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmStatCtxFreeInput = parse(bytes);
    let id = req.stat_ctx_id.get();
    if ctx.state.stat_ctxs.remove(&id).is_none() {
        return Err(Reject::invalid(format!("statistics context {id} is not allocated")));
    }
    // The counters go with the context: a context allocated again under this id starts from zero.
    ctx.state.l2.ring_stats.remove(&id);
    reply::<HwrmStatCtxFreeOutput>(|o| o.stat_ctx_id = id.into())
}

/// STAT_CTX_QUERY: the context's counters (`flags` COUNTER_MASK, which asks for the counters'
/// widths instead, is refused as not modelled).
pub fn stat_ctx_query(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmStatCtxQueryInput = parse(bytes);
    let id = req.stat_ctx_id.get();
    if !ctx.state.stat_ctxs.contains_key(&id) {
        return Err(Reject::invalid(format!("statistics context {id} is not allocated")));
    }
    if req.flags & HwrmStatCtxQueryInput::FLAGS_COUNTER_MASK != 0 {
        ctx.state.l2.unimplemented += 1;
        return Err(Reject::invalid("flags COUNTER_MASK (the counters' widths) is not modelled"));
    }
    let s = ctx.state.l2.ring_stats.get(&id).copied();
    reply::<HwrmStatCtxQueryOutput>(|o| {
        let Some(s) = s else { return };
        (o.tx_ucast_pkts, o.tx_mcast_pkts, o.tx_bcast_pkts) = (s.tx_ucast_pkts, s.tx_mcast_pkts, s.tx_bcast_pkts);
        (o.tx_discard_pkts, o.tx_error_pkts) = (s.tx_discard_pkts, s.tx_error_pkts);
        (o.tx_ucast_bytes, o.tx_mcast_bytes, o.tx_bcast_bytes) = (s.tx_ucast_bytes, s.tx_mcast_bytes, s.tx_bcast_bytes);
        (o.rx_ucast_pkts, o.rx_mcast_pkts, o.rx_bcast_pkts) = (s.rx_ucast_pkts, s.rx_mcast_pkts, s.rx_bcast_pkts);
        (o.rx_discard_pkts, o.rx_error_pkts) = (s.rx_discard_pkts, s.rx_error_pkts);
        (o.rx_ucast_bytes, o.rx_mcast_bytes, o.rx_bcast_bytes) = (s.rx_ucast_bytes, s.rx_mcast_bytes, s.rx_bcast_bytes);
        (o.rx_agg_pkts, o.rx_agg_bytes, o.rx_agg_events, o.rx_agg_aborts) =
            (s.tpa_pkts, s.tpa_bytes, s.tpa_events, s.tpa_aborts);
    })
}

/// STAT_CTX_CLR_STATS: the context's counters start from zero again (the firmware's copy at
/// once, the L2 engine's with the notice).
pub fn stat_ctx_clr_stats(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmStatCtxClrStatsInput = parse(bytes);
    let id = req.stat_ctx_id.get();
    if !ctx.state.stat_ctxs.contains_key(&id) {
        return Err(Reject::invalid(format!("statistics context {id} is not allocated")));
    }
    ctx.state.l2.ring_stats.remove(&id);
    ctx.state.l2.notify(super::l2_config::Notice::ClearStatCtx { id });
    reply::<HwrmStatCtxClrStatsOutput>(|_| {})
}

/// Key fields of a STAT_CTX_ALLOC request, for the event log.
pub fn stat_ctx_alloc_summary(bytes: &[u8]) -> String {
    let req: HwrmStatCtxAllocInput = parse(bytes);
    format!(
        "addr=0x{:x} len={} period_ms={} flags=0x{:x}",
        req.stats_dma_addr.get(),
        req.stats_dma_length.get(),
        req.update_period_ms.get(),
        req.stat_ctx_flags
    )
}

/// Key fields of a STAT_CTX_FREE request, for the event log.
pub fn stat_ctx_free_summary(bytes: &[u8]) -> String {
    let req: HwrmStatCtxFreeInput = parse(bytes);
    format!("stat_ctx_id={}", req.stat_ctx_id.get())
}
