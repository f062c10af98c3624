//! The invariant CRC (ICRC) of RoCE v2 over IPv4.
//!
//! IBA Vol 1 §7.8 (CRCs) defines the ICRC as CRC-32 with the Ethernet polynomial (0x04C11DB7, bits
//! reflected, initial value all ones, result inverted: what `crc32fast` computes) over the fields
//! of a packet that do not change in flight, with the variant fields replaced by ones. Annex A17
//! (RoCE v2) applies it to IP/UDP: the computation runs over
//!
//! 1. 8 bytes of 0xff standing for the LRH that RoCE v2 does not carry;
//! 2. the IPv4 header with type of service (DSCP and ECN), TTL and header checksum set to ones;
//! 3. the UDP header with its checksum set to ones;
//! 4. the BTH with its byte 4 (F, B and reserved bits: `resv8a`) set to ones;
//! 5. the extended headers, the payload and the pad bytes, unchanged.
//!
//! The four ICRC bytes follow the pad, least significant byte first. Cross-checked with Linux
//! drivers/infiniband/sw/rxe/rxe_icrc.c (`rxe_icrc_hdr`: seed 0xdebb20e3 is the CRC register after
//! the eight 0xff bytes; `tos`, `ttl`, `check`, UDP `check` and BTH `resv8a` set to ones; the
//! inverted CRC stored in host order on little-endian machines) and scapy's
//! scapy/contrib/roce.py (`BTH.compute_icrc`, `pack_icrc`). The test vectors below include a
//! frame captured from a ConnectX-4 Lx.

use super::bth::{self, VARIANT_BYTE};
use super::error::{Layer, WireError, need};
use super::ipv4::{self, CHECKSUM_OFFSET, TOS_OFFSET, TTL_OFFSET};
use super::udp;

/// Bytes of the ICRC.
pub const ICRC_LEN: usize = 4;

/// IPv4 header, UDP header and BTH: the part of the packet with variant fields.
const MASKED_LEN: usize = ipv4::HEADER_LEN + udp::HEADER_LEN + bth::HEADER_LEN;

/// Outcome of checking a packet's ICRC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcrcCheck {
    /// The carried ICRC matches.
    Good,
    /// It does not: the receiver drops the packet.
    Bad {
        /// ICRC as carried (the trailing four bytes, little-endian).
        carried: u32,
        /// ICRC computed.
        computed: u32,
    },
}

impl IcrcCheck {
    fn of(carried: u32, computed: u32) -> IcrcCheck {
        if carried == computed { IcrcCheck::Good } else { IcrcCheck::Bad { carried, computed } }
    }

    /// Whether the ICRC matched.
    pub fn is_good(&self) -> bool {
        *self == IcrcCheck::Good
    }

    /// `Ok` when good, [`WireError::Icrc`] otherwise.
    pub fn into_result(self) -> Result<(), WireError> {
        match self {
            IcrcCheck::Good => Ok(()),
            IcrcCheck::Bad { carried, computed } => Err(WireError::Icrc { carried, computed }),
        }
    }
}

/// Offsets, from the start of the IPv4 header, of the bytes the ICRC covers as ones: IPv4 type
/// of service, TTL and header checksum, UDP checksum, BTH byte 4.
const VARIANT_OFFSETS: [usize; 7] = [
    TOS_OFFSET,
    TTL_OFFSET,
    CHECKSUM_OFFSET,
    CHECKSUM_OFFSET + 1,
    ipv4::HEADER_LEN + udp::CHECKSUM_OFFSET,
    ipv4::HEADER_LEN + udp::CHECKSUM_OFFSET + 1,
    ipv4::HEADER_LEN + udp::HEADER_LEN + VARIANT_BYTE,
];

/// The CRC after the eight 0xff bytes that stand for the LRH, in `crc32fast`'s form (the
/// finalised CRC of those bytes; rxe_icrc.c seeds its register with 0xdebb20e3, the complement
/// of this). Computed at build time; a test checks it against `crc32fast`.
const AFTER_LRH: u32 = crc32_bitwise(&[0xff; 8]);

/// CRC-32 (reflected 0xEDB88320, initial ones, final inversion) a bit at a time, for constants.
const fn crc32_bitwise(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    let mut i = 0;
    while i < bytes.len() {
        crc ^= bytes[i] as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
            bit += 1;
        }
        i += 1;
    }
    !crc
}

/// Refuse what the ICRC is not defined for here: shorter than the masked headers, or not IPv4
/// without options.
fn check_packet(packet: &[u8]) -> Result<(), WireError> {
    need(Layer::Ipv4, 0, packet, MASKED_LEN)?;
    if packet[0] != 0x45 {
        return Err(WireError::Unsupported {
            layer: Layer::Ipv4,
            field: "version/header length",
            value: packet[0].into(),
            why: "the ICRC is defined here for IPv4 without options (0x45)",
        });
    }
    Ok(())
}

/// The ICRC of an IPv4 RoCE v2 packet: `packet` runs from the first byte of the IPv4 header
/// (20 bytes, no options) to the last pad byte, without the ICRC itself and without Ethernet
/// padding.
pub fn compute(packet: &[u8]) -> Result<u32, WireError> {
    check_packet(packet)?;
    // The masked copy is stored 16, 16 and 8 bytes at a time, as the CRC then reads it: a wide
    // read of bytes just stored one by one waits for the stores to complete (no store-to-load
    // forwarding), which cost about a third as much as the CRC of a 4 KiB payload.
    let word = |i: usize| u128::from_le_bytes(packet[16 * i..16 * (i + 1)].try_into().expect("16 bytes"));
    let tail = u64::from_le_bytes(packet[32..MASKED_LEN].try_into().expect("8 bytes"));
    let mut masked = [0u8; MASKED_LEN];
    masked[..16].copy_from_slice(&(word(0) | VARIANT_MASK.0).to_le_bytes());
    masked[16..32].copy_from_slice(&(word(1) | VARIANT_MASK.1).to_le_bytes());
    masked[32..].copy_from_slice(&(tail | VARIANT_MASK.2).to_le_bytes());
    let mut crc = crc32fast::Hasher::new_with_initial(AFTER_LRH);
    crc.update(&masked);
    crc.update(&packet[MASKED_LEN..]);
    Ok(crc.finalize())
}

/// [`VARIANT_OFFSETS`] as masks of ones over the 40 masked bytes: bytes 0-15 and 16-31 as
/// little-endian `u128`s, bytes 32-39 as a little-endian `u64`.
const VARIANT_MASK: (u128, u128, u64) = {
    let (mut a, mut b, mut c) = (0u128, 0u128, 0u64);
    let mut i = 0;
    while i < VARIANT_OFFSETS.len() {
        let at = VARIANT_OFFSETS[i];
        match at / 16 {
            0 => a |= 0xff << (8 * at),
            1 => b |= 0xff << (8 * (at - 16)),
            _ => c |= 0xff << (8 * (at - 32)),
        }
        i += 1;
    }
    (a, b, c)
};
const _: () = assert!(MASKED_LEN == 40, "the masks above cover 40 bytes");

/// The ICRC carried in the last four bytes of `packet_with_icrc`.
pub fn carried(packet_with_icrc: &[u8]) -> Result<u32, WireError> {
    need(Layer::Payload, 0, packet_with_icrc, ICRC_LEN)?;
    let n = packet_with_icrc.len();
    let b = &packet_with_icrc[n - ICRC_LEN..];
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Check the ICRC of an IPv4 RoCE v2 packet that ends with it (from the IPv4 header to the ICRC,
/// without Ethernet padding). `Err` only when the packet is too short or not IPv4 without options.
pub fn verify(packet_with_icrc: &[u8]) -> Result<IcrcCheck, WireError> {
    need(Layer::Payload, 0, packet_with_icrc, MASKED_LEN + ICRC_LEN)?;
    let carried = carried(packet_with_icrc)?;
    let computed = compute(&packet_with_icrc[..packet_with_icrc.len() - ICRC_LEN])?;
    Ok(IcrcCheck::of(carried, computed))
}

/// Compute the ICRC of a packet whose last four bytes are room for it, and store it there.
pub fn fill(packet_with_room: &mut [u8]) -> Result<u32, WireError> {
    need(Layer::Payload, 0, packet_with_room, MASKED_LEN + ICRC_LEN)?;
    let n = packet_with_room.len() - ICRC_LEN;
    let icrc = compute(&packet_with_room[..n])?;
    packet_with_room[n..].copy_from_slice(&icrc.to_le_bytes());
    Ok(icrc)
}

#[cfg(test)]
pub(crate) mod vectors {
    //! Published RoCE v2 frames with their ICRC.

    /// A CNP sent by a Mellanox ConnectX-4 Lx, from scapy's test/contrib/roce.uts ("RoCE CNP
    /// captured on ConnectX-4 Lx"), whole Ethernet frame. Its last four bytes, 82 fd 00 2a, are
    /// the ICRC the hardware computed.
    pub(crate) const CX4_LX_CNP: [u8; 74] = [
        0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00, 0x45, 0xc2, 0x00, 0x3c,
        0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00, 0x12, 0x01, 0x00, 0x00,
        0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd,
        0x00, 0x2a,
    ];

    /// The UC SEND Only packet of scapy's test/contrib/roce.uts ("RoCE layer"), whose ICRC scapy
    /// reads as 0x78f353f3 (wire bytes 78 f3 53 f3); rebuilt here byte for byte from the fields
    /// the test gives (IP checksum 0xb4d5 and UDP checksum 0xaca2 as the test asserts).
    pub(crate) const SCAPY_UC_SEND_ONLY: [u8; 78] = [
        0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22, 0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22, 0x08, 0x00, // Ethernet
        0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11, 0xb4, 0xd5, 0xc0, 0xa8, 0x00, 0x07, 0xc0, 0xa8,
        0x00, 0x07, // IPv4: tos 1, len 64, id 1144, DF, ttl 64, 192.168.0.7 -> 192.168.0.7
        0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c, 0xac, 0xa2, // UDP 49152 -> 4791, len 44
        0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10, // BTH UC_SEND_ONLY, M, pad 2
        b'F', b'0', 0x81, 0x8b, 0xe2, 0x89, b'5', 0xd9, 0x0e, 0x9a, 0x95, b'P', b'T', 0x01, 0xbe, 0x88, b'^', b'P',
        0x00, 0x00, // payload (18 bytes) and 2 pad bytes
        0x78, 0xf3, 0x53, 0xf3, // ICRC
    ];
}

#[cfg(test)]
mod tests {
    use super::vectors::*;
    use super::*;

    #[test]
    fn matches_the_icrc_a_connectx4_computed() {
        let packet = &CX4_LX_CNP[14..];
        assert_eq!(compute(&packet[..packet.len() - 4]).unwrap(), 0x2a00_fd82);
        assert_eq!(verify(packet).unwrap(), IcrcCheck::Good);
    }

    #[test]
    fn matches_scapys_vector() {
        let packet = &SCAPY_UC_SEND_ONLY[14..];
        // The fields as the scapy test states them, to show the bytes were rebuilt right.
        assert_eq!(crate::net::ipv4::internet_checksum(&[&[&packet[..10], &[0, 0], &packet[12..20]].concat()]), 0xb4d5);
        assert_eq!(verify(packet).unwrap(), IcrcCheck::Good);
        assert_eq!(carried(packet).unwrap().to_be_bytes(), [0xf3, 0x53, 0xf3, 0x78]);
    }

    #[test]
    fn variant_fields_are_masked_and_every_other_byte_counts() {
        let packet = CX4_LX_CNP[14..].to_vec();
        let body = &packet[..packet.len() - 4];
        let reference = compute(body).unwrap();
        let masked = [1usize, 8, 10, 11, 26, 27, 32];
        for i in 0..body.len() {
            for bit in 0..8 {
                let mut changed = body.to_vec();
                changed[i] ^= 1 << bit;
                if i == 0 {
                    continue; // version/IHL: refused, tested below
                }
                let same = compute(&changed).unwrap() == reference;
                assert_eq!(same, masked.contains(&i), "byte {i} bit {bit}");
            }
        }
        let mut v6 = body.to_vec();
        v6[0] = 0x60;
        assert!(compute(&v6).is_err());
    }

    #[test]
    fn fill_then_verify_and_a_flip_is_caught() {
        let mut packet = SCAPY_UC_SEND_ONLY[14..].to_vec();
        let n = packet.len();
        packet[n - 4..].fill(0);
        assert!(!verify(&packet).unwrap().is_good());
        fill(&mut packet).unwrap();
        assert_eq!(packet, SCAPY_UC_SEND_ONLY[14..]);
        packet[45] ^= 0x10;
        assert!(matches!(verify(&packet).unwrap(), IcrcCheck::Bad { carried: 0xf353_f378, .. }));
        assert!(matches!(verify(&packet).unwrap().into_result(), Err(WireError::Icrc { .. })));
    }

    #[test]
    fn the_lrh_state_is_the_crc_of_eight_ones_and_rxes_seed() {
        assert_eq!(AFTER_LRH, crc32fast::hash(&[0xff; 8]));
        assert_eq!(!AFTER_LRH, 0xdebb_20e3, "rxe_icrc.c's seed");
        assert_eq!(crc32_bitwise(b"123456789"), 0xcbf4_3926, "the CRC-32 check value");
    }

    #[test]
    fn short_input_is_an_error() {
        for len in 0..44 {
            assert!(verify(&CX4_LX_CNP[14..14 + len]).is_err(), "{len}");
        }
    }
}
