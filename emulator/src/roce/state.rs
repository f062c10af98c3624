//! Every object the RoCE firmware keeps for its function: whether INITIALIZE_FW ran, the GID
//! table, CQs, keys, QPs, SRQs and the congestion-control parameters.

use std::collections::BTreeMap;

use super::ah::AhTable;
use super::cc::CcParams;
use super::cq::Cq;
use super::gid::GidTable;
use super::mr::KeyTable;
use super::qp::Qp;
use super::srq::Srq;

/// What INITIALIZE_FW set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FwInit {
    /// `flags` of the command.
    pub flags: u16,
    /// Statistics context the driver named.
    pub stat_ctx_id: u32,
    /// `log2_dbr_pg_size`: host page shift less 12.
    pub log2_dbr_pg_size: u16,
}

/// The RoCE objects of one function.
#[derive(Debug, Default, Clone)]
pub struct RoceState {
    /// Set by INITIALIZE_FW, cleared by DEINITIALIZE_FW.
    pub init: Option<FwInit>,
    /// Source GIDs.
    pub gids: GidTable,
    /// CQs by id.
    pub cqs: BTreeMap<u32, Cq>,
    /// Memory keys.
    pub keys: KeyTable,
    /// QPs by number.
    pub qps: BTreeMap<u32, Qp>,
    /// SRQs by id.
    pub srqs: BTreeMap<u32, Srq>,
    /// Address handles (CREATE_AH).
    pub ahs: AhTable,
    /// QPs whose transport has work to look at (new WQEs, a state change).
    pub dirty: QpSet,
    /// Congestion-control parameters (MODIFY_ROCE_CC, QUERY_ROCE_CC). They go with the rest on
    /// DEINITIALIZE_FW and a function reset (whether the firmware keeps them across a driver
    /// reload is not public).
    pub cc: CcParams,
    /// What commands since the engine last looked were accepted without a public source for
    /// what P7 firmware does with them (each a sentence naming the rule not found); the engine
    /// logs and counts them ([`RoceState::note_unsourced`]).
    pub unsourced: Vec<String>,
    /// Lower bounds of the smallest free QP number and CQ id: every one below is in use (the
    /// smallest free one is taken, and a NIC may hold 65,536 QPs and twice as many CQs, so the
    /// search starts here instead of at the first). Lowered when one is freed.
    pub free_from: FreeFrom,
    /// How many QPs complete to each CQ (DESTROY_CQ refuses a CQ a QP still uses).
    pub cq_users: BTreeMap<u32, u32>,
    /// RESIZE_CQs taken and not yet carried out (CQ id, new ring, entries): the engine writes
    /// each CUT_OFF CQE and moves the CQ to its new ring right after the command
    /// ([`super::cq`]).
    pub cq_resizes: Vec<(u32, super::pages::PageList, u32)>,
}

/// Where the searches for a free QP number and CQ id start ([`RoceState::free_from`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FreeFrom {
    /// Every QP number from the first up to this one is in use.
    pub qp: u32,
    /// Every CQ id from the first up to this one is in use.
    pub cq: u32,
}

/// A set of QP numbers, taken smallest first: the QPs with work to look at. It holds one or
/// two at a time (the QP a doorbell or a frame named), so a sorted list beats a tree.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct QpSet {
    sorted: Vec<u32>,
}

impl QpSet {
    /// Add `qpn`; false if it was there already.
    pub fn insert(&mut self, qpn: u32) -> bool {
        match self.sorted.binary_search(&qpn) {
            Ok(_) => false,
            Err(at) => {
                self.sorted.insert(at, qpn);
                true
            }
        }
    }

    /// Take the smallest QP number.
    pub fn pop_first(&mut self) -> Option<u32> {
        (!self.sorted.is_empty()).then(|| self.sorted.remove(0))
    }

    /// Remove `qpn`; false if it was not there.
    pub fn remove(&mut self, qpn: &u32) -> bool {
        match self.sorted.binary_search(qpn) {
            Ok(at) => {
                self.sorted.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }
}

impl RoceState {
    /// Drop every object (DEINITIALIZE_FW, function reset).
    pub fn clear(&mut self) {
        *self = RoceState::default();
    }

    /// Note that a command was accepted although no public source says what P7 firmware does
    /// with it (lenient but loud).
    pub fn note_unsourced(&mut self, what: String) {
        self.unsourced.push(what);
    }

    /// Whether any QP uses CQ `cq`, and which.
    pub fn qp_using_cq(&self, cq: u32) -> Option<u32> {
        if self.cq_users.get(&cq).is_none_or(|n| *n == 0) {
            return None;
        }
        self.qps.values().find(|q| q.scq == cq || q.rcq == cq).map(|q| q.id)
    }

    /// A QP that completes to `scq` and `rcq` was made (`true`) or destroyed.
    pub fn count_cq_users(&mut self, scq: u32, rcq: u32, made: bool) {
        for cq in [scq, rcq] {
            let n = self.cq_users.entry(cq).or_default();
            *n = if made { *n + 1 } else { n.saturating_sub(1) };
            if *n == 0 {
                self.cq_users.remove(&cq);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qp_numbers_come_out_smallest_first_once_each() {
        let mut set = QpSet::default();
        for q in [7, 3, 9, 3, 1, 7] {
            set.insert(q);
        }
        assert!(!set.insert(9) && set.remove(&9) && !set.remove(&9));
        let mut out = Vec::new();
        while let Some(q) = set.pop_first() {
            out.push(q);
        }
        assert_eq!(out, [1, 3, 7]);
        assert!(set.is_empty());
    }
}
