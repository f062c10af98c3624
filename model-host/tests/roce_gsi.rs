//! The GSI QP (QP1) as bnxt_re creates it on P7 for ib_mad: CREATE_QP of type GSI, the UD state
//! machine ib_mad walks it through, QUERY_QP and DESTROY_QP; MADs carried between the QP1s of two
//! NICs and to and from another RoCE v2 stack on the segment as UD SEND Only packets (BTH with
//! the default P_Key, DETH with the GSI Q_Key and source QP 1), received with the `cq_res_ud`
//! fields bnxt_re reads; and the send queue error state SQE with ib_mad's recovery, SQE→RTS.

mod common;
mod roce_support;

use std::time::Duration;

use bnxt_hsi::roce::layouts::*;
use bnxt_hsi::roce::qp::QpState;
use bnxt_model::events::EventKind;
use bnxt_model::net::bth::BthRepr;
use bnxt_model::net::ext::DethRepr;
use bnxt_model::net::roce::{Path, Transport, build_frame};
use bnxt_model::net::{MacAddr, Opcode, RoceFrame};
use common::Rig;
use roce_support::*;
use zerocopy::{FromBytes, FromZeros};

/// ib_mad's Q_Key of QP1 (Linux rdma/ib_mad.h `IB_QP1_QKEY`).
const QP1_QKEY: u32 = 0x8001_0000;
const MS: Duration = Duration::from_millis(1);

type M = CmdqModifyQp;

fn up(rig: &mut Rig, nic: usize) -> (Func, TCq) {
    let mut f = Func::bring_up(rig, nic, 1024, 256);
    f.initialize(rig);
    let nq = nq_ring(rig, nic, &mut f.pages, 64, 1);
    let cq = f.create_cq(rig, 64, nq.id);
    (f, cq)
}

fn modify(qp: u32, state: u8, mask: u32) -> M {
    let mut m = M::new_zeroed();
    m.qp_cid = qp.into();
    m.modify_mask = (M::MODIFY_MASK_STATE | mask).into();
    m.network_type_en_sqd_async_notify_new_state = state;
    m
}

#[test]
fn the_gsi_qp_is_qp1_and_walks_the_ud_state_machine_ib_mad_asks_for() {
    let mut rig = Rig::new(1);
    let (mut f, cq) = up(&mut rig, 0);
    let (req, _) = f.gsi_request(&rig, Rings::fixed(128, 512), &cq);
    let qp = f.ok(&mut rig, req).xid;
    assert_eq!(qp, 1, "the firmware names the GSI QP QP1");
    assert_eq!(f.call(&mut rig, req).status, RESOURCES, "one GSI QP per function");
    assert!(last_refusal(&mut rig).unwrap().contains("already"));
    // RC QPs keep their own numbers and limits beside it.
    let rc = f.create_qp(&mut rig, Rings::fixed(16, 16), &cq);
    assert!(rc.id >= 20);
    // RESET→INIT needs PKEY and QKEY (no ACCESS, unlike RC).
    assert_eq!(f.call(&mut rig, modify(qp, M::NEW_STATE_INIT, M::MODIFY_MASK_PKEY)).status, INVALID_PARAMETER);
    assert!(last_refusal(&mut rig).unwrap().contains("QKEY"));
    let mut rc_type = modify(qp, M::NEW_STATE_INIT, M::MODIFY_MASK_PKEY | M::MODIFY_MASK_QKEY);
    rc_type.qp_type = M::QP_TYPE_RC;
    assert_eq!(f.call(&mut rig, rc_type).status, INVALID_PARAMETER, "qp_type RC on the GSI QP");
    let mut init = modify(qp, M::NEW_STATE_INIT, M::MODIFY_MASK_PKEY | M::MODIFY_MASK_QKEY);
    init.qp_type = M::QP_TYPE_GSI;
    init.pkey = 0xffff.into();
    init.qkey = QP1_QKEY.into();
    f.ok(&mut rig, init);
    // INIT→RTR with nothing but the state (and what bnxt_re adds): no destination to resolve.
    assert_eq!(f.call(&mut rig, modify(qp, M::NEW_STATE_RTS, M::MODIFY_MASK_SQ_PSN)).status, INVALID_PARAMETER);
    f.ok(&mut rig, modify(qp, M::NEW_STATE_RTR, M::MODIFY_MASK_PATH_MTU | M::MODIFY_MASK_SGID_INDEX));
    // RTR→RTS needs SQ_PSN.
    assert_eq!(f.call(&mut rig, modify(qp, M::NEW_STATE_RTS, 0)).status, INVALID_PARAMETER);
    let mut rts = modify(qp, M::NEW_STATE_RTS, M::MODIFY_MASK_SQ_PSN);
    rts.sq_psn = 0x42.into();
    f.ok(&mut rig, rts);
    let mut qq = CmdqQueryQp::new_zeroed();
    qq.qp_cid = qp.into();
    let (c, sb) = f.query(&mut rig, qq, size_of::<CreqQueryQpRespSb>());
    assert_eq!(c.status, 0);
    let s = CreqQueryQpRespSb::read_from_bytes(&sb).unwrap();
    assert_eq!(s.en_sqd_async_notify_state & 0xf, M::NEW_STATE_RTS);
    assert_eq!((s.xid.get(), s.qkey.get(), s.pkey.get(), s.sq_psn.get()), (1, QP1_QKEY, 0xffff, 0x42));
    assert_eq!((s.sq_size.get(), s.rq_size.get()), (128, 512));
    // RTS→RTS and RTS→ERR→RESET as for any QP.
    f.ok(&mut rig, modify(qp, M::NEW_STATE_RTS, M::MODIFY_MASK_QKEY));
    assert_eq!(f.call(&mut rig, modify(qp, M::NEW_STATE_SQE, 0)).status, INVALID_PARAMETER, "SQE is not asked for");
    assert!(last_refusal(&mut rig).unwrap().contains("SQE"));
    f.ok(&mut rig, modify(qp, M::NEW_STATE_ERR, 0));
    assert_eq!(f.call(&mut rig, modify(qp, M::NEW_STATE_RTS, 0)).status, INVALID_PARAMETER, "ERR to RTS");
    f.ok(&mut rig, modify(qp, M::NEW_STATE_RESET, 0));
    let mut d = CmdqDestroyQp::new_zeroed();
    d.qp_cid = qp.into();
    f.ok(&mut rig, d);
    assert_eq!(f.call(&mut rig, d).status, INVALID_PARAMETER, "destroyed twice");
    let (req, _) = f.gsi_request(&rig, Rings::variable(256, 64), &cq);
    assert_eq!(f.ok(&mut rig, req).xid, 1, "QP1 again once the first is gone (variable WQE mode too)");
}

#[test]
fn create_checks_the_gsi_qps_rings_as_an_rc_qps_and_takes_no_msn_table_or_read_queues() {
    let mut rig = Rig::new(1);
    let (mut f, cq) = up(&mut rig, 0);
    // 32 static WQEs: the ring fills its one page.
    let (good, _) = f.gsi_request(&rig, Rings::fixed(32, 16), &cq);
    let bad = |edit: &dyn Fn(&mut CmdqCreateQp)| {
        let mut c = good;
        edit(&mut c);
        c
    };
    let cases: [(CmdqCreateQp, u8, &str); 5] = [
        (bad(&|c| c.sq_size = 0.into()), INVALID_PARAMETER, "sq_size 0"),
        (bad(&|c| c.rcq_cid = 3.into()), INVALID_PARAMETER, "no such CQ"),
        (bad(&|c| c.rq_fwo_rq_sge = 0.into()), INVALID_PARAMETER, "rq_sge 0"),
        (bad(&|c| c.sq_size = 33.into()), INVALID_PARAMETER, "the SQ memory holds 32 WQEs"),
        (bad(&|c| c.type_ = 3), 4, "QP type 3 is NOT_IMPLEMENTED"),
    ];
    for (c, want, what) in cases {
        assert_eq!(f.call(&mut rig, c).status, want, "{what}: {:?}", last_refusal(&mut rig));
    }
    // The SQ memory holds the ring alone: enough for the GSI QP, too little for an RC QP (MSN).
    f.ok(&mut rig, good);
    let mut rc = good;
    rc.type_ = CmdqCreateQp::TYPE_RC;
    rc.orrq_addr = f.pages.take(1).into();
    rc.irrq_addr = f.pages.take(1).into();
    assert_eq!(f.call(&mut rig, rc).status, INVALID_PARAMETER);
    assert!(last_refusal(&mut rig).unwrap().contains("MSN"));
}

/// A NIC with its GID, a CQ, QP1 in RTS with ib_mad's Q_Key, and a region for MADs.
struct Nic {
    f: Func,
    cq: TCq,
    qp1: TQp,
    sgid: u16,
    key: u32,
    buf: u64,
}

fn nic(rig: &mut Rig, n: usize) -> Nic {
    let (mut f, cq) = up(rig, n);
    let sgid = f.add_own_gid(rig);
    let (req, mut qp1) = f.gsi_request(rig, Rings::fixed(16, 16), &cq);
    qp1.id = f.ok(rig, req).xid;
    assert_eq!(qp1.id, 1);
    f.gsi_to_rts(rig, &qp1, QP1_QKEY, 0);
    let (key, buf) = f.region(rig, 8192, CmdqRegisterMr::ACCESS_LOCAL_WRITE);
    Nic { f, cq, qp1, sgid, key, buf }
}

/// A 256-byte MAD (a CM REQ's common header: base version 1, class 7, version 2, method 3).
fn mad(tid: u8) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    m[..4].copy_from_slice(&[1, 7, 2, 3]);
    m[8..16].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, tid]);
    for (i, b) in m.iter_mut().enumerate().skip(24) {
        *b = i as u8;
    }
    m
}

/// Check receive CQE `c` for a MAD from `src_mac`'s QP 1 into RQ WQE `wr_id`, as bnxt_re reads
/// it (qplib_fp.c `bnxt_qplib_cq_process_res_ud`, ib_verbs.c `bnxt_re_process_res_ud_wc`).
fn check_mad_cqe(c: &[u8; 32], wr_id: u32, src_mac: [u8; 6]) {
    assert_eq!(cqe_type(c) << 1, CqResUd::CQE_TYPE_RES_UD, "a UD receive CQE on the GSI QP (not RAWETH_QP1)");
    assert_eq!(cqe_status(c), 0);
    assert_eq!(u16::from_le_bytes([c[0], c[1]]), 40 + 256, "the GRH area and the MAD");
    assert_eq!(&c[16..22], &src_mac, "the sender's MAC (IB_WC_WITH_SMAC)");
    assert_eq!(u16::from_le_bytes([c[22], c[23]]), 1, "src_qp_low: QP 1");
    let word = u32::from_le_bytes(c[28..32].try_into().unwrap());
    assert_eq!((word & 0xf_ffff, word >> 24), (wr_id, 0), "the RQ wr_id and src_qp_high");
    let flags = u16::from_le_bytes([c[26], c[27]]);
    assert_eq!(flags & CqResUd::FLAGS_ROCE_IP_VER_MASK, CqResUd::FLAGS_ROCE_IP_VER_V2IPV4, "network header type");
}

/// Two NICs on a segment with QP1 in RTS, and NIC 0's AH to NIC 1.
fn two_nics() -> (Rig, Nic, Nic, u32) {
    let mut rig = Rig::with(2, 5, Default::default());
    let mut a = nic(&mut rig, 0);
    let b = nic(&mut rig, 1);
    let av = a.f.ok(&mut rig, create_ah(a.sgid, b.f.gid(), b.f.mac)).xid;
    (rig, a, b, av)
}

#[test]
fn a_mad_sent_on_qp1_of_one_nic_arrives_on_qp1_of_the_other_and_the_answer_comes_back() {
    let (mut rig, mut a, mut b, av) = two_nics();
    b.f.post_recv(&mut rig, &mut b.qp1, 4, &[(b.buf, b.key, 40 + 256)]);
    rig.poke(0, a.buf, &mad(0x11));
    // ib_mad's send: remote QPN 1, remote Q_Key IB_QP1_QKEY, signaled.
    post_ud(&mut a.f, &mut rig, &mut a.qp1, (a.buf, a.key, 256), (1, av, QP1_QKEY), None);
    let sent = a.cq.wait(&mut rig, 0, 10 * MS);
    assert_eq!((cqe_type(&sent), cqe_status(&sent)), (0, 0), "the MAD is sent");
    let got = b.cq.wait(&mut rig, 1, 10 * MS);
    check_mad_cqe(&got, 4, a.f.mac);
    let mem = rig.peek(1, b.buf, 40 + 256);
    assert_eq!((mem[20], mem[29]), (0x45, 17), "the IPv4 header in the GRH area's last 20 bytes");
    assert_eq!(&mem[32..36], &a.f.gid()[12..16], "from the sender's address (ib_init_ah_attr_from_wc)");
    assert_eq!(&mem[40..], &mad(0x11)[..], "the MAD after the GRH area");
    assert!(
        rig.world
            .take_events()
            .iter()
            .any(|e| matches!(&e.kind, EventKind::FrameSent { qp: 1, opcode: 0x64, psn: 0, .. })),
        "UD SEND Only from QP 1"
    );
    // The answer, through an AH made from what was received (ib_create_ah_from_wc).
    let back = b.f.ok(&mut rig, create_ah(b.sgid, a.f.gid(), got[16..22].try_into().unwrap())).xid;
    a.f.post_recv(&mut rig, &mut a.qp1, 7, &[(a.buf + 4096, a.key, 40 + 256)]);
    rig.poke(1, b.buf + 4096, &mad(0x12));
    post_ud(&mut b.f, &mut rig, &mut b.qp1, (b.buf + 4096, b.key, 256), (1, back, QP1_QKEY), None);
    assert_eq!(cqe_status(&b.cq.wait(&mut rig, 1, 10 * MS)), 0);
    let got = a.cq.wait(&mut rig, 0, 10 * MS);
    check_mad_cqe(&got, 7, b.f.mac);
    assert_eq!(&rig.peek(0, a.buf + 4096 + 40, 256)[..], &mad(0x12)[..]);
    for n in 0..2 {
        let st = rig.world.nic_state(n);
        assert_eq!((st.unimplemented, st.roce.ud_dropped), (0, 0), "NIC {n}");
    }
}

/// Another RoCE v2 stack on the segment (rdma_rxe, say): its MAC, address and GID.
const PEER_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x77];
const PEER_IP: [u8; 4] = [10, 0, 0, 0x77];

/// A MAD as another stack sends it to QP 1 at `dst`: UD SEND Only, P_Key 0xffff, DETH with
/// `qkey` and source QP 1.
fn foreign_mad(dst: ([u8; 6], [u8; 4]), qkey: u32, payload: &[u8]) -> Vec<u8> {
    let path = Path {
        src_mac: MacAddr(PEER_MAC),
        dst_mac: MacAddr(dst.0),
        src_ip: PEER_IP.into(),
        dst_ip: dst.1.into(),
        src_port: 0xc123,
    };
    let t = Transport {
        deth: Some(DethRepr { qkey, src_qp: 1 }),
        ..Transport::bth(BthRepr::new(Opcode::UdSendOnly, 1, 9))
    };
    let mut frame = Vec::new();
    build_frame(&path, &t, payload, &mut frame).unwrap();
    frame
}

#[test]
fn qp1_takes_another_stacks_mads_and_answers_with_gsi_datagrams_it_can_read() {
    let mut rig = Rig::new(1);
    let port = rig.world.add_external_port();
    let mut a = nic(&mut rig, 0);
    let ours = (a.f.mac, a.f.gid()[12..16].try_into().unwrap());
    for wr in 0..2 {
        a.f.post_recv(&mut rig, &mut a.qp1, wr, &[(a.buf + u64::from(wr) * 512, a.key, 40 + 256)]);
    }
    // A datagram to QP 1 with a Q_Key other than the GSI's is not a MAD: dropped (IBA §10.2.4).
    rig.world.send_external(port, foreign_mad(ours, 0x1234_5678, &mad(1))).unwrap();
    run_until(&mut rig, 10 * MS, |rig| rig.world.nic_state(0).roce.ud_dropped > 0);
    assert!(a.cq.peek(&rig, 0).is_none());
    rig.world.send_external(port, foreign_mad(ours, QP1_QKEY, &mad(2))).unwrap();
    let got = a.cq.wait(&mut rig, 0, 10 * MS);
    check_mad_cqe(&got, 0, PEER_MAC);
    assert_eq!(&rig.peek(0, a.buf + 40, 256)[..], &mad(2)[..]);
    assert_eq!(&rig.peek(0, a.buf + 32, 4)[..], &PEER_IP, "the sender's address in the GRH area");
    // The answer, to the peer's GID and MAC.
    let mut peer_gid = [0u8; 16];
    peer_gid[10..12].copy_from_slice(&[0xff, 0xff]);
    peer_gid[12..].copy_from_slice(&PEER_IP);
    let av = a.f.ok(&mut rig, create_ah(a.sgid, peer_gid, PEER_MAC)).xid;
    rig.poke(0, a.buf + 4096, &mad(3));
    post_ud(&mut a.f, &mut rig, &mut a.qp1, (a.buf + 4096, a.key, 256), (1, av, QP1_QKEY), None);
    assert_eq!(cqe_status(&a.cq.wait(&mut rig, 0, 10 * MS)), 0);
    let mut out = Vec::new();
    run_until(&mut rig, 10 * MS, |rig| {
        out.extend(rig.world.take_external_frames(port));
        !out.is_empty()
    });
    let f = RoceFrame::parse(&out[0]).expect("a well-formed RoCE v2 frame with a good ICRC");
    assert_eq!((f.eth.dst.0, f.ip.dst.octets(), f.udp.dst_port), (PEER_MAC, PEER_IP, 4791));
    let bth = &f.transport.bth;
    assert_eq!((bth.opcode, bth.dest_qp, bth.pkey), (Opcode::UdSendOnly, 1, 0xffff), "to QP 1, default P_Key");
    assert_eq!(f.transport.deth, Some(DethRepr { qkey: QP1_QKEY, src_qp: 1 }), "the GSI Q_Key, from QP 1");
    assert_eq!(f.payload, &mad(3)[..]);
}

#[test]
fn a_failed_mad_send_takes_qp1_to_sqe_where_receives_go_on_until_sqe_to_rts_sends_again() {
    let (mut rig, mut a, mut b, av) = two_nics();
    rig.poke(0, a.buf, &mad(5));
    // An AV id that names no AH: the send fails and QP1 enters SQE (IBA §10.3.1).
    post_ud(&mut a.f, &mut rig, &mut a.qp1, (a.buf, a.key, 256), (1, av + 5, QP1_QKEY), None);
    let c = a.cq.wait(&mut rig, 0, 10 * MS);
    assert_eq!(cqe_status(&c), CqReq::STATUS_LOCAL_QP_OPERATION_ERR);
    let state = |rig: &Rig| rig.world.device(0).roce().state().qps[&1].state;
    assert_eq!(state(&rig), QpState::Sqe);
    let mut qq = CmdqQueryQp::new_zeroed();
    qq.qp_cid = 1.into();
    let (_, sb) = a.f.query(&mut rig, qq, size_of::<CreqQueryQpRespSb>());
    assert_eq!(CreqQueryQpRespSb::read_from_bytes(&sb).unwrap().en_sqd_async_notify_state & 0xf, M::NEW_STATE_SQE);
    assert!(
        !a.f.async_events.iter().any(|e| e.event == CreqQpErrorNotification::EVENT_QP_ERROR_NOTIFICATION),
        "the completion reports a send queue error; no QP error notification"
    );
    // In SQE a send completes flushed (ib_mad posts it again after the recovery).
    post_ud(&mut a.f, &mut rig, &mut a.qp1, (a.buf, a.key, 256), (1, av, QP1_QKEY), None);
    assert_eq!(cqe_status(&a.cq.wait(&mut rig, 0, 10 * MS)), CqReq::STATUS_WORK_REQUEST_FLUSHED_ERR);
    assert_eq!(rig.world.nic_state(0).roce.frames_sent, 0, "nothing went on the wire");
    // The receive queue goes on working in SQE.
    a.f.post_recv(&mut rig, &mut a.qp1, 3, &[(a.buf + 4096, a.key, 40 + 256)]);
    let back = b.f.ok(&mut rig, create_ah(b.sgid, a.f.gid(), a.f.mac)).xid;
    rig.poke(1, b.buf, &mad(6));
    post_ud(&mut b.f, &mut rig, &mut b.qp1, (b.buf, b.key, 256), (1, back, QP1_QKEY), None);
    check_mad_cqe(&a.cq.wait(&mut rig, 0, 10 * MS), 3, b.f.mac);
    b.cq.wait(&mut rig, 1, 10 * MS);
    // ib_mad's recovery: MODIFY_QP to RTS with the state alone; sends go out again.
    assert_eq!(a.f.call(&mut rig, modify(1, M::NEW_STATE_SQD, 0)).status, INVALID_PARAMETER, "SQE to SQD");
    a.f.ok(&mut rig, modify(1, M::NEW_STATE_RTS, 0));
    assert_eq!(state(&rig), QpState::Rts);
    b.f.post_recv(&mut rig, &mut b.qp1, 8, &[(b.buf + 4096, b.key, 40 + 256)]);
    post_ud(&mut a.f, &mut rig, &mut a.qp1, (a.buf, a.key, 256), (1, av, QP1_QKEY), None);
    assert_eq!(cqe_status(&a.cq.wait(&mut rig, 0, 10 * MS)), 0);
    check_mad_cqe(&b.cq.wait(&mut rig, 1, 10 * MS), 8, a.f.mac);
    assert_eq!(&rig.peek(1, b.buf + 4096 + 40, 256)[..], &mad(5)[..]);
    assert_eq!(rig.world.nic_state(0).unimplemented, 0);
}
