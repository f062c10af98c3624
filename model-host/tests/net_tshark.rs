//! Wireshark's decoders read the model's frames: every RoCE v2 frame decodes as InfiniBand with
//! the opcode and PSN the model wrote, and nothing is malformed.
//!
//! Needs `tshark` (Debian package `tshark`), so it is ignored by default. Run it with
//! `cargo test -p bnxt-model --test net_tshark -- --ignored`. (Wireshark does not check the
//! ICRC; it shows it, and this test compares what it shows.)

#[path = "../../emulator/tests/net_support/mod.rs"]
mod net_support;

use std::process::Command;
use std::time::Duration;

use bnxt_model::net::RoceFrame;
use bnxt_model::net::roce::Path;
use bnxt_model_host::pcap::PcapTap;
use net_support::{every_kind, mac};

#[test]
#[ignore = "needs tshark"]
fn tshark_decodes_every_frame_as_infiniband_with_nothing_malformed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("every-kind.pcap");
    let frames = every_kind(&Path::between(mac(0), mac(1), 0x123), 0x123);
    let mut tap = PcapTap::create(&file).unwrap();
    for (i, f) in frames.iter().enumerate() {
        tap.record(Duration::from_micros(i as u64), f);
    }
    tap.finish().unwrap();

    // Wireshark 4.0's RPC-over-RDMA heuristic takes the empty payload of a SEND Only for its own
    // and reports it malformed (it does the same with a frame scapy builds, and with a 4-byte
    // SEND Only payload); it is not part of RoCE, so it is turned off.
    let out = Command::new("tshark")
        .args(["-n", "--disable-protocol", "rpcordma"])
        .arg("-r")
        .arg(&file)
        .args(["-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=,"])
        .args(["-e", "frame.protocols", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn"])
        .args(["-e", "infiniband.bth.destqp", "-e", "infiniband.invariant.crc", "-e", "_ws.malformed"])
        .args(["-e", "_ws.expert.severity", "-e", "infiniband.bth.padcnt", "-e", "infiniband.reth.va"])
        .args(["-e", "infiniband.reth.r_key", "-e", "infiniband.reth.dmalen", "-e", "infiniband.aeth.syndrome"])
        .args(["-e", "infiniband.aeth.msn", "-e", "infiniband.immdt"])
        .output()
        .expect("tshark runs (install the tshark package)");
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), frames.len(), "{text}");
    for (line, frame) in lines.iter().zip(&frames) {
        let f = RoceFrame::parse(frame).unwrap();
        let cols: Vec<&str> = line.split('|').collect();
        assert_eq!(cols.len(), 14, "{line}");
        let payload_layer = if f.payload.is_empty() { "" } else { ":data" };
        assert_eq!(cols[0], format!("eth:ethertype:ip:udp:infiniband{payload_layer}"), "{line}");
        assert_eq!(parse_num(cols[1]), u64::from(f.transport.bth.opcode.code()), "{line}");
        assert_eq!(parse_num(cols[2]), u64::from(f.transport.bth.psn), "{line}");
        assert_eq!(parse_num(cols[3]), u64::from(f.transport.bth.dest_qp), "{line}");
        // Wireshark shows the four ICRC bytes read big-endian; the ICRC is carried little-endian.
        assert_eq!(parse_num(cols[4]), u64::from(f.icrc.swap_bytes()), "{line}");
        assert_eq!(cols[5], "", "malformed: {line}");
        assert_eq!(cols[6], "", "expert info: {line}");
        let t = &f.transport;
        assert_eq!(parse_num(cols[7]), u64::from(t.bth.pad_count), "{line}");
        let opt = |s: &str| (!s.is_empty()).then(|| parse_num(s));
        assert_eq!(opt(cols[8]), t.reth.map(|r| r.va), "{line}");
        assert_eq!(opt(cols[9]), t.reth.map(|r| u64::from(r.rkey)), "{line}");
        assert_eq!(opt(cols[10]), t.reth.map(|r| u64::from(r.dma_len)), "{line}");
        assert_eq!(opt(cols[11]), t.aeth.map(|a| u64::from(a.syndrome.to_byte())), "{line}");
        assert_eq!(opt(cols[12]), t.aeth.map(|a| u64::from(a.msn)), "{line}");
        // ImmDt is a byte field (hex without 0x), listed once for the header and once for its value.
        let imm = cols[13].split(',').next().filter(|s| !s.is_empty());
        assert_eq!(imm.map(|h| u64::from_str_radix(h, 16).unwrap()), t.immdt.map(u64::from), "{line}");
    }
}

fn parse_num(s: &str) -> u64 {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    }
    .unwrap_or_else(|_| panic!("not a number: {s:?}"))
}
