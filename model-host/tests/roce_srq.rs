//! Shared receive queues against the test driver: CREATE_SRQ, QUERY_SRQ and DESTROY_SRQ and the
//! firmware's refusals of bad ones; QPs created on an SRQ (`SRQ_USED`, `srq_cid`) take receive
//! WQEs from it in ring order whichever QP a message arrives at, and complete with the SRQ WQE's
//! `wr_id` and their own `qp_handle`; an empty SRQ makes the sender wait (RNR NAK) until a WQE is
//! posted; SRQ_ARM sets the limit QUERY_SRQ reports and the NQ gets one SRQ limit event when the
//! WQEs left fall below it.
//!
//! Layouts: roce_hsi.h `cmdq_create_srq`, `creq_query_srq_resp_sb`, `nq_srq_event`, `rq_wqe`;
//! how bnxt_re fills them: qplib_fp.c `bnxt_qplib_create_srq`, `bnxt_qplib_post_srq_recv`,
//! `bnxt_qplib_create_qp` (RQ fields zero, `SRQ_USED` and `srq_cid` with an SRQ).

mod common;
mod roce_support;

use std::time::Duration;

use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use bnxt_hsi::roce::layouts::*;
use common::Rig;
use roce_support::*;
use zerocopy::{FromBytes, FromZeros};

const SEND: u8 = SqBase::WQE_TYPE_SEND;
const SIGNAL: u8 = SqSendHdr::FLAGS_SIGNAL_COMP;
const MS: Duration = Duration::from_millis(1);
/// An SRQ WQE's stride with the default six SGEs (32-byte header + 6 × 16).
const STRIDE: u64 = 128;

/// An SRQ as the test driver keeps it.
#[derive(Debug, Clone, Copy)]
struct TSrq {
    id: u32,
    base: u64,
    size: u32,
    prod: u32,
    epoch: bool,
    handle: u64,
}

/// A CREATE_SRQ request of `size` WQEs (PD 1) on NQ `nq` with fresh memory; and its ring's base.
fn srq_request(f: &mut Func, rig: &Rig, size: u16, nq: u16) -> (CmdqCreateSrq, u64) {
    let (table, base) = pbl(rig, f.nic, &mut f.pages, u64::from(size) * STRIDE);
    let mut c = CmdqCreateSrq::new_zeroed();
    c.srq_handle = (0x5eed_0000_0000 + base).into();
    c.pg_size_lvl = CmdqCreateSrq::LVL_LVL_1.into();
    c.eventq_id = nq.into();
    c.srq_size = size.into();
    c.dpi = 16.into();
    c.pd_id = 1.into();
    c.pbl = table.into();
    (c, base)
}

fn create_srq(f: &mut Func, rig: &mut Rig, size: u16, nq: u16) -> TSrq {
    let (c, base) = srq_request(f, rig, size, nq);
    let id = f.ok(rig, c).xid;
    TSrq { id, base, size: size.into(), prod: 0, epoch: false, handle: c.srq_handle.get() }
}

/// Write an SRQ WQE (the RQ WQE format) with `wr_id` and one SGE, and ring the SRQ doorbell.
fn post_srq_recv(f: &Func, rig: &mut Rig, s: &mut TSrq, wr_id: u32, sge: (u64, u32, u32)) {
    let mut w = vec![0u8; 48];
    w[0] = RqWqeHdr::WQE_TYPE_RCV;
    w[2] = 3;
    w[8..12].copy_from_slice(&wr_id.to_le_bytes());
    w[32..40].copy_from_slice(&sge.0.to_le_bytes());
    w[40..44].copy_from_slice(&sge.1.to_le_bytes());
    w[44..48].copy_from_slice(&sge.2.to_le_bytes());
    rig.poke(f.nic, s.base + u64::from(s.prod) * STRIDE, &w);
    s.prod += 1;
    if s.prod == s.size {
        s.prod = 0;
        s.epoch = !s.epoch;
    }
    ring(rig, f.nic, Doorbell::roce(DbType::Srq, s.id, s.prod, s.epoch, 0));
}

/// A CREATE_QP request on SRQ `srq` as bnxt_re sends it: RQ fields zero, `SRQ_USED`, `srq_cid`.
fn qp_on_srq(f: &mut Func, rig: &Rig, srq: u32, cq: &TCq) -> (CmdqCreateQp, TQp) {
    let (mut c, qp) = f.qp_request(rig, Rings::fixed(64, 1), cq);
    c.qp_flags = (c.qp_flags.get() | CmdqCreateQp::QP_FLAGS_SRQ_USED).into();
    c.srq_cid = srq.into();
    c.rq_size = 0.into();
    c.rq_fwo_rq_sge = 0.into();
    c.rq_pbl = 0.into();
    c.rq_pg_size_rq_lvl = 0;
    (c, qp)
}

fn query_limit(f: &mut Func, rig: &mut Rig, srq: u32) -> (u8, u16) {
    let mut q = CmdqQuerySrq::new_zeroed();
    q.srq_cid = srq.into();
    let (c, sb) = f.query(rig, q, size_of::<CreqQuerySrqRespSb>());
    let sb = CreqQuerySrqRespSb::read_from_bytes(&sb).unwrap();
    assert_eq!(sb.opcode, CmdqBase::OPCODE_QUERY_SRQ, "side buffer header names the command");
    (c.status, sb.srq_limit.get())
}

fn destroy(f: &mut Func, rig: &mut Rig, srq: u32) -> Creq {
    let mut d = CmdqDestroySrq::new_zeroed();
    d.srq_cid = srq.into();
    f.call(rig, d)
}

#[test]
fn srqs_are_created_queried_and_destroyed_within_the_context_memory() {
    let (mut rig, mut f) = up();
    let nq = nq_ring(&mut rig, 0, &mut f.pages, 64, 1);
    // The test context memory has 4 SRQ entries, 2 of them for L2 (SRQ split 0).
    let a = create_srq(&mut f, &mut rig, 64, nq.id);
    let b = create_srq(&mut f, &mut rig, 64, nq.id);
    assert_eq!((a.id, b.id), (2, 3), "SRQ ids follow the L2 entries");
    let (c, _) = srq_request(&mut f, &rig, 64, nq.id);
    assert_eq!(f.call(&mut rig, c).status, RESOURCES);
    assert_eq!(query_limit(&mut f, &mut rig, a.id), (0, 0), "no limit set yet");
    ring(&mut rig, 0, Doorbell::roce(DbType::SrqArm, a.id, 5, false, 0));
    assert_eq!(query_limit(&mut f, &mut rig, a.id), (0, 5), "SRQ_ARM's index is the limit");
    let mut q = CmdqQuerySrq::new_zeroed();
    q.srq_cid = 9.into();
    assert_eq!(f.query(&mut rig, q, 32).0.status, INVALID_PARAMETER);
    assert_eq!(destroy(&mut f, &mut rig, a.id).status, 0);
    assert_eq!(destroy(&mut f, &mut rig, a.id).status, INVALID_PARAMETER, "already gone");
    assert_eq!(create_srq(&mut f, &mut rig, 64, nq.id).id, 2, "its id is free again");
}

/// A bad CREATE_SRQ: what, the change, the status, words of the reason.
type Case = (&'static str, fn(&mut CmdqCreateSrq), u8, &'static str);

#[test]
fn bad_create_srq_requests_get_the_firmware_status_and_a_reason() {
    let (mut rig, mut f) = up();
    let nq = nq_ring(&mut rig, 0, &mut f.pages, 64, 1);
    let base = srq_request(&mut f, &rig, 64, nq.id).0;
    let cases: [Case; 6] = [
        ("no NQ", |c| c.eventq_id = 77.into(), INVALID_PARAMETER, "eventq_id 77"),
        ("size 0", |c| c.srq_size = 0.into(), INVALID_PARAMETER, "srq_size 0"),
        ("level 3", |c| c.pg_size_lvl = 3.into(), INVALID_PARAMETER, "level 3"),
        ("fwo", |c| c.srq_fwo = 1.into(), NOT_IMPLEMENTED, "first-page offset"),
        ("sge", |c| c.srq_fwo = (7 << 12).into(), INVALID_PARAMETER, "srq_sge 7"),
        ("pd", |c| c.pd_id = (1 << 16).into(), INVALID_PARAMETER, "pd_id"),
    ];
    for (what, change, status, reason) in cases {
        let mut c = base;
        change(&mut c);
        assert_eq!(f.call(&mut rig, c).status, status, "{what}");
        let r = last_refusal(&mut rig).unwrap_or_default();
        assert!(r.contains(reason), "{what}: {r}");
    }
    // Memory the page table does not reach.
    let mut c = base;
    c.pbl = 0x7fff_0000_0000.into();
    assert_eq!(f.call(&mut rig, c).status, INVALID_PARAMETER);
}

#[test]
fn a_qp_on_an_srq_needs_the_srq_in_its_pd_and_keeps_it_from_being_destroyed() {
    let (mut rig, mut f) = up();
    let nq = nq_ring(&mut rig, 0, &mut f.pages, 64, 1);
    let cq = f.create_cq(&mut rig, 64, nq.id);
    let s = create_srq(&mut f, &mut rig, 64, nq.id);
    let (mut c, _) = qp_on_srq(&mut f, &rig, 3, &cq);
    assert_eq!(f.call(&mut rig, c).status, INVALID_PARAMETER, "srq_cid 3 is not an SRQ");
    c.srq_cid = s.id.into();
    c.pd_id = 2.into();
    assert_eq!(f.call(&mut rig, c).status, INVALID_PARAMETER, "the SRQ is in PD 1");
    c.pd_id = 1.into();
    let qp = f.ok(&mut rig, c).xid;
    // QUERY_QP: no RQ of its own.
    let mut q = CmdqQueryQp::new_zeroed();
    q.qp_cid = qp.into();
    let (_, sb) = f.query(&mut rig, q, size_of::<CreqQueryQpRespSb>());
    assert_eq!(CreqQueryQpRespSb::read_from_bytes(&sb).unwrap().rq_size.get(), 0);
    assert_eq!(destroy(&mut f, &mut rig, s.id).status, INVALID_PARAMETER);
    assert!(last_refusal(&mut rig).unwrap_or_default().contains(&format!("still used by QP {qp}")));
    let mut d = CmdqDestroyQp::new_zeroed();
    d.qp_cid = qp.into();
    f.ok(&mut rig, d);
    assert_eq!(destroy(&mut f, &mut rig, s.id).status, 0);
}

/// NIC 0 with two QPs, NIC 1 with two QPs on one SRQ, connected pairwise; regions on both.
struct Shared {
    rig: Rig,
    f: [Func; 2],
    nq: NqRing,
    cq: [TCq; 2],
    tx: [TQp; 2],
    rx: [TQp; 2],
    srq: TSrq,
    mr: [(u32, u64); 2],
}

fn shared() -> Shared {
    let mut rig = Rig::new(2);
    let mut f = [Func::bring_up(&mut rig, 0, 1024, 256), Func::bring_up(&mut rig, 1, 1024, 256)];
    let mut sgid = [0u16; 2];
    let mut nqs = Vec::new();
    let mut cqs = Vec::new();
    let mut mr = Vec::new();
    for (i, fi) in f.iter_mut().enumerate() {
        fi.initialize(&mut rig);
        sgid[i] = fi.add_own_gid(&mut rig);
        let n = nq_ring(&mut rig, i, &mut fi.pages, 256, 1);
        cqs.push(fi.create_cq(&mut rig, 256, n.id));
        let access = CmdqRegisterMr::ACCESS_LOCAL_WRITE | CmdqRegisterMr::ACCESS_REMOTE_WRITE;
        mr.push(fi.region(&mut rig, 64 << 10, access));
        nqs.push(n);
    }
    let tx: Vec<TQp> = (0..2).map(|_| f[0].create_qp(&mut rig, Rings::fixed(64, 16), &cqs[0])).collect();
    let srq = create_srq(&mut f[1], &mut rig, 16, nqs[1].id);
    let rx: Vec<TQp> = (0..2)
        .map(|_| {
            let (c, mut qp) = qp_on_srq(&mut f[1], &rig, srq.id, &cqs[1]);
            qp.id = f[1].ok(&mut rig, c).xid;
            qp
        })
        .collect();
    let (mut tx, mut rx) = (tx, rx);
    for k in 0..2 {
        let (g0, m0, g1, m1) = (f[0].gid(), f[0].mac, f[1].gid(), f[1].mac);
        let (t, r) = (tx[k].id, rx[k].id);
        f[0].connect(&mut rig, &mut tx[k], sgid[0], (&g1, m1, r), 0x10);
        f[1].connect(&mut rig, &mut rx[k], sgid[1], (&g0, m0, t), 0x10);
    }
    Shared {
        rig,
        f,
        nq: nqs[1],
        cq: [cqs[0], cqs[1]],
        tx: [tx[0].clone(), tx[1].clone()],
        rx: [rx[0].clone(), rx[1].clone()],
        srq,
        mr: [mr[0], mr[1]],
    }
}

impl Shared {
    fn send(&mut self, k: usize, from: u64, len: u32) {
        let (key, base) = self.mr[0];
        let sge = [(base + from, key, len)];
        self.f[0].post_send(&mut self.rig, &mut self.tx[k], SEND, SIGNAL, &sge, None, None, 0);
    }

    fn post(&mut self, wr_id: u32, at: u64, len: u32) {
        let (key, base) = self.mr[1];
        post_srq_recv(&self.f[1], &mut self.rig, &mut self.srq, wr_id, (base + at, key, len));
    }
}

#[test]
fn sends_to_qps_on_one_srq_take_its_wqes_in_order_and_complete_with_their_wr_id() {
    let mut s = shared();
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 1) as u8).collect();
    s.rig.poke(0, s.mr[0].1, &data);
    for (n, at) in [(100u32, 0u64), (101, 0x1000), (102, 0x2000), (103, 0x3000)] {
        s.post(n, at, 1024);
    }
    // Messages alternate between the two QPs; each takes the SRQ's next WQE.
    let order = [(1usize, 0u64, 300u32), (0, 300, 500), (1, 800, 1024), (0, 1824, 7)];
    for (i, &(k, from, len)) in order.iter().enumerate() {
        s.send(k, from, len);
        let sc = s.cq[0].wait(&mut s.rig, 0, 100 * MS);
        assert_eq!(cqe_status(&sc), 0, "send {i}");
        let r = s.cq[1].wait(&mut s.rig, 1, 100 * MS);
        assert_eq!((cqe_type(&r), cqe_status(&r)), (1, 0), "cq_res_rc OK for message {i}");
        assert_eq!((res_wr_id(&r), res_length(&r)), (100 + i as u32, len), "message {i}");
        let handle = u64::from_le_bytes(r[8..16].try_into().unwrap());
        assert_eq!(handle, s.rx[k].handle, "message {i} completes for the QP it arrived at");
        let at = s.mr[1].1 + 0x1000 * i as u64;
        assert_eq!(s.rig.peek(1, at, len as usize), data[from as usize..(from + u64::from(len)) as usize]);
    }
    let st = s.rig.world.nic_state(1).roce;
    assert_eq!((st.bad_wqes, st.bad_doorbells_total(), st.unimplemented_doorbells), (0, 0, 0));
}

#[test]
fn an_empty_srq_makes_the_sender_wait_until_a_wqe_is_posted() {
    let mut s = shared();
    s.rig.poke(0, s.mr[0].1, &[0xab; 64]);
    s.send(0, 0, 64);
    s.rig.world.advance(MS);
    assert!(s.cq[0].peek(&s.rig, 0).is_none(), "no SRQ WQE yet: RNR NAK, the send waits");
    assert!(s.cq[1].peek(&s.rig, 1).is_none());
    s.post(42, 0x800, 64);
    assert_eq!(cqe_status(&s.cq[0].wait(&mut s.rig, 0, 100 * MS)), 0);
    let r = s.cq[1].wait(&mut s.rig, 1, 100 * MS);
    assert_eq!((res_wr_id(&r), res_length(&r)), (42, 64));
    assert_eq!(s.rig.peek(1, s.mr[1].1 + 0x800, 64), [0xab; 64]);
}

#[test]
fn an_armed_srq_posts_one_limit_event_when_fewer_wqes_than_the_limit_are_left() {
    let mut s = shared();
    for n in 0..3 {
        s.post(n, 0x100 * u64::from(n), 64);
    }
    ring(&mut s.rig, 1, Doorbell::roce(DbType::SrqArm, s.srq.id, 2, false, 0));
    assert!(s.nq.peek(&s.rig, 1).is_none(), "3 left, limit 2: no event");
    for k in [0, 1] {
        s.send(k, 0, 64);
        s.cq[1].wait(&mut s.rig, 1, 100 * MS);
    }
    let e = NqSrqEvent::read_from_bytes(&s.nq.peek(&s.rig, 1).expect("limit event on the SRQ's NQ")).unwrap();
    assert_eq!(e.type_ & NqSrqEvent::TYPE_MASK, NqSrqEvent::TYPE_SRQ_EVENT);
    assert_eq!(e.event, NqSrqEvent::EVENT_SRQ_THRESHOLD_EVENT);
    let handle = u64::from(e.srq_handle_low.get()) | u64::from(e.srq_handle_high.get()) << 32;
    assert_eq!(handle, s.srq.handle);
    s.nq.pop();
    // Disarmed: the last WQE going gives no second event.
    s.send(0, 0, 64);
    s.cq[1].wait(&mut s.rig, 1, 100 * MS);
    assert!(s.nq.peek(&s.rig, 1).is_none(), "one event per arming");
    assert_eq!(s.rig.world.nic_state(1).roce.srq_limit_events, 1);
}
