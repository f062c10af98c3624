//! The GSI QP (QP1) as bnxt_re creates it on P7 for ib_mad: CREATE_QP of type GSI, the UD state
//! machine ib_mad walks it through, QUERY_QP and DESTROY_QP; receives posted to it stay posted,
//! and a send rung on it (the MAD data path the model does not carry out) is refused loudly:
//! completed in error and counted as unimplemented, as is a MAD arriving from the wire.

mod common;
mod roce_support;

use std::time::Duration;

use bnxt_hsi::roce::layouts::*;
use bnxt_model::events::EventKind;
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
    let (req, _) = f.gsi_request(&rig, false, 128, 512, &cq, &cq);
    let qp = f.ok(&mut rig, req).xid;
    assert_eq!(qp, 1, "the firmware names the GSI QP QP1");
    assert_eq!(f.call(&mut rig, req).status, RESOURCES, "one GSI QP per function");
    assert!(last_refusal(&mut rig).unwrap().contains("already"));
    // RC QPs keep their own numbers and limits beside it.
    let rc = f.create_qp(&mut rig, false, 16, 16, &cq, &cq);
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
    f.ok(&mut rig, modify(qp, M::NEW_STATE_ERR, 0));
    assert_eq!(f.call(&mut rig, modify(qp, M::NEW_STATE_RTS, 0)).status, INVALID_PARAMETER, "ERR to RTS");
    f.ok(&mut rig, modify(qp, M::NEW_STATE_RESET, 0));
    let mut d = CmdqDestroyQp::new_zeroed();
    d.qp_cid = qp.into();
    f.ok(&mut rig, d);
    assert_eq!(f.call(&mut rig, d).status, INVALID_PARAMETER, "destroyed twice");
    let (req, _) = f.gsi_request(&rig, true, 256, 64, &cq, &cq);
    assert_eq!(f.ok(&mut rig, req).xid, 1, "QP1 again once the first is gone (variable WQE mode too)");
}

#[test]
fn create_checks_the_gsi_qps_rings_as_an_rc_qps_and_takes_no_msn_table_or_read_queues() {
    let mut rig = Rig::new(1);
    let (mut f, cq) = up(&mut rig, 0);
    // 32 static WQEs: the ring fills its one page.
    let (good, _) = f.gsi_request(&rig, false, 32, 16, &cq, &cq);
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
        (bad(&|c| c.type_ = CmdqCreateQp::TYPE_RAW_ETHERTYPE), 4, "raw Ethernet is NOT_IMPLEMENTED"),
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

#[test]
fn receives_on_qp1_stay_posted_and_a_send_is_refused_loudly_then_flushed() {
    let mut rig = Rig::new(1);
    let (mut f, cq) = up(&mut rig, 0);
    let mut cq = cq;
    let (req, mut qp) = f.gsi_request(&rig, false, 16, 16, &cq, &cq);
    qp.id = f.ok(&mut rig, req).xid;
    f.gsi_to_rts(&mut rig, &qp, QP1_QKEY, 0);
    let (key, buf) = f.region(&mut rig, 4096, CmdqRegisterMr::ACCESS_LOCAL_WRITE);
    for wr in 0..3 {
        f.post_recv(&mut rig, &mut qp, wr, &[(buf, key, 256)]);
    }
    rig.world.advance(MS);
    assert!(cq.peek(&rig, 0).is_none(), "no receive completes: no MAD arrives");
    let before = rig.world.nic_state(0);
    let q1 = &rig.world.device(0).roce().state().qps[&1];
    assert_eq!((q1.rq.taken.index, q1.rq.prod.index), (0, 3), "the receives stay in the RQ, unread");
    assert_eq!(before.roce.gsi_unmodelled, 0);
    // A MAD to send (a UD SEND WQE; its AV fields do not matter to the model).
    f.post_send(
        &mut rig,
        &mut qp,
        SqBase::WQE_TYPE_SEND,
        SqSendHdr::FLAGS_SIGNAL_COMP,
        &[(buf, key, 256)],
        None,
        None,
        0,
    );
    let cqe = cq.wait(&mut rig, 0, 10 * MS);
    assert_eq!(cqe_type(&cqe), 0, "a requester CQE");
    assert_eq!(cqe_status(&cqe), CqReq::STATUS_LOCAL_QP_OPERATION_ERR);
    let after = rig.world.nic_state(0);
    assert_eq!(after.roce.gsi_unmodelled, 1);
    assert_eq!(after.unimplemented, before.unimplemented + 1, "counted as unimplemented");
    assert!(rig.world.take_events().iter().any(|e| matches!(&e.kind,
        EventKind::WqeRefused { qp: 1, reason } if reason.contains("GSI"))));
    assert_eq!(rig.world.device(0).roce().state().qps[&1].state, bnxt_hsi::roce::qp::QpState::Err);
    // The QP error notification reaches the CREQ.
    f.ok(&mut rig, CmdqQueryVersion::new_zeroed());
    assert!(f.async_events.iter().any(|e| e.event == CreqQpErrorNotification::EVENT_QP_ERROR_NOTIFICATION));
    // In ERR a send completes flushed, and is not counted again.
    f.post_send(
        &mut rig,
        &mut qp,
        SqBase::WQE_TYPE_SEND,
        SqSendHdr::FLAGS_SIGNAL_COMP,
        &[(buf, key, 16)],
        None,
        None,
        0,
    );
    let cqe = cq.wait(&mut rig, 0, 10 * MS);
    assert_eq!(cqe_status(&cqe), CqReq::STATUS_WORK_REQUEST_FLUSHED_ERR);
    assert_eq!(rig.world.nic_state(0).roce.gsi_unmodelled, 1);
}

#[test]
fn a_mad_from_the_wire_is_dropped_and_counted() {
    // NIC 0's RC QP aims a SEND at QP 1 of NIC 1 (as a MAD would arrive there).
    let mut rig = Rig::with(2, 5, Default::default());
    let (mut f0, cq0) = up(&mut rig, 0);
    let (mut f1, cq1) = up(&mut rig, 1);
    let sgid = f0.add_own_gid(&mut rig);
    f1.add_own_gid(&mut rig);
    let (req, mut gsi) = f1.gsi_request(&rig, false, 16, 16, &cq1, &cq1);
    gsi.id = f1.ok(&mut rig, req).xid;
    f1.gsi_to_rts(&mut rig, &gsi, QP1_QKEY, 0);
    let mut qp = f0.create_qp(&mut rig, false, 16, 16, &cq0, &cq0);
    let peer = (f1.gid(), f1.mac, 1);
    f0.connect(&mut rig, &mut qp, sgid, (&peer.0, peer.1, peer.2), 7);
    let (key, buf) = f0.region(&mut rig, 4096, CmdqRegisterMr::ACCESS_LOCAL_WRITE);
    f0.post_send(&mut rig, &mut qp, SqBase::WQE_TYPE_SEND, 0, &[(buf, key, 64)], None, None, 0);
    run_until(&mut rig, 100 * MS, |rig| rig.world.nic_state(1).roce.gsi_unmodelled > 0);
    let st = rig.world.nic_state(1);
    assert_eq!(st.roce.rx_no_qp, 0, "QP 1 exists: not counted as a frame for no QP");
    assert!(st.unimplemented >= 1);
    assert!(rig.world.take_events().iter().any(|e| matches!(&e.kind,
        EventKind::FrameDropped { reason } if reason.contains("GSI"))));
}
