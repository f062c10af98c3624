//! MODIFY_QP for each step of an RC queue pair's life, with exactly the attribute masks bnxt_re
//! sends for the attributes a verbs consumer gives at that step (ib_verbs.c `bnxt_re_modify_qp`,
//! qplib_fp.c `bnxt_qplib_modify_qp`, `__filter_modify_flags`, `bnxt_set_mandatory_attributes`;
//! hardware-map §4.5):
//!
//! - RESET→INIT: STATE, PKEY (index 0: 0xffff) and ACCESS (LOCAL_WRITE always added).
//! - INIT→RTR: STATE, the address vector (DGID, FLOW_LABEL, SGID_INDEX, HOP_LIMIT, DEST_MAC,
//!   with TRAFFIC_CLASS and VLAN_ID as `bnxt_re_update_ah_dscp_sl` adds them on a port without
//!   multiple lossless queues), PATH_MTU, DEST_QP_ID, RQ_PSN, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER;
//!   RoCE v2 over IPv4 as the network type.
//! - RTR→RTS: STATE, TIMEOUT, RETRY_CNT, RNR_RETRY, SQ_PSN, MAX_RD_ATOMIC.
//!
//! When QUERY_FUNC offers OPTIMIZE_MODIFY_QP, INIT→RTR also carries ACCESS and PKEY, RTR→RTS
//! ACCESS (and MIN_RNR_TIMER if MIN_RNR_RTR_RTS_OPT is offered), and both the QP type.
//!
//! The values this driver chooses (see [`Path`]) are documented on its constants.

use bnxt_hsi::roce::layouts::CmdqModifyQp as M;
use bnxt_hsi::roce::qp::{Access, PATH_MTU_SHIFT, QpState, mtu_code};
use zerocopy::{FromZeros, IntoBytes};

use super::endpoint::Endpoint;
use crate::roce::caps::DevCaps;

/// The path MTU: 4096 bytes, the fabric's (the contract's "The fabric").
pub(crate) const PATH_MTU: u32 = 4096;
/// Local ACK timeout, IB encoding 4.096 µs × 2^14 ≈ 67 ms (the value ibv_rc_pingpong uses).
pub(crate) const TIMEOUT: u8 = 14;
/// Retransmissions before `retry-exceeded`: 7, the most IB allows.
pub(crate) const RETRY_CNT: u8 = 7;
/// RNR retries before `rnr-retry-exceeded`: 6 (7 would mean forever, and a receive that never
/// comes could then never be reported).
pub(crate) const RNR_RETRY: u8 = 6;
/// The RNR NAK timer this queue pair asks of its requester peer, IB encoding 14 = 1.28 ms: with
/// six retries a receive may come about 8 ms after its send.
pub(crate) const MIN_RNR_TIMER: u8 = 14;
/// Hop limit of the GRH, the IPv4 TTL on RoCE v2: 64, Linux's default TTL.
pub(crate) const HOP_LIMIT: u8 = 64;
/// P_Key index 0 is the default P_Key (`IB_DEFAULT_PKEY_FULL`).
const PKEY: u16 = 0xffff;
/// VLAN field bnxt_re sends with the address vector for a GID without a VLAN: the GID table's
/// 0xFFFF masked to the 12-bit id (all ones), priority 0 (qplib_fp.c `bnxt_qplib_modify_qp`, qplib_sp.c
/// `bnxt_qplib_add_sgid`).
const NO_VLAN: u16 = M::VLAN_ID_MASK;

/// Rights every queue pair grants its peer: remote write and read, and local write, which RC
/// receives need.
pub(crate) const QP_ACCESS: Access =
    Access { local_write: true, remote_write: true, remote_read: true, remote_atomic: false };

/// What every MODIFY_QP of a queue pair carries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fixed {
    /// The queue pair.
    pub qpn: u32,
    /// Slots of its SQ and RQ (`hwq.depth`).
    pub sq_slots: u32,
    /// Slots of its RQ.
    pub rq_slots: u32,
    /// SGEs of a send and of a receive (`max_sge` of each queue).
    pub sq_sge: u16,
    /// SGEs of a receive.
    pub rq_sge: u16,
    /// ORRQ entries (outstanding reads it starts + 1).
    pub orrq_slots: u8,
    /// IRRQ entries (2 × outstanding reads it answers + 2).
    pub irrq_slots: u8,
}

/// Where the peer is, for INIT→RTR.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Path {
    /// The peer's endpoint.
    pub peer: Endpoint,
    /// This NIC's GID index (ADD_GID's answer).
    pub sgid_index: u16,
}

fn base(f: &Fixed, state: QpState, mask: u32) -> M {
    let mut m = M::new_zeroed();
    m.modify_mask = mask.into();
    m.qp_cid = f.qpn.into();
    m.network_type_en_sqd_async_notify_new_state = state.field() & M::NEW_STATE_MASK;
    // Always filled, whatever the mask (bnxt_qplib_modify_qp).
    m.sq_size = f.sq_slots.into();
    m.rq_size = f.rq_slots.into();
    m.sq_sge = f.sq_sge.into();
    m.rq_sge = f.rq_sge.into();
    m
}

/// RESET→INIT.
pub(crate) fn to_init(f: &Fixed) -> M {
    let mut m = base(f, QpState::Init, M::MODIFY_MASK_STATE | M::MODIFY_MASK_PKEY | M::MODIFY_MASK_ACCESS);
    m.access = QP_ACCESS.modify_qp();
    m.pkey = PKEY.into();
    m
}

/// INIT→RTR towards `path`.
pub(crate) fn to_rtr(f: &Fixed, path: &Path, caps: &DevCaps) -> M {
    let mut mask = M::MODIFY_MASK_STATE
        | M::MODIFY_MASK_DGID
        | M::MODIFY_MASK_FLOW_LABEL
        | M::MODIFY_MASK_SGID_INDEX
        | M::MODIFY_MASK_HOP_LIMIT
        | M::MODIFY_MASK_TRAFFIC_CLASS
        | M::MODIFY_MASK_DEST_MAC
        | M::MODIFY_MASK_VLAN_ID
        | M::MODIFY_MASK_PATH_MTU
        | M::MODIFY_MASK_DEST_QP_ID
        | M::MODIFY_MASK_RQ_PSN
        | M::MODIFY_MASK_MAX_DEST_RD_ATOMIC
        | M::MODIFY_MASK_MIN_RNR_TIMER;
    if caps.optimize_modify_qp() {
        mask |= M::MODIFY_MASK_ACCESS | M::MODIFY_MASK_PKEY;
    }
    let mut m = base(f, QpState::Rtr, mask);
    m.network_type_en_sqd_async_notify_new_state |= M::NETWORK_TYPE_ROCEV2_IPV4;
    if caps.optimize_modify_qp() {
        m.qp_type = M::QP_TYPE_RC;
        m.access = QP_ACCESS.modify_qp();
        m.pkey = PKEY.into();
    }
    m.dgid.as_mut_bytes().copy_from_slice(&path.peer.gid());
    m.sgid_index = path.sgid_index.into();
    m.hop_limit = HOP_LIMIT;
    m.dest_mac.as_mut_bytes().copy_from_slice(&path.peer.mac);
    m.vlan_pcp_vlan_dei_vlan_id = NO_VLAN.into();
    m.path_mtu_pingpong_push_enable = mtu_code(PATH_MTU).expect("4096 is a path MTU") << PATH_MTU_SHIFT;
    m.dest_qp_id = path.peer.qpn.into();
    m.rq_psn = path.peer.psn.into();
    m.max_dest_rd_atomic = f.irrq_slots;
    m.min_rnr_timer = MIN_RNR_TIMER;
    m
}

/// RTR→RTS, the first packet carrying `sq_psn`.
pub(crate) fn to_rts(f: &Fixed, sq_psn: u32, caps: &DevCaps) -> M {
    let mut mask = M::MODIFY_MASK_STATE
        | M::MODIFY_MASK_TIMEOUT
        | M::MODIFY_MASK_RETRY_CNT
        | M::MODIFY_MASK_RNR_RETRY
        | M::MODIFY_MASK_SQ_PSN
        | M::MODIFY_MASK_MAX_RD_ATOMIC;
    if caps.optimize_modify_qp() {
        mask |= M::MODIFY_MASK_ACCESS;
        if caps.min_rnr_in_rtr_rts() {
            mask |= M::MODIFY_MASK_MIN_RNR_TIMER;
        }
    }
    let mut m = base(f, QpState::Rts, mask);
    m.network_type_en_sqd_async_notify_new_state |= M::NETWORK_TYPE_ROCEV2_IPV4;
    if caps.optimize_modify_qp() {
        m.qp_type = M::QP_TYPE_RC;
        m.access = QP_ACCESS.modify_qp();
        m.min_rnr_timer = MIN_RNR_TIMER;
    }
    m.timeout = TIMEOUT;
    m.retry_cnt = RETRY_CNT;
    m.rnr_retry = RNR_RETRY;
    m.sq_psn = sq_psn.into();
    m.max_rd_atomic = f.orrq_slots;
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use bnxt_hsi::roce::layouts::CreqQueryFuncRespSb as Sb;
    use std::net::Ipv4Addr;

    const F: Fixed =
        Fixed { qpn: 0x105, sq_slots: 32_768, rq_slots: 32_768, sq_sge: 1, rq_sge: 1, orrq_slots: 17, irrq_slots: 34 };

    fn caps(ext2: u16) -> DevCaps {
        let mut sb = Sb::new_zeroed();
        sb.dev_cap_ext_flags_2 = ext2.into();
        DevCaps::from_sb(&sb)
    }

    fn path() -> Path {
        let peer =
            Endpoint { mac: [0, 0x0a, 0xf7, 1, 2, 3], ipv4: Ipv4Addr::new(10, 1, 2, 3), qpn: 0x222, psn: 0xabcdef };
        Path { peer, sgid_index: 3 }
    }

    #[test]
    fn reset_to_init_sets_state_pkey_and_access() {
        let m = to_init(&F);
        assert_eq!(m.modify_mask.get(), 0x1 | 0x8 | 0x4);
        assert_eq!((m.qp_cid.get(), m.network_type_en_sqd_async_notify_new_state), (0x105, 1));
        assert_eq!((m.access, m.pkey.get()), (0x1 | 0x2 | 0x4, 0xffff));
        assert_eq!((m.sq_size.get(), m.rq_size.get(), m.sq_sge.get(), m.rq_sge.get()), (32_768, 32_768, 1, 1));
        assert_eq!(m.qp_type, 0, "no QP type outside the optimized transitions");
    }

    #[test]
    fn init_to_rtr_carries_the_path_as_bnxt_re_sends_it() {
        let m = to_rtr(&F, &path(), &caps(0));
        let want = 0x1
            | 0x20
            | 0x40
            | 0x80
            | 0x100
            | 0x200
            | 0x400
            | 0x1000
            | 0x4000000
            | 0x10000
            | 0x100000
            | 0x40000
            | 0x10000000;
        assert_eq!(m.modify_mask.get(), want);
        assert_eq!(m.network_type_en_sqd_async_notify_new_state, 0x80 | 2, "RoCE v2 IPv4, RTR");
        assert_eq!(m.dgid.as_bytes(), &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3], "wire order");
        assert_eq!(m.dest_mac.as_bytes(), &[0, 0x0a, 0xf7, 1, 2, 3], "wire order");
        assert_eq!((m.sgid_index.get(), m.hop_limit, m.path_mtu_pingpong_push_enable), (3, 64, 0x40));
        assert_eq!((m.dest_qp_id.get(), m.rq_psn.get()), (0x222, 0xabcdef));
        assert_eq!((m.max_dest_rd_atomic, m.min_rnr_timer, m.vlan_pcp_vlan_dei_vlan_id.get()), (34, 14, 0xfff));
        assert_eq!((m.access, m.qp_type), (0, 0));
    }

    #[test]
    fn rtr_to_rts_carries_the_send_side() {
        let m = to_rts(&F, 0x123456, &caps(0));
        assert_eq!(m.modify_mask.get(), 0x1 | 0x2000 | 0x4000 | 0x8000 | 0x80000 | 0x20000);
        assert_eq!(m.network_type_en_sqd_async_notify_new_state, 0x80 | 3);
        assert_eq!((m.timeout, m.retry_cnt, m.rnr_retry, m.sq_psn.get(), m.max_rd_atomic), (14, 7, 6, 0x123456, 17));
        assert_eq!(m.dest_qp_id.get(), 0, "the path is not sent again");
    }

    #[test]
    fn optimized_transitions_add_the_mandatory_attributes_and_the_type() {
        let c = caps(Sb::OPTIMIZE_MODIFY_QP_SUPPORTED | Sb::MIN_RNR_RTR_RTS_OPT_SUPPORTED);
        let rtr = to_rtr(&F, &path(), &c);
        assert_eq!(rtr.modify_mask.get() & (0x4 | 0x8), 0x4 | 0x8);
        assert_eq!((rtr.qp_type, rtr.access, rtr.pkey.get()), (2, 0x7, 0xffff));
        let rts = to_rts(&F, 1, &c);
        assert_eq!(rts.modify_mask.get() & (0x4 | 0x40000), 0x4 | 0x40000);
        assert_eq!((rts.qp_type, rts.access, rts.min_rnr_timer), (2, 0x7, 14));
        let rts = to_rts(&F, 1, &caps(Sb::OPTIMIZE_MODIFY_QP_SUPPORTED));
        assert_eq!(rts.modify_mask.get() & 0x40000, 0);
    }
}
