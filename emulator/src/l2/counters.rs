//! What the L2 engine counts: the device's view of its L2 work, for tests, logs and the NIC's
//! outside view. Ring-level statistics for the driver live in [`super::stats`].

use std::collections::BTreeMap;

/// Counters of the L2 engine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct L2Counters {
    /// L2 doorbells carried out.
    pub doorbells: u64,
    /// Doorbells ignored, by reason (no valid bit, unknown ring, index out of range, ...).
    pub ignored_doorbells: BTreeMap<String, u64>,
    /// Doorbells of types the L2 path does not carry out (counted as unimplemented).
    pub unimplemented_doorbells: u64,
    /// Packets taken from TX rings.
    pub tx_packets: u64,
    /// Frames put on the wire (more than packets with LSO).
    pub tx_frames: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
    /// TX packets completed with an error (bad BDs, DMA failures, unsupported offloads).
    pub tx_errors: u64,
    /// TX completions written.
    pub tx_completions: u64,
    /// Frames delivered to RX rings.
    pub rx_frames: u64,
    /// Aggregation buffers those frames continued in (jumbo placement, header-data split).
    pub rx_agg_bufs: u64,
    /// Received frames dropped, by reason.
    pub rx_drops: BTreeMap<&'static str, u64>,
    /// CQ notifications written to NQs.
    pub notifications: u64,
    /// MSI-X vectors raised.
    pub interrupts: u64,
    /// NQ entries that could not be written (backlog full, DMA refused, NQ gone).
    pub nq_lost: u64,
    /// Completions that could not be written (ring full or gone, DMA refused).
    pub cmpl_lost: u64,
    /// HWRM_DONE completions written.
    pub hwrm_done: u64,
    /// Async event completions written.
    pub async_events: u64,
    /// DMA accesses that failed.
    pub dma_errors: u64,
    /// Offloads asked for that the model does not carry out (counted as unimplemented).
    pub unimplemented_offloads: u64,
    /// Statistics blocks DMA-written to the driver.
    pub stats_writes: u64,
}

impl L2Counters {
    /// Count an ignored doorbell.
    pub fn ignored(&mut self, reason: &str) {
        *self.ignored_doorbells.entry(reason.to_string()).or_default() += 1;
    }

    /// Count a dropped frame.
    pub fn drop_rx(&mut self, reason: &'static str) {
        *self.rx_drops.entry(reason).or_default() += 1;
    }

    /// Everything the L2 path was asked for and does not implement.
    pub fn unimplemented_total(&self) -> u64 {
        self.unimplemented_doorbells + self.unimplemented_offloads
    }
}
