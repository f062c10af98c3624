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

/// An RDMA READ of `len` bytes at `va` of region 1 into region 2 at 0.
fn read(id: u64, va: u64, len: u32) -> SendWqe {
    SendWqe {
        id,
        op: SendOp::RdmaRead { va, rkey: 1 },
        sges: smallvec::smallvec![Sge { addr: 0, lkey: 2, len }],
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
        p.a.post_send(read(id, 0, 10));
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

#[test]
fn an_rtr_transport_answers_requests_and_asks_for_nothing() {
    let mut p = pair(Limits::default());
    p.b = RcQp::receiving(attrs(2, 1, 2, 1), Limits::default()).unwrap();
    assert_eq!(p.b.state(), QpState::ReadyToReceive);
    p.b.post_recv(recv(1, 0, 4096));
    p.b.post_send(send(9, 10));
    assert_eq!(
        p.b.pop_send_completion().map(|c| (c.id, c.status)),
        Some((9, ReqStatus::LocalQpOperation)),
        "no posting to the send queue before RTS"
    );
    p.a.post_send(send(1, 2000));
    p.a.post_send(SendWqe {
        id: 2,
        op: SendOp::RdmaRead { va: 0, rkey: 1 },
        sges: smallvec::smallvec![Sge { addr: 8192, lkey: 2, len: 1500 }],
        length: 1500,
        signaled: true,
        solicited: false,
    });
    for f in drain(&mut p.a, &mut p.ma, T0) {
        give(&mut p.b, &mut p.mb, T0, &f);
    }
    let answers = drain(&mut p.b, &mut p.mb, T0);
    let ops: Vec<(Opcode, u32)> = answers.iter().map(|f| opcode_psn(f)).collect();
    assert_eq!(
        ops,
        [(Opcode::Acknowledge, 0xff_ffff), (Opcode::ReadResponseFirst, 0), (Opcode::ReadResponseLast, 1)],
        "the SEND acknowledged, the READ served"
    );
    for f in &answers {
        give(&mut p.a, &mut p.ma, T0, f);
    }
    let done: Vec<_> = std::iter::from_fn(|| p.a.pop_send_completion()).map(|c| (c.id, c.status)).collect();
    assert_eq!(done, [(1, ReqStatus::Ok), (2, ReqStatus::Ok)]);
    assert_eq!(&p.ma.bufs[&2][8192..8192 + 1500], &p.mb.bufs[&1][..1500]);
    // A response at an RTR QP answers nothing it asked: an ACK from QP 1 to QP 2, made by a QP
    // with b's identity in RTS sending to one with a's.
    let (mut e, mut c) = (RcQp::new(attrs(2, 1, 2, 1)).unwrap(), RcQp::new(attrs(1, 2, 1, 2)).unwrap());
    c.post_recv(recv(1, 0, 100));
    e.post_send(send(1, 10));
    for f in drain(&mut e, &mut p.mb, T0) {
        give(&mut c, &mut p.ma, T0, &f);
    }
    let ack = drain(&mut c, &mut p.ma, T0);
    give(&mut p.b, &mut p.mb, T0, &ack[0]);
    assert_eq!(p.b.stats().stale_responses, 1);
    // To RTS: it requests from its SQ PSN on.
    p.b.ready_to_send(attrs(2, 1, 2, 1)).unwrap();
    p.a.post_recv(recv(3, 0, 100));
    p.b.post_send(send(4, 10));
    assert_eq!(
        drain(&mut p.b, &mut p.mb, T0).iter().map(|f| opcode_psn(f)).collect::<Vec<_>>(),
        [(Opcode::SendOnly, 0xff_fffe)]
    );
}

#[test]
fn in_sqd_begun_requests_finish_and_new_ones_wait_until_rts() {
    let mut p = pair(Limits::default());
    p.b.post_recv(recv(1, 0, 1 << 14));
    p.b.post_recv(recv(2, 1 << 14, 1 << 14));
    p.a.post_send(send(1, 3 * 1024));
    let mut first = Vec::new();
    assert!(p.a.poll_transmit(T0, &mut p.ma, &mut first), "the first packet of three");
    p.a.drain_send_queue();
    assert_eq!(p.a.state(), QpState::SendQueueDrain);
    p.a.post_send(send(2, 100));
    let rest = drain(&mut p.a, &mut p.ma, T0);
    assert_eq!(rest.iter().map(|f| opcode_psn(f).0).collect::<Vec<_>>(), [Opcode::SendMiddle, Opcode::SendLast]);
    assert!(!p.a.send_queue_drained(), "begun and not acknowledged");
    for f in std::iter::once(&first).chain(&rest) {
        give(&mut p.b, &mut p.mb, T0, f);
    }
    for f in drain(&mut p.b, &mut p.mb, T0) {
        give(&mut p.a, &mut p.ma, T0, &f);
    }
    assert_eq!(p.a.pop_send_completion().map(|c| c.id), Some(1));
    assert!(p.a.send_queue_drained(), "the second was never begun");
    assert!(drain(&mut p.a, &mut p.ma, T0).is_empty());
    p.a.resume_sending();
    assert_eq!(
        drain(&mut p.a, &mut p.ma, T0).iter().map(|f| opcode_psn(f)).collect::<Vec<_>>(),
        [(Opcode::SendOnly, 1)]
    );
}

#[test]
fn attribute_changes_apply_to_what_comes_after_them() {
    let mut p = pair(Limits::default());
    p.b.post_recv(recv(1, 0, 1 << 14));
    p.b.post_recv(recv(2, 1 << 14, 1 << 14));
    p.a.post_send(send(1, 2500));
    let mut first = [Vec::new()];
    assert!(p.a.poll_transmit(T0, &mut p.ma, &mut first[0]));
    // A larger path MTU and other timers on both sides: the message begun keeps 1024 on both
    // sides (the responder took its first packet before the change).
    give(&mut p.b, &mut p.mb, T0, &first[0]);
    let bigger = |a: QpAttrs| QpAttrs { mtu: Mtu::Mtu2048, timeout: 12, min_rnr_timer: 7, retry_cnt: 5, ..a };
    p.a.modify(bigger(attrs(1, 2, 1, 2))).unwrap();
    p.b.modify(bigger(attrs(2, 1, 2, 1))).unwrap();
    p.a.post_send(send(2, 2500));
    let frames = drain(&mut p.a, &mut p.ma, T0);
    let lens: Vec<usize> = frames.iter().map(|f| RoceFrame::parse(f).unwrap().payload.len()).collect();
    assert_eq!(lens, [1024, 452, 2048, 452]);
    assert_eq!(p.a.next_deadline(), Some(T0 + local_ack_timeout(10).unwrap()), "the timer running keeps its time");
    for f in &frames {
        give(&mut p.b, &mut p.mb, T0, f);
    }
    let bytes: Vec<u32> = std::iter::from_fn(|| p.b.pop_recv_completion()).map(|c| c.bytes).collect();
    assert_eq!(bytes, [2500, 2500]);
    // The responder's next RNR NAK carries the new timer.
    p.a.post_send(send(3, 10));
    for f in drain(&mut p.a, &mut p.ma, T0) {
        give(&mut p.b, &mut p.mb, T0, &f);
    }
    let nak = drain(&mut p.b, &mut p.mb, T0);
    assert_eq!(aeth(nak.last().unwrap()).0, Syndrome::RnrNak { timer: 7 });
    assert_eq!(p.a.attrs().retry_cnt, 5);
    assert_eq!(p.a.attrs().sq_psn, 0x00ff_fffe, "PSNs do not change after RTR");
}

fn atomic(id: u64, op: SendOp) -> SendWqe {
    SendWqe {
        id,
        op,
        sges: smallvec::smallvec![Sge { addr: 64, lkey: 2, len: 8 }],
        length: ATOMIC_BYTES,
        signaled: true,
        solicited: false,
    }
}

fn u64_at(mem: &Flat, key: u32, at: usize) -> u64 {
    u64::from_le_bytes(mem.bufs[&key][at..at + 8].try_into().unwrap())
}

#[test]
fn fetch_add_and_compare_swap_change_the_remote_word_and_return_its_old_value() {
    let mut p = pair(Limits::default());
    p.mb.bufs.get_mut(&1).unwrap()[8..16].copy_from_slice(&40u64.to_le_bytes());
    p.a.post_send(atomic(1, SendOp::FetchAdd { va: 8, rkey: 1, add: 2 }));
    p.a.post_send(atomic(2, SendOp::CompareSwap { va: 8, rkey: 1, compare: 42, swap: 7 }));
    p.a.post_send(atomic(3, SendOp::CompareSwap { va: 8, rkey: 1, compare: 42, swap: 9 }));
    let reqs = drain(&mut p.a, &mut p.ma, T0);
    assert_eq!(reqs.len(), 2, "max_rd_atomic 2: the third waits for an answer");
    let r = RoceFrame::parse(&reqs[1]).unwrap();
    let eth = r.transport.atomic.unwrap();
    assert_eq!(
        (r.transport.bth.opcode, eth.va, eth.rkey, eth.swap_add, eth.compare),
        (Opcode::CompareSwap, 8, 1, 7, 42)
    );
    assert_eq!(opcode_psn(&reqs[0]), (Opcode::FetchAdd, 0xff_fffe), "one PSN each");
    let mut answers = Vec::new();
    for f in &reqs {
        give(&mut p.b, &mut p.mb, T0, f);
        answers.extend(drain(&mut p.b, &mut p.mb, T0));
    }
    assert_eq!(u64_at(&p.mb, 1, 8), 7, "40 + 2 = 42 matched, swapped for 7");
    let origs: Vec<(Opcode, u32, Option<u64>)> = answers
        .iter()
        .map(|f| {
            let r = RoceFrame::parse(f).unwrap();
            (r.transport.bth.opcode, r.transport.bth.psn, r.transport.atomic_ack)
        })
        .collect();
    assert_eq!(
        origs,
        [(Opcode::AtomicAcknowledge, 0xff_fffe, Some(40)), (Opcode::AtomicAcknowledge, 0xff_ffff, Some(42))]
    );
    assert_eq!(aeth(&answers[1]).2, 2, "the MSN counts each atomic");
    give(&mut p.a, &mut p.ma, T0, &answers[0]);
    assert_eq!(p.a.pop_send_completion().map(|c| (c.id, c.status, c.op.name())), Some((1, ReqStatus::Ok, "fetch-add")));
    assert_eq!(u64_at(&p.ma, 2, 64), 40, "the original value in the local buffer");
    give(&mut p.a, &mut p.ma, T0, &answers[1]);
    assert_eq!(p.a.pop_send_completion().map(|c| c.id), Some(2));
    assert_eq!(u64_at(&p.ma, 2, 64), 42);
    // The third goes now; 7 is not 42: nothing is written, 7 comes back.
    let third = drain(&mut p.a, &mut p.ma, T0);
    give(&mut p.b, &mut p.mb, T0, &third[0]);
    let ack = drain(&mut p.b, &mut p.mb, T0);
    give(&mut p.a, &mut p.ma, T0, &ack[0]);
    assert_eq!(p.a.pop_send_completion().map(|c| (c.id, c.status)), Some((3, ReqStatus::Ok)));
    assert_eq!((u64_at(&p.mb, 1, 8), u64_at(&p.ma, 2, 64)), (7, 7));
    assert_eq!(p.b.stats().atomics_executed, 3);
}

#[test]
fn a_duplicate_atomic_is_answered_from_the_saved_result_and_not_executed_again() {
    let mut p = pair(Limits::default());
    p.a.post_send(atomic(1, SendOp::FetchAdd { va: 0, rkey: 1, add: 1 }));
    let req = drain(&mut p.a, &mut p.ma, T0);
    let before = u64_at(&p.mb, 1, 0);
    give(&mut p.b, &mut p.mb, T0, &req[0]);
    let first = drain(&mut p.b, &mut p.mb, T0);
    // The answer is lost; the requester times out and sends the atomic again.
    let deadline = p.a.next_deadline().unwrap();
    p.a.on_timer(deadline);
    let again = drain(&mut p.a, &mut p.ma, deadline);
    assert_eq!(again, req, "the same request packet");
    give(&mut p.b, &mut p.mb, deadline, &again[0]);
    let replay = drain(&mut p.b, &mut p.mb, deadline);
    assert_eq!(replay, first, "the same answer, from the saved original value");
    assert_eq!(u64_at(&p.mb, 1, 0), before.wrapping_add(1), "added once");
    assert_eq!((p.b.stats().atomics_executed, p.b.stats().atomics_replayed), (1, 1));
    give(&mut p.a, &mut p.ma, deadline, &replay[0]);
    assert_eq!(p.a.pop_send_completion().map(|c| (c.id, c.status)), Some((1, ReqStatus::Ok)));
    assert_eq!(u64_at(&p.ma, 2, 64), before);
    // Two READs later (max_dest_rd_atomic 2) the atomic is no longer among the responder's
    // resources: a duplicate of it is dropped.
    for id in 2..4 {
        p.a.post_send(read(id, 0, 8));
    }
    for f in drain(&mut p.a, &mut p.ma, deadline) {
        give(&mut p.b, &mut p.mb, deadline, &f);
    }
    drain(&mut p.b, &mut p.mb, deadline);
    give(&mut p.b, &mut p.mb, deadline, &req[0]);
    assert!(drain(&mut p.b, &mut p.mb, deadline).is_empty());
    assert_eq!(p.b.stats().atomics_replayed, 1);
}

#[rstest::rstest]
#[case::misaligned(8 + 4, RemoteAccess::ALL, 2, NakCode::InvalidRequest, ReqStatus::RemoteInvalidRequest)]
#[case::no_atomic_access(8, RemoteAccess { atomic: false, ..RemoteAccess::ALL }, 2, NakCode::InvalidRequest, ReqStatus::RemoteInvalidRequest)]
#[case::no_responder_resources(8, RemoteAccess::ALL, 0, NakCode::InvalidRequest, ReqStatus::RemoteInvalidRequest)]
#[case::outside_the_region(1 << 16, RemoteAccess::ALL, 2, NakCode::RemoteAccessError, ReqStatus::RemoteAccess)]
fn an_atomic_the_responder_cannot_carry_out_is_naked_and_fails(
    #[case] va: u64,
    #[case] access: RemoteAccess,
    #[case] depth: u8,
    #[case] nak: NakCode,
    #[case] status: ReqStatus,
) {
    let mut p = pair(Limits::default());
    let mut b = attrs(2, 1, 2, 1);
    (b.access, b.max_dest_rd_atomic) = (access, depth);
    p.b = RcQp::new(b).unwrap();
    let before = p.mb.bufs[&1].clone();
    p.a.post_send(atomic(1, SendOp::CompareSwap { va, rkey: 1, compare: 0, swap: 1 }));
    let req = drain(&mut p.a, &mut p.ma, T0);
    give(&mut p.b, &mut p.mb, T0, &req[0]);
    let answer = drain(&mut p.b, &mut p.mb, T0);
    assert_eq!(aeth(&answer[0]).0, Syndrome::Nak(nak));
    assert_eq!(p.mb.bufs[&1], before, "nothing written");
    give(&mut p.a, &mut p.ma, T0, &answer[0]);
    assert_eq!(p.a.pop_send_completion().map(|c| c.status), Some(status));
}

#[test]
fn an_atomic_of_other_than_eight_bytes_fails_locally() {
    let mut p = pair(Limits::default());
    let mut w = atomic(1, SendOp::FetchAdd { va: 0, rkey: 1, add: 1 });
    w.length = 4;
    p.a.post_send(w);
    assert!(drain(&mut p.a, &mut p.ma, T0).is_empty());
    assert_eq!(p.a.pop_send_completion().map(|c| c.status), Some(ReqStatus::LocalLength));
}
