//! The RoCE data path against a test driver on two NICs joined by the model's switch: WQEs in
//! static and variable mode, doorbells, CQEs with their toggle across wraps, notifications of
//! armed CQs, bad doorbells ignored and counted, DMA outside what was mapped and registered
//! refused, bad frames dropped and counted, the pcap tap; random frames with good ICRCs at a
//! live QP, and random WQEs and doorbells, after which new QPs still work.

mod common;
mod roce_support;

use std::sync::Arc;
use std::time::Duration;

use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use bnxt_hsi::roce::layouts::*;
use bnxt_model::events::EventKind;
use bnxt_model::faults::{FaultPlan, WireFaultKind, WirePlan, WireRule};
use bnxt_model::host_memory::HeapBacking;
use common::Rig;
use roce_support::*;
use zerocopy::FromZeros;

const SEND: u8 = SqBase::WQE_TYPE_SEND;
const SIGNAL: u8 = SqSendHdr::FLAGS_SIGNAL_COMP;
const LW: u8 = CmdqRegisterMr::ACCESS_LOCAL_WRITE;
const MS: Duration = Duration::from_millis(1);

/// Two NICs up, each with an NQ (vector 1), a CQ of `cq_size`, a 256-KiB region, and one QP,
/// the QPs connected.
#[derive(Clone)]
struct Pair {
    rig: Rig,
    f: [Func; 2],
    nq: [NqRing; 2],
    cq: [TCq; 2],
    qp: [TQp; 2],
    mr: [(u32, u64); 2],
}

fn pair_with(faults: FaultPlan, variable: bool, cq_size: u32) -> Pair {
    let mut rig = Rig::with(2, 11, faults);
    let mut f = [Func::bring_up(&mut rig, 0, 1024, 256), Func::bring_up(&mut rig, 1, 1024, 256)];
    let mut nq = Vec::new();
    let mut cq = Vec::new();
    let mut qp = Vec::new();
    let mut mr = Vec::new();
    let mut sgid = Vec::new();
    for (i, fi) in f.iter_mut().enumerate() {
        fi.initialize(&mut rig);
        sgid.push(fi.add_own_gid(&mut rig));
        let n = nq_ring(&mut rig, i, &mut fi.pages, 256, 1);
        let c = fi.create_cq(&mut rig, cq_size, n.id);
        let sq = if variable { 1024 } else { 64 };
        qp.push(fi.create_qp(&mut rig, Rings { variable, sq, rq: 64 }, &c));
        let access = LW | CmdqRegisterMr::ACCESS_REMOTE_WRITE | CmdqRegisterMr::ACCESS_REMOTE_READ;
        mr.push(fi.region(&mut rig, 256 << 10, access));
        nq.push(n);
        cq.push(c);
    }
    let peers: Vec<([u8; 16], [u8; 6], u32)> = (0..2).map(|i| (f[i].gid(), f[i].mac, qp[i].id)).collect();
    for i in 0..2 {
        let p = &peers[1 - i];
        f[i].connect(&mut rig, &mut qp[i], sgid[i], (&p.0, p.1, p.2), 0x100);
    }
    Pair { rig, f, nq: [nq[0], nq[1]], cq: [cq[0], cq[1]], qp: [qp[0].clone(), qp[1].clone()], mr: [mr[0], mr[1]] }
}

fn pair(variable: bool) -> Pair {
    pair_with(FaultPlan::default(), variable, 64)
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

impl Pair {
    /// NIC 1 posts `n` receives of 64 bytes (wr_ids from `wr_id`), NIC 0 sends `n` signaled
    /// 64-byte SENDs; then 10 ms pass.
    fn sends(&mut self, n: u32, wr_id: u32) {
        let (k0, b0) = self.mr[0];
        let (k1, b1) = self.mr[1];
        for k in 0..n {
            self.f[1].post_recv(&mut self.rig, &mut self.qp[1], wr_id + k, &[(b1, k1, 64)]);
            self.f[0].post_send(&mut self.rig, &mut self.qp[0], SEND, SIGNAL, &[(b0, k0, 64)], None, None, 0);
        }
        self.rig.world.advance(10 * MS);
    }

    /// NIC 1 posts a receive of `len` at `at` of its region; NIC 0 sends `len` bytes from `from`
    /// of its region; both completions, checked.
    fn send_one(&mut self, from: u64, at: u64, len: u32, wr_id: u32) -> ([u8; 32], [u8; 32]) {
        let (k1, b1) = self.mr[1];
        let (k0, b0) = self.mr[0];
        self.f[1].post_recv(&mut self.rig, &mut self.qp[1], wr_id, &[(b1 + at, k1, len)]);
        self.f[0].post_send(&mut self.rig, &mut self.qp[0], SEND, SIGNAL, &[(b0 + from, k0, len)], None, None, 0);
        let s = self.cq[0].wait(&mut self.rig, 0, 100 * MS);
        let r = self.cq[1].wait(&mut self.rig, 1, 100 * MS);
        (s, r)
    }
}

#[test]
fn sends_land_in_static_and_variable_wqe_modes_with_their_cqes() {
    for variable in [false, true] {
        let mut p = pair(variable);
        let data = pattern(10_000, 3);
        p.rig.poke(0, p.mr[0].1, &data);
        let (s, r) = p.send_one(0, 100, 10_000, 7);
        assert_eq!((cqe_type(&s), cqe_status(&s)), (0, 0), "cq_req OK");
        assert_eq!(u64::from_le_bytes(s[0..8].try_into().unwrap()), p.qp[0].handle, "qp_handle");
        assert_eq!(sq_cons_idx(&s), 1, "the WQE after the completed one");
        assert_eq!((cqe_type(&r), cqe_status(&r), res_length(&r), res_wr_id(&r)), (1, 0, 10_000, 7));
        assert_eq!(u64::from_le_bytes(r[8..16].try_into().unwrap()), p.qp[1].handle);
        assert_eq!(p.rig.peek(1, p.mr[1].1 + 100, 10_000), data, "variable={variable}");
        let st = p.rig.world.nic_state(0);
        assert_eq!((st.roce.msn_mismatches, st.roce.bad_wqes, st.roce.bad_doorbells_total()), (0, 0, 0));
        assert!(st.roce.frames_sent >= 3, "10000 bytes at MTU 4096");
    }
}

#[test]
fn gathers_inline_data_writes_and_reads_move_the_right_bytes() {
    let mut p = pair(true);
    let (k0, b0) = p.mr[0];
    let (k1, b1) = p.mr[1];
    p.rig.poke(0, b0, &pattern(3000, 1));
    // Three SGEs gathered into one receive.
    p.f[1].post_recv(&mut p.rig, &mut p.qp[1], 1, &[(b1, k1, 4096)]);
    let sges = [(b0, k0, 1000), (b0 + 2000, k0, 1000), (b0 + 1000, k0, 1000)];
    p.f[0].post_send(&mut p.rig, &mut p.qp[0], SEND, SIGNAL, &sges, None, None, 0);
    p.cq[0].wait(&mut p.rig, 0, 100 * MS);
    assert_eq!(res_length(&p.cq[1].wait(&mut p.rig, 1, 100 * MS)), 3000);
    let src = pattern(3000, 1);
    let want: Vec<u8> = [&src[..1000], &src[2000..], &src[1000..2000]].concat();
    assert_eq!(p.rig.peek(1, b1, 3000), want);
    // Inline data: the bytes travel in the WQE.
    p.f[1].post_recv(&mut p.rig, &mut p.qp[1], 2, &[(b1 + 8192, k1, 100)]);
    let text = b"inline payload, carried in the WQE itself and no region at all";
    p.f[0].post_send(&mut p.rig, &mut p.qp[0], SEND, SIGNAL, &[], Some(text), None, 0);
    p.cq[0].wait(&mut p.rig, 0, 100 * MS);
    let r = p.cq[1].wait(&mut p.rig, 1, 100 * MS);
    assert_eq!((res_length(&r), res_wr_id(&r)), (text.len() as u32, 2));
    assert_eq!(p.rig.peek(1, b1 + 8192, text.len()), text);
    // RDMA WRITE with immediate: the bytes go where the RETH says, a receive completes with IMM.
    p.f[1].post_recv(&mut p.rig, &mut p.qp[1], 3, &[]);
    let w = SqBase::WQE_TYPE_WRITE_W_IMMEAD;
    p.f[0].post_send(&mut p.rig, &mut p.qp[0], w, SIGNAL, &[(b0, k0, 5000)], None, Some((b1 + 65536, k1)), 0xfeed);
    assert_eq!(cqe_status(&p.cq[0].wait(&mut p.rig, 0, 100 * MS)), 0);
    let r = p.cq[1].wait(&mut p.rig, 1, 100 * MS);
    assert_eq!(u32::from_le_bytes(r[4..8].try_into().unwrap()), 0xfeed);
    let flags = u16::from_le_bytes([r[0x1a], r[0x1b]]);
    assert_eq!(flags & (CqResRc::FLAGS_IMM | CqResRc::FLAGS_RDMA), CqResRc::FLAGS_IMM | CqResRc::FLAGS_RDMA);
    assert_eq!(p.rig.peek(1, b1 + 65536, 3000), src, "written bytes");
    // RDMA READ back into NIC 0's region.
    let rd = SqBase::WQE_TYPE_READ_WQE;
    p.f[0].post_send(&mut p.rig, &mut p.qp[0], rd, SIGNAL, &[(b0 + 100_000, k0, 3000)], None, Some((b1, k1)), 0);
    assert_eq!(cqe_status(&p.cq[0].wait(&mut p.rig, 0, 100 * MS)), 0);
    assert_eq!(p.rig.peek(0, b0 + 100_000, 3000), want);
}

#[test]
fn cqe_toggles_flip_at_every_wrap_and_unsignaled_wqes_are_covered_by_the_next_cqe() {
    let mut p = pair_with(FaultPlan::default(), false, 8);
    let (k0, b0) = p.mr[0];
    let (k1, b1) = p.mr[1];
    for k in 0..20u32 {
        p.f[1].post_recv(&mut p.rig, &mut p.qp[1], k, &[(b1, k1, 64)]);
        p.f[0].post_send(&mut p.rig, &mut p.qp[0], SEND, SIGNAL, &[(b0, k0, 64)], None, None, 0);
        let expected_toggle = u8::from((k / 8) % 2 == 0);
        let s = p.cq[0].wait(&mut p.rig, 0, 100 * MS);
        assert_eq!(s[0x18] & 1, expected_toggle, "send CQE {k}");
        assert_eq!(u32::from(sq_cons_idx(&s)), (k + 1) % 64);
        let r = p.cq[1].wait(&mut p.rig, 1, 100 * MS);
        assert_eq!((r[0x18] & 1, res_wr_id(&r)), (expected_toggle, k), "receive CQE {k}");
    }
    // Three unsignaled sends then a signaled one: one CQE, naming the WQE after the fourth.
    for _ in 0..4 {
        p.f[1].post_recv(&mut p.rig, &mut p.qp[1], 99, &[(b1, k1, 64)]);
    }
    for k in 0..4 {
        let flags = if k == 3 { SIGNAL } else { 0 };
        p.f[0].post_send(&mut p.rig, &mut p.qp[0], SEND, flags, &[(b0, k0, 64)], None, None, 0);
    }
    let s = p.cq[0].wait(&mut p.rig, 0, 100 * MS);
    assert_eq!(sq_cons_idx(&s), 24);
    p.rig.world.advance(MS);
    assert!(p.cq[0].peek(&p.rig, 0).is_none(), "no CQE for the unsignaled WQEs");
}

#[test]
fn an_overflowing_cq_reports_a_cq_error_and_keeps_the_model_running() {
    let mut p = pair_with(FaultPlan::default(), false, 4);
    p.sends(6, 0);
    let st = p.rig.world.nic_state(0);
    assert_eq!(st.roce.cq_overflows, 2, "4 CQEs fit, 2 are lost");
    let e = p.f[0].next_creq(&mut p.rig);
    assert_eq!((e.event, e.bytes[2], e.xid), (0xc1, 2, p.cq[0].id), "CQ error: REQ_CQ_OVERFLOW");
    assert!(p.rig.world.take_events().iter().any(|e| matches!(e.kind, EventKind::CqOverflow { .. })));
}

/// RESIZE_CQ as bnxt_re sends it (qplib_fp.c `bnxt_qplib_resize_cq`) of CQ `cq` to a ring of
/// `size` entries behind page table `table`.
fn resize_req(cq: u32, size: u32, table: u64) -> CmdqResizeCq {
    let mut r = CmdqResizeCq::new_zeroed();
    r.cq_cid = cq.into();
    r.new_cq_size_pg_size_lvl = ((size << 5) | CmdqResizeCq::LVL_LVL_1).into();
    r.new_pbl = table.into();
    r
}

/// RESIZE_CQ of NIC 0's CQ to a new ring of `size`: the answer and the new ring.
fn resize_cq(p: &mut Pair, size: u32) -> (Creq, TCq) {
    let f = &mut p.f[0];
    let (table, base) = pbl(&p.rig, 0, &mut f.pages, u64::from(size) * 32);
    let c = f.call(&mut p.rig, resize_req(p.cq[0].id, size, table));
    (c, TCq { id: p.cq[0].id, base, size, cons: 0, epoch: false, toggle: p.cq[0].toggle })
}

#[test]
fn resize_cq_ends_the_old_ring_with_a_cut_off_cqe_and_continues_on_the_new_one_from_its_start() {
    let mut p = pair_with(FaultPlan::default(), false, 4);
    // Three CQEs on the old ring (one wrap short), one consumed.
    p.sends(3, 0);
    p.cq[0].poll(&p.rig, 0).unwrap();
    p.cq[0].release(&mut p.rig, 0);
    let cases = [(0u32, "new_cq_size 0"), ((1 << 20) + 2, "beyond max_cqe + 1")];
    for (size, what) in cases {
        let r = resize_req(p.cq[0].id, size, 0);
        assert_eq!(p.f[0].call(&mut p.rig, r).status, INVALID_PARAMETER, "{what}");
    }
    let (c, mut new) = resize_cq(&mut p, 16);
    assert_eq!((c.status, c.xid), (0, p.cq[0].id));
    // The old ring: the two waiting CQEs, then CUT_OFF with resize toggle 1.
    for _ in 0..2 {
        assert_eq!(cqe_type(&p.cq[0].poll(&p.rig, 0).unwrap()), 0, "a requester CQE");
    }
    let cut = p.cq[0].poll(&p.rig, 0).expect("the CUT_OFF CQE");
    assert_eq!((cut[0x18] & 0x1e, (cut[0x18] >> 5) & 3, cut[0x19]), (CqCutoff::CQE_TYPE_CUT_OFF, 1, 0));
    assert!(p.cq[0].peek(&p.rig, 0).is_none(), "nothing after it on the old ring");
    // libbnxt_re switches to the new ring (its old epoch kept) and acknowledges the cut-off.
    ring(&mut p.rig, 0, Doorbell::roce(DbType::CqCutoffAck, new.id, 0, false, 0));
    assert_eq!(p.rig.world.nic_state(0).roce.bad_doorbells_total(), 1, "a stale resize toggle is ignored");
    ring(&mut p.rig, 0, Doorbell::roce(DbType::CqCutoffAck, new.id, 0, false, 1));
    assert_eq!(p.rig.world.nic_state(0).roce.bad_doorbells_total(), 1);
    // Twelve more CQEs: more than the old ring held, from index 0 of the new one, first pass.
    p.sends(12, 10);
    for k in 0..12 {
        let c = new.poll(&p.rig, 0).unwrap_or_else(|| panic!("CQE {k} on the new ring"));
        assert_eq!((cqe_type(&c), cqe_status(&c)), (0, 0));
    }
    assert!(new.peek(&p.rig, 0).is_none());
    // The consumer doorbell with libbnxt_re's carried-over epoch: it keeps the old ring's (which
    // wrapped at the CUT_OFF CQE), as index 12 is not below its old head 0.
    ring(&mut p.rig, 0, Doorbell::roce(DbType::Cq, new.id, 12, true, 0));
    let st = p.rig.world.nic_state(0);
    assert_eq!((st.roce.bad_doorbells_total(), st.roce.cq_overflows), (1, 0));
    assert_eq!(p.rig.world.device(0).roce().state().cqs[&new.id].outstanding(), 0, "all 12 returned");
}

#[test]
fn armed_cqs_notify_their_nq_with_the_toggle_and_stale_arms_are_ignored() {
    let mut p = pair(false);
    let (k0, b0) = p.mr[0];
    let (k1, b1) = p.mr[1];
    let nic = 0;
    let cq = p.cq[0].id;
    ring(&mut p.rig, nic, p.nq[0].doorbell(true));
    ring(&mut p.rig, nic, Doorbell::roce(DbType::CqArmAll, cq, 0, false, 0));
    p.rig.world.take_interrupts(nic);
    for round in 1..=3u8 {
        p.f[1].post_recv(&mut p.rig, &mut p.qp[1], 0, &[(b1, k1, 64)]);
        p.f[0].post_send(&mut p.rig, &mut p.qp[0], SEND, SIGNAL, &[(b0, k0, 64)], None, None, 0);
        let nq = p.nq[0];
        run_until(&mut p.rig, 100 * MS, |rig| nq.peek(rig, nic).is_some());
        let e = p.nq[0].peek(&p.rig, nic).unwrap();
        let ty = u16::from_le_bytes([e[0], e[1]]);
        assert_eq!(ty & 0x3f, 0x30, "CQ notification");
        let toggle = ((ty >> 6) & 3) as u8;
        assert_eq!(toggle, round & 3);
        let handle = u64::from(u32::from_le_bytes(e[4..8].try_into().unwrap()))
            | (u64::from(u32::from_le_bytes(e[12..16].try_into().unwrap())) << 32);
        assert_eq!(handle, 0x00c0_ffee_0000 + 64, "cq_handle");
        assert_eq!(p.rig.world.take_interrupts(nic), vec![1], "the NQ's vector");
        p.nq[0].pop();
        ring(&mut p.rig, nic, p.nq[0].doorbell(true));
        p.cq[0].wait(&mut p.rig, nic, 100 * MS);
        p.cq[1].wait(&mut p.rig, 1, 100 * MS);
        // As bnxt_re: CQ_ARMENA with the toggle, then CQ_ARMALL with the consumer and toggle.
        ring(&mut p.rig, nic, Doorbell::roce(DbType::CqArmEna, cq, 0, false, toggle));
        let c = p.cq[0];
        ring(&mut p.rig, nic, Doorbell::roce(DbType::CqArmAll, cq, c.cons, c.epoch, toggle));
    }
    let stale = Doorbell::roce(DbType::CqArmAll, cq, p.cq[0].cons, false, 0);
    ring(&mut p.rig, nic, stale);
    p.rig.world.advance(MS);
    assert_eq!(p.rig.world.nic_state(nic).roce.bad_doorbells.get("CQ arm with a stale toggle"), Some(&1));
    assert_eq!(p.rig.world.nic_state(nic).roce.notifications, 3);
}

#[test]
fn bad_doorbells_are_ignored_and_counted() {
    let mut p = pair(false);
    let qp = p.qp[0].id;
    let bad: [(u64, u64, &str); 7] = [
        (
            DB,
            Doorbell::roce(DbType::Sq, qp, 1, false, 0).encode() & !(1 << 58),
            "valid bit (58) clear: P7 ignores such doorbells",
        ),
        (DB, Doorbell::roce(DbType::Sq, 9999, 1, false, 0).encode(), "no QP with this xid"),
        (DB, Doorbell::roce(DbType::Sq, qp, 64, false, 0).encode(), "producer index beyond the queue size"),
        (DB, Doorbell::roce(DbType::Cq, 9999, 0, false, 0).encode(), "no CQ with this xid"),
        (DB, 3 << 56 | 1 << 58, "undefined doorbell path"),
        (0x8000, Doorbell::roce(DbType::Sq, qp, 1, false, 0).encode(), "below the doorbell area (db_offset)"),
        (DB + 8, Doorbell::roce(DbType::Sq, qp, 1, false, 0).encode(), "not at offset 0 of its doorbell page"),
    ];
    for (offset, value, _) in bad {
        p.rig.world.bar_write(0, 2, offset, &value.to_le_bytes());
    }
    p.rig.world.bar_write(0, 2, DB, &1u32.to_le_bytes());
    let cq = p.cq[0].id;
    p.rig.world.bar_write(0, 2, DB, &Doorbell::roce(DbType::CqCutoffAck, cq, 0, false, 0).encode().to_le_bytes());
    p.rig.world.bar_write(0, 2, DB, &Doorbell::roce(DbType::PushStart, qp, 0, false, 0).encode().to_le_bytes());
    p.rig.world.bar_write(0, 2, DB, &Doorbell::roce(DbType::Srq, 1, 0, false, 0).encode().to_le_bytes());
    p.rig.world.advance(MS);
    let st = p.rig.world.nic_state(0);
    for (_, _, reason) in bad {
        assert_eq!(st.roce.bad_doorbells.get(reason), Some(&1), "{reason}");
    }
    assert_eq!(st.roce.bad_doorbells.get("a 32-bit store: P7 doorbells are single 64-bit stores"), Some(&1));
    assert_eq!(st.roce.bad_doorbells.get("CQ_CUTOFF_ACK on a CQ never resized"), Some(&1));
    assert_eq!(st.roce.unimplemented_doorbells, 1, "push WQEs are not modelled");
    assert_eq!(st.roce.bad_doorbells.get("no SRQ with this xid"), Some(&1));
    assert_eq!(st.roce.frames_sent, 0, "no WQE was taken from any of them");
    assert!(p.cq[0].peek(&p.rig, 0).is_none());
}

#[test]
fn dma_outside_registrations_and_mappings_is_refused() {
    let mut p = pair(false);
    let (k0, b0) = p.mr[0];
    let (k1, b1) = p.mr[1];
    // An SGE past the end of its region: a local protection error, and the QP goes to ERR.
    p.f[0].post_send(&mut p.rig, &mut p.qp[0], SEND, SIGNAL, &[(b0 + (256 << 10) - 10, k0, 64)], None, None, 0);
    let s = p.cq[0].wait(&mut p.rig, 0, 100 * MS);
    assert_eq!(cqe_status(&s), 4, "LOCAL_PROTECTION_ERR");
    let e = p.f[0].next_creq(&mut p.rig);
    assert_eq!((e.event, e.xid), (0xc0, p.qp[0].id), "a QP error notification");
    // A region whose memory the host unmapped after registering it.
    let mut q = pair(false);
    let extra = 0x2_0000_0000u64;
    q.rig.world.map_dma(0, extra, Arc::new(HeapBacking::new(4096))).unwrap();
    let mut r = CmdqRegisterMr::new_zeroed();
    r.flags = CmdqRegisterMr::FLAGS_ALLOC_MR.into();
    r.log2_pg_size_lvl = CmdqRegisterMr::LOG2_PG_SIZE_PG_4K;
    r.access = LW;
    r.key = 1.into();
    r.pbl = extra.into();
    r.va = extra.into();
    r.mr_size = 4096.into();
    let key = q.f[0].ok(&mut q.rig, r).xid;
    q.rig.world.unmap_dma(0, extra).unwrap();
    q.f[1].post_recv(&mut q.rig, &mut q.qp[1], 1, &[(q.mr[1].1, q.mr[1].0, 64)]);
    q.f[0].post_send(&mut q.rig, &mut q.qp[0], SEND, SIGNAL, &[(extra, key, 64)], None, None, 0);
    let s = q.cq[0].wait(&mut q.rig, 0, 100 * MS);
    assert_ne!(cqe_status(&s), 0);
    assert!(q.rig.world.nic_state(0).roce.dma_errors >= 1, "the IOMMU refused the read");
    // An RDMA WRITE to a region without remote write: a remote access error for the requester.
    let mut t = pair(false);
    let (kr, br) = t.f[1].region(&mut t.rig, 4096, LW);
    let w = SqBase::WQE_TYPE_WRITE_WQE;
    t.f[0].post_send(&mut t.rig, &mut t.qp[0], w, SIGNAL, &[(t.mr[0].1, t.mr[0].0, 64)], None, Some((br, kr)), 0);
    assert_eq!(cqe_status(&t.cq[0].wait(&mut t.rig, 0, 100 * MS)), 7, "REMOTE_ACCESS_ERR");
    let _ = (k1, b1);
}

#[test]
fn frames_with_a_bad_icrc_are_dropped_and_counted_and_a_corrupted_frame_is_recovered() {
    let rule = WireRule {
        nic: Some(0),
        opcode: None,
        psn: None,
        dest_qp: None,
        nth: Some(1),
        kind: WireFaultKind::Corrupt,
        delay: None,
    };
    let faults = FaultPlan { wire: WirePlan { rules: vec![rule], ..WirePlan::default() }, ..FaultPlan::default() };
    let mut p = pair_with(faults, false, 64);
    let data = pattern(100, 9);
    p.rig.poke(0, p.mr[0].1, &data);
    let (s, r) = p.send_one(0, 0, 100, 5);
    assert_eq!((cqe_status(&s), cqe_status(&r)), (0, 0), "retransmitted after the corrupted frame");
    assert_eq!(p.rig.peek(1, p.mr[1].1, 100), data);
    let st = p.rig.world.nic_state(1);
    assert_eq!(st.roce.rx_drops.total(), 1, "the corrupted frame was dropped by the receiver");
    assert_eq!(p.rig.world.wire_fault_counters().corrupted, 1);
    assert!(
        p.rig
            .world
            .take_events()
            .iter()
            .any(|e| matches!(&e.kind, EventKind::WireFault { fault } if fault.kind == bnxt_model::net::fault::FaultKind::Corrupt))
    );
    // A frame whose ICRC is wrong, straight to NIC 1.
    let path = bnxt_model::net::Path::between(
        bnxt_model::net::MacAddr(p.f[0].mac),
        bnxt_model::net::MacAddr(p.f[1].mac),
        p.qp[1].id,
    );
    let bth = bnxt_model::net::bth::BthRepr::new(bnxt_model::net::Opcode::SendOnly, p.qp[1].id, 0x500);
    let mut frame = Vec::new();
    bnxt_model::net::build_frame(&path, &bnxt_model::net::Transport::bth(bth), &[1, 2, 3, 4], &mut frame).unwrap();
    let n = frame.len();
    frame[n - 1] ^= 0xff;
    let before = p.rig.world.nic_state(1).roce.rx_drops;
    p.rig.world.inject_frame(1, &frame);
    let after = p.rig.world.nic_state(1).roce.rx_drops;
    assert_eq!((after.icrc - before.icrc, after.total() - before.total()), (1, 1));
}

#[test]
fn a_receive_posted_after_the_send_is_filled_after_an_rnr_wait() {
    let mut p = pair(false);
    let (k0, b0) = p.mr[0];
    let (k1, b1) = p.mr[1];
    p.rig.poke(0, b0, &pattern(64, 5));
    p.f[0].post_send(&mut p.rig, &mut p.qp[0], SEND, SIGNAL, &[(b0, k0, 64)], None, None, 0);
    p.rig.world.take_events();
    p.rig.world.advance(MS);
    assert!(p.cq[0].peek(&p.rig, 0).is_none(), "no receive yet: RNR");
    // The responder's answer is an RNR NAK, and its event says so.
    let rnr = p.rig.world.take_events().into_iter().find_map(|e| match e.kind {
        bnxt_model::events::EventKind::FrameSent { opcode: 0x11, aeth, .. } if e.nic == 1 => aeth,
        _ => None,
    });
    assert!(matches!(rnr, Some(bnxt_model::net::ext::Syndrome::RnrNak { .. })), "{rnr:?}");
    p.f[1].post_recv(&mut p.rig, &mut p.qp[1], 4, &[(b1, k1, 64)]);
    assert_eq!(cqe_status(&p.cq[0].wait(&mut p.rig, 0, 100 * MS)), 0);
    assert_eq!(res_wr_id(&p.cq[1].wait(&mut p.rig, 1, 100 * MS)), 4);
    assert_eq!(p.rig.peek(1, b1, 64), pattern(64, 5));
}

#[test]
fn the_pcap_tap_records_every_frame_of_the_segment() {
    let mut p = pair(false);
    let file = tempfile::NamedTempFile::new().unwrap();
    p.rig.world.set_pcap(file.path()).unwrap();
    p.rig.poke(0, p.mr[0].1, &pattern(9000, 2));
    p.send_one(0, 0, 9000, 1);
    p.rig.world.advance(MS);
    let frames = p.rig.world.finish_pcap().unwrap().unwrap();
    let st = [p.rig.world.nic_state(0), p.rig.world.nic_state(1)];
    assert_eq!(frames, st[0].roce.frames_sent + st[1].roce.frames_sent);
    assert!(frames >= 4, "3 SEND packets and an ACK");
}

#[test]
fn a_wqe_the_engine_cannot_carry_out_completes_in_error_then_the_rest_flushed() {
    let mut p = pair(false);
    let (k0, b0) = p.mr[0];
    // A local invalidate (memory windows and invalidation are not modelled), then a good SEND.
    p.f[0].post_send(&mut p.rig, &mut p.qp[0], SqBase::WQE_TYPE_LOCAL_INVALID, SIGNAL, &[(b0, k0, 8)], None, None, 0);
    p.f[0].post_send(&mut p.rig, &mut p.qp[0], SEND, SIGNAL, &[(b0, k0, 64)], None, None, 0);
    let first = p.cq[0].wait(&mut p.rig, 0, 100 * MS);
    let second = p.cq[0].wait(&mut p.rig, 0, 100 * MS);
    assert_eq!((cqe_status(&first), sq_cons_idx(&first)), (3, 1), "LOCAL_QP_OPERATION_ERR for WQE 0");
    assert_eq!((cqe_status(&second), sq_cons_idx(&second)), (0xb, 2), "WORK_REQUEST_FLUSHED for WQE 1");
    let e = p.f[0].next_creq(&mut p.rig);
    assert_eq!((e.event, e.bytes[3]), (0xc0, 0x11), "QP error: REQ_WQE_FORMAT_ERROR");
    assert_eq!(p.rig.world.nic_state(0).roce.bad_wqes, 1);
    assert_eq!(p.rig.world.nic_state(0).roce.frames_sent, 0);
    // A receive WQE of the wrong type on the other NIC.
    let q = &mut p.qp[1];
    let mut w = [0u8; 48];
    (w[0], w[2]) = (0x42, 3);
    w[8..12].copy_from_slice(&21u32.to_le_bytes());
    p.rig.poke(1, q.rq_base + u64::from(q.rq_prod) * q.rq_stride, &w);
    q.rq_prod += 1;
    ring(&mut p.rig, 1, Doorbell::roce(DbType::Rq, q.id, q.rq_prod, false, 0));
    let r = p.cq[1].wait(&mut p.rig, 1, 100 * MS);
    assert_eq!((cqe_status(&r), res_wr_id(&r)), (4, 21), "LOCAL_QP_OPERATION_ERR with the WQE's wr_id");
    let e = p.f[1].next_creq(&mut p.rig);
    assert_eq!((e.event, e.bytes[0xb]), (0xc0, 0x16), "QP error: RES_WQE_FORMAT_ERROR");
}

#[test]
fn qps_of_one_nic_talk_through_its_internal_loopback_not_the_wire() {
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 1024, 256);
    f.initialize(&mut rig);
    let sgid = f.add_own_gid(&mut rig);
    let nq = nq_ring(&mut rig, 0, &mut f.pages, 256, 1);
    let mut cq = f.create_cq(&mut rig, 64, nq.id);
    let mut a = f.create_qp(&mut rig, Rings::fixed(16, 16), &cq);
    let mut b = f.create_qp(&mut rig, Rings::fixed(16, 16), &cq);
    let (gid, mac) = (f.gid(), f.mac);
    let (ida, idb) = (a.id, b.id);
    f.connect(&mut rig, &mut a, sgid, (&gid, mac, idb), 7);
    f.connect(&mut rig, &mut b, sgid, (&gid, mac, ida), 7);
    let (k, base) = f.region(&mut rig, 1 << 20, LW | CmdqRegisterMr::ACCESS_REMOTE_READ);
    let data = pattern(100_000, 4);
    rig.poke(0, base, &data);
    let rd = SqBase::WQE_TYPE_READ_WQE;
    f.post_send(&mut rig, &mut a, rd, SIGNAL, &[(base + 500_000, k, 100_000)], None, Some((base, k)), 0);
    let c = cq.wait(&mut rig, 0, 100 * MS);
    assert_eq!((cqe_type(&c), cqe_status(&c)), (0, 0));
    assert_eq!(rig.peek(0, base + 500_000, 100_000), data);
    let st = rig.world.nic_state(0);
    assert_eq!(st.roce.frames_looped, st.roce.frames_sent);
    assert_eq!(rig.world.switch_stats().received, 0, "nothing reached the wire");
}

#[test]
fn messages_survive_a_lossy_duplicating_reordering_corrupting_wire() {
    let wire = WirePlan { drop: 0.02, duplicate: 0.01, reorder: 0.02, corrupt: 0.01, ..WirePlan::default() };
    let mut p = pair_with(FaultPlan { wire, ..FaultPlan::default() }, false, 64);
    let (k0, b0) = p.mr[0];
    let (k1, b1) = p.mr[1];
    let data = pattern(200_000, 8);
    p.rig.poke(0, b0, &data);
    let (s, r) = p.send_one(0, 0, 200_000, 1);
    assert_eq!((cqe_status(&s), cqe_status(&r), res_length(&r)), (0, 0, 200_000));
    assert_eq!(p.rig.peek(1, b1, 200_000), data);
    for k in 0..200u32 {
        let msg = pattern(64, k as u8);
        p.rig.poke(0, b0 + 4096, &msg);
        p.f[1].post_recv(&mut p.rig, &mut p.qp[1], k, &[(b1 + 4096, k1, 64)]);
        p.f[0].post_send(&mut p.rig, &mut p.qp[0], SEND, SIGNAL, &[(b0 + 4096, k0, 64)], None, None, 0);
        assert_eq!(cqe_status(&p.cq[0].wait(&mut p.rig, 0, 10_000 * MS)), 0, "send {k}");
        let r = p.cq[1].wait(&mut p.rig, 1, 10_000 * MS);
        assert_eq!((cqe_status(&r), res_wr_id(&r)), (0, k), "receive {k} in order");
        assert_eq!(p.rig.peek(1, b1 + 4096, 64), msg, "message {k}");
    }
    let c = p.rig.world.wire_fault_counters();
    assert!(c.dropped > 0 && c.duplicated > 0 && c.reordered > 0 && c.corrupted > 0, "{c:?}");
}

/// `BNXT_RANDOM_SEED` (0 when unset): moves the random tests to other draws, for longer searches.
fn extra_seed() -> u64 {
    std::env::var("BNXT_RANDOM_SEED").ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0).rotate_left(17)
}

/// The NICs still move a message after whatever came before: a new CQ and QP on each NIC (what
/// came before may have broken the old ones, as it would on hardware), connected, a 4-KiB SEND,
/// both completions `ok` and the bytes landed.
fn a_new_pair_of_qps_still_works(p: &mut Pair) {
    let sgid = [p.f[0].add_own_gid(&mut p.rig), p.f[1].add_own_gid(&mut p.rig)];
    let mut c0 = p.f[0].create_cq(&mut p.rig, 64, p.nq[0].id);
    let mut c1 = p.f[1].create_cq(&mut p.rig, 64, p.nq[1].id);
    let mut q0 = p.f[0].create_qp(&mut p.rig, Rings::fixed(64, 64), &c0);
    let mut q1 = p.f[1].create_qp(&mut p.rig, Rings::fixed(64, 64), &c1);
    let (gid0, mac0, gid1, mac1) = (p.f[0].gid(), p.f[0].mac, p.f[1].gid(), p.f[1].mac);
    p.f[0].connect(&mut p.rig, &mut q0, sgid[0], (&gid1, mac1, q1.id), 0x9000);
    p.f[1].connect(&mut p.rig, &mut q1, sgid[1], (&gid0, mac0, q0.id), 0x9000);
    let ((k0, b0), (k1, b1)) = (p.mr[0], p.mr[1]);
    let data = pattern(4096, 77);
    p.rig.poke(0, b0, &data);
    p.f[1].post_recv(&mut p.rig, &mut q1, 1, &[(b1 + 8192, k1, 4096)]);
    p.f[0].post_send(&mut p.rig, &mut q0, SEND, SIGNAL, &[(b0, k0, 4096)], None, None, 0);
    let s = c0.wait(&mut p.rig, 0, 100 * MS);
    let r = c1.wait(&mut p.rig, 1, 100 * MS);
    assert_eq!((cqe_status(&s), cqe_status(&r)), (0, 0), "the new pair's SEND completes ok");
    assert_eq!(p.rig.peek(1, b1 + 8192, 4096), data, "the new pair's bytes landed");
}

#[test]
fn random_frames_with_good_icrcs_at_a_live_qp_never_crash_the_model() {
    use bnxt_model::net::bth::BthRepr;
    use bnxt_model::net::ext::{AethRepr, AtomicEthRepr, DethRepr, RethRepr, Syndrome};
    use bnxt_model::net::opcode::ALL_OPCODES;
    use bnxt_model::net::{MacAddr, Path, Transport, build_frame};
    use rand::{Rng, SeedableRng};

    let mut p = pair(false);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xf4a3e ^ extra_seed());
    let (k1, b1) = p.mr[1];
    let (mac0, mac1, qp1) = (MacAddr(p.f[0].mac), MacAddr(p.f[1].mac), p.qp[1].id);
    let mut frame = Vec::new();
    let before = p.rig.world.nic_state(1).roce.frames_received;
    for round in 0..3000 {
        // Requests and responses of every opcode at the live QP (now and then another), PSNs
        // around the expected one, RETHs mostly naming the registered region, random AETHs,
        // random payloads up to the MTU: each a frame the ICRC check passes.
        let op = ALL_OPCODES[rng.random_range(0..ALL_OPCODES.len())];
        let dest = if rng.random_bool(0.9) { qp1 } else { rng.random_range(0..0x100) };
        let psn = (0x100 + rng.random_range(0..64u32)).wrapping_sub(16) & 0xff_ffff;
        let mut bth = BthRepr::new(op, dest, psn);
        bth.ack_req = rng.random();
        let mut t = Transport::bth(bth);
        if op.has_reth() {
            let va = if rng.random_bool(0.7) { b1 + rng.random_range(0..(256u64 << 10)) } else { rng.random() };
            let rkey = if rng.random_bool(0.7) { k1 } else { rng.random() };
            t.reth = Some(RethRepr { va, rkey, dma_len: rng.random_range(0..(1u32 << 20)) });
        }
        if op.has_aeth() {
            let syndrome = loop {
                if let Ok(s) = Syndrome::from_byte(rng.random()) {
                    break s;
                }
            };
            t.aeth = Some(AethRepr { syndrome, msn: rng.random_range(0..0x100_0000) });
        }
        if op.has_immdt() {
            t.immdt = Some(rng.random());
        }
        if op.has_deth() {
            t.deth = Some(DethRepr { qkey: rng.random(), src_qp: rng.random_range(0..0x100_0000) });
        }
        if op.has_atomic_eth() {
            let va = if rng.random_bool(0.7) { b1 + (rng.random_range(0..(256u64 << 10)) & !7) } else { rng.random() };
            let rkey = if rng.random_bool(0.7) { k1 } else { rng.random() };
            t.atomic = Some(AtomicEthRepr { va, rkey, swap_add: rng.random(), compare: rng.random() });
        }
        if op.has_atomic_ack_eth() {
            t.atomic_ack = Some(rng.random());
        }
        let len = if op.has_payload() { rng.random_range(0..=4096) } else { 0 };
        let payload: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let path = Path::between(mac0, mac1, dest);
        build_frame(&path, &t, &payload, &mut frame).unwrap_or_else(|e| panic!("round {round}: {op:?}: {e}"));
        p.rig.world.inject_frame(1, &frame);
        if rng.random_bool(0.1) {
            p.rig.world.advance(Duration::from_micros(rng.random_range(1..2000)));
        }
    }
    p.rig.world.advance(Duration::from_secs(1));
    let taken = p.rig.world.nic_state(1).roce.frames_received - before;
    assert!(taken > 2000, "the QP took {taken} of the random frames (the rest went to other QPs)");
    a_new_pair_of_qps_still_works(&mut p);
}

#[test]
fn random_wqes_and_doorbells_on_a_live_qp_never_crash_the_model() {
    let mut p = pair(false);
    random_wqes_and_doorbells(&mut p, 0x3e9e5 ^ extra_seed(), 2000);
    p.rig.world.advance(Duration::from_secs(5));
    let st = p.rig.world.nic_state(0).roce;
    assert!(st.wqes > 100 && st.bad_wqes > 0, "WQEs read {}, refused {}", st.wqes, st.bad_wqes);
    a_new_pair_of_qps_still_works(&mut p);
}

/// `rounds` rounds of random bytes in the live QP's slots and a random doorbell, from `seed`.
fn random_wqes_and_doorbells(p: &mut Pair, seed: u64, rounds: usize) {
    use rand::{Rng, SeedableRng};

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for _ in 0..rounds {
        // Random bytes in the SQ's and RQ's slots (and MSN table), then a doorbell of a random
        // kind at a random index, for the live QP, its CQ or a random id.
        let q = p.qp[0].clone();
        let sq_bytes = (u64::from(q.depth) * 16 + u64::from(q.msn_entries) * 8) as usize;
        let at = rng.random_range(0..sq_bytes as u64) & !15;
        let junk: Vec<u8> = (0..16 * rng.random_range(1..8)).map(|_| rng.random()).collect();
        let room = sq_bytes - at as usize;
        p.rig.poke(0, q.sq_base + at, &junk[..junk.len().min(room)]);
        let rq_bytes = u64::from(q.rq_size) * q.rq_stride;
        let at = rng.random_range(0..rq_bytes) & !15;
        let junk: Vec<u8> = (0..16).map(|_| rng.random()).collect();
        p.rig.poke(0, q.rq_base + at, &junk);
        let ty = [DbType::Sq, DbType::Rq, DbType::Sq, DbType::Rq, DbType::CqArmAll, DbType::Cq][rng.random_range(0..6)];
        let xid = match rng.random_range(0..4) {
            0 => rng.random_range(0..0x10_0000),
            1 => p.cq[0].id,
            _ => q.id,
        };
        // Indexes mostly inside the ring the doorbell names (the NIC refuses others outright).
        let size = match ty {
            DbType::Sq => q.sq_size,
            DbType::Rq => q.rq_size,
            _ => p.cq[0].size,
        };
        let index = if rng.random_bool(0.9) { rng.random_range(0..size) } else { rng.random_range(0..0x10000) };
        let db = Doorbell::roce(ty, xid, index, rng.random(), 0);
        ring(&mut p.rig, 0, db);
        if rng.random_bool(0.2) {
            p.rig.world.advance(Duration::from_micros(rng.random_range(1..5000)));
        }
    }
}

/// A copy of a machine (the world's `Clone`, with the test driver's bookkeeping) whose memory is
/// put back as it was when copied runs as the machine built afresh does: the same device state,
/// events, clock and memory after the same work. The fuzz targets run every input on such a
/// copy (fuzz/src/snapshot.rs), so nothing of one input may reach the next.
#[test]
fn a_copied_machine_with_its_memory_put_back_runs_as_one_built_afresh() {
    use common::{BASE, MEM_LEN};
    let work = |p: &mut Pair, seed: u64| {
        p.sends(3, 1);
        random_wqes_and_doorbells(p, seed, 300);
        p.rig.world.advance(Duration::from_secs(1));
        a_new_pair_of_qps_still_works(p);
    };
    let base = pair(false);
    let image = [base.rig.peek(0, BASE, MEM_LEN), base.rig.peek(1, BASE, MEM_LEN)];
    let put_back = |p: &Pair| (0..2).for_each(|nic| p.rig.poke(nic, BASE, &image[nic]));
    let memory = |p: &Pair| [p.rig.peek(0, BASE, MEM_LEN), p.rig.peek(1, BASE, MEM_LEN)];

    let mut fresh = pair(false);
    work(&mut fresh, 7);
    // A first copy does other work, which changes the memory it shares with the original.
    let mut other = base.clone();
    work(&mut other, 8);
    let (other_state, other_memory) = (other.rig.describe(), memory(&other));
    put_back(&base);
    let mut copy = base.clone();
    work(&mut copy, 7);
    let (fresh_state, copy_state) = (fresh.rig.describe(), copy.rig.describe());
    assert!(fresh_state == copy_state, "the copy ended unlike the fresh machine");
    assert!(memory(&fresh) == memory(&copy), "the copy's memory ended unlike the fresh machine's");
    // What is compared tells runs apart: other work ends in another state and memory.
    assert!(other_state != copy_state, "other work ended in the same state");
    assert!(other_memory != memory(&copy), "other work left the same memory");
}

#[rstest::rstest]
fn rc_atomics_between_two_nics_as_bnxt_re_and_libbnxt_re_post_them(#[values(false, true)] variable: bool) {
    let mut p = pair(variable);
    let (k0, b0) = p.mr[0];
    // The target word in a region that allows remote atomics (REGISTER_MR ACCESS_REMOTE_ATOMIC).
    let access = LW | CmdqRegisterMr::ACCESS_REMOTE_ATOMIC;
    let (ka, ba) = p.f[1].region(&mut p.rig, 4096, access);
    p.rig.poke(1, ba + 64, &100u64.to_le_bytes());
    let word = |p: &Pair| u64::from_le_bytes(p.rig.peek(1, ba + 64, 8).try_into().unwrap());
    let local = |p: &Pair| u64::from_le_bytes(p.rig.peek(0, b0 + 8, 8).try_into().unwrap());
    // Fetch-and-add as bnxt_re's kernel path writes it (wqe_size 0), then compare-and-swap as
    // libbnxt_re does (wqe_size 3).
    p.f[0].post_atomic(&mut p.rig, &mut p.qp[0], true, None, 5, (ba + 64, ka), (b0 + 8, k0));
    let c = p.cq[0].wait(&mut p.rig, 0, 100 * MS);
    assert_eq!((cqe_type(&c), cqe_status(&c)), (0, 0), "a requester CQE, ok");
    assert_eq!((word(&p), local(&p)), (105, 100));
    p.f[0].post_atomic(&mut p.rig, &mut p.qp[0], false, Some(105), 7, (ba + 64, ka), (b0 + 8, k0));
    assert_eq!(cqe_status(&p.cq[0].wait(&mut p.rig, 0, 100 * MS)), 0);
    assert_eq!((word(&p), local(&p)), (7, 105));
    let events = p.rig.world.take_events();
    let sent: Vec<u8> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::FrameSent { opcode, .. } => Some(*opcode),
            _ => None,
        })
        .collect();
    assert!(
        sent.contains(&0x14) && sent.contains(&0x13) && sent.contains(&0x12),
        "FetchAdd, CmpSwap, ATOMIC ACK: {sent:x?}"
    );
    // The region for SENDs and WRITEs does not allow atomics: NAK remote access error.
    let (k1, b1) = p.mr[1];
    p.f[0].post_atomic(&mut p.rig, &mut p.qp[0], false, None, 1, (b1, k1), (b0 + 8, k0));
    assert_eq!(cqe_status(&p.cq[0].wait(&mut p.rig, 0, 100 * MS)), CqReq::STATUS_REMOTE_ACCESS_ERR);
    assert_eq!(p.rig.world.nic_state(0).unimplemented, 0);
}

#[test]
fn query_func_does_not_say_atomics_are_unsupported() {
    let (mut rig, mut f) = up();
    let caps = f.query_func(&mut rig);
    assert_eq!(caps.dev_cap_ext_flags & CreqQueryFuncRespSb::ATOMIC_OPS_NOT_SUPPORTED, 0);
}
