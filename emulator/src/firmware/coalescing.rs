//! Interrupt coalescing: RING_AGGINT_QCAPS and RING_CMPL_RING_CFG_AGGINT_PARAMS (bnxt.c
//! `bnxt_hwrm_coal_params_qcaps`, `bnxt_hwrm_set_coal_params`, `bnxt_hwrm_set_coal`).
//!
//! What the model's L2 engine does with a completion ring's settings: a completion on an armed
//! ring produces its NQ notification once `num_cmpl_aggr_int` completions have gathered, or
//! `int_lat_tmr_max` timer units after the first of them, whichever comes first. Those two are
//! the parameters QCAPS reports as supported (`cmpl_params`). The DMA aggregation parameters
//! (`num_cmpl_dma_aggr`, `cmpl_aggr_dma_tmr`), which bnxt_en always sends, bound how long the
//! device may hold completions back before writing them; the model writes every completion at
//! once, which keeps within any bound, so they are accepted and kept. NQ timers are not offered
//! (`nq_params` 0), so bnxt_en sends none. The timer-reset and ring-idle mode flags, which DPDK's
//! PMD sets, are kept and do not change when the model notifies.

use bnxt_hsi::hwrm::layouts::{
    HwrmRingAggintQcapsInput, HwrmRingAggintQcapsOutput as Q, HwrmRingCmplRingCfgAggintParamsInput as R,
    HwrmRingCmplRingCfgAggintParamsOutput,
};

use super::Ctx;
use super::l2_config::Coalescing;
use super::response::{Outcome, Reject, parse, reply};
use super::state::RingType;

/// Nanoseconds per coalescing timer unit (QCAPS `timer_units`; the model's choice, the value
/// bnxt_en assumes when QCAPS is not answered).
pub const TIMER_UNIT_NS: u16 = 80;
/// Largest DMA aggregation count reported (bnxt_en's own default maximum).
pub const MAX_DMA_AGGR: u16 = 63;

/// RING_AGGINT_QCAPS.
pub fn aggint_qcaps(bytes: &[u8]) -> Outcome {
    let _req: HwrmRingAggintQcapsInput = parse(bytes);
    reply::<Q>(|o| {
        o.cmpl_params = (Q::CMPL_PARAMS_INT_LAT_TMR_MAX | Q::CMPL_PARAMS_NUM_CMPL_AGGR_INT).into();
        o.nq_params = 0.into();
        o.num_cmpl_dma_aggr_min = 1.into();
        o.num_cmpl_dma_aggr_max = MAX_DMA_AGGR.into();
        o.num_cmpl_dma_aggr_during_int_min = 1.into();
        o.num_cmpl_dma_aggr_during_int_max = MAX_DMA_AGGR.into();
        o.cmpl_aggr_dma_tmr_min = 1.into();
        o.cmpl_aggr_dma_tmr_max = u16::MAX.into();
        o.cmpl_aggr_dma_tmr_during_int_min = 1.into();
        o.cmpl_aggr_dma_tmr_during_int_max = u16::MAX.into();
        o.int_lat_tmr_min_min = 1.into();
        o.int_lat_tmr_min_max = u16::MAX.into();
        o.int_lat_tmr_max_min = 1.into();
        o.int_lat_tmr_max_max = u16::MAX.into();
        o.num_cmpl_aggr_int_min = 1.into();
        o.num_cmpl_aggr_int_max = u16::MAX.into();
        o.timer_units = TIMER_UNIT_NS.into();
    })
}

/// RING_CMPL_RING_CFG_AGGINT_PARAMS.
pub fn aggint_params(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: R = parse(bytes);
    let id = req.ring_id.get();
    let flags = req.flags.get();
    let enables = req.enables.get();
    let is_nq = flags & R::FLAGS_IS_NQ != 0;
    match (ctx.state.rings.get(&id).map(|r| r.ty), is_nq) {
        (Some(RingType::L2Cmpl), false) => {}
        (Some(RingType::Nq), true) => {
            ctx.state.l2.unimplemented += 1;
            return Err(Reject::invalid("NQ coalescing timers are not offered (RING_AGGINT_QCAPS nq_params is 0)"));
        }
        _ => {
            let what = if is_nq { "NQ" } else { "L2 completion ring" };
            return Err(Reject::invalid(format!("ring_id {id} is not an allocated {what}")));
        }
    }
    if flags & (R::FLAGS_TIMER_RESET | R::FLAGS_RING_IDLE) != 0 {
        // DPDK's PMD sends both on every completion ring (drivers/net/bnxt/bnxt_hwrm.c
        // `bnxt_hwrm_set_coal_params`, `bnxt_hwrm_set_coal_params_p5`, sent by `bnxt_hwrm_set_ring_coal`); no source shows firmware
        // refusing them. The model keeps them and notifies as before (it writes completions at
        // once, so a timer restarted per completion or idle-ring timing changes no bound).
        tracing::warn!(
            ring = id,
            flags,
            "RING_CMPL_RING_CFG_AGGINT_PARAMS: timer-reset and ring-idle modes kept but not modelled (no public \
             source describes their timing)"
        );
    }
    let flags_known = R::FLAGS_TIMER_RESET | R::FLAGS_RING_IDLE | R::FLAGS_IS_NQ;
    if flags & !flags_known != 0 {
        return Err(Reject::invalid(format!("flags 0x{:x} are not defined", flags & !flags_known)));
    }
    let known = R::ENABLES_NUM_CMPL_DMA_AGGR
        | R::ENABLES_NUM_CMPL_DMA_AGGR_DURING_INT
        | R::ENABLES_CMPL_AGGR_DMA_TMR
        | R::ENABLES_INT_LAT_TMR_MIN
        | R::ENABLES_INT_LAT_TMR_MAX
        | R::ENABLES_NUM_CMPL_AGGR_INT;
    if enables & !known != 0 {
        return Err(Reject::invalid(format!("enables 0x{:x} are not defined", enables & !known)));
    }
    let mut c = ctx.state.l2.coalescing.get(&id).copied().unwrap_or_default();
    c.flags = flags;
    let set = |bit: u16, field: &mut u16, v: u16| {
        if enables & bit != 0 {
            *field = v;
        }
    };
    set(R::ENABLES_NUM_CMPL_AGGR_INT, &mut c.num_cmpl_aggr_int, req.num_cmpl_aggr_int.get());
    set(R::ENABLES_INT_LAT_TMR_MAX, &mut c.int_lat_tmr_max, req.int_lat_tmr_max.get());
    set(R::ENABLES_INT_LAT_TMR_MIN, &mut c.int_lat_tmr_min, req.int_lat_tmr_min.get());
    set(R::ENABLES_NUM_CMPL_DMA_AGGR, &mut c.num_cmpl_dma_aggr, req.num_cmpl_dma_aggr.get());
    set(R::ENABLES_CMPL_AGGR_DMA_TMR, &mut c.cmpl_aggr_dma_tmr, req.cmpl_aggr_dma_tmr.get());
    ctx.state.l2.coalescing.insert(id, c);
    reply::<HwrmRingCmplRingCfgAggintParamsOutput>(|_| {})
}

impl Coalescing {
    /// How long a completion may wait for its notification, if the ring has a timer.
    pub fn max_latency(&self) -> Option<std::time::Duration> {
        (self.int_lat_tmr_max > 0)
            .then(|| std::time::Duration::from_nanos(u64::from(self.int_lat_tmr_max) * u64::from(TIMER_UNIT_NS)))
    }

    /// How many completions produce a notification at once (at least 1).
    pub fn count_threshold(&self) -> u16 {
        self.num_cmpl_aggr_int.max(1)
    }
}

/// Key fields of a RING_CMPL_RING_CFG_AGGINT_PARAMS request, for the event log.
pub fn aggint_params_summary(bytes: &[u8]) -> String {
    let r: R = parse(bytes);
    format!(
        "ring={} flags=0x{:x} enables=0x{:x} aggr_int={} tmr_max={}",
        r.ring_id.get(),
        r.flags.get(),
        r.enables.get(),
        r.num_cmpl_aggr_int.get(),
        r.int_lat_tmr_max.get()
    )
}
