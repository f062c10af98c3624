//! Two transports wired by hand (no switch): frames are taken from one and given to the other one
//! by one, dropped or duplicated on purpose, to check the protocol rules packet by packet.

use std::time::Duration;

use crate::net::RoceFrame;
use crate::net::ext::{NakCode, Syndrome};
use crate::net::{MacAddr, Opcode, Path};

use super::memory::tests::Flat;
use super::*;

const T0: Duration = Duration::from_micros(1);

fn attrs(qpn: u32, dest: u32, me: u8, peer: u8) -> QpAttrs {
    QpAttrs {
        qpn,
        dest_qpn: dest,
        path: Path::between(MacAddr([2, 0, 0, 0, 0, me]), MacAddr([2, 0, 0, 0, 0, peer]), dest),
        mtu: Mtu::Mtu1024,
        sq_psn: 0x00ff_fffe,
        rq_psn: 0x00ff_fffe,
        timeout: 10,
        retry_cnt: 2,
        rnr_retry: 1,
        min_rnr_timer: 3,
        max_rd_atomic: 2,
        max_dest_rd_atomic: 2,
        access: RemoteAccess::ALL,
    }
}

struct Pair {
    a: RcQp,
    b: RcQp,
    ma: Flat,
    mb: Flat,
}

fn pair(limits: Limits) -> Pair {
    let mut ma = Flat::default();
    ma.bufs.insert(1, (0..1 << 16).map(|i| (i * 7 % 251) as u8).collect());
    ma.bufs.insert(2, vec![0; 1 << 16]);
    let mut mb = Flat::default();
    mb.bufs.insert(1, (0..1 << 16).map(|i| (i * 11 % 253) as u8).collect());
    mb.bufs.insert(2, vec![0; 1 << 16]);
    Pair {
        a: RcQp::with_limits(attrs(1, 2, 1, 2), limits).unwrap(),
        b: RcQp::with_limits(attrs(2, 1, 2, 1), limits).unwrap(),
        ma,
        mb,
    }
}

fn send(id: u64, len: u32) -> SendWqe {
    SendWqe {
        id,
        op: SendOp::Send { imm: None },
        sges: smallvec::smallvec![Sge { addr: 0, lkey: 1, len }],
        length: len,
        signaled: true,
        solicited: false,
    }
}

fn recv(id: u64, at: u64, len: u32) -> RecvWqe {
    RecvWqe { id, sges: smallvec::smallvec![Sge { addr: at, lkey: 2, len }] }
}

/// Every frame `qp` has to send now.
fn drain(qp: &mut RcQp, mem: &mut Flat, now: Duration) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let mut f = Vec::new();
        if !qp.poll_transmit(now, mem, &mut f) {
            return out;
        }
        out.push(f);
    }
}

fn opcode_psn(frame: &[u8]) -> (Opcode, u32) {
    let f = RoceFrame::parse(frame).unwrap();
    (f.transport.bth.opcode, f.transport.bth.psn)
}

fn aeth(frame: &[u8]) -> (Syndrome, u32, u32) {
    let f = RoceFrame::parse(frame).unwrap();
    let a = f.transport.aeth.unwrap();
    (a.syndrome, f.transport.bth.psn, a.msn)
}

fn give(qp: &mut RcQp, mem: &mut Flat, now: Duration, frame: &[u8]) {
    qp.handle_frame(now, &RoceFrame::parse(frame).unwrap(), mem);
}

#[test]
fn a_message_is_cut_at_the_mtu_with_ack_req_on_its_last_packet_and_psns_wrap() {
    let mut p = pair(Limits::default());
    p.a.post_send(send(1, 2500));
    let frames = drain(&mut p.a, &mut p.ma, T0);
    let got: Vec<(Opcode, u32, bool, usize)> = frames
        .iter()
        .map(|f| {
            let r = RoceFrame::parse(f).unwrap();
            (r.transport.bth.opcode, r.transport.bth.psn, r.transport.bth.ack_req, r.payload.len())
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (Opcode::SendFirst, 0xff_fffe, false, 1024),
            (Opcode::SendMiddle, 0xff_ffff, false, 1024),
            (Opcode::SendLast, 0, true, 452)
        ]
    );
}

#[test]
fn ack_req_is_also_set_periodically_and_acks_are_coalesced() {
    let mut p = pair(Limits { ack_req_every: 4, ..Limits::default() });
    p.b.post_recv(recv(1, 0, 1 << 16));
    p.a.post_send(send(1, 10 * 1024));
    let frames = drain(&mut p.a, &mut p.ma, T0);
    let ack_reqs: Vec<bool> = frames.iter().map(|f| RoceFrame::parse(f).unwrap().transport.bth.ack_req).collect();
    assert_eq!(ack_reqs, [false, false, false, true, false, false, false, true, false, true]);
    // The responder takes all ten before it may send: the three ACKs it queued coalesce into
    // one, for the last PSN, with MSN 1.
    for f in &frames {
        give(&mut p.b, &mut p.mb, T0, f);
    }
    let acks = drain(&mut p.b, &mut p.mb, T0);
    assert_eq!(acks.len(), 1);
    assert_eq!(aeth(&acks[0]), (Syndrome::Ack { credits: 0x1f }, 7, 1));
    give(&mut p.a, &mut p.ma, T0, &acks[0]);
    assert_eq!(p.a.pop_send_completion().map(|c| (c.id, c.status)), Some((1, ReqStatus::Ok)));
    assert_eq!(p.a.next_deadline(), None, "nothing outstanding: no timer");
}

#[test]
fn a_gap_is_naked_once_and_the_requester_goes_back_to_it() {
    let mut p = pair(Limits::default());
    p.b.post_recv(recv(1, 0, 1 << 16));
    p.a.post_send(send(1, 4 * 1024));
    let frames = drain(&mut p.a, &mut p.ma, T0);
    assert_eq!(frames.len(), 4);
    // The second packet is lost: the third and fourth are out of sequence, NAKed once.
    give(&mut p.b, &mut p.mb, T0, &frames[0]);
    give(&mut p.b, &mut p.mb, T0, &frames[2]);
    let naks = drain(&mut p.b, &mut p.mb, T0);
    give(&mut p.b, &mut p.mb, T0, &frames[3]);
    assert!(drain(&mut p.b, &mut p.mb, T0).is_empty(), "NAKed once until the gap is repaired");
    assert_eq!(naks.len(), 1);
    assert_eq!(aeth(&naks[0]), (Syndrome::Nak(NakCode::PsnSequenceError), 0xff_ffff, 0));
    // The requester goes back to the missing PSN and resends from there.
    give(&mut p.a, &mut p.ma, T0, &naks[0]);
    let again = drain(&mut p.a, &mut p.ma, T0);
    let psns: Vec<u32> = again.iter().map(|f| opcode_psn(f).1).collect();
    assert_eq!(psns, vec![0xff_ffff, 0, 1]);
    assert_eq!(opcode_psn(&again[0]).0, Opcode::SendMiddle, "the same packet as before");
    for f in &again {
        give(&mut p.b, &mut p.mb, T0, f);
    }
    assert_eq!(p.b.pop_recv_completion().map(|c| (c.status, c.bytes)), Some((RespStatus::Ok, 4096)));
    assert_eq!(&p.mb.bufs[&2][..4096], &p.ma.bufs[&1][..4096]);
    // A duplicate of an executed packet is acknowledged again, not executed again.
    drain(&mut p.b, &mut p.mb, T0);
    give(&mut p.b, &mut p.mb, T0, &frames[0]);
    let reack = drain(&mut p.b, &mut p.mb, T0);
    assert_eq!(aeth(&reack[0]), (Syndrome::Ack { credits: 0x1f }, 1, 1));
    assert!(p.b.pop_recv_completion().is_none());
    assert_eq!(p.b.stats().duplicates, 1);
}

#[test]
fn a_lost_read_response_is_asked_for_again_from_where_it_stopped() {
    let mut p = pair(Limits::default());
    p.a.post_send(SendWqe {
        id: 4,
        op: SendOp::RdmaRead { va: 100, rkey: 1 },
        sges: smallvec::smallvec![Sge { addr: 0, lkey: 2, len: 3000 }],
        length: 3000,
        signaled: true,
        solicited: false,
    });
    let req = drain(&mut p.a, &mut p.ma, T0);
    assert_eq!(req.len(), 1);
    give(&mut p.b, &mut p.mb, T0, &req[0]);
    let resp = drain(&mut p.b, &mut p.mb, T0);
    let ops: Vec<Opcode> = resp.iter().map(|f| opcode_psn(f).0).collect();
    assert_eq!(ops, [Opcode::ReadResponseFirst, Opcode::ReadResponseMiddle, Opcode::ReadResponseLast]);
    // The middle response is lost: the last one shows the gap, and the READ is asked for again
    // from the missing response on.
    give(&mut p.a, &mut p.ma, T0, &resp[0]);
    give(&mut p.a, &mut p.ma, T0, &resp[2]);
    let again = drain(&mut p.a, &mut p.ma, T0);
    assert_eq!(again.len(), 1);
    let r = RoceFrame::parse(&again[0]).unwrap();
    let reth = r.transport.reth.unwrap();
    assert_eq!((r.transport.bth.opcode, r.transport.bth.psn), (Opcode::ReadRequest, 0xff_ffff));
    assert_eq!((reth.va, reth.dma_len), (100 + 1024, 3000 - 1024));
    // The responder replays from that PSN: Middle and Last, the same bytes.
    give(&mut p.b, &mut p.mb, T0, &again[0]);
    let replay = drain(&mut p.b, &mut p.mb, T0);
    assert_eq!(replay.len(), 2);
    assert_eq!(replay[0], resp[1]);
    assert_eq!(replay[1], resp[2]);
    for f in &replay {
        give(&mut p.a, &mut p.ma, T0, f);
    }
    assert_eq!(p.a.pop_send_completion().map(|c| (c.id, c.status)), Some((4, ReqStatus::Ok)));
    assert_eq!(&p.ma.bufs[&2][..3000], &p.mb.bufs[&1][100..3100]);
}

#[test]
fn reads_beyond_the_initiator_depth_wait() {
    let mut p = pair(Limits::default());
    for id in 0..3 {
        p.a.post_send(SendWqe {
            id,
            op: SendOp::RdmaRead { va: 0, rkey: 1 },
            sges: smallvec::smallvec![Sge { addr: 0, lkey: 2, len: 10 }],
            length: 10,
            signaled: true,
            solicited: false,
        });
    }
    assert_eq!(drain(&mut p.a, &mut p.ma, T0).len(), 2, "max_rd_atomic is 2");
}

#[test]
fn the_timer_resends_and_then_gives_up() {
    let mut p = pair(Limits::default());
    p.a.post_send(send(1, 10));
    assert_eq!(drain(&mut p.a, &mut p.ma, T0).len(), 1);
    let timeout = local_ack_timeout(10).unwrap();
    let mut now = T0;
    for _ in 0..2 {
        assert_eq!(p.a.next_deadline(), Some(now + timeout));
        now += timeout;
        p.a.on_timer(now);
        assert_eq!(drain(&mut p.a, &mut p.ma, now).len(), 1, "resent");
    }
    now += timeout;
    p.a.on_timer(now);
    assert_eq!(p.a.pop_send_completion().map(|c| c.status), Some(ReqStatus::RetryExceeded));
    assert_eq!(p.a.state(), QpState::Error);
    assert_eq!(p.a.stats().timeouts, 3);
}

#[test]
fn frames_for_another_qp_or_from_another_peer_are_dropped() {
    let mut p = pair(Limits::default());
    p.b.post_recv(recv(1, 0, 100));
    p.a.post_send(send(1, 10));
    let frames = drain(&mut p.a, &mut p.ma, T0);
    let mut c = RcQp::new(QpAttrs { qpn: 2, ..attrs(2, 1, 3, 1) }).unwrap();
    let mut mc = Flat::default();
    give(&mut c, &mut mc, T0, &frames[0]);
    assert_eq!(c.stats().misdirected, 1, "same QP number, another peer");
    let mut d = RcQp::new(attrs(5, 1, 2, 1)).unwrap();
    give(&mut d, &mut mc, T0, &frames[0]);
    assert_eq!(d.stats().misdirected, 1, "another QP number");
}
