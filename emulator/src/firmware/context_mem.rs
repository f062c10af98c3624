//! Context memory the driver gave the firmware (FUNC_BACKING_STORE_CFG_V2), and the limits that
//! follow from it.
//!
//! The firmware keeps, per (type, instance), the list of data pages the page tables led to; the
//! RoCE engine will keep its QP, CQ, SRQ and MR/AV contexts in them. The number of QPs and memory
//! regions the function can have is what the driver configured: QP entries, and MRAV entries
//! less the address vectors `split_entry_0` reserves (bnxt.c `bnxt_alloc_ctx_mem`;
//! hardware-map §3.3).

use std::collections::BTreeMap;

use bnxt_hsi::backing_store::CtxType;

/// One configured (type, instance).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextRegion {
    /// The context type.
    pub ty: CtxType,
    /// The instance (bit of `instance_bit_map`, 0 for single-instance types).
    pub instance: u16,
    /// Entries configured.
    pub num_entries: u32,
    /// Bytes per entry.
    pub entry_size: u16,
    /// Bytes per page.
    pub page_size: u64,
    /// Page-table levels used (0, 1 or 2).
    pub level: u8,
    /// Data pages, in order.
    pub pages: Vec<u64>,
    /// Split entries as configured (`subtype_valid_cnt` of them).
    pub splits: Vec<u32>,
}

impl ContextRegion {
    /// Bytes of context memory the region holds.
    pub fn bytes(&self) -> u64 {
        u64::from(self.num_entries) * u64::from(self.entry_size)
    }

    /// Bus address of entry `index`, if the region has it.
    pub fn entry_address(&self, index: u32) -> Option<u64> {
        if index >= self.num_entries {
            return None;
        }
        let off = u64::from(index) * u64::from(self.entry_size);
        let page = self.pages.get((off / self.page_size) as usize)?;
        Some(page + off % self.page_size)
    }
}

/// What the configured context memory allows the function (the RoCE engine enforces these:
/// RoCE QPs are the QP entries less the L2 and QP1 ones, RoCE CQs the CQ entries less the L2
/// ones, memory regions and windows the MRAV entries less the AVs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ContextLimits {
    /// QP contexts (QP entries), L2 and QP1 included.
    pub qps: u32,
    /// QP entries reserved for L2 QPs (QP split 0).
    pub l2_qps: u32,
    /// QP entries reserved for QP1 (QP split 1).
    pub qp1_qps: u32,
    /// SRQ contexts, L2 SRQs included.
    pub srqs: u32,
    /// SRQ entries reserved for L2 (SRQ split 0).
    pub l2_srqs: u32,
    /// CQ contexts, L2 completion rings included.
    pub cqs: u32,
    /// CQ entries reserved for L2 completion rings (CQ split 0).
    pub l2_cqs: u32,
    /// Memory regions and windows: MRAV entries less the AVs.
    pub regions: u32,
    /// Address vectors (MRAV split 0).
    pub avs: u32,
}

impl ContextLimits {
    /// CQ contexts left for RoCE CQs once the L2 completion rings' are set aside.
    pub fn roce_cqs(&self) -> u32 {
        self.cqs.saturating_sub(self.l2_cqs)
    }

    /// SRQ contexts left for RoCE SRQs once the L2 ones are set aside.
    pub fn roce_srqs(&self) -> u32 {
        self.srqs.saturating_sub(self.l2_srqs)
    }
}

/// Every region the driver configured, and whether it said it was done.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextMemory {
    regions: BTreeMap<(CtxType, u16), ContextRegion>,
    all_done: bool,
}

impl ContextMemory {
    /// Keep `region`, replacing what was configured for its type and instance before.
    pub fn configure(&mut self, region: ContextRegion) {
        self.regions.insert((region.ty, region.instance), region);
    }

    /// Record that the driver sent BS_CFG_ALL_DONE.
    pub fn set_all_done(&mut self) {
        self.all_done = true;
    }

    /// Whether the driver sent BS_CFG_ALL_DONE.
    pub fn all_done(&self) -> bool {
        self.all_done
    }

    /// The region for `ty`, `instance`.
    pub fn region(&self, ty: CtxType, instance: u16) -> Option<&ContextRegion> {
        self.regions.get(&(ty, instance))
    }

    /// Every configured region, by type then instance.
    pub fn regions(&self) -> impl Iterator<Item = &ContextRegion> {
        self.regions.values()
    }

    /// The limits that follow from what is configured (zero for what is not).
    pub fn limits(&self) -> ContextLimits {
        let entries = |ty| self.region(ty, 0).map_or(0, |r| r.num_entries);
        let split = |ty, i: usize| self.region(ty, 0).and_then(|r| r.splits.get(i).copied()).unwrap_or(0);
        let mrav = entries(CtxType::Mrav);
        let avs = split(CtxType::Mrav, 0).min(mrav);
        ContextLimits {
            qps: entries(CtxType::Qp),
            l2_qps: split(CtxType::Qp, 0),
            qp1_qps: split(CtxType::Qp, 1),
            srqs: entries(CtxType::Srq),
            l2_srqs: split(CtxType::Srq, 0),
            cqs: entries(CtxType::Cq),
            l2_cqs: split(CtxType::Cq, 0),
            regions: mrav - avs,
            avs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(ty: CtxType, num_entries: u32, splits: Vec<u32>) -> ContextRegion {
        ContextRegion {
            ty,
            instance: 0,
            num_entries,
            entry_size: 128,
            page_size: 4096,
            level: 1,
            pages: vec![0x1000, 0x5000],
            splits,
        }
    }

    #[test]
    fn limits_follow_the_configured_entries_and_splits() {
        let mut cm = ContextMemory::default();
        assert_eq!(cm.limits(), ContextLimits::default());
        cm.configure(region(CtxType::Qp, 64, vec![8, 2]));
        cm.configure(region(CtxType::Mrav, 60, vec![20]));
        let l = cm.limits();
        assert_eq!((l.qps, l.l2_qps, l.qp1_qps, l.regions, l.avs), (64, 8, 2, 40, 20));
        let r = cm.region(CtxType::Qp, 0).unwrap();
        assert_eq!(r.entry_address(33), Some(0x5000 + 33 * 128 - 4096));
        assert_eq!(r.entry_address(64), None);
        assert!(!cm.all_done());
        cm.set_all_done();
        assert!(cm.all_done());
    }
}
