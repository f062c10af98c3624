//! UDP headers (RFC 768) carrying RoCE v2.

use std::net::Ipv4Addr;

use super::bytes::{be16, put16};
use super::error::{Layer, WireError, need};
use super::ipv4::{PROTOCOL_UDP, ones_complement_sum};

/// Bytes of a UDP header.
pub const HEADER_LEN: usize = 8;
/// UDP destination port of RoCE v2 (IANA "roce"; IBA Vol 1 Annex A17; Linux include/rdma/ib_verbs.h
/// `ROCE_V2_UDP_DPORT`; OOT bnxt_re ib_verbs.h `BNXT_RE_QP_DEST_PORT`).
pub const ROCE_V2_UDP_DPORT: u16 = 4791;

mod field {
    pub(super) const SRC_PORT: usize = 0;
    pub(super) const DST_PORT: usize = 2;
    pub(super) const LENGTH: usize = 4;
    pub(super) const CHECKSUM: usize = 6;
}

/// Offset of the checksum within the header.
pub(crate) const CHECKSUM_OFFSET: usize = field::CHECKSUM;

/// A view of a UDP datagram in a buffer.
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// A view without checks; accessors panic on a buffer shorter than the header.
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// A view of a buffer holding a header whose length field is at least the header and at most
    /// the buffer.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        need(Layer::Udp, 0, buffer.as_ref(), HEADER_LEN)?;
        let p = UdpPacket { buffer };
        let (len, have) = (usize::from(p.len()), p.buffer.as_ref().len());
        if len < HEADER_LEN || len > have {
            return Err(WireError::BadLength { layer: Layer::Udp, field: "length", stated: len, actual: have });
        }
        Ok(p)
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SRC_PORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Length of header and data.
    pub fn len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Whether the length field says the datagram holds no data.
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    /// Checksum as carried (0: not computed).
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The data (up to the length field).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// The checksum this datagram should carry between `src` and `dst` (RFC 768: over the IPv4
    /// pseudo-header, header with checksum zero and data; a result of 0 is sent as 0xffff).
    pub fn expected_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> u16 {
        let b = &self.buffer.as_ref()[..usize::from(self.len())];
        let len = self.len().to_be_bytes();
        let pseudo = [0, PROTOCOL_UDP, len[0], len[1]];
        let sum = ones_complement_sum(&[&src.octets(), &dst.octets(), &pseudo, &b[..6], &b[8..]]);
        match !sum {
            0 => 0xffff,
            c => c,
        }
    }

    /// Whether the checksum verifies; a zero checksum (not computed, as RoCE v2 over IPv4 may send)
    /// always does.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> Result<(), WireError> {
        match self.checksum() {
            0 => Ok(()),
            found => {
                let expected = self.expected_checksum(src, dst);
                if found == expected { Ok(()) } else { Err(WireError::UdpChecksum { found, expected }) }
            }
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Set the source port.
    pub fn set_src_port(&mut self, port: u16) {
        put16(self.buffer.as_mut(), field::SRC_PORT, port);
    }

    /// Set the destination port.
    pub fn set_dst_port(&mut self, port: u16) {
        put16(self.buffer.as_mut(), field::DST_PORT, port);
    }

    /// Set the length field.
    pub fn set_len(&mut self, len: u16) {
        put16(self.buffer.as_mut(), field::LENGTH, len);
    }

    /// Set the checksum field.
    pub fn set_checksum(&mut self, sum: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, sum);
    }

    /// Compute and store the checksum (the data must already be in place).
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        let sum = self.expected_checksum(src, dst);
        self.set_checksum(sum);
    }

    /// The data, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..len]
    }
}

/// The fields of a UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Bytes of data after the header.
    pub payload_len: usize,
}

impl UdpRepr {
    /// Read a checked datagram's header.
    pub fn parse<T: AsRef<[u8]>>(p: &UdpPacket<T>) -> UdpRepr {
        UdpRepr { src_port: p.src_port(), dst_port: p.dst_port(), payload_len: usize::from(p.len()) - HEADER_LEN }
    }

    /// Write the header with checksum 0 ("not computed": RoCE v2 over IPv4 may send it so, IBA
    /// Vol 1 Annex A17; RFC 768) into a buffer of at least [`HEADER_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut UdpPacket<T>) -> Result<(), WireError> {
        let len = u16::try_from(HEADER_LEN + self.payload_len)
            .map_err(|_| WireError::Emit { layer: Layer::Udp, why: "datagram longer than 65535 bytes" })?;
        if p.buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Emit { layer: Layer::Udp, why: "buffer shorter than the header" });
        }
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len(len);
        p.set_checksum(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_with_zero_checksum() {
        let r = UdpRepr { src_port: 0xc123, dst_port: ROCE_V2_UDP_DPORT, payload_len: 4 };
        let mut buf = [0u8; 12];
        r.emit(&mut UdpPacket::new_unchecked(&mut buf[..])).unwrap();
        assert_eq!(buf[..8], [0xc1, 0x23, 0x12, 0xb7, 0, 12, 0, 0]);
        let p = UdpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p), r);
        assert!(p.verify_checksum(Ipv4Addr::new(1, 2, 3, 4), Ipv4Addr::new(5, 6, 7, 8)).is_ok());
    }

    #[test]
    fn a_computed_checksum_verifies_and_catches_a_flip() {
        let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut buf = [0u8; 13];
        UdpRepr { src_port: 1, dst_port: 2, payload_len: 5 }.emit(&mut UdpPacket::new_unchecked(&mut buf[..])).unwrap();
        buf[8..].copy_from_slice(b"hello");
        let mut p = UdpPacket::new_unchecked(&mut buf[..]);
        p.fill_checksum(src, dst);
        assert_ne!(p.checksum(), 0);
        assert!(p.verify_checksum(src, dst).is_ok());
        buf[9] ^= 1;
        let p = UdpPacket::new_checked(&buf[..]).unwrap();
        assert!(matches!(p.verify_checksum(src, dst), Err(WireError::UdpChecksum { .. })));
    }

    #[test]
    fn bad_lengths_are_refused() {
        let mut buf = [0u8; 8];
        buf[5] = 9;
        assert!(matches!(UdpPacket::new_checked(&buf[..]), Err(WireError::BadLength { stated: 9, actual: 8, .. })));
        buf[5] = 7;
        assert!(matches!(UdpPacket::new_checked(&buf[..]), Err(WireError::BadLength { stated: 7, .. })));
        assert!(matches!(UdpPacket::new_checked(&buf[..7]), Err(WireError::Truncated { .. })));
    }
}
