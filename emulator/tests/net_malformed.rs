//! No input from the wire makes the framing code panic: random bytes of every length, every
//! truncation of every kind of valid frame, every single-bit flip of one, and valid frames with
//! random bytes written over their headers. Each comes back as `Ok` or an error naming what was
//! wrong; truncations and flips that change the frame's meaning are errors.

mod net_support;

use bnxt_model::net::bth::BthPacket;
use bnxt_model::net::ethernet::EthernetFrame;
use bnxt_model::net::ext::{AethRepr, RethRepr};
use bnxt_model::net::ipv4::{Ipv4Packet, Ipv4Repr};
use bnxt_model::net::roce::{BTH_OFFSET, Path, peek_bth};
use bnxt_model::net::udp::UdpPacket;
use bnxt_model::net::{RoceFrame, icrc};
use net_support::{every_kind, mac};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Feed `bytes` to every parser and view; return whether the full RoCE parse accepted it.
fn try_everything(bytes: &[u8]) -> bool {
    let _ = RoceFrame::parse_unverified(bytes);
    let _ = icrc::verify(bytes);
    let _ = icrc::compute(bytes);
    if let Some(b) = peek_bth(bytes) {
        let _ = (b.opcode(), b.psn(), b.dest_qp(), b.pad_count());
    }
    if let Ok(e) = EthernetFrame::new_checked(bytes) {
        let _ = (e.src(), e.dst(), e.ethertype(), e.payload().len());
    }
    if let Ok(ip) = Ipv4Packet::new_checked(bytes) {
        let _ = (ip.payload().len(), ip.verify_checksum(), Ipv4Repr::parse(&ip));
    }
    if let Ok(u) = UdpPacket::new_checked(bytes) {
        let _ = (u.payload().len(), u.verify_checksum([10, 0, 0, 1].into(), [10, 0, 0, 2].into()));
    }
    if let Ok(b) = BthPacket::new_checked(bytes) {
        let _ = (b.opcode(), b.psn(), b.dest_qp(), b.tver(), b.pkey());
    }
    let _ = (RethRepr::parse(bytes), AethRepr::parse(bytes));
    match RoceFrame::parse(bytes) {
        Ok(f) => {
            assert!(f.payload.len() <= bytes.len());
            true
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            false
        }
    }
}

fn valid_frames() -> Vec<Vec<u8>> {
    every_kind(&Path::between(mac(1), mac(2), 0x77), 0x77)
}

#[test]
fn random_bytes_of_every_length_are_refused_without_panicking() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut accepted = 0;
    for len in 0..=300 {
        for _ in 0..40 {
            let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            accepted += usize::from(try_everything(&bytes));
        }
    }
    assert_eq!(accepted, 0, "random bytes passing every check, checksums and ICRC included");
}

#[test]
fn every_truncation_of_every_kind_of_frame_is_refused() {
    for frame in valid_frames() {
        assert!(try_everything(&frame));
        // The end of the IP packet: shorter than that, a frame is missing bytes of the ICRC at
        // least. (Ethernet padding after it may go.)
        let ip_end = 14 + usize::from(u16::from_be_bytes([frame[16], frame[17]]));
        for len in 0..frame.len() {
            let accepted = try_everything(&frame[..len]);
            assert_eq!(accepted, len >= ip_end, "length {len} of {} (IP ends at {ip_end})", frame.len());
        }
    }
}

#[test]
fn every_single_bit_flip_is_caught_except_in_the_variant_byte_or_padding() {
    for frame in valid_frames().into_iter().filter(|f| f.len() < 200) {
        let ip_end = 14 + usize::from(u16::from_be_bytes([frame[16], frame[17]]));
        for bit in 14 * 8..frame.len() * 8 {
            let mut f = frame.clone();
            f[bit / 8] ^= 1 << (bit % 8);
            let harmless = bit / 8 == BTH_OFFSET + 4 || bit / 8 >= ip_end;
            assert_eq!(try_everything(&f), harmless, "bit {bit} of a {}-byte frame", frame.len());
        }
    }
}

#[test]
fn random_header_bytes_never_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let frames = valid_frames();
    for round in 0..20_000 {
        let mut f = frames[round % frames.len()].clone();
        for _ in 0..rng.random_range(1..=6) {
            let at = rng.random_range(0..f.len().min(90));
            f[at] = rng.random();
        }
        if rng.random_bool(0.3) {
            let keep = rng.random_range(0..=f.len());
            f.truncate(keep);
        }
        try_everything(&f);
    }
}
