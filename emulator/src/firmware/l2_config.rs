//! What the firmware keeps for the function's L2 path: the resource reservation (FUNC_CFG), the
//! ring async events go to, VNICs with their RSS configuration and receive masks, L2 filters, RSS
//! contexts, completion-ring coalescing, the PHY and MAC settings, and the notices the L2 engine
//! must act on (HWRM_DONE completions, async events).
//!
//! The engine that moves frames ([`crate::l2`]) reads all of this through
//! [`super::state::FwState::l2`]; only the HWRM handlers change it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Resources the driver reserved with FUNC_CFG (bnxt.c `__bnxt_hwrm_reserve_pf_rings`) and
/// FUNC_QCFG echoes in its `alloc_*` fields (`bnxt_hwrm_get_rings`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reservation {
    /// `num_tx_rings`.
    pub tx_rings: u16,
    /// `num_rx_rings` (RX and aggregation rings together).
    pub rx_rings: u16,
    /// `num_cmpl_rings` (L2 completion rings on P5/P7).
    pub cmpl_rings: u16,
    /// `num_msix` (NQs and the RoCE driver's vectors on P5/P7).
    pub msix: u16,
    /// `num_stat_ctxs`.
    pub stat_ctxs: u16,
    /// `num_vnics`.
    pub vnics: u16,
    /// `num_rsscos_ctxs`.
    pub rsscos_ctxs: u16,
    /// `num_hw_ring_grps`.
    pub hw_ring_grps: u16,
    /// `num_l2_ctxs`.
    pub l2_ctxs: u16,
}

/// The RSS configuration of one RSS context (VNIC_RSS_CFG on P5/P7: one request per context, each
/// carrying 64 (RX ring, completion ring) pairs; bnxt.c `bnxt_hwrm_vnic_set_rss_p5`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RssTable {
    /// `hash_type` (`VNIC_RSS_CFG_REQ_HASH_TYPE_*`).
    pub hash_type: u32,
    /// The Toeplitz key, as read from `hash_key_tbl_addr`.
    pub key: [u8; RSS_KEY_BYTES],
    /// (RX ring id, completion ring id) pairs, as read from `ring_grp_tbl_addr`.
    pub pairs: Vec<(u16, u16)>,
    /// `ring_table_pair_index`: which block of the VNIC's indirection table this is.
    pub pair_index: u8,
}

/// Bytes of the RSS hash key (bnxt.h `HW_HASH_KEY_SIZE`).
pub const RSS_KEY_BYTES: usize = 40;
/// Pairs in one RSS context's table on P5/P7 (bnxt.h `BNXT_RSS_TABLE_ENTRIES_P5`).
pub const RSS_PAIRS_PER_CTX: usize = 64;

/// One VNIC (VNIC_ALLOC, VNIC_CFG, CFA_L2_SET_RX_MASK).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vnic {
    /// Allocated with `VNIC_ALLOC_REQ_FLAGS_DEFAULT`: the function's default VNIC.
    pub default: bool,
    /// `default_rx_ring_id` (VNIC_CFG), when set.
    pub default_rx_ring: Option<u16>,
    /// `default_cmpl_ring_id` (VNIC_CFG), when set.
    pub default_cmpl_ring: Option<u16>,
    /// `mru` (VNIC_CFG): the largest frame the VNIC takes, without FCS; 0 = not set (the device's
    /// largest).
    pub mru: u16,
    /// VNIC_CFG `flags`.
    pub flags: u32,
    /// Whether VLAN tags are stripped into the completion (`VNIC_CFG_REQ_FLAGS_VLAN_STRIP_MODE`).
    pub vlan_strip: bool,
    /// RSS tables by RSS context id.
    pub rss: BTreeMap<u16, RssTable>,
    /// CFA_L2_SET_RX_MASK `mask`.
    pub rx_mask: u32,
    /// The multicast addresses CFA_L2_SET_RX_MASK listed (with `MCAST`).
    pub mcast: Vec<[u8; 6]>,
    /// How received frames are placed (VNIC_PLCMODES_CFG).
    pub placement: super::placement::Placement,
}

/// One L2 filter (CFA_L2_FILTER_ALLOC): frames whose destination MAC matches `addr` under `mask`
/// (and VLAN and tag count, when given) go to VNIC `dst_vnic`.
///
/// A VLAN id of 0 under its mask stands for untagged frames (and priority-tagged ones, whose
/// id is 0): DPDK's PMD allocates such a filter when VLAN filtering goes on, so that untagged
/// frames keep arriving, and one per VLAN added (drivers/net/bnxt/bnxt_ethdev.c
/// `bnxt_add_vlan_filter`: "If l2_ivlan == 0 and l2_ivlan_mask != 0, only untagged packets are
/// received"). Any other id matches frames tagged with it. `num_vlans`, when enabled, is "the
/// match value for the number of VLANs" (bnxt_hsi.h): bnxt_en sends 1 with each VLAN filter
/// (bnxt.c `bnxt_hwrm_l2_filter_alloc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L2Filter {
    /// `l2_addr`.
    pub addr: [u8; 6],
    /// `l2_addr_mask`.
    pub mask: [u8; 6],
    /// Inner VLAN id and mask, when the filter names one.
    pub vlan: Option<(u16, u16)>,
    /// `num_vlans`, when enabled: 0 matches untagged frames, 1 tagged ones.
    pub num_vlans: Option<u8>,
    /// `dst_id`: the VNIC.
    pub dst_vnic: u16,
    /// `flags`.
    pub flags: u32,
}

impl L2Filter {
    /// Whether a frame to `dst` with outer VLAN `vlan` (None = untagged) matches.
    pub fn matches(&self, dst: &[u8; 6], vlan: Option<u16>) -> bool {
        let mac = (0..6).all(|i| dst[i] & self.mask[i] == self.addr[i] & self.mask[i]);
        let vlan_ok = match self.vlan {
            None => true,
            Some((id, mask)) if id & mask == 0 => vlan.is_none_or(|v| v & mask == 0),
            Some((id, mask)) => vlan.is_some_and(|v| v & mask == id & mask),
        };
        let count_ok = match self.num_vlans {
            None => true,
            Some(0) => vlan.is_none(),
            Some(_) => vlan.is_some(),
        };
        mac && vlan_ok && count_ok
    }
}

/// Interrupt coalescing of one completion ring or NQ (RING_CMPL_RING_CFG_AGGINT_PARAMS).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Coalescing {
    /// `flags` (`IS_NQ`, `TIMER_RESET`, `RING_IDLE`).
    pub flags: u16,
    /// `num_cmpl_aggr_int`: completions that produce a notification at once.
    pub num_cmpl_aggr_int: u16,
    /// `int_lat_tmr_max`: most time, in [`super::coalescing::TIMER_UNIT_NS`] units, a completion
    /// waits before its notification.
    pub int_lat_tmr_max: u16,
    /// `int_lat_tmr_min`.
    pub int_lat_tmr_min: u16,
    /// `num_cmpl_dma_aggr`.
    pub num_cmpl_dma_aggr: u16,
    /// `cmpl_aggr_dma_tmr`.
    pub cmpl_aggr_dma_tmr: u16,
}

/// PHY settings the driver asked for (PORT_PHY_CFG), and whether the link is up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhyConfig {
    /// `auto_mode` (`AUTO_MODE_NONE` = forced speed).
    pub auto_mode: u8,
    /// `auto_link_speeds2_mask`: the speeds autonegotiation may pick.
    pub auto_speeds2: u16,
    /// `force_link_speeds2`: the forced speed, when `auto_mode` is NONE.
    pub force_speeds2: u16,
    /// `auto_pause` / `force_pause` as last set.
    pub pause: u8,
    /// The driver forced the link down (`FLAGS_FORCE_LINK_DWN`) and has not brought it back.
    pub forced_down: bool,
    /// The port's peer is gone (`bnxt-model ctl link down`: the cable pulled), whatever the
    /// driver asks; a function reset does not bring it back.
    pub peer_down: bool,
}

impl Default for PhyConfig {
    /// Out of reset: autonegotiating over every supported speed, link up (the virtual port
    /// always has a peer).
    fn default() -> PhyConfig {
        PhyConfig {
            auto_mode: bnxt_hsi::hwrm::layouts::HwrmPortPhyQcfgOutput::AUTO_MODE_SPEED_MASK,
            auto_speeds2: super::port::SPEEDS2,
            force_speeds2: 0,
            pause: 0,
            forced_down: false,
            peer_down: false,
        }
    }
}

/// Frame counters of one direction of the port, kept by the L2 engine (and the RoCE engine's
/// frames are not in them: the port counters cover the L2 path only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortDirCounters {
    /// Frames that crossed the port.
    pub frames: u64,
    /// Of which unicast, multicast and broadcast.
    pub ucast: u64,
    /// Multicast frames.
    pub mcast: u64,
    /// Broadcast frames.
    pub bcast: u64,
    /// Bytes of those frames (without FCS, as the model carries frames).
    pub bytes: u64,
    /// Frames carrying a VLAN tag.
    pub tagged: u64,
    /// Frames by size: 64, 65-127, 128-255, 256-511, 512-1023, 1024-1518, 1519-2047, 2048-4095,
    /// 4096-9216, 9217-16383 bytes (FCS included, as the port counters count them).
    pub sizes: [u64; 10],
    /// Frames dropped at the port (no filter, no buffer, too long), and their bytes.
    pub discards: u64,
    /// Bytes of discarded frames.
    pub discard_bytes: u64,
    /// Frames and bytes by CoS queue (TX: the ring's `queue_id`; RX: queue 0).
    pub cos_frames: [u64; 8],
    /// Bytes by CoS queue.
    pub cos_bytes: [u64; 8],
}

impl PortDirCounters {
    /// Count one frame of `len` bytes (without FCS) to `dst`, tagged or not, in CoS `cos`.
    pub fn count(&mut self, dst: &[u8; 6], len: usize, tagged: bool, cos: usize) {
        self.frames += 1;
        self.bytes += len as u64;
        if dst == &[0xff; 6] {
            self.bcast += 1;
        } else if dst[0] & 1 != 0 {
            self.mcast += 1;
        } else {
            self.ucast += 1;
        }
        self.tagged += u64::from(tagged);
        let with_fcs = len + 4;
        let bucket = match with_fcs {
            0..=64 => 0,
            65..=127 => 1,
            128..=255 => 2,
            256..=511 => 3,
            512..=1023 => 4,
            1024..=1518 => 5,
            1519..=2047 => 6,
            2048..=4095 => 7,
            4096..=9216 => 8,
            _ => 9,
        };
        self.sizes[bucket] += 1;
        let cos = cos.min(7);
        self.cos_frames[cos] += 1;
        self.cos_bytes[cos] += len as u64;
    }
}

/// The port's counters, as the L2 engine hands them to the firmware (PORT_QSTATS).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Received.
    pub rx: PortDirCounters,
    /// Sent.
    pub tx: PortDirCounters,
    /// Times the link went down.
    pub link_down_events: u64,
}

/// A wall-clock time as FW_SET_TIME gives it (UTC from bnxt_en).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallClock {
    /// Year (0: unknown).
    pub year: u16,
    /// Month, 1-12.
    pub month: u8,
    /// Day, 1-31.
    pub day: u8,
    /// Hour, 0-23.
    pub hour: u8,
    /// Minute, 0-59.
    pub minute: u8,
    /// Second, 0-60.
    pub second: u8,
    /// Millisecond, 0-999.
    pub millisecond: u16,
    /// `zone`: minutes from UTC.
    pub zone: i16,
}

/// What the L2 engine must do on the firmware's behalf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// Write an `hwrm_cmpl` (HWRM_DONE) for request `seq_id` to completion ring `cmpl_ring`
    /// (a request whose `cmpl_ring` was not 0xffff, once its response is written).
    HwrmDone {
        /// The L2 completion ring the request named.
        cmpl_ring: u16,
        /// The request's `seq_id`.
        seq_id: u16,
    },
    /// PORT_CLR_STATS: the port's counters start again from zero.
    ClearPortCounters,
    /// STAT_CTX_CLR_STATS: the counters of statistics context `id` start again from zero.
    ClearStatCtx {
        /// The context.
        id: u32,
    },
    /// Write an `hwrm_async_event_cmpl` to the async event ring (FUNC_CFG `async_event_cr`).
    Async {
        /// `event_id`.
        event_id: u16,
        /// `event_data1`.
        data1: u32,
        /// `event_data2`.
        data2: u32,
        /// `timestamp_lo` and `timestamp_hi` (RESET_NOTIFY carries the driver's minimum and
        /// maximum wait there, in tenths of a second; zero for the other events).
        timestamp: (u8, u16),
    },
}

/// The function's MTU settings as FUNC_CFG gave them (FUNC_QCFG reports them; unset ones read as
/// the firmware's default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MtuConfig {
    /// `admin_mtu`: the most the administrator allows.
    pub admin: Option<u16>,
    /// `mru`: the largest frame received.
    pub mru: Option<u16>,
    /// `host_mtu`: the MTU the host driver runs.
    pub host: Option<u16>,
}

/// The firmware's L2 state of the function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct L2Config {
    /// The last reservation.
    pub reservation: Reservation,
    /// FUNC_CFG `async_event_cr`: the ring async event completions go to.
    pub async_event_cr: Option<u16>,
    /// FUNC_CFG cache line size (64 or 128), when set.
    pub cache_line: Option<u16>,
    /// FUNC_CFG `evb_mode`, when set.
    pub evb_mode: Option<u8>,
    /// FUNC_CFG `admin_mtu`, `mru` and `host_mtu`, each when set.
    pub mtu: MtuConfig,
    /// FUNC_CFG `STD_TX_RING_MODE_ENABLE` (true) / `_DISABLE` (false) last asked for; off until
    /// asked (FUNC_QCAPS does not offer `STD_TX_RING_MODE_SUPPORTED`).
    pub std_tx_ring_mode: bool,
    /// VNICs by id ([`L2Config::vnics`]; changed only through [`L2Config::vnics_mut`]).
    vnics: BTreeMap<u16, Vnic>,
    /// RSS/COS/LB contexts by id, with the VNIC they were configured for (if any).
    pub rss_ctxs: BTreeMap<u16, Option<u16>>,
    /// L2 filters by id ([`L2Config::filters`]; changed only through [`L2Config::filters_mut`]).
    filters: BTreeMap<u64, L2Filter>,
    /// Which state of `vnics` and `filters` this is.
    steering: Generation,
    /// Coalescing by ring id.
    pub coalescing: BTreeMap<u16, Coalescing>,
    /// PHY settings.
    pub phy: PhyConfig,
    /// PORT_MAC_CFG `enables`/`flags` last applied (`flags`, `ipg`, `lpbk`).
    pub mac_cfg: (u32, u8, u8),
    /// The time FW_SET_TIME set.
    pub wall_clock: Option<WallClock>,
    /// Work for the L2 engine, oldest first.
    pub notices: Vec<Notice>,
    /// Serial of the next L2 filter id.
    pub next_filter_serial: u64,
    /// Settings a request asked for that the model does not implement (counted, refused).
    pub unimplemented: u64,
    /// The port's counters as the L2 engine last reported them: handed over just before the
    /// firmware runs a job (the port statistics requests, its only readers, run as jobs), so
    /// between jobs they may lag the L2 engine's own (`L2Engine::port_counters`).
    pub port_counters: PortCounters,
    /// The counters of each statistics context the L2 engine counts into, as it last reported
    /// them (handed over with [`L2Config::port_counters`]; STAT_CTX_QUERY reads them).
    pub ring_stats: BTreeMap<u32, bnxt_hsi::hwrm::layouts::CtxHwStats>,
}

impl L2Config {
    /// FUNC_RESET: every VNIC, filter, RSS context and reservation goes; the async event ring
    /// with the rings. The port (PHY settings, counters) belongs to the port, not the function.
    pub fn free_resources(&mut self) {
        let (serial, unimplemented, wall_clock) = (self.next_filter_serial, self.unimplemented, self.wall_clock);
        let (phy, port_counters) = (self.phy, self.port_counters);
        *self = L2Config {
            next_filter_serial: serial,
            unimplemented,
            wall_clock,
            phy,
            port_counters,
            ..L2Config::default()
        };
    }

    /// Hand a notice to the L2 engine.
    pub fn notify(&mut self, notice: Notice) {
        self.notices.push(notice);
    }

    /// The VNIC a frame to `dst` (outer VLAN `vlan`) goes to: the first matching filter's, or
    /// `None`.
    pub fn filter_vnic(&self, dst: &[u8; 6], vlan: Option<u16>) -> Option<u16> {
        self.filters.values().find(|f| f.matches(dst, vlan)).map(|f| f.dst_vnic)
    }

    /// The VNICs, by id.
    pub fn vnics(&self) -> &BTreeMap<u16, Vnic> {
        &self.vnics
    }

    /// The VNICs, to change: the steering generation moves on.
    pub fn vnics_mut(&mut self) -> &mut BTreeMap<u16, Vnic> {
        self.steering = Generation::fresh();
        &mut self.vnics
    }

    /// The L2 filters, by id.
    pub fn filters(&self) -> &BTreeMap<u64, L2Filter> {
        &self.filters
    }

    /// The L2 filters, to change: the steering generation moves on.
    pub fn filters_mut(&mut self) -> &mut BTreeMap<u64, L2Filter> {
        self.steering = Generation::fresh();
        &mut self.filters
    }

    /// Which state of the VNICs and L2 filters this is: a configuration whose VNICs and filters
    /// may have changed since (or another configuration) has another, so a decision made from
    /// them can be kept under this value.
    pub(crate) fn steering(&self) -> Generation {
        self.steering
    }

    /// The default VNIC, if one is allocated.
    pub fn default_vnic(&self) -> Option<u16> {
        self.vnics.iter().find(|(_, v)| v.default).map(|(&id, _)| id)
    }
}

/// One state of a configuration's VNICs and L2 filters ([`L2Config::steering`]). Every new
/// configuration and every change draws a value not drawn before in the process; a clone keeps
/// its original's, with the same VNICs and filters, until either changes. So configurations of
/// the same generation have the same VNICs and filters ([`Generation::is`]).
///
/// Generations take no part in comparing or describing configurations: two with the same VNICs
/// and filters are equal (`==` on generations is always true; [`Generation::is`] compares
/// them), and read the same, whatever their histories. Crate-private, so the `==` cannot be
/// taken for `is` elsewhere.
#[derive(Clone, Copy)]
pub(crate) struct Generation(u64);

impl Generation {
    /// A value not drawn before.
    fn fresh() -> Generation {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Generation(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// Whether this is the same state as `other`.
    pub(crate) fn is(self, other: Generation) -> bool {
        self.0 == other.0
    }
}

impl Default for Generation {
    fn default() -> Generation {
        Generation::fresh()
    }
}

impl std::fmt::Debug for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Generation")
    }
}

impl PartialEq for Generation {
    fn eq(&self, _: &Generation) -> bool {
        true
    }
}

impl Eq for Generation {}

/// The lowest id not among `used` (ascending), below `limit`.
pub fn lowest_free_u16(used: impl Iterator<Item = u16>, limit: u16) -> Option<u16> {
    let mut next = 0u16;
    for id in used {
        if id != next {
            break;
        }
        next = next.checked_add(1)?;
    }
    (next < limit).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_match_under_their_mask_and_vlan() {
        let f =
            L2Filter { addr: [2, 0, 0, 0, 0, 1], mask: [0xff; 6], vlan: None, num_vlans: None, dst_vnic: 3, flags: 0 };
        assert!(f.matches(&[2, 0, 0, 0, 0, 1], None));
        assert!(f.matches(&[2, 0, 0, 0, 0, 1], Some(5)));
        assert!(!f.matches(&[2, 0, 0, 0, 0, 2], None));
        let any_multicast = L2Filter { addr: [1, 0, 0, 0, 0, 0], mask: [1, 0, 0, 0, 0, 0], ..f };
        assert!(any_multicast.matches(&[0x33, 0x33, 0, 0, 0, 1], None));
        let vlan = L2Filter { vlan: Some((7, 0xfff)), ..f };
        assert!(!vlan.matches(&[2, 0, 0, 0, 0, 1], None));
        assert!(vlan.matches(&[2, 0, 0, 0, 0, 1], Some(0x2007)));
        assert!(!vlan.matches(&[2, 0, 0, 0, 0, 1], Some(8)));
        // VLAN 0: untagged and priority-tagged frames only (DPDK's VLAN filtering).
        let untagged = L2Filter { vlan: Some((0, 0xfff)), ..f };
        assert!(untagged.matches(&[2, 0, 0, 0, 0, 1], None));
        assert!(untagged.matches(&[2, 0, 0, 0, 0, 1], Some(0x6000)));
        assert!(!untagged.matches(&[2, 0, 0, 0, 0, 1], Some(7)));
        // num_vlans 1 with VLAN 0 (bnxt_en's form): a tag is needed.
        let counted = L2Filter { num_vlans: Some(1), ..untagged };
        assert!(!counted.matches(&[2, 0, 0, 0, 0, 1], None));
        assert!(counted.matches(&[2, 0, 0, 0, 0, 1], Some(0)));
        let none = L2Filter { num_vlans: Some(0), ..f };
        assert!(none.matches(&[2, 0, 0, 0, 0, 1], None));
        assert!(!none.matches(&[2, 0, 0, 0, 0, 1], Some(7)));
        let mut cfg = L2Config::default();
        cfg.filters_mut().insert(9, f);
        assert_eq!(cfg.filter_vnic(&[2, 0, 0, 0, 0, 1], None), Some(3));
        assert_eq!(cfg.filter_vnic(&[2, 0, 0, 0, 0, 9], None), None);
    }

    #[test]
    fn free_resources_keeps_serials_and_counts() {
        let mut cfg = L2Config { next_filter_serial: 5, unimplemented: 2, ..L2Config::default() };
        cfg.vnics_mut().insert(0, Vnic::default());
        cfg.reservation.tx_rings = 4;
        cfg.free_resources();
        assert!(cfg.vnics().is_empty());
        assert_eq!(cfg.reservation, Reservation::default());
        assert_eq!((cfg.next_filter_serial, cfg.unimplemented), (5, 2));
        assert_eq!(lowest_free_u16([0, 1, 3].into_iter(), 10), Some(2));
        assert_eq!(lowest_free_u16([0, 1].into_iter(), 2), None);
    }
}
