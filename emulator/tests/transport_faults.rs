//! RC delivery through a lossy segment: drops, duplicates, reordering and corruption with
//! thousands of messages of mixed sizes and operations, every byte checked, each message
//! delivered exactly once and in order; PSNs that wrap around 2^24; the same seed giving the
//! same frames.

mod transport_support;

use std::time::Duration;

use bnxt_model::net::fault::WireFaults;
use bnxt_model::roce::transport::{RecvKind, ReqStatus, RespStatus, SendOp, SendWqe, Sge};
use transport_support::{Fabric, assert_bytes, pattern, recv};

const SRC: u32 = 1;
const DST: u32 = 2;
const SLOT: u64 = 16 << 10;

fn lossy() -> WireFaults {
    WireFaults { drop: 0.02, duplicate: 0.01, reorder: 0.02, corrupt: 0.01, ..WireFaults::default() }
}

/// The size of message `i`: mostly small, some around the MTU, some several packets.
fn size(i: u64) -> u32 {
    match i % 7 {
        0 => 0,
        1 => 1 + (i % 64) as u32,
        2 => 4095 + (i % 3) as u32,
        3 => 12_000 + (i % 1000) as u32,
        4 => 64,
        5 => 8192,
        _ => (i * 37 % 4000) as u32,
    }
}

struct Outcome {
    trace: u64,
    frames: u64,
    retransmitted: u64,
}

/// `n` messages from NIC 0 to NIC 1 (SENDs, some with immediate data, WRITEs with immediate
/// data into a separate region) and, every 10th message, a READ back, over a segment with
/// `faults` drawn from `seed`, with the given initial PSNs. Checks every byte and every
/// completion.
fn exchange(seed: u64, faults: WireFaults, n: u64, sq_psn: u32) -> Outcome {
    let mut f = Fabric::new(2, Some((seed, faults)));
    f.connect(0, 10, 1, 20, |node, a| {
        if node == 0 {
            a.sq_psn = sq_psn;
        } else {
            a.rq_psn = sq_psn;
        }
        a.timeout = 8; // about 1 ms, so that losses cost little virtual time
    });
    let span = (n * SLOT) as usize;
    f.nodes[0].mem.add(SRC, 0x1000_0000, span, |i| pattern(seed, i));
    f.nodes[0].mem.add(DST, 0x5000_0000, span, |_| 0);
    f.nodes[1].mem.add(DST, 0x2000_0000, span, |_| 0);
    f.nodes[1].mem.add(3, 0x3000_0000, span, |_| 0);
    let mut reads = Vec::new();
    for i in 0..n {
        let len = size(i);
        let at = i * SLOT;
        f.post_recv(1, 20, recv(i, DST, 0x2000_0000 + at, SLOT as u32));
        let op = match i % 5 {
            0 => SendOp::Send { imm: Some(i as u32) },
            1 => SendOp::RdmaWrite { va: 0x3000_0000 + at, rkey: 3, imm: Some(!(i as u32)) },
            _ => SendOp::Send { imm: None },
        };
        f.post_send(
            0,
            10,
            SendWqe {
                id: i,
                op,
                sges: smallvec::smallvec![Sge { addr: 0x1000_0000 + at, lkey: SRC, len }],
                length: len,
                signaled: true,
                solicited: false,
            },
        );
        if i % 10 == 9 {
            // Read back the message before last (already written, since requests execute in
            // order at the responder) into NIC 0's second region.
            let j = i - 1;
            let (rkey, va) = if j % 5 == 1 { (3, 0x3000_0000 + j * SLOT) } else { (DST, 0x2000_0000 + j * SLOT) };
            f.post_send(
                0,
                10,
                SendWqe {
                    id: 1_000_000 + j,
                    op: SendOp::RdmaRead { va, rkey },
                    sges: smallvec::smallvec![Sge { addr: 0x5000_0000 + j * SLOT, lkey: DST, len: size(j) }],
                    length: size(j),
                    signaled: true,
                    solicited: false,
                },
            );
            reads.push(j);
        }
    }
    let done = f.run_until(Duration::from_secs(60), |f| f.qp(0, 10).sends_outstanding() == 0);
    assert!(done, "seed {seed}: not done by {:?}", f.now);
    // Send completions: every request, in posting order, all ok.
    let s = f.send_completions(0, 10);
    let mut want = Vec::new();
    for i in 0..n {
        want.push(i);
        if i % 10 == 9 {
            want.push(1_000_000 + i - 1);
        }
    }
    assert_eq!(s.iter().map(|c| c.id).collect::<Vec<_>>(), want, "seed {seed}: send completions in order");
    assert!(s.iter().all(|c| c.status == ReqStatus::Ok), "seed {seed}: {:?}", s.iter().find(|c| !c.status.is_ok()));
    // Receive completions: exactly one per message, in order, with its length and immediate.
    let r = f.recv_completions(1, 20);
    assert_eq!(r.len() as u64, n, "seed {seed}: receives");
    for (i, c) in r.iter().enumerate() {
        let i = i as u64;
        assert_eq!((c.id, c.status, c.bytes), (i, RespStatus::Ok, size(i)), "seed {seed}: receive {i}");
        let (kind, imm) = match i % 5 {
            0 => (RecvKind::Send, Some(i as u32)),
            1 => (RecvKind::RdmaWriteImm, Some(!(i as u32))),
            _ => (RecvKind::Send, None),
        };
        assert_eq!((c.kind, c.imm), (kind, imm), "seed {seed}: receive {i}");
    }
    // Every byte: where it landed, and nothing past it.
    let src = f.nodes[0].mem.bytes(SRC).to_vec();
    for i in 0..n {
        let at = (i * SLOT) as usize;
        let len = size(i) as usize;
        let key = if i % 5 == 1 { 3 } else { DST };
        let dst = f.nodes[1].mem.bytes(key);
        assert_bytes(&dst[at..at + len], &src[at..at + len], &format!("seed {seed}: message {i}"));
        assert!(dst[at + len..at + SLOT as usize].iter().all(|&b| b == 0), "seed {seed}: message {i} spilled");
    }
    for j in reads {
        let at = (j * SLOT) as usize;
        let len = size(j) as usize;
        assert_bytes(&f.nodes[0].mem.bytes(DST)[at..at + len], &src[at..at + len], &format!("seed {seed}: read {j}"));
    }
    let st = f.qp(0, 10).stats();
    let rs = f.qp(1, 20).stats();
    eprintln!(
        "seed {seed}: {} frames, {} resent, {} timeouts, {} sequence retries; responder {} duplicates, {} out of sequence; ICRC drops {}+{}; {:?} virtual",
        f.frames_sent,
        st.retransmitted,
        st.timeouts,
        st.sequence_retries,
        rs.duplicates,
        rs.out_of_sequence,
        f.nodes[0].drops.icrc,
        f.nodes[1].drops.icrc,
        f.now
    );
    Outcome { trace: f.trace_hash(), frames: f.frames_sent, retransmitted: st.retransmitted }
}

#[test]
fn thousands_of_messages_survive_loss_duplication_reordering_and_corruption() {
    for seed in [1, 7, 42] {
        let out = exchange(seed, lossy(), 2000, 0);
        assert!(out.retransmitted > 0, "seed {seed}: the faults should have cost retransmissions");
    }
}

#[test]
fn each_fault_alone_is_recovered_from() {
    let one = |w: WireFaults| exchange(3, w, 500, 77);
    one(WireFaults { drop: 0.1, ..WireFaults::default() });
    one(WireFaults { duplicate: 0.2, ..WireFaults::default() });
    one(WireFaults { reorder: 0.2, ..WireFaults::default() });
    one(WireFaults { corrupt: 0.1, ..WireFaults::default() });
    one(WireFaults { delay: 0.05, delay_by: Duration::from_millis(3), ..WireFaults::default() });
}

#[test]
fn psns_wrap_around_2_24() {
    // 300 messages from 16 PSNs before the wrap: the wrap falls in the middle of multi-packet
    // messages and READs, with and without faults.
    let start = 0x00ff_fff0;
    let clean = exchange(5, WireFaults::default(), 300, start);
    assert_eq!(clean.retransmitted, 0);
    exchange(5, lossy(), 300, start);
}

#[test]
fn the_same_seed_gives_the_same_frames() {
    let a = exchange(11, lossy(), 300, 0);
    let b = exchange(11, lossy(), 300, 0);
    assert_eq!((a.trace, a.frames), (b.trace, b.frames));
    let c = exchange(12, lossy(), 300, 0);
    assert_ne!(a.trace, c.trace, "another seed draws other faults");
}
