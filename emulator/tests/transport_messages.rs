//! Two QPs on two NICs, back to back through the switch: SENDs of every awkward size, many small
//! messages, READs and WRITEs across MTU boundaries and SGE boundaries, every byte checked.

mod transport_support;

use std::time::Duration;

use bnxt_model::roce::transport::{Mtu, QpState, RecvKind, RecvWqe, ReqStatus, RespStatus, SendOp, SendWqe, Sge};
use rstest::rstest;
use transport_support::{Fabric, assert_bytes, pattern, recv, send};

const SRC: u32 = 1;
const DST: u32 = 2;
const LIMIT: Duration = Duration::from_secs(5);

/// NIC 0 QP 10 connected to NIC 1 QP 20, with a 2 MiB source region on NIC 0 and a 2 MiB
/// destination region on NIC 1 (and the reverse, for READs).
fn pair() -> Fabric {
    let mut f = Fabric::new(2, None);
    f.connect(0, 10, 1, 20, |_, _| {});
    f.nodes[0].mem.add(SRC, 0x10_0000, 2 << 20, |i| pattern(1, i));
    f.nodes[0].mem.add(DST, 0x90_0000, 2 << 20, |_| 0);
    f.nodes[1].mem.add(SRC, 0x20_0000, 2 << 20, |i| pattern(2, i));
    f.nodes[1].mem.add(DST, 0xa0_0000, 2 << 20, |_| 0);
    f
}

#[rstest]
#[case::empty(0)]
#[case::one_byte(1)]
#[case::three_bytes(3)]
#[case::a_byte_short_of_an_mtu(4095)]
#[case::one_mtu(4096)]
#[case::a_byte_over_an_mtu(4097)]
#[case::two_mtus(8192)]
#[case::a_byte_over_three_mtus(3 * 4096 + 1)]
#[case::one_mib(1 << 20)]
fn sends_of_awkward_sizes_land_whole(#[case] len: u32) {
    let mut f = pair();
    f.post_recv(1, 20, recv(77, DST, 0xa0_0000 + 4096, (1 << 20) + 8192));
    f.post_send(0, 10, send(5, SRC, 0x10_0000 + 3, len));
    assert!(f.run_until(LIMIT, |f| f.qp(0, 10).sends_outstanding() == 0), "{len}: not completed");
    let s = f.send_completions(0, 10);
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].id, s[0].status, s[0].bytes), (5, ReqStatus::Ok, len));
    let r = f.recv_completions(1, 20);
    assert_eq!(r.len(), 1, "{len}");
    assert_eq!(
        (r[0].id, r[0].status, r[0].bytes, r[0].kind, r[0].imm),
        (77, RespStatus::Ok, len, RecvKind::Send, None)
    );
    let src = &f.nodes[0].mem.bytes(SRC)[3..3 + len as usize];
    let dst = f.nodes[1].mem.bytes(DST);
    assert_bytes(&dst[4096..4096 + len as usize], src, &format!("send of {len}"));
    assert!(dst[..4096].iter().all(|&b| b == 0) && dst[4096 + len as usize..].iter().all(|&b| b == 0), "{len}: spill");
    let packets = u64::from(Mtu::Mtu4096.packets(len));
    assert_eq!(f.qp(0, 10).stats().requests_sent, packets, "{len}: one packet per MTU, none resent");
    assert_eq!(f.qp(0, 10).stats().retransmitted, 0);
}

#[test]
fn many_small_messages_complete_in_order() {
    let mut f = pair();
    let n = 3000u64;
    for i in 0..n {
        f.post_recv(1, 20, recv(1000 + i, DST, 0xa0_0000 + i * 64, 64));
    }
    for i in 0..n {
        let mut w = send(i, SRC, 0x10_0000 + i * 64, 64);
        w.op = SendOp::Send { imm: Some(i as u32) };
        w.signaled = i % 3 == 0 || i == n - 1;
        f.post_send(0, 10, w);
    }
    assert!(f.run_until(LIMIT, |f| f.qp(0, 10).sends_outstanding() == 0));
    let s = f.send_completions(0, 10);
    let ids: Vec<u64> = s.iter().map(|c| c.id).collect();
    let want: Vec<u64> = (0..n).filter(|i| i % 3 == 0 || *i == n - 1).collect();
    assert_eq!(ids, want, "signaled requests only, in order");
    assert!(s.iter().all(|c| c.status == ReqStatus::Ok));
    let r = f.recv_completions(1, 20);
    assert_eq!(r.len() as u64, n);
    for (i, c) in r.iter().enumerate() {
        assert_eq!((c.id, c.status, c.bytes, c.imm), (1000 + i as u64, RespStatus::Ok, 64, Some(i as u32)));
    }
    assert_eq!(&f.nodes[1].mem.bytes(DST)[..(n * 64) as usize], &f.nodes[0].mem.bytes(SRC)[..(n * 64) as usize]);
    let st = f.qp(1, 20).stats();
    assert!(st.acks_sent <= n, "at most one ACK a message (AckReq on each last packet): {}", st.acks_sent);
    assert_eq!((st.duplicates, st.out_of_sequence), (0, 0));
}

#[rstest]
#[case::empty(0)]
#[case::one_byte(1)]
#[case::a_byte_short_of_an_mtu(4095)]
#[case::one_mtu(4096)]
#[case::a_byte_over_an_mtu(4097)]
#[case::five_bytes_over_three_mtus(3 * 4096 + 5)]
#[case::one_mib(1 << 20)]
fn reads_across_mtu_and_sge_boundaries(#[case] len: u32) {
    let mut f = pair();
    // The local SGEs split the message at odd places.
    let a = len / 3;
    let b = len / 2;
    let sges: bnxt_model::roce::transport::SgeList = smallvec::smallvec![
        Sge { addr: 0x90_0000 + 1, lkey: DST, len: a },
        Sge { addr: 0x90_0000 + 100_000, lkey: DST, len: 0 },
        Sge { addr: 0x90_0000 + 400_000, lkey: DST, len: b },
        Sge { addr: 0x90_0000 + 1_000_000, lkey: DST, len: len - a - b },
    ];
    let w = SendWqe {
        id: 9,
        op: SendOp::RdmaRead { va: 0x20_0000 + 17, rkey: SRC },
        sges: sges.clone(),
        length: len,
        signaled: true,
        solicited: false,
    };
    f.post_send(0, 10, w);
    assert!(f.run_until(LIMIT, |f| f.qp(0, 10).sends_outstanding() == 0), "{len}");
    let s = f.send_completions(0, 10);
    assert_eq!((s[0].id, s[0].status, s[0].bytes), (9, ReqStatus::Ok, len), "{len}");
    let remote = &f.nodes[1].mem.bytes(SRC)[17..17 + len as usize];
    let local = f.nodes[0].mem.bytes(DST);
    let mut got = Vec::new();
    for s in &sges {
        let at = (s.addr - 0x90_0000) as usize;
        got.extend_from_slice(&local[at..at + s.len as usize]);
    }
    assert_bytes(&got, remote, &format!("read of {len}"));
    assert_eq!(f.qp(1, 20).stats().read_responses_sent, u64::from(Mtu::Mtu4096.packets(len)));
    assert!(f.recv_completions(1, 20).is_empty(), "a READ takes no receive");
}

#[test]
fn writes_land_where_the_reth_says_and_write_with_immediate_takes_a_receive() {
    let mut f = pair();
    let len = 2 * 4096 + 300;
    let write = |id, imm| SendWqe {
        id,
        op: SendOp::RdmaWrite { va: 0xa0_0000 + 5000, rkey: DST, imm },
        sges: smallvec::smallvec![
            Sge { addr: 0x10_0000, lkey: SRC, len: 100 },
            Sge { addr: 0x10_0000 + 7000, lkey: SRC, len: len - 100 },
        ],
        length: len,
        signaled: true,
        solicited: true,
    };
    f.post_send(0, 10, write(1, None));
    assert!(f.run_until(LIMIT, |f| f.qp(0, 10).sends_outstanding() == 0));
    assert!(f.recv_completions(1, 20).is_empty(), "a WRITE takes no receive");
    let src = f.nodes[0].mem.bytes(SRC);
    let mut want = src[..100].to_vec();
    want.extend_from_slice(&src[7000..7000 + len as usize - 100]);
    assert_eq!(&f.nodes[1].mem.bytes(DST)[5000..5000 + len as usize], &want[..]);

    f.post_recv(1, 20, recv(55, DST, 0xa0_0000, 16));
    f.post_send(0, 10, write(2, Some(0xfeed)));
    assert!(f.run_until(LIMIT, |f| f.qp(0, 10).sends_outstanding() == 0));
    let r = f.recv_completions(1, 20);
    assert_eq!(r.len(), 1);
    assert_eq!(
        (r[0].id, r[0].kind, r[0].bytes, r[0].imm, r[0].solicited),
        (55, RecvKind::RdmaWriteImm, len, Some(0xfeed), true)
    );
    let s = f.send_completions(0, 10);
    assert_eq!(s.iter().map(|c| (c.id, c.status)).collect::<Vec<_>>(), vec![(1, ReqStatus::Ok), (2, ReqStatus::Ok)]);
}

#[test]
fn smaller_mtus_segment_accordingly_and_both_directions_run_at_once() {
    let mut f = Fabric::new(2, None);
    f.connect(0, 10, 1, 20, |_, a| a.mtu = Mtu::Mtu256);
    f.nodes[0].mem.add(SRC, 0, 1 << 16, |i| pattern(3, i));
    f.nodes[0].mem.add(DST, 1 << 20, 1 << 16, |_| 0);
    f.nodes[1].mem.add(SRC, 0, 1 << 16, |i| pattern(4, i));
    f.nodes[1].mem.add(DST, 1 << 20, 1 << 16, |_| 0);
    for i in 0..20u64 {
        f.post_recv(0, 10, recv(i, DST, (1 << 20) + i * 1000, 1000));
        f.post_recv(1, 20, recv(i, DST, (1 << 20) + i * 1000, 1000));
        f.post_send(0, 10, send(i, SRC, i * 1000, 999));
        f.post_send(1, 20, send(i, SRC, i * 1000, 1000));
    }
    assert!(f.run_until(LIMIT, |f| f.qp(0, 10).sends_outstanding() + f.qp(1, 20).sends_outstanding() == 0));
    assert_eq!(f.qp(0, 10).stats().requests_sent, 20 * 4);
    for (n, len) in [(0usize, 1000usize), (1, 999)] {
        let r = f.recv_completions(n, if n == 0 { 10 } else { 20 });
        assert_eq!(r.len(), 20);
        assert!(r.iter().all(|c| c.bytes as usize == len && c.status == RespStatus::Ok));
        for i in 0..20 {
            let got = &f.nodes[n].mem.bytes(DST)[i * 1000..i * 1000 + len];
            assert_eq!(got, &f.nodes[1 - n].mem.bytes(SRC)[i * 1000..i * 1000 + len]);
        }
    }
    assert_eq!(f.qp(0, 10).state(), QpState::ReadyToSend);
}

#[test]
fn a_receive_spread_over_sges_fills_them_in_order() {
    let mut f = pair();
    let r = RecvWqe {
        id: 3,
        sges: smallvec::smallvec![
            Sge { addr: 0xa0_0000 + 10, lkey: DST, len: 5000 },
            Sge { addr: 0xa0_0000 + 900_000, lkey: DST, len: 10 },
            Sge { addr: 0xa0_0000 + 20_000, lkey: DST, len: 20_000 },
        ],
    };
    f.post_recv(1, 20, r);
    f.post_send(0, 10, send(1, SRC, 0x10_0000, 12_000));
    assert!(f.run_until(LIMIT, |f| f.qp(0, 10).sends_outstanding() == 0));
    let src = &f.nodes[0].mem.bytes(SRC)[..12_000];
    let dst = f.nodes[1].mem.bytes(DST);
    assert_eq!(&dst[10..5010], &src[..5000]);
    assert_eq!(&dst[900_000..900_010], &src[5000..5010]);
    assert_eq!(&dst[20_000..26_990], &src[5010..]);
    assert_eq!(f.recv_completions(1, 20)[0].bytes, 12_000);
}
