//! The firmware's resource capabilities: maxima FUNC_QCAPS and FUNC_RESOURCE_QCAPS report, the
//! CoS queues QUEUE_QPORTCFG reports, and the context types FUNC_BACKING_STORE_QCAPS_V2 offers.
//!
//! No public source lists a BCM57608's numbers; these are the model's choices, picked to be
//! plausible for a 400G P7 and consistent with each other and with how bnxt_en sizes context
//! memory from them (bnxt.c `bnxt_alloc_ctx_mem`): with these values bnxt_en asks for
//! 1024 L2 + 64 QP1 + 65,536 RoCE QPs, 9,216 SRQs, 133,120 CQs, 131,072 MRs + 131,072 AVs, and
//! about 85 MB of context memory per function in all. `ENABLE_CTX_KIND_INIT` is not offered for
//! any type, so drivers need not write initial values into that memory.

use bnxt_hsi::backing_store::CtxType;

use super::options::{FW_LIMIT_AVS, FirmwareOptions};
use crate::config_space::MSIX_VECTORS;

/// FUNC_QCAPS `max_rsscos_ctx`.
pub const MAX_RSSCOS_CTX: u16 = 256;
/// FUNC_QCAPS `max_cmpl_rings` (L2 completion rings).
pub const MAX_CMPL_RINGS: u16 = 256;
/// FUNC_QCAPS `max_tx_rings`.
pub const MAX_TX_RINGS: u16 = 256;
/// FUNC_QCAPS `max_rx_rings` (RX and RX aggregation rings together).
pub const MAX_RX_RINGS: u16 = 256;
/// FUNC_QCAPS `max_l2_ctxs`.
pub const MAX_L2_CTXS: u16 = 256;
/// FUNC_QCAPS `max_vnics` (equals the VNIC context type's VNIC split).
pub const MAX_VNICS: u16 = 256;
/// FUNC_QCAPS `max_stat_ctx` (equals the STAT context type's maximum).
pub const MAX_STAT_CTX: u16 = 2048;
/// FUNC_QCAPS `max_hw_ring_grps`.
pub const MAX_HW_RING_GRPS: u32 = 256;
/// Notification queues: one per MSI-X vector (FUNC_RESOURCE_QCAPS `max_msix`; bnxt_en takes
/// `max_nqs` from it on P5+).
pub const MAX_NQS: u16 = MSIX_VECTORS;

/// CoS queues QUEUE_QPORTCFG reports: (queue id, service profile). Four lossy queues.
pub const QUEUES: [(u8, u8); 4] = [(0, 0), (1, 0), (2, 0), (3, 0)];

/// Most entries of a TQM ring (slow path and fast path).
pub const TQM_MAX_ENTRIES: u32 = 262_144;

/// What FUNC_BACKING_STORE_QCAPS_V2 reports for one context type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CtxCaps {
    /// The type.
    pub ty: CtxType,
    /// Bytes per entry.
    pub entry_size: u16,
    /// Fewest entries the firmware accepts.
    pub min_entries: u32,
    /// Most entries the firmware accepts.
    pub max_entries: u32,
    /// Entries are asked for in multiples of this (a hint; bnxt_en rounds up to it).
    pub entry_multiple: u8,
    /// One instance per set bit (0: a single instance 0).
    pub instance_bit_map: u32,
    /// Split entries (`subtype_valid_cnt` of them): QP {L2 QPs, QP1 QPs}, SRQ {L2 SRQs},
    /// CQ {L2 CQs}, VNIC {VNICs}, MRAV {AVs, 0 = the driver chooses}.
    pub splits: &'static [u32],
}

/// Every context type the firmware offers, in ascending type order.
pub const CONTEXT_TYPES: [CtxCaps; 9] = [
    // QP: 448 bytes is the largest QP context bnxt_re sizes itself on older chips
    // (qplib_res.h BNXT_QPLIB_MAX_QP_CTX_ENTRY_SIZE).
    ctx(CtxType::Qp, 448, 0, 131_072, 1, 0, &[1024, 64]),
    // SRQ/CQ: 64 bytes (qplib_res.h BNXT_QPLIB_MAX_SRQ_CTX_ENTRY_SIZE, ..._CQ_CTX_ENTRY_SIZE).
    ctx(CtxType::Srq, 64, 0, 16_384, 1, 0, &[1024]),
    ctx(CtxType::Cq, 64, 0, 262_144, 1, 0, &[2048]),
    ctx(CtxType::Vnic, 64, 0, 1024, 1, 0, &[MAX_VNICS as u32]),
    ctx(CtxType::Stat, 256, 0, MAX_STAT_CTX as u32, 1, 0, &[]),
    // TQM rings: 262,144 entries at most, room for what bnxt_en sizes (about 132,600 with RoCE,
    // see the test below) without inviting more: DPDK's PMD asks for the maximum of every type
    // it has no split for (drivers/net/bnxt/bnxt_ethdev.c `bnxt_alloc_ctx_pg_tbls`), so this is
    // 4 MiB per TQM ring there, 20 MiB for the five. No public source gives a P7's number.
    ctx(CtxType::SpTqmRing, 16, 64, TQM_MAX_ENTRIES, 32, 0, &[]),
    // One fast-path TQM ring per CoS queue.
    ctx(CtxType::FpTqmRing, 16, 64, TQM_MAX_ENTRIES, 32, (1 << QUEUES.len()) - 1, &[]),
    // MRAV: 128 bytes (qplib_res.h BNXT_QPLIB_MAX_MRW_CTX_ENTRY_SIZE).
    ctx(CtxType::Mrav, 128, 0, 262_144, 1, 0, &[0]),
    ctx(CtxType::Tim, 16, 0, 131_072, 1, 0, &[]),
];

const fn ctx(
    ty: CtxType,
    entry_size: u16,
    min_entries: u32,
    max_entries: u32,
    entry_multiple: u8,
    instance_bit_map: u32,
    splits: &'static [u32],
) -> CtxCaps {
    CtxCaps { ty, entry_size, min_entries, max_entries, entry_multiple, instance_bit_map, splits }
}

/// What the firmware offers for type `ty`, if it offers it.
pub fn ctx_caps(ty: u16) -> Option<&'static CtxCaps> {
    CONTEXT_TYPES.iter().find(|c| c.ty as u16 == ty)
}

/// The first type the firmware offers above `ty` (`next_valid_type`), 0xffff when none.
pub fn next_offered_after(ty: u16) -> u16 {
    CONTEXT_TYPES.iter().map(|c| c.ty as u16).find(|&t| t > ty).unwrap_or(bnxt_hsi::backing_store::TYPE_INVALID)
}

/// Whether the interface defines context type `ty` (`FUNC_BACKING_STORE_QCAPS_V2_REQ_TYPE_*`:
/// 0x0-0x6, 0xe, 0xf, 0x13-0x19, 0x1c-0x2b).
pub fn type_defined(ty: u16) -> bool {
    matches!(ty, 0x0..=0x6 | 0xe | 0xf | 0x13..=0x19 | 0x1c..=0x2b)
}

impl CtxCaps {
    /// The split entries QCAPS_V2 reports with `opts`, and how many count (`subtype_valid_cnt`):
    /// the QP type adds the fast-destroy QPs as its third when there are any, and the MRAV type
    /// states [`FW_LIMIT_AVS`] address vectors when the firmware states its limits.
    pub fn offered_splits(&self, opts: &FirmwareOptions) -> ([u32; 4], u8) {
        let mut splits = [0u32; 4];
        splits[..self.splits.len()].copy_from_slice(self.splits);
        let mut count = self.splits.len();
        match self.ty {
            CtxType::Qp if opts.fast_destroy_qps > 0 => {
                splits[2] = opts.fast_destroy_qps;
                count = 3;
            }
            CtxType::Mrav if opts.resource_limits => splits[0] = FW_LIMIT_AVS,
            _ => {}
        }
        (splits, count as u8)
    }

    /// The most entries QCAPS_V2 reports and CFG_V2 accepts with `opts`: the MRAV type's
    /// may be set ([`FirmwareOptions::mrav_entries`]).
    pub fn offered_max_entries(&self, opts: &FirmwareOptions) -> u32 {
        match self.ty {
            CtxType::Mrav if opts.mrav_entries > 0 => opts.mrav_entries,
            _ => self.max_entries,
        }
    }

    /// Instances of this type (bits of `instance_bit_map`, or just instance 0).
    pub fn instances(&self) -> impl Iterator<Item = u16> + '_ {
        let map = if self.instance_bit_map == 0 { 1 } else { self.instance_bit_map };
        (0..32u16).filter(move |i| map & (1 << i) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_walk_visits_every_offered_type_and_ends() {
        let mut ty = 0u16;
        let mut seen = Vec::new();
        while ty != 0xffff {
            let c = ctx_caps(ty).expect("walk lands on offered types");
            seen.push(c.ty);
            ty = next_offered_after(ty);
        }
        assert_eq!(seen, CONTEXT_TYPES.iter().map(|c| c.ty).collect::<Vec<_>>());
        assert!(type_defined(0x13) && ctx_caps(0x13).is_none());
        assert!(!type_defined(0x7));
    }

    #[test]
    fn bnxt_en_sizing_fits_inside_the_offered_bounds() {
        // bnxt.c bnxt_alloc_ctx_mem with RoCE enabled, V2 firmware.
        let qp = ctx_caps(0).unwrap();
        let (l2, qp1) = (qp.splits[0], qp.splits[1]);
        let extra = 65_536u32.min(qp.max_entries - l2 - qp1);
        assert_eq!(extra, 65_536);
        let cq = ctx_caps(2).unwrap();
        assert!(cq.splits[0] + 2 * extra <= cq.max_entries);
        let mrav = ctx_caps(0xe).unwrap();
        let num_mr = (mrav.max_entries / 2).min(256 * 1024);
        let num_ah = num_mr.min(128 * 1024);
        assert!(num_mr + num_ah <= mrav.max_entries);
        let tim = ctx_caps(0xf).unwrap();
        assert!(l2 + qp1 + extra <= tim.max_entries);
        let sp = ctx_caps(5).unwrap();
        let vnic = ctx_caps(3).unwrap();
        assert!(vnic.splits[0] + l2 + 2 * (extra + qp1) + sp.min_entries <= sp.max_entries);
        assert_eq!(ctx_caps(6).unwrap().instances().count(), QUEUES.len());
    }

    #[test]
    fn the_mrav_entries_setting_changes_only_the_mrav_type() {
        let set = FirmwareOptions { mrav_entries: 524_288, ..FirmwareOptions::default() };
        let mrav = ctx_caps(0xe).unwrap();
        assert_eq!(mrav.offered_max_entries(&FirmwareOptions::default()), 262_144);
        assert_eq!(mrav.offered_max_entries(&set), 524_288);
        for c in CONTEXT_TYPES.iter().filter(|c| c.ty != CtxType::Mrav) {
            assert_eq!(c.offered_max_entries(&set), c.max_entries, "{:?}", c.ty);
        }
        // bnxt_en's sizing then keeps the contract's 262,144 regions, with room for its AVs.
        let offered = mrav.offered_max_entries(&set);
        let num_mr = (offered / 2).min(256 * 1024);
        assert_eq!(num_mr, 262_144);
        assert!(num_mr + num_mr.min(128 * 1024) <= offered);
    }
}
