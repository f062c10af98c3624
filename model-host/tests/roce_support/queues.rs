//! Work on live QPs: send and receive WQEs written and their doorbells rung, CQs polled by their
//! toggle bit, and the CQE fields the tests read.

use super::*;
use crate::common::Rig;
use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use bnxt_hsi::roce::layouts::*;
use bnxt_hsi::roce::msn::MsnEntry;
use std::time::Duration;

/// A CQ the test polls.
#[derive(Debug, Clone, Copy)]
pub struct TCq {
    /// CQ id.
    pub id: u32,
    /// First CQE byte.
    pub base: u64,
    /// Entries.
    pub size: u32,
    /// Consumer.
    pub cons: u32,
    /// Consumer epoch.
    pub epoch: bool,
    /// Latest NQ toggle.
    pub toggle: u8,
}

/// A QP as the test driver keeps it.
#[derive(Debug, Clone)]
pub struct TQp {
    /// QP number.
    pub id: u32,
    /// Variable WQE mode.
    pub variable: bool,
    /// `sq_size` (WQEs or slots).
    pub sq_size: u32,
    /// SQ slots.
    pub depth: u32,
    /// First SQ byte.
    pub sq_base: u64,
    /// MSN entries.
    pub msn_entries: u32,
    /// Next MSN entry.
    pub msn: u32,
    /// SQ producer (WQE index in static mode, slot in variable mode) and epoch.
    pub sq_prod: u32,
    /// SQ epoch.
    pub sq_epoch: bool,
    /// WQEs posted.
    pub posted: u64,
    /// Next PSN.
    pub psn: u32,
    /// Path MTU in bytes.
    pub mtu: u32,
    /// First RQ byte.
    pub rq_base: u64,
    /// RQ WQEs.
    pub rq_size: u32,
    /// RQ WQE stride in bytes.
    pub rq_stride: u64,
    /// RQ producer.
    pub rq_prod: u32,
    /// RQ epoch.
    pub rq_epoch: bool,
    /// Send CQ.
    pub scq: u32,
    /// Receive CQ.
    pub rcq: u32,
    /// `qp_handle`.
    pub handle: u64,
}

impl Func {
    /// Write a send WQE (`wqe_type`, `flags`) with SGEs `(va, lkey, len)` (or inline `data`),
    /// its MSN entry, and ring the SQ doorbell. RDMA WQEs carry `remote` (va, rkey).
    #[allow(clippy::too_many_arguments)]
    pub fn post_send(
        &mut self,
        rig: &mut Rig,
        qp: &mut TQp,
        wqe_type: u8,
        flags: u8,
        sges: &[(u64, u32, u32)],
        inline: Option<&[u8]>,
        remote: Option<(u64, u32)>,
        imm: u32,
    ) {
        let data_slots = match inline {
            Some(d) => d.len().div_ceil(16),
            None => sges.len(),
        };
        let wqe_size = 2 + data_slots as u8;
        let length: u32 = match inline {
            Some(d) => d.len() as u32,
            None => sges.iter().map(|s| s.2).sum(),
        };
        let mut w = vec![0u8; usize::from(wqe_size) * 16];
        w[0] = wqe_type;
        w[1] = flags | if inline.is_some() { SqSendHdr::FLAGS_INLINE } else { 0 };
        w[2] = wqe_size;
        w[4..8].copy_from_slice(&imm.to_le_bytes());
        w[8..12].copy_from_slice(&length.to_le_bytes());
        if let Some((va, rkey)) = remote {
            w[16..24].copy_from_slice(&va.to_le_bytes());
            w[24..28].copy_from_slice(&rkey.to_le_bytes());
        }
        match inline {
            Some(d) => w[32..32 + d.len()].copy_from_slice(d),
            None => {
                for (i, &(va, lkey, len)) in sges.iter().enumerate() {
                    let at = 32 + 16 * i;
                    w[at..at + 8].copy_from_slice(&va.to_le_bytes());
                    w[at + 8..at + 12].copy_from_slice(&lkey.to_le_bytes());
                    w[at + 12..at + 16].copy_from_slice(&len.to_le_bytes());
                }
            }
        }
        self.post_wqe(rig, qp, &w, length.div_ceil(qp.mtu).max(1));
    }

    /// An atomic WQE (`sq_atomic_hdr` then one SGE of 8 bytes at `local`), as libbnxt_re writes
    /// it (its slot count, 3, in `wqe_size`) or, with `kernel`, as bnxt_re does (`wqe_size` 0);
    /// `cmp_swap` picks ATOMIC_CS (with `compare`) over ATOMIC_FA.
    #[allow(clippy::too_many_arguments)]
    pub fn post_atomic(
        &mut self,
        rig: &mut Rig,
        qp: &mut TQp,
        kernel: bool,
        cmp_swap: Option<u64>,
        swap_add: u64,
        remote: (u64, u32),
        local: (u64, u32),
    ) {
        let mut w = vec![0u8; 48];
        w[0] = if cmp_swap.is_some() { SqBase::WQE_TYPE_ATOMIC_CS } else { SqBase::WQE_TYPE_ATOMIC_FA };
        w[1] = SqSendHdr::FLAGS_SIGNAL_COMP;
        w[2] = if kernel { 0 } else { 3 };
        w[4..8].copy_from_slice(&remote.1.to_le_bytes());
        w[8..16].copy_from_slice(&remote.0.to_le_bytes());
        w[16..24].copy_from_slice(&swap_add.to_le_bytes());
        w[24..32].copy_from_slice(&cmp_swap.unwrap_or(0).to_le_bytes());
        w[32..40].copy_from_slice(&local.0.to_le_bytes());
        w[40..44].copy_from_slice(&local.1.to_le_bytes());
        w[44..48].copy_from_slice(&8u32.to_le_bytes());
        self.post_wqe(rig, qp, &w, 1);
    }

    /// Write WQE `w` (whole slots) at the SQ producer, its MSN entry (`packets` PSNs), and ring
    /// the SQ doorbell.
    pub fn post_wqe(&mut self, rig: &mut Rig, qp: &mut TQp, w: &[u8], packets: u32) {
        let wqe_size = (w.len() / 16) as u8;
        let start_slot = if qp.variable { qp.sq_prod } else { qp.sq_prod * 8 };
        for (k, slot) in w.chunks(16).enumerate() {
            let s = (start_slot + k as u32) % qp.depth;
            rig.poke(self.nic, qp.sq_base + u64::from(s) * 16, slot);
        }
        // RC QPs have an MSN table after the ring; the GSI QP has none.
        if qp.msn_entries > 0 {
            let entry =
                MsnEntry { start_psn: qp.psn, next_psn: (qp.psn + packets) & 0xff_ffff, start_slot: start_slot as u16 };
            let msn_at = qp.sq_base + u64::from(qp.depth) * 16 + u64::from(qp.msn) * 8;
            rig.poke(self.nic, msn_at, &entry.encode().to_le_bytes());
            qp.msn = (qp.msn + 1) % qp.msn_entries;
        }
        qp.psn = (qp.psn + packets) & 0xff_ffff;
        let step = if qp.variable { u32::from(wqe_size) } else { 1 };
        qp.sq_prod += step;
        if qp.sq_prod >= qp.sq_size {
            qp.sq_prod -= qp.sq_size;
            qp.sq_epoch = !qp.sq_epoch;
        }
        qp.posted += 1;
        ring(rig, self.nic, Doorbell::roce(DbType::Sq, qp.id, qp.sq_prod, qp.sq_epoch, 0));
    }

    /// Write a receive WQE with `wr_id` and SGEs, and ring the RQ doorbell.
    pub fn post_recv(&mut self, rig: &mut Rig, qp: &mut TQp, wr_id: u32, sges: &[(u64, u32, u32)]) {
        let sges: Vec<(u64, u32, u32)> = if sges.is_empty() { vec![(0, 0, 0)] } else { sges.to_vec() };
        let mut w = vec![0u8; 32 + 16 * sges.len()];
        w[0] = RqWqeHdr::WQE_TYPE_RCV;
        w[2] = (2 + sges.len()) as u8;
        w[8..12].copy_from_slice(&wr_id.to_le_bytes());
        for (i, &(va, lkey, len)) in sges.iter().enumerate() {
            let at = 32 + 16 * i;
            w[at..at + 8].copy_from_slice(&va.to_le_bytes());
            w[at + 8..at + 12].copy_from_slice(&lkey.to_le_bytes());
            w[at + 12..at + 16].copy_from_slice(&len.to_le_bytes());
        }
        rig.poke(self.nic, qp.rq_base + u64::from(qp.rq_prod) * qp.rq_stride, &w);
        qp.rq_prod += 1;
        if qp.rq_prod == qp.rq_size {
            qp.rq_prod = 0;
            qp.rq_epoch = !qp.rq_epoch;
        }
        ring(rig, self.nic, Doorbell::roce(DbType::Rq, qp.id, qp.rq_prod, qp.rq_epoch, 0));
    }
}

/// A UD SEND WQE (static mode) as libbnxt_re and bnxt_re write it for UD and GSI QPs: `sq_send`
/// with q_key, dst_qp and avid (`sge` is (va, lkey, len), `dst` (dst_qp, avid, q_key)); rings the
/// SQ doorbell.
pub fn post_ud(
    f: &mut Func,
    rig: &mut Rig,
    qp: &mut TQp,
    sge: (u64, u32, u32),
    dst: (u32, u32, u32),
    imm: Option<u32>,
) {
    let (dst_qp, avid, qkey) = dst;
    let mut w = [0u8; 48];
    w[0] = if imm.is_some() { SqBase::WQE_TYPE_SEND_W_IMMEAD } else { SqBase::WQE_TYPE_SEND };
    w[1] = SqSendHdr::FLAGS_SIGNAL_COMP;
    w[2] = 3;
    w[4..8].copy_from_slice(&imm.unwrap_or(0).to_le_bytes());
    w[8..12].copy_from_slice(&sge.2.to_le_bytes());
    w[12..16].copy_from_slice(&qkey.to_le_bytes());
    w[16..20].copy_from_slice(&dst_qp.to_le_bytes());
    w[20..24].copy_from_slice(&avid.to_le_bytes());
    w[32..40].copy_from_slice(&sge.0.to_le_bytes());
    w[40..44].copy_from_slice(&sge.1.to_le_bytes());
    w[44..48].copy_from_slice(&sge.2.to_le_bytes());
    rig.poke(f.nic, qp.sq_base + u64::from(qp.sq_prod * 8) * 16, &w);
    qp.sq_prod += 1;
    if qp.sq_prod >= qp.sq_size {
        qp.sq_prod -= qp.sq_size;
        qp.sq_epoch = !qp.sq_epoch;
    }
    ring(rig, f.nic, Doorbell::roce(DbType::Sq, qp.id, qp.sq_prod, qp.sq_epoch, 0));
}

impl TCq {
    /// The next CQE if the producer wrote it (toggle bit differs from the epoch).
    pub fn peek(&self, rig: &Rig, nic: usize) -> Option<[u8; 32]> {
        let b: [u8; 32] = rig.peek(nic, self.base + u64::from(self.cons) * 32, 32).try_into().unwrap();
        (((b[0x18] & 1) == 1) != self.epoch).then_some(b)
    }

    /// Take the next CQE, if any.
    pub fn poll(&mut self, rig: &Rig, nic: usize) -> Option<[u8; 32]> {
        let b = self.peek(rig, nic)?;
        self.cons += 1;
        if self.cons == self.size {
            self.cons = 0;
            self.epoch = !self.epoch;
        }
        Some(b)
    }

    /// Return consumed CQEs (CQ doorbell).
    pub fn release(&self, rig: &mut Rig, nic: usize) {
        ring(rig, nic, Doorbell::roce(DbType::Cq, self.id, self.cons, self.epoch, 0));
    }

    /// Wait for the next CQE (up to `limit` of virtual time) and release it.
    pub fn wait(&mut self, rig: &mut Rig, nic: usize, limit: Duration) -> [u8; 32] {
        let me = *self;
        run_until(rig, limit, |rig| me.peek(rig, nic).is_some());
        let b = self.poll(rig, nic).unwrap();
        self.release(rig, nic);
        b
    }
}

/// Status byte of a CQE.
pub fn cqe_status(c: &[u8; 32]) -> u8 {
    c[0x19]
}

/// Type of a CQE (bits 4:1 of byte 0x18).
pub fn cqe_type(c: &[u8; 32]) -> u8 {
    (c[0x18] >> 1) & 0xf
}

/// `sq_cons_idx` of a requester CQE.
pub fn sq_cons_idx(c: &[u8; 32]) -> u16 {
    u16::from_le_bytes([c[8], c[9]])
}

/// `length` of a responder CQE.
pub fn res_length(c: &[u8; 32]) -> u32 {
    u32::from_le_bytes(c[0..4].try_into().unwrap())
}

/// `srq_or_rq_wr_id` of a responder CQE.
pub fn res_wr_id(c: &[u8; 32]) -> u32 {
    u32::from_le_bytes(c[0x1c..0x20].try_into().unwrap()) & 0xf_ffff
}
