//! Unreliable-datagram QPs and address handles as bnxt_re and libbnxt_re use them on P7:
//! CREATE_AH/DESTROY_AH, CREATE_QP of type UD, the UD state machine, UD SEND WQEs naming an AV,
//! a destination QP and a Q_Key, the UD SEND Only packet on the wire (BTH + DETH), and the
//! receive side: the Q_Key check, the 40-byte GRH area with the IPv4 header in its last 20
//! bytes, and the `cq_res_ud` CQE with the sender's QP and MAC.

mod common;
mod roce_support;

use std::time::Duration;

use bnxt_hsi::roce::layouts::*;
use bnxt_model::events::EventKind;
use common::Rig;
use roce_support::*;
use zerocopy::FromZeros;

const MS: Duration = Duration::from_millis(1);
const QKEY: u32 = 0x1111_1111;

struct Side {
    f: Func,
    cq: TCq,
    qp: TQp,
    sgid: u16,
    key: u32,
    buf: u64,
}

fn side(rig: &mut Rig, nic: usize) -> Side {
    let mut f = Func::bring_up(rig, nic, 1024, 256);
    f.initialize(rig);
    let nq = nq_ring(rig, nic, &mut f.pages, 64, 1);
    let cq = f.create_cq(rig, 64, nq.id);
    let sgid = f.add_own_gid(rig);
    let (mut c, mut qp) = f.gsi_request(rig, Rings::fixed(16, 16), &cq);
    c.type_ = CmdqCreateQp::TYPE_UD;
    qp.id = f.ok(rig, c).xid;
    f.gsi_to_rts(rig, &qp, QKEY, 0x100);
    let (key, buf) = f.region(rig, 8192, CmdqRegisterMr::ACCESS_LOCAL_WRITE);
    Side { f, cq, qp, sgid, key, buf }
}

fn pair() -> (Rig, Side, Side, u32) {
    let mut rig = Rig::with(2, 5, Default::default());
    let mut a = side(&mut rig, 0);
    let b = side(&mut rig, 1);
    let req = create_ah(a.sgid, b.f.gid(), b.f.mac);
    let av = a.f.ok(&mut rig, req).xid;
    (rig, a, b, av)
}

#[test]
fn a_ud_send_arrives_behind_a_grh_area_with_the_senders_qp_and_mac() {
    let (mut rig, mut a, mut b, av) = pair();
    assert!(a.qp.id >= 20 && b.qp.id >= 20, "UD QPs take QP context entries as RC QPs do");
    b.f.post_recv(&mut rig, &mut b.qp, 9, &[(b.buf, b.key, 40 + 256)]);
    let payload: Vec<u8> = (0..100u8).map(|i| i.wrapping_mul(7)).collect();
    rig.poke(0, a.buf, &payload);
    post_ud(&mut a.f, &mut rig, &mut a.qp, (a.buf, a.key, 100), (b.qp.id, av, QKEY), Some(0xfeed));
    let sent = a.cq.wait(&mut rig, 0, 10 * MS);
    assert_eq!((cqe_type(&sent), cqe_status(&sent)), (0, 0), "a requester CQE, ok, with nothing to ACK it");
    let got = b.cq.wait(&mut rig, 1, 10 * MS);
    assert_eq!(cqe_type(&got) << 1, CqResUd::CQE_TYPE_RES_UD);
    assert_eq!(cqe_status(&got), 0);
    assert_eq!(u16::from_le_bytes([got[0], got[1]]), 140, "length counts the 40-byte GRH area");
    assert_eq!(u32::from_le_bytes(got[4..8].try_into().unwrap()), 0xfeed);
    assert_eq!(&got[16..22], &a.f.mac, "the sender's MAC");
    assert_eq!(u32::from(u16::from_le_bytes([got[22], got[23]])), a.qp.id & 0xffff, "src_qp_low");
    let word = u32::from_le_bytes(got[28..32].try_into().unwrap());
    assert_eq!((word & 0xf_ffff, word >> 24), (9, a.qp.id >> 16));
    let flags = u16::from_le_bytes([got[26], got[27]]);
    assert_eq!(flags & CqResUd::FLAGS_ROCE_IP_VER_MASK, CqResUd::FLAGS_ROCE_IP_VER_V2IPV4);
    assert_ne!(flags & CqResUd::FLAGS_IMM, 0);
    let mem = rig.peek(1, b.buf, 140);
    assert_eq!(&mem[..20], &[0u8; 20], "the GRH area's first 20 bytes are zero for RoCE v2 IPv4");
    let ip = &mem[20..40];
    assert_eq!((ip[0], ip[9]), (0x45, 17), "an IPv4 header (UDP) in its last 20 bytes");
    assert_eq!(&ip[12..16], &a.f.gid()[12..16], "source address: the sender's");
    assert_eq!(&ip[16..20], &b.f.gid()[12..16], "destination address: ours");
    assert_eq!(usize::from(u16::from_be_bytes([ip[2], ip[3]])), 20 + 8 + 12 + 8 + 4 + 100 + 4, "total length");
    assert_eq!(&mem[40..], &payload[..], "the payload after the GRH area");
    assert!(
        rig.world
            .take_events()
            .iter()
            .any(|e| matches!(&e.kind, EventKind::FrameSent { opcode: 0x65, psn: 0x100, aeth: None, .. })),
        "UD SEND Only with Immediate at the QP's SQ PSN"
    );
}

#[test]
fn a_wrong_qkey_or_no_receive_drops_the_packet_and_nothing_completes() {
    let (mut rig, mut a, mut b, av) = pair();
    post_ud(&mut a.f, &mut rig, &mut a.qp, (a.buf, a.key, 8), (b.qp.id, av, QKEY), None);
    a.cq.wait(&mut rig, 0, 10 * MS);
    run_until(&mut rig, 10 * MS, |rig| rig.world.nic_state(1).roce.ud_dropped > 0);
    assert_eq!(rig.world.nic_state(1).roce.ud_dropped, 1, "no receive WQE: dropped (no RNR NAK on UD)");
    b.f.post_recv(&mut rig, &mut b.qp, 1, &[(b.buf, b.key, 128)]);
    post_ud(&mut a.f, &mut rig, &mut a.qp, (a.buf, a.key, 8), (b.qp.id, av, QKEY ^ 1), None);
    a.cq.wait(&mut rig, 0, 10 * MS);
    run_until(&mut rig, 10 * MS, |rig| rig.world.nic_state(1).roce.ud_dropped > 1);
    assert!(b.cq.peek(&rig, 1).is_none(), "the Q_Key does not match: nothing completes");
    assert!(rig.world.take_events().iter().any(|e| matches!(&e.kind,
        EventKind::FrameDropped { reason } if reason.contains("Q_Key"))));
    // The Q_Key bit that asks for the QP's own Q_Key (IBA §10.2.4): both QPs have QKEY.
    post_ud(&mut a.f, &mut rig, &mut a.qp, (a.buf, a.key, 8), (b.qp.id, av, 0x8000_0000), None);
    let got = b.cq.wait(&mut rig, 1, 10 * MS);
    assert_eq!((cqe_status(&got), u16::from_le_bytes([got[0], got[1]])), (0, 48));
}

#[test]
fn a_buffer_without_room_for_the_grh_fails_the_receive_and_the_qp() {
    let (mut rig, mut a, mut b, av) = pair();
    b.f.post_recv(&mut rig, &mut b.qp, 3, &[(b.buf, b.key, 40 + 10)]);
    post_ud(&mut a.f, &mut rig, &mut a.qp, (a.buf, a.key, 11), (b.qp.id, av, QKEY), None);
    let got = b.cq.wait(&mut rig, 1, 10 * MS);
    assert_eq!(cqe_status(&got), CqResUd::STATUS_HW_LOCAL_LENGTH_ERR);
    let qpn = b.qp.id;
    assert_eq!(rig.world.device(1).roce().state().qps[&qpn].state, bnxt_hsi::roce::qp::QpState::Err);
}

#[test]
fn sends_to_an_unknown_av_or_beyond_the_mtu_fail_into_sqe_and_the_qp_flushes_after() {
    let (mut rig, mut a, b, av) = pair();
    post_ud(&mut a.f, &mut rig, &mut a.qp, (a.buf, a.key, 8), (b.qp.id, av + 5, QKEY), None);
    let c = a.cq.wait(&mut rig, 0, 10 * MS);
    assert_eq!(cqe_status(&c), CqReq::STATUS_LOCAL_QP_OPERATION_ERR);
    let qpn = a.qp.id;
    let state = rig.world.device(0).roce().state().qps[&qpn].state;
    assert_eq!(state, bnxt_hsi::roce::qp::QpState::Sqe, "a UD send error: the send queue error state");
    post_ud(&mut a.f, &mut rig, &mut a.qp, (a.buf, a.key, 8), (b.qp.id, av, QKEY), None);
    let c = a.cq.wait(&mut rig, 0, 10 * MS);
    assert_eq!(cqe_status(&c), CqReq::STATUS_WORK_REQUEST_FLUSHED_ERR);
    assert_eq!(rig.world.nic_state(0).roce.frames_sent, 0, "nothing went on the wire");
    // Another QP, path MTU 1024 (gsi_to_rts sets it at RTR): 2000 bytes are too many.
    let (mut c2, mut qp2) = a.f.gsi_request(&rig, Rings::fixed(16, 16), &a.cq);
    c2.type_ = CmdqCreateQp::TYPE_UD;
    qp2.id = a.f.ok(&mut rig, c2).xid;
    a.f.gsi_to_rts(&mut rig, &qp2, QKEY, 0);
    post_ud(&mut a.f, &mut rig, &mut qp2, (a.buf, a.key, 2000), (b.qp.id, av, QKEY), None);
    let c = a.cq.wait(&mut rig, 0, 10 * MS);
    assert_eq!(cqe_status(&c), CqReq::STATUS_LOCAL_LENGTH_ERR);
}

#[test]
fn create_ah_checks_its_fields_and_destroy_ah_forgets_it() {
    let (mut rig, mut a, b, av) = pair();
    let good = create_ah(a.sgid, b.f.gid(), b.f.mac);
    let bad = |edit: &dyn Fn(&mut CmdqCreateAh)| {
        let mut c = good;
        edit(&mut c);
        c
    };
    let cases: [(CmdqCreateAh, u8, &str); 5] = [
        (bad(&|c| c.type_ = CmdqCreateAh::TYPE_V1), NOT_IMPLEMENTED, "network type"),
        (bad(&|c| c.sgid_index = 77.into()), INVALID_PARAMETER, "holds no GID"),
        (bad(&|c| c.dgid = [0.into(), 0.into(), 0.into(), 1.into()]), INVALID_PARAMETER, "IPv4-mapped"),
        (bad(&|c| c.dest_mac[0] = 0x0101.into()), INVALID_PARAMETER, "group address"),
        (bad(&|c| c.dest_vlan_id_flow_label = 5.into()), NOT_IMPLEMENTED, "VLAN"),
    ];
    for (c, want, what) in cases {
        assert_eq!(a.f.call(&mut rig, c).status, want, "{what}");
        let reason = last_refusal(&mut rig).unwrap_or_default();
        assert!(reason.contains(what), "{what}: {reason}");
    }
    // AV ids are the context memory's AV entries (MRAV_ENTRIES - REGIONS of them).
    let mut ids = vec![av];
    while ids.len() < (MRAV_ENTRIES - REGIONS) as usize {
        ids.push(a.f.ok(&mut rig, good).xid);
    }
    assert_eq!(a.f.call(&mut rig, good).status, RESOURCES);
    let mut d = CmdqDestroyAh::new_zeroed();
    d.ah_cid = ids[3].into();
    a.f.ok(&mut rig, d);
    assert_eq!(a.f.call(&mut rig, d).status, INVALID_PARAMETER, "destroyed twice");
    assert_eq!(a.f.ok(&mut rig, good).xid, ids[3], "its id is free again");
}
