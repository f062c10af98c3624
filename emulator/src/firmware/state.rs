//! What the firmware remembers about its function: the driver's registration, rings, statistics
//! contexts and context memory. A function-level reset forgets all of it; FUNC_RESET frees the
//! rings and statistics contexts (the function's resources) and keeps the registration and the
//! context memory, which describe the driver and the host memory it lent.

use std::collections::BTreeMap;

use super::context_mem::ContextMemory;
use super::l2_config::L2Config;

/// The driver's registration (FUNC_DRV_RGTR).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// `os_type`.
    pub os_type: u16,
    /// Driver version (major, minor, update, patch): the 16-bit fields, or the 8-bit ones when
    /// those are zero.
    pub version: (u16, u16, u16, u16),
    /// `flags`.
    pub flags: u32,
    /// Async event ids the driver wants forwarded (`async_event_fwd`, 256 bits).
    pub async_events: [u32; 8],
}

/// Ring types RING_ALLOC knows (`RING_ALLOC_REQ_RING_TYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RingType {
    /// L2 completion ring (0).
    L2Cmpl,
    /// Transmit ring (1).
    Tx,
    /// Receive ring (2).
    Rx,
    /// Receive aggregation ring (4).
    RxAgg,
    /// Notification queue (5).
    Nq,
}

impl RingType {
    /// The type for a wire value; ROCE_CMPL (3) is a pre-P5 type and not offered on P7.
    pub fn from_wire(v: u8) -> Option<RingType> {
        Some(match v {
            0 => RingType::L2Cmpl,
            1 => RingType::Tx,
            2 => RingType::Rx,
            4 => RingType::RxAgg,
            5 => RingType::Nq,
            _ => return None,
        })
    }

    /// The wire value.
    pub fn wire(self) -> u8 {
        match self {
            RingType::L2Cmpl => 0,
            RingType::Tx => 1,
            RingType::Rx => 2,
            RingType::RxAgg => 4,
            RingType::Nq => 5,
        }
    }

    /// The header's name (`NQ`, `L2_CMPL`, ...).
    pub fn name(self) -> &'static str {
        match self {
            RingType::L2Cmpl => "L2_CMPL",
            RingType::Tx => "TX",
            RingType::Rx => "RX",
            RingType::RxAgg => "RX_AGG",
            RingType::Nq => "NQ",
        }
    }
}

/// A ring the driver allocated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ring {
    /// Its type.
    pub ty: RingType,
    /// Entries (16-byte units).
    pub length: u32,
    /// `logical_id` (MSI-X vector for NQs, doorbell slot otherwise).
    pub logical_id: u16,
    /// Data pages of the ring, in order.
    pub pages: Vec<u64>,
    /// Bytes per page.
    pub page_size: u64,
    /// The NQ a completion ring reports to, if any.
    pub nq_ring_id: Option<u16>,
    /// The completion ring a TX/RX ring completes on, if any.
    pub cmpl_ring_id: Option<u16>,
    /// The statistics context, if any.
    pub stat_ctx_id: Option<u32>,
    /// An aggregation ring's RX ring (`rx_ring_id` with `ENABLES_RX_RING_ID_VALID`): the ring whose
    /// frames continue in this ring's buffers.
    pub rx_ring_id: Option<u16>,
    /// `rx_buf_size` of an RX or aggregation ring (`ENABLES_RX_BUF_SIZE_VALID`), when given.
    pub rx_buf_size: Option<u16>,
    /// `cq_handle` (echoed in NQ entries of completion rings).
    pub cq_handle: u64,
    /// Which allocation this is (distinct for every RING_ALLOC since the firmware started), so
    /// users of a ring id notice when the id was freed and handed out again.
    pub serial: u64,
}

/// A statistics context the driver allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatCtx {
    /// Where the firmware would DMA the counters.
    pub dma_addr: u64,
    /// Bytes the driver reserved there.
    pub dma_len: u32,
    /// Update period asked for, in ms.
    pub period_ms: u32,
    /// `stat_ctx_flags` (bit 0: RoCE).
    pub flags: u8,
    /// Which allocation this is (from the serials rings take too), so the counters of a context
    /// freed and allocated again under the same id, even at the same address, start from zero.
    pub serial: u64,
}

/// The firmware's state for its function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FwState {
    /// The driver's registration.
    pub registration: Option<Registration>,
    /// Whether the driver said its interface is up (FUNC_DRV_IF_CHANGE).
    pub if_up: bool,
    /// Rings by id.
    pub rings: BTreeMap<u16, Ring>,
    /// Statistics contexts by id.
    pub stat_ctxs: BTreeMap<u32, StatCtx>,
    /// Context memory.
    pub context: ContextMemory,
    /// Serial the next allocated ring or statistics context gets.
    pub next_ring_serial: u64,
    /// How many times the function's resources were freed (FUNC_RESET); the RoCE engine drops
    /// its objects when this changes.
    pub resets: u64,
    /// The L2 path: reservation, VNICs, filters, async event ring, notices for the L2 engine.
    pub l2: L2Config,
    /// The firmware restarted after a reset and the driver has not yet been told: the next
    /// FUNC_DRV_IF_CHANGE up answers HOT_FW_RESET_DONE.
    pub hot_reset_done: bool,
}

impl FwState {
    /// FUNC_RESET: free the function's rings and statistics contexts.
    pub fn free_resources(&mut self) {
        self.resets += 1;
        self.rings.clear();
        self.stat_ctxs.clear();
        self.if_up = false;
        self.l2.free_resources();
    }

    /// The lowest ring id not in use (ids are shared by every ring type; 0xffff is
    /// `INVALID_HW_RING_ID` and never handed out).
    pub fn free_ring_id(&self) -> Option<u16> {
        lowest_free(self.rings.keys().map(|&k| u32::from(k)))
            .and_then(|id| u16::try_from(id).ok())
            .filter(|&id| id != u16::MAX)
    }

    /// The lowest statistics context id not in use.
    pub fn free_stat_id(&self) -> Option<u32> {
        lowest_free(self.stat_ctxs.keys().copied())
    }

    /// How many rings of `ty` exist.
    pub fn ring_count(&self, ty: RingType) -> usize {
        self.rings.values().filter(|r| r.ty == ty).count()
    }
}

/// The lowest value missing from `used` (ascending).
fn lowest_free(used: impl Iterator<Item = u32>) -> Option<u32> {
    let mut next = 0u32;
    for id in used {
        if id != next {
            break;
        }
        next = next.checked_add(1)?;
    }
    Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_lowest_free() {
        assert_eq!(lowest_free([0, 1, 3].into_iter()), Some(2));
        assert_eq!(lowest_free([1].into_iter()), Some(0));
        assert_eq!(lowest_free(std::iter::empty()), Some(0));
        assert_eq!(lowest_free([u32::MAX - 1, u32::MAX].into_iter()), Some(0));
    }
}
