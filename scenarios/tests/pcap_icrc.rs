//! The pcap a run leaves, checked by code that shares nothing with the model: a pcap reader, an
//! Ethernet/IPv4/UDP walk and a bit-by-bit CRC-32 written here from the formats' definitions.
//!
//! The RoCE v2 ICRC (InfiniBand Architecture Specification Vol 1, Annex A17, "ICRC"; the same
//! masking as Linux's rdma_rxe `rxe_icrc.c`): a CRC-32 (the Ethernet polynomial, reflected,
//! initial all-ones, final complement) over 8 bytes of 0xff, then the IPv4 header with its Type
//! of Service, Time to Live and header checksum set to all-ones, the UDP header with its checksum
//! set to all-ones, the BTH with its byte 4 (F/B bits and reserved) set to all-ones, and the rest
//! of the packet up to the ICRC, which follows as four little-endian bytes.

use std::path::Path;
use std::process::Command;

/// One captured frame.
struct Record {
    data: Vec<u8>,
}

/// Read a classic pcap file (magic 0xa1b2c3d4 or the nanosecond 0xa1b23c4d, either byte order).
fn read_pcap(path: &Path) -> Vec<Record> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(bytes.len() >= 24, "{}: shorter than a pcap header", path.display());
    let magic = u32::from_le_bytes(bytes[0..4].try_into().unwrap());
    let little = match magic {
        0xa1b2_c3d4 | 0xa1b2_3c4d => true,
        0xd4c3_b2a1 | 0x4d3c_b2a1 => false,
        other => panic!("{}: not a pcap file (magic {other:#x})", path.display()),
    };
    let u32_at = |at: usize| {
        let b: [u8; 4] = bytes[at..at + 4].try_into().unwrap();
        if little { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) }
    };
    assert_eq!(u32_at(20), 1, "link type must be Ethernet");
    let mut records = Vec::new();
    let mut at = 24;
    while at < bytes.len() {
        assert!(at + 16 <= bytes.len(), "truncated record header at {at}");
        let captured = u32_at(at + 8) as usize;
        let original = u32_at(at + 12) as usize;
        assert_eq!(captured, original, "the model captures whole frames");
        at += 16;
        assert!(at + captured <= bytes.len(), "truncated record at {at}");
        records.push(Record { data: bytes[at..at + captured].to_vec() });
        at += captured;
    }
    records
}

/// CRC-32 as IEEE 802.3 defines it, one bit at a time.
fn crc32(chunks: &[&[u8]]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for chunk in chunks {
        for &byte in *chunk {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 != 0 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
            }
        }
    }
    !crc
}

/// The Internet checksum of an IPv4 header: zero when the header is intact.
fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum = 0u32;
    for pair in header.chunks(2) {
        sum += u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// What the independent walk makes of a frame.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// A RoCE v2 packet whose ICRC is right.
    Good,
    /// A RoCE v2 packet (intact Ethernet, IPv4 and UDP to port 4791) whose ICRC is wrong.
    BadIcrc,
    /// Not a well-formed RoCE v2 packet before the ICRC (e.g. a corrupted IP header).
    NotRoce,
}

fn judge(frame: &[u8]) -> Verdict {
    const ETH: usize = 14;
    if frame.len() < ETH + 20 || frame[12..14] != [0x08, 0x00] {
        return Verdict::NotRoce;
    }
    let ip = &frame[ETH..];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if ip[0] >> 4 != 4 || ihl != 20 || total > ip.len() || total < ihl + 8 + 12 + 4 || ipv4_checksum(&ip[..ihl]) != 0 {
        return Verdict::NotRoce;
    }
    let udp = &ip[ihl..];
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    // RoCE v2 over IPv4 may leave the UDP checksum zero (Annex A17); the model always does, so a
    // non-zero one is a corrupted header, refused before the ICRC as a receiver checks it.
    if ip[9] != 17 || u16::from_be_bytes([udp[2], udp[3]]) != 4791 || udp_len != total - ihl || udp[6..8] != [0, 0] {
        return Verdict::NotRoce;
    }
    let packet = &ip[..total];
    let (body, icrc) = packet.split_at(total - 4);
    let mut masked = body.to_vec();
    masked[1] = 0xff; // type of service
    masked[8] = 0xff; // time to live
    masked[10] = 0xff; // header checksum
    masked[11] = 0xff;
    masked[ihl + 6] = 0xff; // UDP checksum
    masked[ihl + 7] = 0xff;
    masked[ihl + 8 + 4] = 0xff; // BTH byte 4: F/B bits and reserved
    let computed = crc32(&[&[0xff; 8], &masked]);
    if computed == u32::from_le_bytes(icrc.try_into().unwrap()) { Verdict::Good } else { Verdict::BadIcrc }
}

/// Run one suite file with a pcap and a transcript: the pcap records and the transcript text of
/// each scenario (or matrix variant) it holds.
fn run(scenario: &str) -> (Vec<Vec<Record>>, Vec<String>) {
    let out = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_bnxt-rig"))
        .current_dir(root)
        .args(["run", scenario, "--pcap"])
        .arg(out.path().join("pcap"))
        .arg("--transcript")
        .arg(out.path().join("transcript"))
        .output()
        .expect("run bnxt-rig");
    assert!(status.status.success(), "{scenario} failed:\n{}", String::from_utf8_lossy(&status.stdout));
    let files = |dir: &str, ext: &str| {
        let mut files: Vec<_> = std::fs::read_dir(out.path().join(dir)).unwrap().map(|e| e.unwrap().path()).collect();
        files.retain(|p| p.extension().is_some_and(|e| e == ext));
        files.sort();
        assert!(!files.is_empty(), "no .{ext} file written");
        files
    };
    let records = files("pcap", "pcap").iter().map(|p| read_pcap(p)).collect();
    let transcripts = files("transcript", "transcript").iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
    (records, transcripts)
}

#[test]
fn every_frame_of_a_clean_run_carries_a_right_icrc() {
    let (records, _) = run("scenarios/roce/send-receive-then-read-back.yaml");
    let records = records.into_iter().next().unwrap();
    // That scenario's wire corrupts frames too; count what the walk says of each.
    let verdicts: Vec<Verdict> = records.iter().map(|r| judge(&r.data)).collect();
    let good = verdicts.iter().filter(|v| **v == Verdict::Good).count();
    assert!(good > 2000, "a 1 MiB send, a 1 MiB read and 1000 small messages make thousands of frames; got {good}");
    let (variants, _) = run("scenarios/roce/sizes.yaml");
    assert!(variants.len() > 1, "every size variant leaves its own pcap");
    for records in &variants {
        assert!(!records.is_empty());
        for (i, r) in records.iter().enumerate() {
            assert_eq!(judge(&r.data), Verdict::Good, "frame {} of a fault-free run", i + 1);
        }
    }
}

#[test]
fn the_frames_the_model_dropped_for_their_icrc_are_exactly_the_ones_with_a_wrong_icrc() {
    let (records, transcript) = run("scenarios/roce/lossy-corrupt.yaml");
    let records = records.into_iter().next().unwrap();
    let transcript = transcript.concat();
    let bad = records.iter().filter(|r| judge(&r.data) == Verdict::BadIcrc).count();
    let dropped = transcript.lines().filter(|l| l.contains("pkt-drop ICRC")).count();
    let corrupted = transcript.lines().filter(|l| l.contains("wire-fault corrupt")).count();
    assert!(bad > 0, "a 3% corrupting wire over thousands of frames spoils some ICRCs");
    assert!(bad <= corrupted, "{bad} bad ICRCs but only {corrupted} frames corrupted");
    assert_eq!(bad, dropped, "the independent check and the model disagree on which frames are bad");
}
