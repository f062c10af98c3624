//! RoCE objects made through the command channel: CQs, regions, QPs (RC, UD, GSI), their
//! connection, address handles.

use super::*;
use crate::common::Rig;
use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use bnxt_hsi::roce::layouts::*;
use bnxt_hsi::roce::msn::table_entries;
use zerocopy::{FromZeros, IntoBytes};

/// The send and receive rings of a QP the tests make: their sizes, and whether the SQ takes
/// variable-size WQEs (counted in 16-byte slots) or fixed ones.
#[derive(Debug, Clone, Copy)]
pub struct Rings {
    pub variable: bool,
    pub sq: u32,
    pub rq: u32,
}

impl Rings {
    /// Fixed-size WQEs, `sq` and `rq` entries.
    pub fn fixed(sq: u32, rq: u32) -> Rings {
        Rings { variable: false, sq, rq }
    }

    /// Variable-size WQEs, `sq` and `rq` entries.
    pub fn variable(sq: u32, rq: u32) -> Rings {
        Rings { variable: true, sq, rq }
    }
}

impl Func {
    /// CREATE_CQ of `size` entries notifying NQ `nq`; the CQ, armed for enabling (CQ_ARMENA).
    pub fn create_cq(&mut self, rig: &mut Rig, size: u32, nq: u16) -> TCq {
        let (table, base) = pbl(rig, self.nic, &mut self.pages, u64::from(size) * 32);
        let mut c = CmdqCreateCq::new_zeroed();
        c.cq_handle = (0x00c0_ffee_0000 + u64::from(size)).into();
        c.pg_size_lvl = CmdqCreateCq::LVL_LVL_1.into();
        c.cq_fco_cnq_id = u32::from(nq).into();
        c.dpi = 16.into();
        c.cq_size = size.into();
        c.pbl = table.into();
        let id = self.ok(rig, c).xid;
        let cq = TCq { id, base, size, cons: 0, epoch: false, toggle: 0 };
        ring(rig, self.nic, Doorbell::roce(DbType::CqArmEna, id, 0, false, 0));
        cq
    }

    /// A buffer of `len` bytes of this NIC's memory registered with ALLOC_MR (PD 1, `access` in
    /// REGISTER_MR order); (key, address).
    pub fn region(&mut self, rig: &mut Rig, len: u64, access: u8) -> (u32, u64) {
        let (table, base) = pbl(rig, self.nic, &mut self.pages, len);
        let mut r = CmdqRegisterMr::new_zeroed();
        r.flags = CmdqRegisterMr::FLAGS_ALLOC_MR.into();
        r.log2_pg_size_lvl = CmdqRegisterMr::LVL_LVL_1 | CmdqRegisterMr::LOG2_PG_SIZE_PG_4K;
        r.access = access;
        r.log2_pbl_pg_size = CmdqRegisterMr::LOG2_PBL_PG_SIZE_PG_4K.into();
        r.key = 1.into();
        r.pbl = table.into();
        r.va = base.into();
        r.mr_size = len.into();
        (self.ok(rig, r).xid, base)
    }

    /// A CREATE_QP request for an RC QP (PD 1) with fresh SQ/RQ memory; the request and the QP
    /// as the driver keeps it.
    pub fn qp_request(&mut self, rig: &Rig, rings: Rings, cq: &TCq) -> (CmdqCreateQp, TQp) {
        let Rings { variable, sq: sq_size, rq: rq_size } = rings;
        let (scq, rcq) = (cq, cq);
        let depth = if variable { sq_size } else { sq_size * 8 };
        let msn_entries = table_entries(sq_size, variable);
        let (sq_table, sq_base) =
            pbl(rig, self.nic, &mut self.pages, u64::from(depth) * 16 + u64::from(msn_entries) * 8);
        let rq_sge = 6u16;
        let stride = 32 + 16 * u64::from(rq_sge);
        let (rq_table, rq_base) = pbl(rig, self.nic, &mut self.pages, u64::from(rq_size) * stride);
        let orrq = self.pages.take(1);
        let irrq = self.pages.take(1);
        let mut c = CmdqCreateQp::new_zeroed();
        let handle = 0x9900_0000 + rq_base;
        c.qp_handle = handle.into();
        let mut flags = CmdqCreateQp::QP_FLAGS_RESERVED_LKEY_ENABLE | CmdqCreateQp::QP_FLAGS_FR_PMR_ENABLED;
        if variable {
            flags |= CmdqCreateQp::QP_FLAGS_VARIABLE_SIZED_WQE_ENABLED;
        }
        c.qp_flags = flags.into();
        c.type_ = CmdqCreateQp::TYPE_RC;
        c.sq_pg_size_sq_lvl = CmdqCreateQp::SQ_LVL_LVL_1;
        c.rq_pg_size_rq_lvl = CmdqCreateQp::RQ_LVL_LVL_1;
        c.dpi = 16.into();
        c.sq_size = sq_size.into();
        c.rq_size = rq_size.into();
        c.sq_fwo_sq_sge = 6.into();
        c.rq_fwo_rq_sge = rq_sge.into();
        c.scq_cid = scq.id.into();
        c.rcq_cid = rcq.id.into();
        c.pd_id = 1.into();
        c.sq_pbl = sq_table.into();
        c.rq_pbl = rq_table.into();
        c.irrq_addr = irrq.into();
        c.orrq_addr = orrq.into();
        let qp = TQp {
            id: 0,
            variable,
            sq_size,
            depth,
            sq_base,
            msn_entries,
            msn: 0,
            sq_prod: 0,
            sq_epoch: false,
            posted: 0,
            psn: 0,
            mtu: 4096,
            rq_base,
            rq_size,
            rq_stride: stride,
            rq_prod: 0,
            rq_epoch: false,
            scq: scq.id,
            rcq: rcq.id,
            handle,
        };
        (c, qp)
    }

    /// CREATE_QP; the QP.
    pub fn create_qp(&mut self, rig: &mut Rig, rings: Rings, cq: &TCq) -> TQp {
        let (c, mut qp) = self.qp_request(rig, rings, cq);
        qp.id = self.ok(rig, c).xid;
        qp
    }

    /// A CREATE_QP request for the GSI QP (QP1) as bnxt_re sends it on P5/P7 (qplib_fp.c
    /// `bnxt_qplib_create_qp` with type GSI): SQ memory for the ring alone (no MSN table), no
    /// ORRQ/IRRQ; the request and the QP as the driver keeps it.
    pub fn gsi_request(&mut self, rig: &Rig, rings: Rings, cq: &TCq) -> (CmdqCreateQp, TQp) {
        let (mut c, mut qp) = self.qp_request(rig, rings, cq);
        let (sq_table, sq_base) = pbl(rig, self.nic, &mut self.pages, u64::from(qp.depth) * 16);
        c.type_ = CmdqCreateQp::TYPE_GSI;
        c.sq_pbl = sq_table.into();
        c.orrq_addr = 0.into();
        c.irrq_addr = 0.into();
        qp.sq_base = sq_base;
        qp.msn_entries = 0;
        (c, qp)
    }

    /// MODIFY_QP of the GSI QP through RESET→INIT→RTR→RTS as ib_mad asks and bnxt_re sends it
    /// (mad.c `ib_mad_port_start`: PKEY_INDEX and QKEY, then the state alone, then SQ_PSN;
    /// qplib_fp.c `__filter_modify_flags` adds PATH_MTU and SGID_INDEX at INIT→RTR).
    pub fn gsi_to_rts(&mut self, rig: &mut Rig, qp: &TQp, qkey: u32, sq_psn: u32) {
        type M = CmdqModifyQp;
        let step = |state: u8, mask: u32| {
            let mut m = M::new_zeroed();
            m.qp_cid = qp.id.into();
            m.modify_mask = (M::MODIFY_MASK_STATE | mask).into();
            m.network_type_en_sqd_async_notify_new_state = state;
            m
        };
        let mut init = step(M::NEW_STATE_INIT, M::MODIFY_MASK_PKEY | M::MODIFY_MASK_QKEY);
        init.pkey = 0xffff.into();
        init.qkey = qkey.into();
        self.ok(rig, init);
        let mut rtr = step(M::NEW_STATE_RTR, M::MODIFY_MASK_PATH_MTU | M::MODIFY_MASK_SGID_INDEX);
        rtr.path_mtu_pingpong_push_enable = M::PATH_MTU_MTU_1024;
        self.ok(rig, rtr);
        let mut rts = step(M::NEW_STATE_RTS, M::MODIFY_MASK_SQ_PSN);
        rts.sq_psn = sq_psn.into();
        self.ok(rig, rts);
    }

    /// MODIFY_QP RESET→INIT→RTR→RTS towards `peer` (its GID, MAC and QP number), as bnxt_re sends
    /// the three transitions; `psn` is both directions' starting PSN.
    pub fn connect(&mut self, rig: &mut Rig, qp: &mut TQp, sgid_index: u16, peer: (&[u8; 16], [u8; 6], u32), psn: u32) {
        self.connect_rtr(rig, qp, sgid_index, peer, psn);
        self.connect_rts(rig, qp, psn);
    }

    /// MODIFY_QP RESET→INIT→RTR towards `peer` (its GID, MAC and QP number) expecting `rq_psn`
    /// first: a responder, as perftest's bandwidth servers leave their QPs.
    pub fn connect_rtr(
        &mut self,
        rig: &mut Rig,
        qp: &mut TQp,
        sgid_index: u16,
        peer: (&[u8; 16], [u8; 6], u32),
        rq_psn: u32,
    ) {
        type M = CmdqModifyQp;
        let mut m = M::new_zeroed();
        m.qp_cid = qp.id.into();
        m.modify_mask = (M::MODIFY_MASK_STATE | M::MODIFY_MASK_ACCESS | M::MODIFY_MASK_PKEY).into();
        m.network_type_en_sqd_async_notify_new_state = M::NEW_STATE_INIT;
        m.access = M::ACCESS_LOCAL_WRITE | M::ACCESS_REMOTE_WRITE | M::ACCESS_REMOTE_READ | M::ACCESS_REMOTE_ATOMIC;
        m.pkey = 0xffff.into();
        self.ok(rig, m);
        let mut m = M::new_zeroed();
        m.qp_cid = qp.id.into();
        m.modify_mask = (M::MODIFY_MASK_STATE
            | M::MODIFY_MASK_DGID
            | M::MODIFY_MASK_FLOW_LABEL
            | M::MODIFY_MASK_SGID_INDEX
            | M::MODIFY_MASK_HOP_LIMIT
            | M::MODIFY_MASK_DEST_MAC
            | M::MODIFY_MASK_PATH_MTU
            | M::MODIFY_MASK_DEST_QP_ID
            | M::MODIFY_MASK_RQ_PSN
            | M::MODIFY_MASK_MAX_DEST_RD_ATOMIC
            | M::MODIFY_MASK_MIN_RNR_TIMER)
            .into();
        m.network_type_en_sqd_async_notify_new_state = M::NEW_STATE_RTR | M::NETWORK_TYPE_ROCEV2_IPV4;
        m.dgid.as_mut_bytes().copy_from_slice(peer.0);
        m.sgid_index = sgid_index.into();
        m.hop_limit = 64;
        m.dest_mac.as_mut_bytes().copy_from_slice(&peer.1);
        m.path_mtu_pingpong_push_enable = M::PATH_MTU_MTU_4096;
        m.dest_qp_id = peer.2.into();
        m.rq_psn = rq_psn.into();
        m.max_dest_rd_atomic = 2 * 4 + 2;
        m.min_rnr_timer = 1;
        self.ok(rig, m);
        qp.mtu = 4096;
    }

    /// MODIFY_QP RTR→RTS sending from `sq_psn` on.
    pub fn connect_rts(&mut self, rig: &mut Rig, qp: &mut TQp, sq_psn: u32) {
        type M = CmdqModifyQp;
        let mut m = M::new_zeroed();
        m.qp_cid = qp.id.into();
        m.modify_mask = (M::MODIFY_MASK_STATE
            | M::MODIFY_MASK_TIMEOUT
            | M::MODIFY_MASK_RETRY_CNT
            | M::MODIFY_MASK_RNR_RETRY
            | M::MODIFY_MASK_SQ_PSN
            | M::MODIFY_MASK_MAX_RD_ATOMIC)
            .into();
        m.network_type_en_sqd_async_notify_new_state = M::NEW_STATE_RTS;
        m.timeout = 10;
        m.retry_cnt = 7;
        m.rnr_retry = 7;
        m.sq_psn = sq_psn.into();
        m.max_rd_atomic = 4 + 1;
        self.ok(rig, m);
        qp.psn = sq_psn;
    }
}

/// CREATE_AH of a RoCE v2 IPv4 address handle from GID index `sgid` to `dgid` at `dmac` in PD 1.
pub fn create_ah(sgid: u16, dgid: [u8; 16], dmac: [u8; 6]) -> CmdqCreateAh {
    let mut a = CmdqCreateAh::new_zeroed();
    a.ah_handle = 0x77.into();
    a.dgid.as_mut_bytes().copy_from_slice(&dgid);
    a.type_ = CmdqCreateAh::TYPE_V2IPV4;
    a.hop_limit = 64;
    a.sgid_index = sgid.into();
    // bnxt_re sets the VLAN id bits to all ones (no VLAN): qplib_sp.c `bnxt_qplib_create_ah`.
    a.dest_vlan_id_flow_label = CmdqCreateAh::DEST_VLAN_ID_MASK.into();
    a.pd_id = 1.into();
    a.dest_mac.as_mut_bytes().copy_from_slice(&dmac);
    a
}
