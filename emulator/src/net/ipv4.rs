//! IPv4 headers (RFC 791) as RoCE v2 uses them: no options, not fragmented, DF set.

use std::net::Ipv4Addr;

use super::bytes::{be16, put16};
use super::error::{Layer, WireError, need};
use super::ethernet::MacAddr;

/// Bytes of an IPv4 header without options (IHL 5).
pub const HEADER_LEN: usize = 20;
/// IP protocol number of UDP (IANA; RFC 768).
pub const PROTOCOL_UDP: u8 = 17;
/// Time to live of frames the model sends (Linux's default `ip_default_ttl`).
pub const DEFAULT_TTL: u8 = 64;
/// Flags/fragment-offset bit "don't fragment" (RFC 791).
const FLAG_DF: u16 = 0x4000;
/// Flags/fragment-offset bit "more fragments" (RFC 791).
const FLAG_MF: u16 = 0x2000;
/// Fragment offset bits.
const FRAG_OFFSET: u16 = 0x1fff;

/// The fabric address of a NIC: 10.x.y.z with x.y.z the last three bytes of its MAC address
/// (the seed contract, "The fabric"; hardware-map.md §6).
pub fn ipv4_of_mac(mac: MacAddr) -> Ipv4Addr {
    let m = mac.0;
    Ipv4Addr::new(10, m[3], m[4], m[5])
}

/// The Internet checksum (RFC 1071): ones'-complement of the ones'-complement sum of 16-bit
/// big-endian words (an odd last byte is padded with zero).
pub fn internet_checksum(parts: &[&[u8]]) -> u16 {
    !ones_complement_sum(parts)
}

/// The folded ones'-complement sum of 16-bit words over several byte strings, each starting on a
/// word boundary of the whole (every part but the last must have even length).
pub(crate) fn ones_complement_sum(parts: &[&[u8]]) -> u16 {
    let mut sum: u64 = 0;
    for part in parts {
        let mut chunks = part.chunks_exact(2);
        for w in &mut chunks {
            sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
        }
        if let [last] = chunks.remainder() {
            sum += u64::from(*last) << 8;
        }
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

mod field {
    pub(super) const VER_IHL: usize = 0;
    pub(super) const TOS: usize = 1;
    pub(super) const TOTAL_LEN: usize = 2;
    pub(super) const IDENT: usize = 4;
    pub(super) const FLAGS_FRAG: usize = 6;
    pub(super) const TTL: usize = 8;
    pub(super) const PROTOCOL: usize = 9;
    pub(super) const CHECKSUM: usize = 10;
    pub(super) const SRC: usize = 12;
    pub(super) const DST: usize = 16;
}

/// Offset of the type-of-service (DSCP/ECN) byte.
pub(crate) const TOS_OFFSET: usize = field::TOS;
/// Offset of the TTL byte.
pub(crate) const TTL_OFFSET: usize = field::TTL;
/// Offset of the header checksum.
pub(crate) const CHECKSUM_OFFSET: usize = field::CHECKSUM;

/// A view of an IPv4 packet in a buffer.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// A view without checks; accessors panic on a buffer shorter than the header.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// A view of a buffer holding an IPv4 header whose lengths are consistent with the buffer:
    /// version 4, header length at least 20 and within the buffer, total length at least the
    /// header and at most the buffer (the buffer may be longer: Ethernet padding).
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        need(Layer::Ipv4, 0, b, HEADER_LEN)?;
        let p = Ipv4Packet { buffer };
        if p.version() != 4 {
            return Err(WireError::Unsupported {
                layer: Layer::Ipv4,
                field: "version",
                value: p.version().into(),
                why: "not 4",
            });
        }
        let hl = p.header_len();
        if hl < HEADER_LEN {
            return Err(WireError::BadLength {
                layer: Layer::Ipv4,
                field: "header length",
                stated: hl,
                actual: HEADER_LEN,
            });
        }
        let len = p.buffer.as_ref().len();
        need(Layer::Ipv4, 0, p.buffer.as_ref(), hl)?;
        let total = usize::from(p.total_len());
        if total < hl || total > len {
            return Err(WireError::BadLength { layer: Layer::Ipv4, field: "total length", stated: total, actual: len });
        }
        Ok(p)
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version (4).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// The type-of-service byte: DSCP (upper 6 bits) and ECN (lower 2).
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[field::TOS]
    }

    /// Total length of header and payload.
    pub fn total_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::TOTAL_LEN)
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        be16(self.buffer.as_ref(), field::IDENT)
    }

    /// Don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLAGS_FRAG) & FLAG_DF != 0
    }

    /// More-fragments flag.
    pub fn more_frags(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLAGS_FRAG) & FLAG_MF != 0
    }

    /// Fragment offset in 8-byte units.
    pub fn frag_offset(&self) -> u16 {
        be16(self.buffer.as_ref(), field::FLAGS_FRAG) & FRAG_OFFSET
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol of the payload.
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    /// Header checksum as carried.
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Source address.
    pub fn src(&self) -> Ipv4Addr {
        let b = self.buffer.as_ref();
        Ipv4Addr::new(b[field::SRC], b[field::SRC + 1], b[field::SRC + 2], b[field::SRC + 3])
    }

    /// Destination address.
    pub fn dst(&self) -> Ipv4Addr {
        let b = self.buffer.as_ref();
        Ipv4Addr::new(b[field::DST], b[field::DST + 1], b[field::DST + 2], b[field::DST + 3])
    }

    /// Ones'-complement sum of the header including its checksum: 0xffff when the checksum is
    /// right.
    pub fn header_sum(&self) -> u16 {
        ones_complement_sum(&[&self.buffer.as_ref()[..self.header_len()]])
    }

    /// Whether the header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        self.header_sum() == 0xffff
    }

    /// The payload (up to the total length, without Ethernet padding).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Set the version to 4 and the header length (a multiple of 4, 20..=60).
    pub fn set_version_and_header_len(&mut self, header_len: usize) {
        self.buffer.as_mut()[field::VER_IHL] = 0x40 | ((header_len / 4) as u8 & 0x0f);
    }

    /// Set the type-of-service byte.
    pub fn set_tos(&mut self, tos: u8) {
        self.buffer.as_mut()[field::TOS] = tos;
    }

    /// Set the total length.
    pub fn set_total_len(&mut self, len: u16) {
        put16(self.buffer.as_mut(), field::TOTAL_LEN, len);
    }

    /// Set the identification.
    pub fn set_ident(&mut self, ident: u16) {
        put16(self.buffer.as_mut(), field::IDENT, ident);
    }

    /// Set flags and fragment offset: DF as given, MF clear, offset 0.
    pub fn set_unfragmented(&mut self, dont_frag: bool) {
        put16(self.buffer.as_mut(), field::FLAGS_FRAG, if dont_frag { FLAG_DF } else { 0 });
    }

    /// Set the time to live.
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl;
    }

    /// Set the protocol.
    pub fn set_protocol(&mut self, protocol: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = protocol;
    }

    /// Set the source address.
    pub fn set_src(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC..field::SRC + 4].copy_from_slice(&a.octets());
    }

    /// Set the destination address.
    pub fn set_dst(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DST..field::DST + 4].copy_from_slice(&a.octets());
    }

    /// Compute and store the header checksum.
    pub fn fill_checksum(&mut self) {
        put16(self.buffer.as_mut(), field::CHECKSUM, 0);
        let hl = self.header_len();
        let sum = internet_checksum(&[&self.buffer.as_ref()[..hl]]);
        put16(self.buffer.as_mut(), field::CHECKSUM, sum);
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (hl, total) = (self.header_len(), usize::from(self.total_len()));
        &mut self.buffer.as_mut()[hl..total]
    }
}

/// The fields of an IPv4 header without options, not fragmented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Protocol of the payload.
    pub protocol: u8,
    /// Payload length in bytes.
    pub payload_len: usize,
    /// Type-of-service byte (DSCP and ECN).
    pub tos: u8,
    /// Time to live.
    pub ttl: u8,
    /// Identification.
    pub ident: u16,
    /// Don't-fragment flag.
    pub dont_frag: bool,
}

impl Ipv4Repr {
    /// A RoCE v2 header: UDP, TTL 64, DSCP and ECN 0, DF set, identification 0.
    pub fn roce(src: Ipv4Addr, dst: Ipv4Addr, payload_len: usize) -> Ipv4Repr {
        Ipv4Repr { src, dst, protocol: PROTOCOL_UDP, payload_len, tos: 0, ttl: DEFAULT_TTL, ident: 0, dont_frag: true }
    }

    /// Read a checked packet's header: the checksum must verify, and options and fragments are
    /// refused.
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Ipv4Repr, WireError> {
        if p.header_len() != HEADER_LEN {
            return Err(WireError::Unsupported {
                layer: Layer::Ipv4,
                field: "header length",
                value: p.header_len() as u64,
                why: "IP options are not supported",
            });
        }
        if p.more_frags() || p.frag_offset() != 0 {
            return Err(WireError::Unsupported {
                layer: Layer::Ipv4,
                field: "flags/fragment offset",
                value: be16(p.buffer.as_ref(), field::FLAGS_FRAG).into(),
                why: "fragments are not supported",
            });
        }
        if !p.verify_checksum() {
            return Err(WireError::Ipv4Checksum { found: p.checksum(), sum: p.header_sum() });
        }
        Ok(Ipv4Repr {
            src: p.src(),
            dst: p.dst(),
            protocol: p.protocol(),
            payload_len: usize::from(p.total_len()) - HEADER_LEN,
            tos: p.tos(),
            ttl: p.ttl(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
        })
    }

    /// Bytes of header plus payload.
    pub fn total_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Write the header (with its checksum) into a buffer of at least [`HEADER_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv4Packet<T>) -> Result<(), WireError> {
        let total = u16::try_from(self.total_len())
            .map_err(|_| WireError::Emit { layer: Layer::Ipv4, why: "packet longer than 65535 bytes" })?;
        if p.buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Emit { layer: Layer::Ipv4, why: "buffer shorter than the header" });
        }
        p.set_version_and_header_len(HEADER_LEN);
        p.set_tos(self.tos);
        p.set_total_len(total);
        p.set_ident(self.ident);
        p.set_unfragmented(self.dont_frag);
        p.set_ttl(self.ttl);
        p.set_protocol(self.protocol);
        p.set_src(self.src);
        p.set_dst(self.dst);
        p.fill_checksum();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header of a hardware-sent RoCE v2 CNP (ConnectX-4 Lx capture in scapy's
    /// test/contrib/roce.uts, "RoCE CNP captured on ConnectX-4 Lx"): checksum 0x9161.
    const CX4_CNP_IP: [u8; 20] = [
        0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00,
        0x12, 0x01,
    ];

    #[test]
    fn checksum_of_a_captured_header_verifies_and_recomputes() {
        let mut buf = CX4_CNP_IP.to_vec();
        buf.resize(60, 0);
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum());
        let repr = Ipv4Repr::parse(&p).unwrap();
        assert_eq!(repr.src, Ipv4Addr::new(10, 0, 17, 1));
        assert_eq!(repr.dst, Ipv4Addr::new(10, 0, 18, 1));
        assert_eq!((repr.tos, repr.ttl, repr.ident, repr.dont_frag, repr.payload_len), (0xc2, 64, 0x718c, true, 40));
        let mut again = [0u8; 60];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut again[..])).unwrap();
        assert_eq!(again[..20], CX4_CNP_IP);
    }

    #[test]
    fn a_flipped_bit_fails_the_checksum() {
        let mut buf = CX4_CNP_IP.to_vec();
        buf.resize(60, 0);
        buf[15] ^= 0x04;
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert!(matches!(Ipv4Repr::parse(&p), Err(WireError::Ipv4Checksum { found: 0x9161, .. })));
    }

    #[test]
    fn lengths_versions_options_and_fragments_are_refused() {
        let mut buf = CX4_CNP_IP.to_vec();
        buf.resize(60, 0);
        assert!(matches!(Ipv4Packet::new_checked(&buf[..59]), Err(WireError::BadLength { field: "total length", .. })));
        let mut v6 = buf.clone();
        v6[0] = 0x65;
        assert!(matches!(Ipv4Packet::new_checked(&v6[..]), Err(WireError::Unsupported { field: "version", .. })));
        let mut short_ihl = buf.clone();
        short_ihl[0] = 0x44;
        assert!(Ipv4Packet::new_checked(&short_ihl[..]).is_err());
        let mut options = buf.clone();
        options[0] = 0x46;
        let p = Ipv4Packet::new_checked(&options[..]).unwrap();
        assert!(matches!(Ipv4Repr::parse(&p), Err(WireError::Unsupported { field: "header length", .. })));
        let mut frag = buf.clone();
        frag[6] = 0x20;
        Ipv4Packet::new_unchecked(&mut frag[..]).fill_checksum();
        let p = Ipv4Packet::new_checked(&frag[..]).unwrap();
        assert!(matches!(Ipv4Repr::parse(&p), Err(WireError::Unsupported { field: "flags/fragment offset", .. })));
    }

    #[test]
    fn roce_defaults_and_fabric_address() {
        let mac = MacAddr([0x02, 0x00, 0x00, 0x0a, 0x0b, 0x0c]);
        assert_eq!(ipv4_of_mac(mac), Ipv4Addr::new(10, 10, 11, 12));
        let r = Ipv4Repr::roce(ipv4_of_mac(mac), Ipv4Addr::new(10, 0, 0, 1), 100);
        let mut buf = [0u8; 120];
        r.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..])).unwrap();
        assert_eq!(buf[0], 0x45);
        assert_eq!(buf[1], 0, "DSCP and ECN 0");
        assert_eq!(buf[6], 0x40, "DF set");
        assert_eq!(buf[8], 64, "TTL 64");
        assert_eq!(buf[9], 17, "UDP");
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p).unwrap(), r);
        assert_eq!(p.payload().len(), 100);
    }

    #[test]
    fn checksum_handles_odd_lengths() {
        // RFC 1071 §3 example bytes: 00 01 f2 03 f4 f5 f6 f7 sum to 0xddf2.
        assert_eq!(ones_complement_sum(&[&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]]), 0xddf2);
        assert_eq!(ones_complement_sum(&[&[0x12]]), 0x1200);
    }
}
