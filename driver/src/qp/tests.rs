//! Queue pairs against the fake function's firmware: the commands that make, connect and
//! destroy them, the WQEs, table entries and doorbells of posting, and completions from CQEs
//! written where the NIC would write them.

use std::time::Duration;

use bnxt_hsi::hwrm::layouts::HwrmFuncBackingStoreQcapsV2Output;
use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use bnxt_hsi::roce::layouts::*;
use bnxt_hsi::roce::msn::MsnEntry;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use super::*;
use crate::testing::machine::FakeMachine;
use crate::testing::roce_fw::RoceCmd;
use bnxt_pci::Clock;

const CREATE_QP: u8 = 0x01;
const DESTROY_QP: u8 = 0x02;
const MODIFY_QP: u8 = 0x03;
const CREATE_CQ: u8 = 0x09;
const DESTROY_CQ: u8 = 0x0a;

struct Rig {
    m: FakeMachine,
    nic: Nic,
    mark: usize,
}

impl Rig {
    fn new() -> Rig {
        let m = FakeMachine::new(1);
        let nic = Nic::open(&m, 0).unwrap();
        let mark = m.f(0).roce_commands().len();
        Rig { m, nic, mark }
    }

    fn since(&self) -> Vec<RoceCmd> {
        self.m.f(0).roce_commands()[self.mark..].to_vec()
    }

    fn u64_at(&self, addr: u64) -> u64 {
        u64::from_le_bytes(self.m.f(0).dma_read(addr, 8).try_into().unwrap())
    }

    /// Bus address of byte `offset` of a level-1 ring whose table is at `pbl`.
    fn ring_addr(&self, pbl: u64, offset: u64) -> u64 {
        (self.u64_at(pbl + (offset / 4096) * 8) & !0xfff) + offset % 4096
    }

    fn doorbells(&self) -> Vec<Doorbell> {
        self.m.f(0).doorbells().iter().map(|(_, _, v)| Doorbell::decode(*v).unwrap()).collect()
    }
}

/// The commands that made a queue pair: its two CREATE_CQs and CREATE_QP.
struct Made {
    scq: CmdqCreateCq,
    rcq: CmdqCreateCq,
    qp: CmdqCreateQp,
}

fn made(cmds: &[RoceCmd]) -> Made {
    let cqs: Vec<CmdqCreateCq> = cmds.iter().filter(|c| c.opcode == CREATE_CQ).map(|c| c.parse()).collect();
    let qp = cmds.iter().find(|c| c.opcode == CREATE_QP).unwrap().parse();
    Made { scq: cqs[0], rcq: cqs[1], qp }
}

fn pair(rig: &Rig) -> (Qp, Qp) {
    let mut a = Qp::make(&rig.nic).unwrap();
    let mut b = Qp::make(&rig.nic).unwrap();
    let (ea, eb) = (a.endpoint(), b.endpoint());
    a.connect(&eb).unwrap();
    b.connect(&ea).unwrap();
    (a, b)
}

/// Write a CQE at entry `i` of the CQ that `cq` made, with the first pass's toggle.
fn write_cqe(rig: &Rig, cq: &CmdqCreateCq, i: u64, mut cqe: [u8; 32]) {
    cqe[0x18] |= 1;
    let addr = rig.ring_addr(cq.pbl.get(), i * 32);
    rig.m.f(0).dma_write(addr, &cqe);
}

fn req_cqe(handle: u64, sq_cons: u16, status: u8) -> [u8; 32] {
    let mut c = CqReq::new_zeroed();
    c.qp_handle = handle.into();
    c.sq_cons_idx = sq_cons.into();
    c.cqe_type_toggle = CqReq::CQE_TYPE_REQ;
    c.status = status;
    c.as_bytes().try_into().unwrap()
}

fn res_cqe(handle: u64, wr_id: u32, len: u32, status: u8) -> [u8; 32] {
    let mut c = CqResRc::new_zeroed();
    c.qp_handle = handle.into();
    c.srq_or_rq_wr_id = wr_id.into();
    c.length = len.into();
    c.cqe_type_toggle = CqResRc::CQE_TYPE_RES_RC;
    c.status = status;
    c.as_bytes().try_into().unwrap()
}

#[test]
fn make_creates_two_cqs_then_an_rc_qp_and_takes_it_to_init() {
    let rig = Rig::new();
    let qp = Qp::make(&rig.nic).unwrap();
    let cmds = rig.since();
    assert_eq!(cmds.iter().map(|c| c.opcode).collect::<Vec<_>>(), [CREATE_CQ, CREATE_CQ, CREATE_QP, MODIFY_QP]);
    let made = made(&cmds);
    for cq in [&made.scq, &made.rcq] {
        assert_eq!(cq.cq_size.get(), 4097, "a full ring's completions and the terminal entry");
        assert_eq!(cq.pg_size_lvl.get(), 1, "4-KB pages, one-level table");
        assert_eq!(cq.cq_fco_cnq_id.get(), 4, "the RoCE NQ's ring id (after the L2 rings and the CREQ)");
        assert_eq!(cq.dpi.get(), 16);
        let last = rig.u64_at(cq.pbl.get() + 63 * 8);
        assert_eq!(last & 0x7, 0x3, "8192 entries of 32 bytes in 64 pages, the last marked");
    }
    assert_ne!(made.scq.cq_handle.get(), made.rcq.cq_handle.get());
    let q = made.qp;
    assert_eq!((q.type_, q.sq_size.get(), q.rq_size.get()), (CmdqCreateQp::TYPE_RC, 4096, 4096));
    assert_eq!(q.qp_flags.get(), 0x4 | 0x8 | 0x2, "RESERVED_LKEY, FR_PMR, FORCE_COMPLETION");
    assert_eq!((q.sq_pg_size_sq_lvl, q.rq_pg_size_rq_lvl), (1, 1));
    assert_eq!((q.scq_cid.get(), q.rcq_cid.get(), q.pd_id.get(), q.dpi.get()), (1, 2, 0, 16));
    assert_eq!(
        (q.sq_fwo_sq_sge.get(), q.rq_fwo_rq_sge.get()),
        (1, 6),
        "one SGE a send, the device's six a static receive"
    );
    assert_eq!((q.orrq_addr.get() & 0xfff, q.irrq_addr.get() & 0xfff), (0, 0));
    assert!(q.orrq_addr.get() != 0 && q.irrq_addr.get() != 0);
    // The SQ: 32 Ki slots (128 pages), then the 4096-entry MSN table (8 pages), the last marked.
    assert_eq!(rig.u64_at(q.sq_pbl.get() + 135 * 8) & 0x7, 0x3);
    assert_eq!(rig.u64_at(q.sq_pbl.get() + 136 * 8), 0);
    let init: CmdqModifyQp = cmds[3].parse();
    assert_eq!((init.qp_cid.get(), init.network_type_en_sqd_async_notify_new_state), (0x100, 1));
    // Both CQs were enabled for arming.
    let armena: Vec<u32> = rig.doorbells().iter().filter(|d| d.ty == DbType::CqArmEna).map(|d| d.xid).collect();
    assert_eq!(armena, [1, 2]);
    assert_eq!(qp.endpoint().qpn, 0x100);
    assert_eq!(qp.endpoint().mac, rig.nic.identity().mac);
    assert_eq!((qp.room(Side::Send), qp.room(Side::Receive)), (4095, 4095));
}

#[test]
fn connect_moves_to_rtr_then_rts_with_each_others_numbers() {
    let rig = Rig::new();
    let (a, b) = pair(&rig);
    let modifies: Vec<CmdqModifyQp> = rig.since().iter().filter(|c| c.opcode == MODIFY_QP).map(|c| c.parse()).collect();
    // INIT, INIT for the two makes; then a's RTR, RTS; then b's.
    assert_eq!(modifies.len(), 6);
    let (rtr, rts) = (&modifies[2], &modifies[3]);
    assert_eq!((rtr.qp_cid.get(), rtr.network_type_en_sqd_async_notify_new_state & 0xf), (a.endpoint().qpn, 2));
    assert_eq!((rtr.dest_qp_id.get(), rtr.rq_psn.get()), (b.endpoint().qpn, b.endpoint().psn));
    assert_eq!(rtr.dest_mac.as_bytes(), &rig.nic.identity().mac[..]);
    assert_eq!((rts.network_type_en_sqd_async_notify_new_state & 0xf, rts.sq_psn.get()), (3, a.endpoint().psn));
}

#[test]
fn a_send_is_a_wqe_an_msn_entry_and_one_sq_doorbell() {
    let rig = Rig::new();
    let (mut a, _b) = pair(&rig);
    let made = made(&rig.since());
    let r = Region::host(&rig.nic, 3 * 4096).unwrap();
    let dbs = rig.doorbells().len();
    a.send(&r, 100, 4097);
    let sq = made.qp.sq_pbl.get();
    let hdr = SqSendHdr::read_from_bytes(&rig.m.f(0).dma_read(rig.ring_addr(sq, 0), 32)).unwrap();
    assert_eq!((hdr.wqe_type, hdr.flags, hdr.wqe_size, hdr.length.get()), (0, 1, 3, 4097));
    let sge = SqSge::read_from_bytes(&rig.m.f(0).dma_read(rig.ring_addr(sq, 32), 16)).unwrap();
    assert_eq!((sge.l_key.get(), sge.size.get()), (r.key(), 4097));
    let msn = MsnEntry::decode(rig.u64_at(rig.ring_addr(sq, 512 * 1024)));
    let psn = a.endpoint().psn;
    assert_eq!(msn, MsnEntry { start_psn: psn, next_psn: (psn + 2) & 0xff_ffff, start_slot: 0 });
    let new: Vec<Doorbell> = rig.doorbells()[dbs..].to_vec();
    assert_eq!(new, [Doorbell::roce(DbType::Sq, a.endpoint().qpn, 1, false, 0)], "one store");
    // The second WQE starts at slot 8, its MSN entry next, its PSN after the first's.
    a.send(&r, 0, 0);
    let second = MsnEntry::decode(rig.u64_at(rig.ring_addr(sq, 512 * 1024 + 8)));
    assert_eq!(second, MsnEntry { start_psn: (psn + 2) & 0xff_ffff, next_psn: (psn + 3) & 0xff_ffff, start_slot: 8 });
    assert_eq!(rig.doorbells().last().unwrap().index, 2);
}

#[test]
fn completions_come_from_cqes_in_order_and_free_slots_when_taken() {
    let rig = Rig::new();
    let (mut a, mut b) = pair(&rig);
    let made_a = made(&rig.since()[..4]);
    let made_b = made(&rig.since()[4..8]);
    let r = Region::host(&rig.nic, 4096).unwrap();
    b.receive(&r, 0, 4096);
    let rq = made_b.qp.rq_pbl.get();
    let rwqe = RqWqeHdr::read_from_bytes(&rig.m.f(0).dma_read(rig.ring_addr(rq, 0), 32)).unwrap();
    assert_eq!((rwqe.wqe_type, rwqe.wqe_size, rwqe.wr_id[0].get()), (0x80, 3, 0));
    assert_eq!(
        *rig.doorbells().last().unwrap(),
        Doorbell::roce(DbType::Rq, b.endpoint().qpn, 1, false, 0),
        "RQ producer in WQEs"
    );
    for _ in 0..3 {
        a.send(&r, 0, 10);
    }
    assert_eq!(a.poll(Side::Send), None);
    // One aggregated CQE: the SQ got to entry 2.
    write_cqe(&rig, &made_a.scq, 0, req_cqe(made_a.qp.qp_handle.get(), 2, 0));
    assert_eq!(a.room(Side::Send), 4092);
    assert_eq!(a.poll(Side::Send), Some(Completion { bytes: 10, status: Status::Ok }));
    assert_eq!(a.room(Side::Send), 4093);
    assert_eq!(a.poll(Side::Send), Some(Completion { bytes: 10, status: Status::Ok }));
    assert_eq!(a.poll(Side::Send), None, "the third is not done yet");
    let cq_db = rig.doorbells().into_iter().rfind(|d| d.ty == DbType::Cq).unwrap();
    assert_eq!((cq_db.xid, cq_db.index, cq_db.epoch), (made_a.qp.scq_cid.get(), 1, false));
    // The receive completes with the length that arrived.
    write_cqe(&rig, &made_b.rcq, 0, res_cqe(made_b.qp.qp_handle.get(), 0, 7, 0));
    assert_eq!(b.poll(Side::Receive), Some(Completion { bytes: 7, status: Status::Ok }));
}

#[test]
fn an_error_completes_the_entry_it_names_and_flushes_the_rest_of_both_rings() {
    let rig = Rig::new();
    let (mut a, _b) = pair(&rig);
    let made_a = made(&rig.since()[..4]);
    let r = Region::host(&rig.nic, 4096).unwrap();
    a.receive(&r, 0, 64);
    for _ in 0..3 {
        a.send(&r, 0, 64);
    }
    write_cqe(&rig, &made_a.scq, 0, req_cqe(made_a.qp.qp_handle.get(), 2, CqReq::STATUS_TRANSPORT_RETRY_CNT_ERR));
    let got: Vec<Status> = std::iter::from_fn(|| a.poll(Side::Send)).map(|c| c.status).collect();
    assert_eq!(got, [Status::Ok, Status::RetryExceeded, Status::Flushed]);
    assert_eq!(a.poll(Side::Receive), Some(Completion { bytes: 0, status: Status::Flushed }));
    // Posting in the error state reaches nothing and completes flushed.
    let dbs = rig.doorbells().len();
    a.send(&r, 0, 1);
    assert_eq!(rig.doorbells().len(), dbs);
    assert_eq!(a.poll(Side::Send).unwrap().status, Status::Flushed);
}

#[test]
fn a_full_ring_has_no_room_and_the_producer_wraps_with_its_epoch() {
    let rig = Rig::new();
    let (mut a, _b) = pair(&rig);
    let made_a = made(&rig.since()[..4]);
    let r = Region::host(&rig.nic, 4096).unwrap();
    for _ in 0..4095 {
        a.send(&r, 0, 1);
    }
    assert_eq!(a.room(Side::Send), 0);
    let full = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| a.send(&r, 0, 1)));
    let msg = *full.unwrap_err().downcast::<String>().unwrap();
    assert_eq!(msg, "BNXT: send on a full send ring (4095 entries outstanding)");
    write_cqe(&rig, &made_a.scq, 0, req_cqe(made_a.qp.qp_handle.get(), 4095, 0));
    for _ in 0..4095 {
        assert_eq!(a.poll(Side::Send).unwrap().status, Status::Ok);
    }
    a.send(&r, 0, 1);
    let db = *rig.doorbells().last().unwrap();
    assert_eq!((db.index, db.epoch), (0, true), "the 4096th WQE wraps the producer");
    a.send(&r, 0, 1);
    assert_eq!(rig.doorbells().last().unwrap().index, 1);
    // The MSN table wrapped too: its last entry describes WQE 4095 (slot 32760), its first now
    // WQE 4096, back at slot 0, 4096 one-packet messages after the first PSN.
    let sq = made_a.qp.sq_pbl.get();
    let last = MsnEntry::decode(rig.u64_at(rig.ring_addr(sq, 512 * 1024 + 4095 * 8)));
    assert_eq!(last.start_slot, 32_760);
    let first = MsnEntry::decode(rig.u64_at(rig.ring_addr(sq, 512 * 1024)));
    assert_eq!((first.start_slot, first.start_psn), (0, (a.endpoint().psn + 4096) & 0xff_ffff));
}

#[test]
fn destroy_destroys_the_qp_then_its_cqs_frees_its_memory_and_answers_twice() {
    let rig = Rig::new();
    let live = rig.m.f(0).dma_live();
    let mut qp = Qp::make(&rig.nic).unwrap();
    let mark = rig.m.f(0).roce_commands().len();
    assert!(rig.m.f(0).dma_live() > live);
    assert_eq!(qp.destroy(), Ok(()));
    let cmds: Vec<RoceCmd> = rig.m.f(0).roce_commands()[mark..].to_vec();
    assert_eq!(cmds.iter().map(|c| c.opcode).collect::<Vec<_>>(), [DESTROY_QP, DESTROY_CQ, DESTROY_CQ]);
    assert_eq!(cmds[0].parse::<CmdqDestroyQp>().qp_cid.get(), 0x100);
    assert_eq!(rig.m.f(0).dma_live(), live);
    assert_eq!(qp.destroy(), Ok(()));
    assert_eq!(rig.m.f(0).roce_commands().len(), mark + 3);
    assert_eq!(qp.room(Side::Send), 4095, "room still answers");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| qp.poll(Side::Send)));
    assert_eq!(*r.unwrap_err().downcast::<String>().unwrap(), "BNXT: poll on a destroyed queue pair");
}

#[test]
fn close_destroys_queue_pairs_still_open_and_frees_their_memory() {
    let mut rig = Rig::new();
    let (a, b) = pair(&rig);
    let mark = rig.m.f(0).roce_commands().len();
    rig.nic.close();
    let ops: Vec<u8> = rig.m.f(0).roce_commands()[mark..].iter().map(|c| c.opcode).collect();
    assert_eq!(&ops[..6], [DESTROY_QP, DESTROY_CQ, DESTROY_CQ, DESTROY_QP, DESTROY_CQ, DESTROY_CQ]);
    assert_eq!(rig.m.f(0).dma_live(), 0);
    assert_eq!(a.endpoint().qpn, 0x100, "the endpoint still answers");
    let sent = rig.m.f(0).roce_commands().len();
    drop((a, b));
    assert_eq!(rig.m.f(0).roce_commands().len(), sent);
}

#[test]
#[should_panic(expected = "BNXT: send on a queue pair that is not connected")]
fn a_send_before_connect_panics() {
    let rig = Rig::new();
    let mut qp = Qp::make(&rig.nic).unwrap();
    let r = Region::host(&rig.nic, 4096).unwrap();
    qp.send(&r, 0, 1);
}

#[test]
#[should_panic(expected = "BNXT: read over a queue pair connected to another NIC's")]
fn a_read_needs_a_peer_on_the_same_nic() {
    let rig = Rig::new();
    let mut qp = Qp::make(&rig.nic).unwrap();
    let mut far = qp.endpoint();
    far.mac[5] ^= 1;
    qp.connect(&far).unwrap();
    let r = Region::host(&rig.nic, 4096).unwrap();
    qp.read(&r, 0, &r, 2048, 16);
}

#[test]
fn a_read_names_the_source_region_by_address_and_key() {
    let rig = Rig::new();
    let (mut a, _b) = pair(&rig);
    let made_a = made(&rig.since()[..4]);
    let dst = Region::host(&rig.nic, 4096).unwrap();
    let src = Region::host(&rig.nic, 8192).unwrap();
    a.read(&dst, 16, &src, 4000, 200);
    let w = rig.m.f(0).dma_read(rig.ring_addr(made_a.qp.sq_pbl.get(), 0), 48);
    let hdr = SqRdmaHdr::read_from_bytes(&w[..32]).unwrap();
    assert_eq!((hdr.wqe_type, hdr.length.get(), hdr.remote_key.get()), (6, 200, src.key()));
    let src_va = src.sge(&rig.nic.roce().clone(), "t", 0, 0).va;
    assert_eq!(hdr.remote_va.get(), src_va + 4000);
    assert_eq!(SqSge::read_from_bytes(&w[32..48]).unwrap().l_key.get(), dst.key());
}

#[test]
fn waiting_costs_time_on_the_nics_clock() {
    let rig = Rig::new();
    let (mut a, _b) = pair(&rig);
    let t = rig.m.f(0).now();
    assert_eq!(a.wait(Side::Send, Duration::from_millis(3)), None);
    assert_eq!(rig.m.f(0).now() - t, Duration::from_millis(3));
}

#[test]
fn queue_pairs_past_the_limit_of_the_open_are_refused() {
    // A firmware offering 70 QP contexts, 66 of them its own: four for the driver.
    let m = FakeMachine::patched(|ty, b| {
        if ty == 0x1a8 && b[8] == 0 {
            let mut r = HwrmFuncBackingStoreQcapsV2Output::read_from_bytes(b).unwrap();
            r.max_num_entries = 70.into();
            b.copy_from_slice(r.as_bytes());
        }
    });
    let nic = Nic::open(&m, 0).unwrap();
    assert_eq!(nic.limits().qps, 4);
    let mut qps: Vec<Qp> = (0..4).map(|_| Qp::make(&nic).unwrap()).collect();
    let err = Qp::make(&nic).unwrap_err();
    assert_eq!(err, Error::Limit { nic: "BNXT".into(), what: "queue pairs".into(), limit: 4 });
    qps[0].destroy().unwrap();
    Qp::make(&nic).unwrap();
}

#[test]
fn the_halves_of_a_queue_pair_run_on_two_threads() {
    fn check<T: Send>() {}
    check::<SendQueue>();
    check::<RecvQueue>();
    check::<Qp>();
    let rig = Rig::new();
    let (mut a, _b) = pair(&rig);
    let r = Region::host(&rig.nic, 4096).unwrap();
    let (sq, rq) = a.split();
    std::thread::scope(|s| {
        s.spawn(|| sq.send(&r, 0, 8));
        s.spawn(|| rq.receive(&r, 8, 8));
    });
    assert_eq!((a.room(Side::Send), a.room(Side::Receive)), (4094, 4094));
}

/// A small fixed generator (splitmix64), so each case reproduces by its seed.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[test]
fn cqes_of_a_hostile_device_never_panic_nor_complete_more_than_was_posted() {
    // CQEs as a broken or malicious card might write them: random bytes (the toggle valid, so
    // the driver takes them), or well-formed ones naming another QP, a consumer index past what
    // was posted, an unknown type or any status. Polling must not panic, must complete no more
    // work requests than were posted on either side, and must keep the rings' room within
    // their size.
    for seed in 0..200u64 {
        let mut s = seed.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let rig = Rig::new();
        let (mut a, _b) = pair(&rig);
        let made_a = made(&rig.since()[..4]);
        let r = Region::host(&rig.nic, 4096).unwrap();
        let (sends, receives) = (1 + splitmix(&mut s) % 8, 1 + splitmix(&mut s) % 8);
        for _ in 0..sends {
            a.send(&r, 0, 64);
        }
        for _ in 0..receives {
            a.receive(&r, 0, 64);
        }
        let (sq_room, rq_room) = (a.room(Side::Send), a.room(Side::Receive));
        let handle = made_a.qp.qp_handle.get();
        for i in 0..1 + splitmix(&mut s) % 6 {
            let mut cqe = [0u8; 32];
            for chunk in cqe.chunks_mut(8) {
                chunk.copy_from_slice(&splitmix(&mut s).to_le_bytes());
            }
            let status = splitmix(&mut s) as u8;
            let cqe = match splitmix(&mut s) % 4 {
                0 => cqe,
                1 => req_cqe(handle, splitmix(&mut s) as u16, status),
                2 => res_cqe(handle, splitmix(&mut s) as u32, splitmix(&mut s) as u32, status),
                _ => req_cqe(splitmix(&mut s), (splitmix(&mut s) % 4096) as u16, status),
            };
            let cq = if splitmix(&mut s).is_multiple_of(2) { &made_a.scq } else { &made_a.rcq };
            write_cqe(&rig, cq, i, cqe);
        }
        let done_sq = std::iter::from_fn(|| a.poll(Side::Send)).take(100).count() as u64;
        let done_rq = std::iter::from_fn(|| a.poll(Side::Receive)).take(100).count() as u64;
        assert!(done_sq <= sends, "seed {seed}: {done_sq} send completions for {sends} sends");
        assert!(done_rq <= receives, "seed {seed}: {done_rq} receive completions for {receives} receives");
        assert!(a.room(Side::Send) <= sq_room + sends as usize && a.room(Side::Receive) <= rq_room + receives as usize);
    }
}

/// The RoCE NQ's RING_ALLOC (the fifth: after the L2 side's three and the CREQ).
fn roce_nq(rig: &Rig) -> bnxt_hsi::hwrm::layouts::HwrmRingAllocInput {
    rig.m
        .f(0)
        .submissions()
        .iter()
        .filter(|s| crate::testing::req_type(&s.request) == 0x50)
        .map(|s| crate::testing::parse(&s.request))
        .nth(4)
        .unwrap()
}

/// Write NQ entry `i` of the RoCE NQ with the first pass's valid bit.
fn write_nqe(rig: &Rig, i: u64, ty: u16) {
    let nq = roce_nq(rig);
    let mut e = [0u8; 16];
    e[..2].copy_from_slice(&ty.to_le_bytes());
    e[8] = 1;
    rig.m.f(0).dma_write(rig.ring_addr(nq.page_tbl_addr.get(), i * 16), &e);
}

#[test]
fn a_whole_pass_of_nq_entries_is_taken_and_the_next_pass_is_told_by_its_flipped_valid_bit() {
    let rig = Rig::new();
    let (mut a, _b) = pair(&rig);
    let nq = roce_nq(&rig);
    let (entries, table) = (u64::from(nq.length.get()), nq.page_tbl_addr.get());
    // Every entry of the ring written in the first pass (valid bit 1), a page at a time.
    let mut page = [0u8; 4096];
    for e in page.chunks_mut(16) {
        e[..2].copy_from_slice(&NqBase::TYPE_CQ_NOTIFICATION.to_le_bytes());
        e[8] = 1;
    }
    for at in (0..entries * 16).step_by(4096) {
        rig.m.f(0).dma_write(rig.ring_addr(table, at), &page);
    }
    assert_eq!(a.poll(Side::Send), None);
    let counts = rig.nic.roce().nq_counts().unwrap();
    assert_eq!(counts.cq_notifications, entries, "the whole ring taken in one service");
    let arms: Vec<(u32, bool)> =
        rig.doorbells().iter().filter(|d| d.ty == DbType::NqArm && d.xid == 4).map(|d| (d.index, d.epoch)).collect();
    assert_eq!(arms, [(0, false), (0, true)], "re-armed at the wrapped consumer, its epoch flipped");
    // The first entry again, as the firmware writes it in the second pass (valid bit 0).
    let mut e = [0u8; 16];
    e[..2].copy_from_slice(&NqBase::TYPE_DBQ_EVENT.to_le_bytes());
    rig.m.f(0).dma_write(rig.ring_addr(table, 0), &e);
    assert_eq!(a.poll(Side::Receive), None);
    assert_eq!(rig.nic.roce().nq_counts().unwrap().dbq_events, 1);
    assert_eq!(
        rig.doorbells().iter().rfind(|d| d.xid == 4).map(|d| (d.ty, d.index, d.epoch)),
        Some((DbType::NqArm, 1, true))
    );
}

#[test]
fn polling_services_the_nq_taking_its_entries_and_rearming_it_at_the_new_consumer() {
    let rig = Rig::new();
    let (mut a, _b) = pair(&rig);
    let nq_arms = |rig: &Rig| -> Vec<u32> {
        rig.doorbells().iter().filter(|d| d.ty == DbType::NqArm && d.xid == 4).map(|d| d.index).collect()
    };
    assert_eq!(nq_arms(&rig), [0], "armed once at start");
    assert_eq!(a.poll(Side::Send), None);
    assert_eq!(nq_arms(&rig), [0], "an empty NQ is not rung again");

    write_nqe(&rig, 0, NqBase::TYPE_CQ_NOTIFICATION);
    write_nqe(&rig, 1, NqBase::TYPE_DBQ_EVENT);
    write_nqe(&rig, 2, 0x3e);
    assert_eq!(a.poll(Side::Receive), None);
    assert_eq!(nq_arms(&rig), [0, 3], "consumed three, re-armed at the consumer");
    let counts = rig.nic.roce().nq_counts().unwrap();
    assert_eq!((counts.cq_notifications, counts.dbq_events, counts.other, counts.srq_events), (1, 1, 1, 0));
    assert_eq!(a.poll(Side::Send), None);
    assert_eq!(nq_arms(&rig), [0, 3], "nothing new");

    // At close the consumer is written without arming, before the NQ's RING_FREE.
    let mut nic = rig.nic;
    drop((a, _b));
    nic.close();
    let last: Vec<Doorbell> = rig.m.f(0).doorbells().iter().map(|(_, _, v)| Doorbell::decode(*v).unwrap()).collect();
    let stop = last.iter().rposition(|d| d.xid == 4 && d.path == bnxt_hsi::roce::doorbell::DbPath::Roce).unwrap();
    assert_eq!((last[stop].ty, last[stop].index), (DbType::Nq, 3));
}
