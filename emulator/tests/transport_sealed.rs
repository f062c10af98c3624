//! The sealed-frame shortcut (the receiver does not compute again the ICRC of a frame built in
//! this process that crossed a transparent fault stage) against the plain path: the same
//! workload gives the same frames, completions, counters and memory either way; with any fault
//! configured, every frame arrives plain and is checked for real, corrupted ones are dropped, and
//! the run is the same as the plain one with the same seed.

mod transport_support;

use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use std::time::Duration;

use bnxt_model::net::RoceFrame;
use bnxt_model::net::fault::WireFaults;
use bnxt_model::net::switch::WireDelivery;
use bnxt_model::roce::transport::{RecvCompletion, SendCompletion, SendOp, SendWqe, Sge, TransportStats};
use transport_support::{Fabric, pattern, recv, send};

const SRC: u32 = 1;
const DST: u32 = 2;
const LIMIT: Duration = Duration::from_secs(10);

/// What a run leaves behind, to compare.
#[derive(Debug, PartialEq)]
struct Outcome {
    trace: u64,
    sends: Vec<SendCompletion>,
    recvs: Vec<RecvCompletion>,
    stats: Vec<TransportStats>,
    switch: bnxt_model::net::switch::SwitchStats,
    faults: bnxt_model::net::fault::FaultCounters,
    icrc_drops: Vec<u64>,
    memory: Vec<u64>,
}

/// Counts of how frames arrived.
#[derive(Debug, Default)]
struct Arrivals {
    sealed: u64,
    plain: u64,
}

/// One round, as `Fabric::step` does it, through the sealed API when `sealed`.
fn step(f: &mut Fabric, sealed: bool, trace: &mut DefaultHasher, seen: &mut Arrivals) -> bool {
    let now = f.now;
    let mut busy = false;
    for node in &mut f.nodes {
        for qp in node.qps.values_mut() {
            loop {
                let mut buf = Vec::new();
                let frame = if sealed {
                    match qp.poll_transmit_sealed(now, &mut node.mem, &mut buf) {
                        Some(s) => {
                            trace.write(s.bytes());
                            f.sw.send_sealed(now, node.port, s)
                        }
                        None => break,
                    }
                } else {
                    if !qp.poll_transmit(now, &mut node.mem, &mut buf) {
                        break;
                    }
                    trace.write(&buf);
                    f.sw.send(now, node.port, buf)
                };
                frame.expect("the switch takes every frame");
                busy = true;
            }
        }
    }
    let mut due: Vec<WireDelivery> = Vec::new();
    f.sw.poll_wire_into(now, &mut due);
    for d in due {
        busy = true;
        if d.frame.is_sealed() {
            seen.sealed += 1;
        } else {
            seen.plain += 1;
        }
        let Some(node) = f.nodes.iter_mut().find(|n| n.port == d.port) else { continue };
        match RoceFrame::parse_wire(&d.frame) {
            Ok(fr) => match node.qps.get_mut(&fr.transport.bth.dest_qp) {
                Some(qp) => qp.handle_frame(now, &fr, &mut node.mem),
                None => node.unknown_qp += 1,
            },
            Err(e) => {
                node.drops.count(&e);
            }
        }
    }
    for node in &mut f.nodes {
        for qp in node.qps.values_mut() {
            if qp.next_deadline().is_some_and(|t| t <= now) {
                qp.on_timer(now);
                busy = true;
            }
        }
    }
    busy
}

/// Sends of awkward sizes, a WRITE with immediate data and a READ from NIC 0 to NIC 1 (and a
/// send back), run to the end through the plain or the sealed API.
fn run(faults: Option<(u64, WireFaults)>, sealed: bool) -> (Outcome, Arrivals) {
    let mut f = Fabric::new(2, faults);
    f.connect(0, 10, 1, 20, |_, a| a.timeout = 8);
    f.nodes[0].mem.add(SRC, 0x10_0000, 4 << 20, |i| pattern(1, i));
    f.nodes[0].mem.add(DST, 0x90_0000, 4 << 20, |_| 0);
    f.nodes[1].mem.add(SRC, 0x20_0000, 4 << 20, |i| pattern(2, i));
    f.nodes[1].mem.add(DST, 0xa0_0000, 4 << 20, |_| 0);
    let sizes = [0u32, 1, 3, 4095, 4096, 4097, 3 * 4096 + 1, 1 << 20];
    let mut at = 0u64;
    for (i, len) in sizes.into_iter().enumerate() {
        f.post_recv(1, 20, recv(i as u64, DST, 0xa0_0000 + at, len));
        f.post_send(0, 10, send(i as u64, SRC, 0x10_0000 + at + 3, len));
        at += u64::from(len) + 4096;
    }
    f.post_recv(1, 20, recv(100, DST, 0xa0_0000 + at, 0));
    f.post_send(
        0,
        10,
        SendWqe {
            id: 100,
            op: SendOp::RdmaWrite { va: 0x20_0000 + 2_000_000, rkey: SRC, imm: Some(0xfeed) },
            sges: smallvec::smallvec![Sge { addr: 0x10_0000, lkey: SRC, len: 70_000 }],
            length: 70_000,
            signaled: true,
            solicited: true,
        },
    );
    f.post_send(
        0,
        10,
        SendWqe {
            id: 101,
            op: SendOp::RdmaRead { va: 0x20_0000 + 5, rkey: SRC },
            sges: smallvec::smallvec![Sge { addr: 0x90_0000 + 11, lkey: DST, len: 300_000 }],
            length: 300_000,
            signaled: true,
            solicited: false,
        },
    );
    f.post_recv(0, 10, recv(200, DST, 0x90_0000 + 2_000_000, 9000));
    f.post_send(1, 20, send(200, SRC, 0x20_0000, 9000));

    let mut trace = DefaultHasher::new();
    let mut seen = Arrivals::default();
    loop {
        if step(&mut f, sealed, &mut trace, &mut seen) {
            continue;
        }
        match f.next_event() {
            Some(t) if t <= LIMIT => f.now = f.now.max(t),
            _ => break,
        }
    }
    let memory = f
        .nodes
        .iter()
        .flat_map(|n| [SRC, DST].map(|k| n.mem.bytes(k)))
        .map(|b| {
            let mut h = DefaultHasher::new();
            h.write(b);
            h.finish()
        })
        .collect();
    let outcome = Outcome {
        trace: trace.finish(),
        sends: [(0, 10), (1, 20)].into_iter().flat_map(|(n, q)| f.send_completions(n, q)).collect(),
        recvs: [(0, 10), (1, 20)].into_iter().flat_map(|(n, q)| f.recv_completions(n, q)).collect(),
        stats: vec![f.qp(0, 10).stats(), f.qp(1, 20).stats()],
        switch: f.sw.stats(),
        faults: f.sw.fault_counters(),
        icrc_drops: f.nodes.iter().map(|n| n.drops.icrc).collect(),
        memory,
    };
    (outcome, seen)
}

#[test]
fn without_faults_the_sealed_path_gives_exactly_what_the_plain_one_gives() {
    let (plain, plain_seen) = run(None, false);
    let (sealed, sealed_seen) = run(None, true);
    assert_eq!(sealed, plain);
    assert_eq!(plain.sends.len(), 11);
    assert!(plain.sends.iter().all(|c| c.status.is_ok()), "{:?}", plain.sends);
    assert_eq!(plain.recvs.len(), 10);
    assert_eq!(plain_seen.sealed, 0);
    assert!(sealed_seen.sealed > 300, "{sealed_seen:?}");
    assert_eq!(sealed_seen.plain, 0, "{sealed_seen:?}");
}

#[test]
fn with_faults_every_frame_arrives_plain_and_corruption_is_still_caught() {
    let lossy = WireFaults { drop: 0.02, duplicate: 0.02, reorder: 0.02, corrupt: 0.03, ..WireFaults::default() };
    for seed in [1, 2, 3] {
        let (plain, _) = run(Some((seed, lossy)), false);
        let (sealed, seen) = run(Some((seed, lossy)), true);
        assert_eq!(sealed, plain, "seed {seed}");
        assert_eq!(seen.sealed, 0, "seed {seed}: a faulty stage lets nothing through sealed");
        assert!(sealed.faults.corrupted > 0, "seed {seed}: {:?}", sealed.faults);
        assert!(sealed.icrc_drops.iter().sum::<u64>() > 0, "seed {seed}: corrupted frames caught by the ICRC");
        assert!(sealed.sends.iter().all(|c| c.status.is_ok()), "seed {seed}: {:?}", sealed.sends);
    }
}
