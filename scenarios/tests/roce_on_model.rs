//! The driver's regions and queue pairs (`bnxt`) against the model's RoCE engine
//! (`bnxt-model`) through the in-process target: the contract's "Regions", "Queue pairs" and
//! "The fabric", on two model NICs sharing one virtual Ethernet and one virtual clock.

use std::sync::Arc;
use std::time::Duration;

use bnxt::{Completion, Error, Nic, Qp, Region, Side, Status};
use bnxt_model_host::machine::ModelMachine;
use bnxt_model_host::world::WorldConfig;

const MIB: usize = 1 << 20;
const WAIT: Duration = Duration::from_secs(5);

fn machine(nics: usize) -> Arc<ModelMachine> {
    ModelMachine::new(WorldConfig { nics, seed: 7, ..WorldConfig::default() })
}

/// `len` bytes of a splitmix64 stream from `seed` (Steele, Lea, Flood, 2014): every byte of a
/// message differs from its neighbours, so a misplaced or repeated chunk shows.
fn random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    let mut next = || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        bytes.extend_from_slice(&next().to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

/// Two NICs, each with one queue pair, connected to each other.
struct Two {
    m: Arc<ModelMachine>,
    a: Nic,
    b: Nic,
    qa: Qp,
    qb: Qp,
}

fn two() -> Two {
    let m = machine(2);
    let a = Nic::open(&*m, 0).unwrap();
    let b = Nic::open(&*m, 1).unwrap();
    let mut qa = Qp::make(&a).unwrap();
    let mut qb = Qp::make(&b).unwrap();
    let (ea, eb) = (qa.endpoint(), qb.endpoint());
    qa.connect(&eb).unwrap();
    qb.connect(&ea).unwrap();
    Two { m, a, b, qa, qb }
}

/// Nothing the driver did was unimplemented in the model, misformed, or lost.
fn assert_clean(m: &ModelMachine, nics: usize) {
    for i in 0..nics {
        let s = m.world().nic_state(i);
        let r = &s.roce;
        assert_eq!((s.unimplemented, s.dma_errors), (0, 0), "NIC {i}: {s:?}");
        assert!(r.unimplemented_commands.is_empty() && r.unimplemented_features == 0, "NIC {i}: {r:?}");
        assert_eq!((r.channel_errors, r.creq_lost, r.unimplemented_doorbells), (0, 0, 0), "NIC {i}: {r:?}");
        assert!(r.bad_doorbells.is_empty(), "NIC {i}: {r:?}");
        assert_eq!((r.bad_wqes, r.msn_mismatches, r.cq_overflows), (0, 0, 0), "NIC {i}: {r:?}");
    }
}

fn ok(bytes: usize) -> Option<Completion> {
    Some(Completion { bytes: bytes as u64, status: Status::Ok })
}

#[test]
fn messages_of_every_size_arrive_whole_with_every_byte() {
    let mut t = two();
    let src = Region::host(&t.a, 2 * MIB).unwrap();
    let dst = Region::host(&t.b, 2 * MIB).unwrap();
    for (n, len) in [1usize, 4095, 4096, 4097, MIB].into_iter().enumerate() {
        let data = random(len, n as u64);
        src.write(7, &data);
        t.qb.receive(&dst, 4096, len);
        t.qa.send(&src, 7, len);
        assert_eq!(t.qa.wait(Side::Send, WAIT), ok(len), "send of {len} bytes");
        assert_eq!(t.qb.wait(Side::Receive, WAIT), ok(len), "receive of {len} bytes");
        assert!(dst.read(4096, len) == data, "the {len} bytes arrived as sent");
        assert_eq!(dst.read(4096 + len, 1), [0], "nothing past the message");
        dst.write(4096, &vec![0; len]);
    }
    assert_clean(&t.m, 2);
}

#[test]
fn a_full_ring_has_no_room_and_every_entry_completes_in_order() {
    let mut t = two();
    let src = Region::host(&t.a, 4095).unwrap();
    let dst = Region::host(&t.b, 4095).unwrap();
    let data = random(4095, 1);
    src.write(0, &data);
    for i in 0..4095 {
        t.qb.receive(&dst, i, 1);
    }
    assert_eq!(t.qb.room(Side::Receive), 0);
    for i in 0..4095 {
        t.qa.send(&src, i, 1);
    }
    assert_eq!(t.qa.room(Side::Send), 0);
    for i in 0..4095 {
        assert_eq!(t.qa.wait(Side::Send, WAIT), ok(1), "send {i}");
    }
    for i in 0..4095 {
        assert_eq!(t.qb.wait(Side::Receive, WAIT), ok(1), "receive {i}");
    }
    assert_eq!((t.qa.room(Side::Send), t.qb.room(Side::Receive)), (4095, 4095));
    assert!(dst.read(0, 4095) == data, "each byte went to the receive posted for it");
    // The rings go round again.
    t.qb.receive(&dst, 0, 1);
    t.qa.send(&src, 0, 1);
    assert_eq!(t.qa.wait(Side::Send, WAIT), ok(1));
    assert_eq!(t.qb.wait(Side::Receive, WAIT), ok(1));
    assert_clean(&t.m, 2);
}

#[test]
fn a_receive_posted_after_its_send_is_still_delivered() {
    let mut t = two();
    let src = Region::host(&t.a, 8192).unwrap();
    let dst = Region::host(&t.b, 8192).unwrap();
    let data = random(5000, 2);
    src.write(0, &data);
    t.qa.send(&src, 0, 5000);
    // The send meets no receive: the responder answers RNR and the requester waits to retry.
    assert_eq!(t.qa.wait(Side::Send, Duration::from_micros(200)), None);
    t.qb.receive(&dst, 100, 8000);
    assert_eq!(t.qa.wait(Side::Send, WAIT), ok(5000));
    assert_eq!(t.qb.wait(Side::Receive, WAIT), ok(5000));
    assert!(dst.read(100, 5000) == data);
    assert_clean(&t.m, 2);
}

#[test]
fn a_send_no_receive_ever_meets_fails_rnr_retry_exceeded() {
    let mut t = two();
    let src = Region::host(&t.a, 4096).unwrap();
    t.qa.send(&src, 0, 64);
    t.qa.send(&src, 0, 64);
    let first = t.qa.wait(Side::Send, WAIT).expect("the RNR retries run out within 5 s");
    assert_eq!(first.status, Status::RnrRetryExceeded);
    assert_eq!(t.qa.wait(Side::Send, WAIT).map(|c| c.status), Some(Status::Flushed));
}

#[test]
fn a_read_copies_between_regions_of_one_nic() {
    let m = machine(1);
    let nic = Nic::open(&*m, 0).unwrap();
    let from = Region::host(&nic, 2 * MIB).unwrap();
    let copy = Region::host(&nic, 2 * MIB).unwrap();
    let data = random(MIB, 3);
    from.write(4096, &data);
    let mut r1 = Qp::make(&nic).unwrap();
    let mut r2 = Qp::make(&nic).unwrap();
    let (e1, e2) = (r1.endpoint(), r2.endpoint());
    r1.connect(&e2).unwrap();
    r2.connect(&e1).unwrap();
    r1.read(&copy, 0, &from, 4096, MIB);
    assert_eq!(r1.wait(Side::Send, WAIT), ok(MIB));
    assert!(copy.read(0, MIB) == data, "every byte read back");
    for len in [1, 4095, 4096, 4097] {
        r1.read(&copy, 3, &from, 4096 + 11, len);
        assert_eq!(r1.wait(Side::Send, WAIT), ok(len));
        assert!(copy.read(3, len) == data[11..11 + len]);
    }
    assert_eq!(r2.poll(Side::Receive), None, "a read consumes no receive");
    assert_clean(&m, 1);
}

#[test]
fn process_memory_handed_over_is_a_region_like_any_other() {
    let mut t = two();
    let data = random(3 * 4096 + 5, 4);
    let src = Region::pages(&t.a, bnxt_pci::dma::HostPages::from_bytes(&data)).unwrap();
    let dst = Region::pages(&t.b, bnxt_pci::dma::HostPages::new(data.len())).unwrap();
    t.qb.receive(&dst, 0, data.len());
    t.qa.send(&src, 0, data.len());
    assert_eq!(t.qa.wait(Side::Send, WAIT), ok(data.len()));
    assert_eq!(t.qb.wait(Side::Receive, WAIT), ok(data.len()));
    assert!(dst.read(0, data.len()) == data);
    assert_clean(&t.m, 2);
}

#[test]
fn regions_past_the_limits_of_the_open_are_refused() {
    let m = machine(1);
    let nic = Nic::open(&*m, 0).unwrap();
    let limits = nic.limits();
    let state = m.world().nic_state(0);
    assert_eq!(limits.regions, state.limits.regions, "the model's limit: {:?}", state.limits);
    let err = Region::host(&nic, usize::MAX / 2).unwrap_err();
    assert!(matches!(err, Error::Limit { .. }), "a region past the firmware's largest: {err}");
    if limits.regions <= 20_000 {
        let mut all: Vec<Region> = (0..limits.regions).map(|_| Region::host(&nic, 4096).unwrap()).collect();
        let err = Region::host(&nic, 4096).unwrap_err();
        assert_eq!(err, Error::Limit { nic: "BNXT".into(), what: "regions".into(), limit: limits.regions.into() });
        all.pop().unwrap().deregister().unwrap();
        Region::host(&nic, 4096).unwrap();
    }
}

#[test]
fn destroy_with_work_outstanding_then_the_peer_finds_it_gone() {
    let mut t = two();
    let src = Region::host(&t.a, 4096).unwrap();
    let dst = Region::host(&t.b, 4096).unwrap();
    for _ in 0..10 {
        t.qb.receive(&dst, 0, 64);
    }
    let mapped = t.m.world().nic_state(1).dma_mappings;
    assert_eq!(t.qb.destroy(), Ok(()));
    assert!(t.m.world().nic_state(1).dma_mappings < mapped, "its memory is freed");
    assert_eq!(t.qb.destroy(), Ok(()), "a second destroy answers as the first");
    assert_eq!(t.qb.endpoint().qpn, t.qb.endpoint().qpn);
    // The sends to it are never acknowledged: the first exhausts its retries, the rest flush.
    for _ in 0..3 {
        t.qa.send(&src, 0, 64);
    }
    let got: Vec<Status> =
        (0..3).map(|_| t.qa.wait(Side::Send, Duration::from_secs(10)).expect("completes").status).collect();
    assert_eq!(got, [Status::RetryExceeded, Status::Flushed, Status::Flushed]);
    assert_clean(&t.m, 2);
}

#[test]
fn close_with_regions_and_queue_pairs_open_frees_everything() {
    let mut t = two();
    let src = Region::host(&t.a, 4096).unwrap();
    let dst = Region::host(&t.b, 4096).unwrap();
    t.qb.receive(&dst, 0, 64);
    t.qa.send(&src, 0, 64);
    t.qb.receive(&dst, 0, 64);
    t.a.close();
    t.b.close();
    for i in 0..2 {
        let s = t.m.world().nic_state(i);
        assert_eq!(s.dma_mappings, 0, "NIC {i}: {s:?}");
        assert!(!s.bus_master && s.relaxed_ordering && !s.driver_registered, "NIC {i}: {s:?}");
    }
    assert_eq!(src.len(), 4096, "a region's length still answers");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| src.read(0, 1)));
    assert_eq!(
        *r.unwrap_err().downcast::<String>().unwrap(),
        "BNXT: used after close (a closed NIC answers only name, bus and identity)"
    );
    drop((t.qa, t.qb, src, dst));
    assert_clean(&t.m, 2);
}

#[test]
fn sends_and_receives_run_on_two_threads() {
    let mut t = two();
    let src = Region::host(&t.a, MIB).unwrap();
    let dst = Region::host(&t.b, MIB).unwrap();
    let data = random(MIB, 5);
    src.write(0, &data);
    let (_, rb) = t.qb.split();
    let (sa, _) = t.qa.split();
    // Virtual time passes whenever a thread waits, whatever the other is doing, so only the
    // sender waits (its completions need the receives it meets); the receiver posts every
    // receive before the first send and then polls, letting the sender's waits move time.
    let posted = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..256 {
                rb.receive(&dst, i * 4096, 4096);
            }
            posted.wait();
            for i in 0..256 {
                let mut polls = 0u64;
                let c = loop {
                    if let Some(c) = rb.poll() {
                        break c;
                    }
                    polls += 1;
                    assert!(polls < 100_000_000, "receive {i} never completed");
                    std::thread::yield_now();
                };
                assert_eq!(Some(c), ok(4096), "receive {i}");
            }
        });
        s.spawn(|| {
            posted.wait();
            for i in 0..256 {
                sa.send(&src, i * 4096, 4096);
                assert_eq!(sa.wait(WAIT), ok(4096), "send {i}");
            }
        });
    });
    assert!(dst.read(0, MIB) == data);
    assert_clean(&t.m, 2);
}

#[test]
fn deregister_and_destroy_give_everything_back() {
    let m = machine(1);
    let nic = Nic::open(&*m, 0).unwrap();
    let mapped = m.world().nic_state(0).dma_mappings;
    let r = Region::host(&nic, 5 * MIB).unwrap();
    let mut q = Qp::make(&nic).unwrap();
    assert!(m.world().nic_state(0).dma_mappings > mapped);
    assert_eq!(r.deregister(), Ok(()));
    assert_eq!(q.destroy(), Ok(()));
    assert_eq!(m.world().nic_state(0).dma_mappings, mapped, "the region's and the queue pair's memory is freed");
    assert_eq!((r.deregister(), q.destroy()), (Ok(()), Ok(())), "second calls answer as the first");
    assert_clean(&m, 1);
}
