//! What a function holds in the NIC: the firmware objects its driver made and has not freed
//! (HWRM rings, statistics contexts, VNICs, RSS contexts, L2 filters; RoCE GIDs, CQs, QPs,
//! SRQs, memory keys, address handles). A driver that closed cleanly leaves none; the reservation
//! and the context memory it lent are not objects and are not counted.

use crate::firmware::state::FwState;
use crate::roce::state::RoceState;

/// Counts of the objects a function holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Held {
    /// HWRM rings (RING_ALLOC without RING_FREE).
    pub rings: usize,
    /// Statistics contexts.
    pub stat_ctxs: usize,
    /// VNICs.
    pub vnics: usize,
    /// RSS/COS/LB contexts.
    pub rss_ctxs: usize,
    /// L2 filters.
    pub l2_filters: usize,
    /// GID table entries.
    pub gids: usize,
    /// RoCE CQs.
    pub cqs: usize,
    /// RoCE QPs.
    pub qps: usize,
    /// SRQs.
    pub srqs: usize,
    /// Memory keys (regions and windows).
    pub keys: usize,
    /// Address handles.
    pub ahs: usize,
}

impl Held {
    /// What `fw` and `roce` hold.
    pub fn of(fw: &FwState, roce: &RoceState) -> Held {
        Held {
            rings: fw.rings.len(),
            stat_ctxs: fw.stat_ctxs.len(),
            vnics: fw.l2.vnics().len(),
            rss_ctxs: fw.l2.rss_ctxs.len(),
            l2_filters: fw.l2.filters().len(),
            gids: roce.gids.len(),
            cqs: roce.cqs.len(),
            qps: roce.qps.len(),
            srqs: roce.srqs.len(),
            keys: roce.keys.len(),
            ahs: roce.ahs.len(),
        }
    }

    /// Every object counted.
    pub fn total(&self) -> usize {
        self.named().iter().map(|(_, n)| n).sum()
    }

    /// The counts that are not zero, as text (`2 rings, 1 VNIC`), or `nothing`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> =
            self.named().iter().filter(|(_, n)| *n > 0).map(|(what, n)| format!("{n} {what}")).collect();
        if parts.is_empty() { "nothing".to_string() } else { parts.join(", ") }
    }

    fn named(&self) -> [(&'static str, usize); 11] {
        [
            ("rings", self.rings),
            ("statistics contexts", self.stat_ctxs),
            ("VNICs", self.vnics),
            ("RSS contexts", self.rss_ctxs),
            ("L2 filters", self.l2_filters),
            ("GIDs", self.gids),
            ("CQs", self.cqs),
            ("QPs", self.qps),
            ("SRQs", self.srqs),
            ("memory keys", self.keys),
            ("address handles", self.ahs),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_and_descriptions_name_what_is_held() {
        let h = Held { rings: 2, vnics: 1, ..Held::default() };
        assert_eq!((h.total(), h.describe()), (3, "2 rings, 1 VNICs".to_string()));
        assert_eq!(Held::default().describe(), "nothing");
    }
}
