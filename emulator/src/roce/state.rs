//! Every object the RoCE firmware keeps for its function: whether INITIALIZE_FW ran, the GID
//! table, CQs, keys and QPs.

use std::collections::{BTreeMap, BTreeSet};

use super::cq::Cq;
use super::gid::GidTable;
use super::mr::KeyTable;
use super::qp::Qp;

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
#[derive(Debug, Default)]
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
    /// QPs whose transport has work to look at (new WQEs, a state change).
    pub dirty: BTreeSet<u32>,
}

impl RoceState {
    /// Drop every object (DEINITIALIZE_FW, function reset).
    pub fn clear(&mut self) {
        *self = RoceState::default();
    }

    /// Whether a GID entry carries `mac`.
    pub fn gids_have_mac(&self, mac: &[u8; 6]) -> bool {
        self.gids.has_mac(mac)
    }

    /// Whether a GID entry is the IPv4-mapped GID of `ip`.
    pub fn gids_have_ipv4(&self, ip: [u8; 4]) -> bool {
        self.gids.contains_gid(&bnxt_hsi::roce::gid::ipv4_mapped_gid(ip))
    }

    /// Whether any QP uses CQ `cq`, and which.
    pub fn qp_using_cq(&self, cq: u32) -> Option<u32> {
        self.qps.values().find(|q| q.scq == cq || q.rcq == cq).map(|q| q.id)
    }
}
