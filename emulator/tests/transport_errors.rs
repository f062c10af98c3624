//! RC error paths between two NICs on the switch: RNR (a receive posted late, or never), a peer
//! that is gone, remote access and length errors, flushes, and posts after the error.

mod transport_support;

use std::time::Duration;

use bnxt_model::roce::transport::{
    QpState, RemoteAccess, ReqStatus, RespStatus, SendOp, SendWqe, Sge, local_ack_timeout,
};
use transport_support::{Fabric, assert_bytes, pattern, recv, send};

const SRC: u32 = 1;
const DST: u32 = 2;

fn pair(tweak: impl Fn(usize, &mut bnxt_model::roce::transport::QpAttrs)) -> Fabric {
    let mut f = Fabric::new(2, None);
    f.connect(0, 10, 1, 20, tweak);
    f.nodes[0].mem.add(SRC, 0x10_0000, 1 << 20, |i| pattern(9, i));
    f.nodes[1].mem.add(DST, 0x20_0000, 1 << 20, |_| 0);
    f
}

fn statuses(f: &mut Fabric) -> Vec<(u64, ReqStatus)> {
    f.send_completions(0, 10).iter().map(|c| (c.id, c.status)).collect()
}

fn recv_statuses(f: &mut Fabric) -> Vec<(u64, RespStatus)> {
    f.recv_completions(1, 20).iter().map(|c| (c.id, c.status)).collect()
}

#[test]
fn a_receive_posted_late_gets_the_message_after_an_rnr_nak() {
    // min_rnr_timer 14 = 1.28 ms (the RNR NAK timer table).
    let mut f = pair(|_, a| a.min_rnr_timer = 14);
    f.post_send(0, 10, send(1, SRC, 0x10_0000, 10_000));
    f.run_until(Duration::from_micros(100), |_| false);
    assert_eq!(f.qp(1, 20).stats().rnr_naks_sent, 1, "no receive: RNR NAK");
    assert_eq!(f.qp(0, 10).stats().rnr_retries, 1);
    assert!(f.send_completions(0, 10).is_empty());
    f.post_recv(1, 20, recv(5, DST, 0x20_0000, 16_384));
    assert!(f.run_until(Duration::from_secs(1), |f| f.qp(0, 10).sends_outstanding() == 0));
    assert!(f.now >= Duration::from_micros(1280), "the retry waited for the NAK's timer: {:?}", f.now);
    assert!(f.now < Duration::from_micros(1400), "and not much longer: {:?}", f.now);
    assert_eq!(statuses(&mut f), vec![(1, ReqStatus::Ok)]);
    assert_eq!(recv_statuses(&mut f), vec![(5, RespStatus::Ok)]);
    assert_bytes(&f.nodes[1].mem.bytes(DST)[..10_000], &f.nodes[0].mem.bytes(SRC)[..10_000], "payload");
}

#[test]
fn a_receive_never_posted_ends_in_rnr_retry_exceeded_then_flushed() {
    let mut f = pair(|_, a| {
        a.rnr_retry = 3;
        a.min_rnr_timer = 1;
    });
    for id in 1..=3 {
        f.post_send(0, 10, send(id, SRC, 0x10_0000, 100));
    }
    assert!(f.run_until(Duration::from_secs(1), |f| f.qp(0, 10).sends_outstanding() == 0));
    assert_eq!(
        statuses(&mut f),
        vec![(1, ReqStatus::RnrRetryExceeded), (2, ReqStatus::Flushed), (3, ReqStatus::Flushed)]
    );
    assert_eq!(f.qp(0, 10).stats().rnr_retries, 3, "three retries, then the fourth RNR NAK fails it");
    assert_eq!(f.qp(1, 20).stats().rnr_naks_sent, 4);
    assert_eq!(f.qp(0, 10).state(), QpState::Error);
    // Later posts complete flushed at once.
    f.post_send(0, 10, send(4, SRC, 0x10_0000, 1));
    assert_eq!(statuses(&mut f), vec![(4, ReqStatus::Flushed)]);
}

#[test]
fn a_peer_that_is_gone_ends_in_retry_exceeded_then_flushed() {
    let mut f = pair(|_, a| {
        a.retry_cnt = 3;
        a.timeout = 10; // 4.2 ms
    });
    f.post_recv(1, 20, recv(1, DST, 0x20_0000, 4096));
    f.post_send(0, 10, send(1, SRC, 0x10_0000, 4096));
    assert!(f.run_until(Duration::from_secs(1), |f| f.qp(0, 10).sends_outstanding() == 0));
    let port = f.nodes[1].port;
    assert!(f.sw.remove_port(port));
    let t0 = f.now;
    for id in 2..=5 {
        f.post_send(0, 10, send(id, SRC, 0x10_0000, 9000));
    }
    assert!(f.run_until(Duration::from_secs(10), |f| f.qp(0, 10).sends_outstanding() == 0));
    let mut want = vec![(1, ReqStatus::Ok), (2, ReqStatus::RetryExceeded)];
    want.extend((3..=5).map(|id| (id, ReqStatus::Flushed)));
    assert_eq!(statuses(&mut f), want);
    assert_eq!(f.qp(0, 10).stats().timeouts, 4, "three retries, and the fourth timeout fails it");
    let timeout = local_ack_timeout(10).unwrap();
    assert!(f.now - t0 >= timeout * 4, "four timeouts passed: {:?}", f.now - t0);
    assert!(f.now - t0 < timeout * 5 + Duration::from_millis(1));
    assert_eq!(f.qp(0, 10).next_deadline(), None);
}

#[test]
fn a_write_outside_the_remote_region_is_a_remote_access_error_on_both_sides() {
    let mut f = pair(|_, _| {});
    f.post_recv(1, 20, recv(7, DST, 0x20_0000, 64));
    let write = |id, va, rkey| SendWqe {
        id,
        op: SendOp::RdmaWrite { va, rkey, imm: None },
        sges: smallvec::smallvec![Sge { addr: 0x10_0000, lkey: SRC, len: 8192 }],
        length: 8192,
        signaled: true,
        solicited: false,
    };
    f.post_send(0, 10, write(1, 0x20_0000, DST));
    f.post_send(0, 10, write(2, 0x20_0000 + (1 << 20) - 100, DST)); // runs past the end
    f.post_send(0, 10, write(3, 0x20_0000, DST));
    assert!(f.run_until(Duration::from_secs(1), |f| f.qp(0, 10).sends_outstanding() == 0));
    assert_eq!(statuses(&mut f), vec![(1, ReqStatus::Ok), (2, ReqStatus::RemoteAccess), (3, ReqStatus::Flushed)]);
    assert_eq!(f.qp(1, 20).state(), QpState::Error, "the responder moved to error too");
    assert_eq!(recv_statuses(&mut f), vec![(7, RespStatus::Flushed)]);
    assert!(f.nodes[1].mem.bytes(DST)[(1 << 20) - 100..].iter().all(|&b| b == 0), "nothing written");
}

#[test]
fn reads_with_a_bad_key_a_region_without_the_right_or_a_qp_without_the_flag_fail() {
    // A wrong rkey.
    let mut f = pair(|_, _| {});
    f.nodes[0].mem.add(DST, 0x80_0000, 4096, |_| 0);
    let read = |id, rkey| SendWqe {
        id,
        op: SendOp::RdmaRead { va: 0x20_0000, rkey },
        sges: smallvec::smallvec![Sge { addr: 0x80_0000, lkey: DST, len: 4096 }],
        length: 4096,
        signaled: true,
        solicited: false,
    };
    f.post_send(0, 10, read(1, 99));
    assert!(f.run_until(Duration::from_secs(1), |f| f.qp(0, 10).sends_outstanding() == 0));
    assert_eq!(statuses(&mut f), vec![(1, ReqStatus::RemoteAccess)]);

    // A region that does not allow remote reads.
    let mut f = pair(|_, _| {});
    f.nodes[0].mem.add(DST, 0x80_0000, 4096, |_| 0);
    f.nodes[1].mem.regions.get_mut(&DST).unwrap().remote = RemoteAccess { write: true, ..RemoteAccess::default() };
    f.post_send(0, 10, read(1, DST));
    assert!(f.run_until(Duration::from_secs(1), |f| f.qp(0, 10).sends_outstanding() == 0));
    assert_eq!(statuses(&mut f), vec![(1, ReqStatus::RemoteAccess)]);

    // A responder QP that allows no remote reads: invalid request (rdma_rxe `check_op_valid`).
    let mut f = pair(|node, a| {
        if node == 1 {
            a.access = RemoteAccess { write: true, ..RemoteAccess::default() };
        }
    });
    f.nodes[0].mem.add(DST, 0x80_0000, 4096, |_| 0);
    f.post_send(0, 10, read(1, DST));
    assert!(f.run_until(Duration::from_secs(1), |f| f.qp(0, 10).sends_outstanding() == 0));
    assert_eq!(statuses(&mut f), vec![(1, ReqStatus::RemoteInvalidRequest)]);
}

#[test]
fn a_message_longer_than_the_receive_is_a_length_error() {
    let mut f = pair(|_, _| {});
    f.post_recv(1, 20, recv(1, DST, 0x20_0000, 4000));
    f.post_recv(1, 20, recv(2, DST, 0x20_0000 + 8192, 8192));
    f.post_send(0, 10, send(1, SRC, 0x10_0000, 5000));
    f.post_send(0, 10, send(2, SRC, 0x10_0000, 10));
    assert!(f.run_until(Duration::from_secs(1), |f| f.qp(0, 10).sends_outstanding() == 0));
    assert_eq!(statuses(&mut f), vec![(1, ReqStatus::RemoteInvalidRequest), (2, ReqStatus::Flushed)]);
    assert_eq!(recv_statuses(&mut f), vec![(1, RespStatus::LocalLength), (2, RespStatus::Flushed)]);
}

#[test]
fn a_local_sge_that_cannot_be_read_fails_the_request_locally_after_the_earlier_ones() {
    let mut f = pair(|_, _| {});
    for id in 0..3 {
        f.post_recv(1, 20, recv(id, DST, 0x20_0000 + id * 4096, 4096));
    }
    f.post_send(0, 10, send(0, SRC, 0x10_0000, 100));
    f.post_send(0, 10, send(1, 77, 0x10_0000, 100)); // no region 77
    f.post_send(0, 10, send(2, SRC, 0x10_0000, 100));
    // A length past the SGEs fails at post, as the oldest.
    let mut too_long = send(3, SRC, 0x10_0000, 100);
    too_long.length = 101;
    assert!(f.run_until(Duration::from_secs(1), |f| f.qp(0, 10).sends_outstanding() == 0));
    assert_eq!(statuses(&mut f), vec![(0, ReqStatus::Ok), (1, ReqStatus::LocalProtection), (2, ReqStatus::Flushed)]);

    let mut f = pair(|_, _| {});
    f.post_send(0, 10, too_long);
    assert_eq!(statuses(&mut f), vec![(3, ReqStatus::LocalLength)]);
    assert_eq!(f.qp(0, 10).state(), QpState::Error);
}

#[test]
fn set_error_flushes_everything_in_order_and_later_posts_too() {
    let mut f = pair(|_, _| {});
    for id in 0..4 {
        f.post_recv(1, 20, recv(id, DST, 0x20_0000 + id * 4096, 4096));
        f.post_send(0, 10, send(id, SRC, 0x10_0000, 4096));
    }
    // Let the first go through, then stop both ends.
    assert!(f.run_until(Duration::from_secs(1), |f| f.qp(1, 20).recvs_outstanding() < 4));
    f.qp(0, 10).set_error();
    f.qp(1, 20).set_error();
    f.post_recv(1, 20, recv(9, DST, 0x20_0000, 1));
    f.post_send(0, 10, send(9, SRC, 0x10_0000, 1));
    let s = statuses(&mut f);
    let r = recv_statuses(&mut f);
    let ids: Vec<u64> = s.iter().map(|c| c.0).collect();
    assert_eq!(ids, vec![0, 1, 2, 3, 9], "one completion per request, in order");
    assert!(s.iter().skip_while(|c| c.1 == ReqStatus::Ok).all(|c| c.1 == ReqStatus::Flushed), "{s:?}");
    assert_eq!(r.last(), Some(&(9, RespStatus::Flushed)));
    assert_eq!(r.iter().map(|c| c.0).collect::<Vec<_>>(), vec![0, 1, 2, 3, 9]);
    assert_eq!(r[0].1, RespStatus::Ok);
    let sent = f.frames_sent;
    f.run_idle(Duration::from_secs(1));
    assert_eq!(f.frames_sent, sent, "a QP in error sends nothing");
}
