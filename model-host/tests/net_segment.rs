//! Two NICs on one segment: RoCE frames through the switch, with faults, into a pcap that is read
//! back and whose every ICRC is recomputed without the model's code.

#[path = "../../emulator/tests/net_support/mod.rs"]
mod net_support;

use std::time::Duration;

use bnxt_model::net::bth::BthRepr;
use bnxt_model::net::fault::{FaultStage, WireFaults};
use bnxt_model::net::roce::{Path, Transport, build_frame};
use bnxt_model::net::switch::{LinkTiming, Switch};
use bnxt_model::net::{DropCounters, Opcode, RoceFrame, WireError};
use bnxt_model_host::pcap::PcapTap;
use net_support::{every_kind, independent_icrc_ok, mac};
use pcap_file::pcap::PcapReader;

struct Run {
    pcap: Vec<u8>,
    received: Vec<u32>,
    drops: DropCounters,
    switch: Switch,
}

/// NIC 0 sends `n` SEND Only frames (PSN 0..n) to NIC 1 over a segment with `faults`; NIC 1
/// parses what arrives.
fn run(seed: u64, faults: WireFaults, n: u32, dir: &std::path::Path) -> Run {
    let mut sw = Switch::new(LinkTiming::default());
    let (p0, p1) = (sw.add_port(), sw.add_port());
    let file = dir.join(format!("segment-{seed}.pcap"));
    sw.start_capture();
    // NIC 1 speaks first, before faults are on, so the switch learns it (an ACK, as a responder
    // would send).
    let back = Path::between(mac(1), mac(0), 0x20);
    let mut hello = Vec::new();
    let ack =
        bnxt_model::net::ext::AethRepr { syndrome: bnxt_model::net::ext::Syndrome::Ack { credits: 0x1f }, msn: 0 };
    build_frame(
        &back,
        &Transport { aeth: Some(ack), ..Transport::bth(BthRepr::new(Opcode::Acknowledge, 0x20, 0)) },
        &[],
        &mut hello,
    )
    .unwrap();
    sw.send(Duration::ZERO, p1, hello).unwrap();
    assert_eq!(sw.poll(Duration::from_micros(10)).len(), 1);
    sw.set_faults(FaultStage::new(seed, faults, vec![]).unwrap());

    let path = Path::between(mac(0), mac(1), 0x30);
    let mut now = Duration::from_micros(10);
    let mut received = Vec::new();
    let mut drops = DropCounters::default();
    let deliver = |sw: &mut Switch, now: Duration, received: &mut Vec<u32>, drops: &mut DropCounters| {
        for d in sw.poll(now) {
            if d.port != p1 {
                continue;
            }
            match RoceFrame::parse(&d.frame) {
                Ok(f) => {
                    assert_eq!(f.payload.len(), 1000 + (f.transport.bth.psn as usize % 7));
                    received.push(f.transport.bth.psn);
                }
                Err(e) => {
                    drops.count(&e);
                }
            }
        }
    };
    for psn in 0..n {
        let payload = vec![psn as u8; 1000 + (psn as usize % 7)];
        let mut frame = Vec::with_capacity(1100);
        build_frame(&path, &Transport::bth(BthRepr::new(Opcode::SendOnly, 0x30, psn)), &payload, &mut frame).unwrap();
        sw.send(now, p0, frame).unwrap();
        now += Duration::from_nanos(100);
        deliver(&mut sw, now, &mut received, &mut drops);
    }
    while let Some(t) = sw.next_deadline() {
        now = now.max(t);
        deliver(&mut sw, now, &mut received, &mut drops);
    }
    let mut tap = PcapTap::create(&file).unwrap();
    tap.record_captured(&mut sw.stop_capture());
    tap.finish().unwrap();
    Run { pcap: std::fs::read(&file).unwrap(), received, drops, switch: sw }
}

fn lossy() -> WireFaults {
    WireFaults { drop: 0.02, duplicate: 0.01, reorder: 0.02, corrupt: 0.01, delay: 0.01, ..WireFaults::default() }
}

#[test]
fn a_lossy_segment_loses_duplicates_reorders_and_corrupts_as_counted() {
    let dir = tempfile::tempdir().unwrap();
    let n = 5_000;
    let r = run(7, lossy(), n, dir.path());
    let c = r.switch.fault_counters();
    assert_eq!(c.frames, u64::from(n));
    assert!(c.dropped > 0 && c.duplicated > 0 && c.reordered > 0 && c.corrupted > 0 && c.delayed > 0, "{c:?}");

    // What reached NIC 1: every frame once, less drops, plus duplicates, less corrupted ones the
    // receiver refused (a flip in the BTH's variant byte or the ACK's Ethernet padding goes
    // unnoticed and harmlessly so).
    let delivered_to_1 = r.received.len() as u64 + r.drops.total();
    assert_eq!(delivered_to_1, u64::from(n) - c.dropped + c.duplicated);
    assert!(r.drops.total() <= c.corrupted && r.drops.total() + 5 >= c.corrupted * 9 / 10, "{:?} {c:?}", r.drops);
    assert!(r.drops.icrc > 0, "{:?}", r.drops);

    // Reordering happened: PSNs did not all arrive in order.
    assert!(r.received.windows(2).any(|w| w[1] < w[0]));
    // Nothing arrived that was not sent.
    assert!(r.received.iter().all(|&psn| psn < n));
}

#[test]
fn the_pcap_holds_every_frame_on_the_wire_and_every_icrc_checks_out_independently() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(11, lossy(), 3_000, dir.path());
    let c = r.switch.fault_counters();
    let mut reader = PcapReader::new(&r.pcap[..]).unwrap();
    let (mut frames, mut bad_icrc, mut last) = (0u64, 0u64, Duration::ZERO);
    let mut model_icrc_errors = 0u64;
    while let Some(p) = reader.next_packet() {
        let p = p.unwrap();
        frames += 1;
        assert!(p.timestamp >= last, "timestamps go forward");
        last = p.timestamp;
        assert_eq!(p.orig_len as usize, p.data.len());
        match independent_icrc_ok(&p.data) {
            Some(true) => {}
            Some(false) => bad_icrc += 1,
            None => {} // a corrupted header no longer says RoCE v2
        }
        if matches!(RoceFrame::parse(&p.data), Err(WireError::Icrc { .. })) {
            model_icrc_errors += 1;
        }
    }
    // The tap sees every frame that leaves the fault stage (all sent, less drops, plus
    // duplicates) and NIC 1's first frame, sent before the faults were on.
    assert_eq!(frames, c.frames - c.dropped + c.duplicated + 1);
    // Only corrupted frames can fail the ICRC, and both implementations agree on how many.
    assert!(bad_icrc <= c.corrupted && bad_icrc > 0, "{bad_icrc} {c:?}");
    assert_eq!(model_icrc_errors, bad_icrc);
}

#[test]
fn a_clean_segment_delivers_every_kind_of_frame_with_good_icrcs_in_order() {
    let mut sw = Switch::new(LinkTiming::default());
    let (p0, p1) = (sw.add_port(), sw.add_port());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clean.pcap");
    sw.start_capture();
    let frames = every_kind(&Path::between(mac(0), mac(1), 0x44), 0x44);
    for (i, f) in frames.iter().enumerate() {
        sw.send(Duration::from_nanos(i as u64), p0, f.clone()).unwrap();
    }
    let got = sw.poll(Duration::from_secs(1));
    assert_eq!(got.len(), frames.len(), "flooded to the only other port");
    for (d, f) in got.iter().zip(&frames) {
        assert_eq!((d.port, &d.frame), (p1, f));
        assert_eq!(independent_icrc_ok(&d.frame), Some(true));
        RoceFrame::parse(&d.frame).unwrap();
    }
    let mut tap = PcapTap::create(&file).unwrap();
    tap.record_captured(&mut sw.stop_capture());
    tap.finish().unwrap();
    let bytes = std::fs::read(&file).unwrap();
    let mut reader = PcapReader::new(&bytes[..]).unwrap();
    let mut n = 0;
    while let Some(p) = reader.next_packet() {
        assert_eq!(&p.unwrap().data[..], &frames[n][..]);
        n += 1;
    }
    assert_eq!(n, frames.len());
}

#[test]
fn the_same_seed_replays_the_same_wire_and_another_seed_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let sub = |name: &str| {
        let d = dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let a = run(5, lossy(), 1_000, &sub("a"));
    let b = run(5, lossy(), 1_000, &sub("b"));
    let c = run(6, lossy(), 1_000, &sub("c"));
    assert_eq!(a.pcap, b.pcap);
    assert_eq!(a.received, b.received);
    assert_ne!(a.pcap, c.pcap);
}
