//! Ring statistics: the counters the device keeps per statistics context (STAT_CTX_ALLOC) and
//! DMA-writes to the driver's `stats_dma_addr` every `update_period_ms` (bnxt.c
//! `bnxt_hwrm_stat_ctx_alloc`, `bnxt_add_ring_stats`; bnxt_hsi.h `struct ctx_hw_stats`).
//!
//! A TX or RX ring counts into the context RING_ALLOC named for it. The block written is
//! `ctx_hw_stats` (the size bnxt_en asks for when VNIC_QCAPS reports no TPA), cut to the
//! context's `stats_dma_length`; the TPA counters stay zero (no TPA). A context is written only
//! once one of the L2 engine's rings counts into it, and only if it is not a RoCE context
//! (`stat_ctx_flags` bit 0), which the RoCE engine owns.

use std::collections::BTreeMap;
use std::time::Duration;

use bnxt_hsi::hwrm::layouts::CtxHwStats;
use zerocopy::{FromZeros, IntoBytes};

use crate::firmware::state::FwState;
use crate::host_memory::{DmaError, HostMemory};

/// Counters of one statistics context.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingStats {
    /// Received unicast, multicast, broadcast packets.
    pub rx_pkts: [u64; 3],
    /// Their bytes.
    pub rx_bytes: [u64; 3],
    /// Received packets dropped for want of a buffer or completion room.
    pub rx_discards: u64,
    /// Received packets completed with an error.
    pub rx_errors: u64,
    /// Sent unicast, multicast, broadcast packets.
    pub tx_pkts: [u64; 3],
    /// Their bytes.
    pub tx_bytes: [u64; 3],
    /// Sent packets completed with an error.
    pub tx_errors: u64,
}

/// Which of unicast (0), multicast (1), broadcast (2) a destination is.
pub fn cast_of(dst: &[u8; 6]) -> usize {
    if dst == &[0xff; 6] {
        2
    } else if dst[0] & 1 != 0 {
        1
    } else {
        0
    }
}

impl RingStats {
    /// The `ctx_hw_stats` block.
    pub fn block(&self) -> CtxHwStats {
        let mut s = CtxHwStats::new_zeroed();
        s.rx_ucast_pkts = self.rx_pkts[0].into();
        s.rx_mcast_pkts = self.rx_pkts[1].into();
        s.rx_bcast_pkts = self.rx_pkts[2].into();
        s.rx_ucast_bytes = self.rx_bytes[0].into();
        s.rx_mcast_bytes = self.rx_bytes[1].into();
        s.rx_bcast_bytes = self.rx_bytes[2].into();
        s.rx_discard_pkts = self.rx_discards.into();
        s.rx_error_pkts = self.rx_errors.into();
        s.tx_ucast_pkts = self.tx_pkts[0].into();
        s.tx_mcast_pkts = self.tx_pkts[1].into();
        s.tx_bcast_pkts = self.tx_pkts[2].into();
        s.tx_ucast_bytes = self.tx_bytes[0].into();
        s.tx_mcast_bytes = self.tx_bytes[1].into();
        s.tx_bcast_bytes = self.tx_bytes[2].into();
        s.tx_error_pkts = self.tx_errors.into();
        s
    }
}

/// One context the engine writes: which allocation it is, its counters, where they go and when
/// next.
#[derive(Debug, Clone)]
struct Tracked {
    serial: u64,
    addr: u64,
    stats: RingStats,
    due: Duration,
}

/// The statistics contexts the L2 engine counts into.
#[derive(Debug, Default, Clone)]
pub struct StatsContexts {
    ctxs: BTreeMap<u32, Tracked>,
}

impl StatsContexts {
    /// Forget everything.
    pub fn clear(&mut self) {
        self.ctxs.clear();
    }

    /// The counters of context `id` at `now`, started (zero) if the firmware has it and the
    /// engine did not count into it yet, or if it was freed and allocated again since (another
    /// serial, wherever its memory is).
    pub fn get(&mut self, id: u32, fw: &FwState, now: Duration) -> Option<&mut RingStats> {
        let Some(c) = fw.stat_ctxs.get(&id).filter(|c| c.flags & 1 == 0) else {
            self.ctxs.remove(&id);
            return None;
        };
        let stale = self.ctxs.get(&id).is_none_or(|t| t.serial != c.serial);
        if stale {
            let due = now + period(c.period_ms);
            self.ctxs.insert(id, Tracked { serial: c.serial, addr: c.dma_addr, stats: RingStats::default(), due });
        }
        self.ctxs.get_mut(&id).map(|t| &mut t.stats)
    }

    /// The `ctx_hw_stats` block of every tracked context that is still the allocation the
    /// firmware has under its id.
    pub fn snapshot(&self, fw: &FwState) -> BTreeMap<u32, CtxHwStats> {
        self.ctxs
            .iter()
            .filter(|(id, t)| fw.stat_ctxs.get(id).is_some_and(|c| c.serial == t.serial))
            .map(|(&id, t)| (id, t.stats.block()))
            .collect()
    }

    /// Context `id`'s counters start again from zero (STAT_CTX_CLR_STATS).
    pub fn zero(&mut self, id: u32) {
        if let Some(t) = self.ctxs.get_mut(&id) {
            t.stats = RingStats::default();
        }
    }

    /// Whether no context is tracked (a RoCE-only function's one context is the RoCE engine's).
    pub fn is_empty(&self) -> bool {
        self.ctxs.is_empty()
    }

    /// The earliest time a context is due.
    pub fn next_due(&self) -> Option<Duration> {
        self.ctxs.values().map(|t| t.due).min()
    }

    /// Write every context due at `now`; returns how many were written and the DMA errors.
    pub fn write_due(&mut self, now: Duration, fw: &FwState, mem: &dyn HostMemory) -> (u64, Vec<DmaError>) {
        if self.ctxs.is_empty() {
            // The usual case on a RoCE-only function: its context is the RoCE engine's.
            return (0, Vec::new());
        }
        self.ctxs.retain(|id, t| fw.stat_ctxs.get(id).is_some_and(|c| c.serial == t.serial && c.flags & 1 == 0));
        let (mut written, mut errors) = (0, Vec::new());
        for (id, t) in self.ctxs.iter_mut().filter(|(_, t)| t.due <= now) {
            let c = &fw.stat_ctxs[id];
            let block = t.stats.block();
            let len = (c.dma_len as usize).min(size_of::<CtxHwStats>());
            match mem.write(t.addr, &block.as_bytes()[..len]) {
                Ok(()) => written += 1,
                Err(e) => errors.push(e),
            }
            t.due = now + period(c.period_ms);
        }
        (written, errors)
    }
}

/// The update period of a context (`update_period_ms`; 0 is taken as 1 s, bnxt_en's default).
fn period(ms: u32) -> Duration {
    Duration::from_millis(if ms == 0 { 1000 } else { u64::from(ms) })
}
