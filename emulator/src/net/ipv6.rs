//! The IPv6 fixed header and the length-prefixed extension headers, as laid out on the wire (RFC
//! 8200 §3 and §4: hop-by-hop options, routing and destination options all begin with the next
//! header and the length in 8-octet units not counting the first 8). The L2 engine reads them to
//! find a frame's transport header for checksum offload and segmentation.

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Bytes of the fixed header.
pub const HEADER_LEN: usize = 40;

/// Next-header values of the extension headers that begin with (next header, length)
/// (RFC 8200 §4.3, §4.4, §4.6; IANA protocol numbers 0, 43, 60).
pub const EXT_HOP_BY_HOP: u8 = 0;
/// Routing header.
pub const EXT_ROUTING: u8 = 43;
/// Destination options.
pub const EXT_DEST_OPTIONS: u8 = 60;
/// Fragment header (RFC 8200 §4.5): the packet is a fragment.
pub const EXT_FRAGMENT: u8 = 44;

/// The fixed header (RFC 8200 §3).
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Header {
    /// Version (upper 4 bits of the first byte), traffic class and flow label.
    pub version_class_flow: [u8; 4],
    /// Payload length: the bytes after this header, extension headers included.
    pub payload_len: U16,
    /// Next header: the first extension header's type, or the transport protocol.
    pub next_header: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
}

const _: () = assert!(size_of::<Ipv6Header>() == HEADER_LEN);
const _: () = assert!(std::mem::offset_of!(Ipv6Header, payload_len) == 4);
const _: () = assert!(std::mem::offset_of!(Ipv6Header, src) == 8);
const _: () = assert!(std::mem::offset_of!(Ipv6Header, dst) == 24);

impl Ipv6Header {
    /// The version field (6 for IPv6).
    pub fn version(&self) -> u8 {
        self.version_class_flow[0] >> 4
    }
}

/// The start of an extension header that carries its own length (hop-by-hop, routing,
/// destination options).
#[repr(C)]
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6ExtHeader {
    /// The type of the header after this one.
    pub next_header: u8,
    /// Length in 8-octet units, not counting the first 8 octets.
    pub len_units: u8,
}

impl Ipv6ExtHeader {
    /// Whether an extension header of type `next_header` begins with this layout.
    pub fn carries_length(next_header: u8) -> bool {
        matches!(next_header, EXT_HOP_BY_HOP | EXT_ROUTING | EXT_DEST_OPTIONS)
    }

    /// Bytes of the whole extension header.
    pub fn bytes(&self) -> usize {
        (usize::from(self.len_units) + 1) * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_header_reads_its_fields_where_rfc_8200_puts_them() {
        let mut b = [0u8; HEADER_LEN];
        b[0] = 0x60;
        b[4..6].copy_from_slice(&1234u16.to_be_bytes());
        b[6] = 17;
        b[8] = 0xfe;
        b[39] = 0x01;
        let (h, rest) = Ipv6Header::ref_from_prefix(&b).expect("40 bytes");
        assert!(rest.is_empty());
        assert_eq!((h.version(), h.payload_len.get(), h.next_header), (6, 1234, 17));
        assert_eq!((h.src[0], h.dst[15]), (0xfe, 0x01));
        let ext = Ipv6ExtHeader { next_header: 6, len_units: 2 };
        assert_eq!(ext.bytes(), 24);
        assert!(Ipv6ExtHeader::carries_length(EXT_ROUTING) && !Ipv6ExtHeader::carries_length(EXT_FRAGMENT));
    }
}
