//! What the L2 engine needs to know about an Ethernet frame, and the offloads it performs on one:
//! VLAN tag insertion and stripping, IPv4 header and TCP/UDP checksums (computed on transmit,
//! verified on receive), and TCP/UDP segmentation (LSO).
//!
//! Headers: Ethernet II with at most two VLAN tags (0x8100, 0x88a8), IPv4 (RFC 791) with its
//! options, IPv6 (RFC 8200) through hop-by-hop, routing and destination-options extension
//! headers, TCP (RFC 9293) and UDP (RFC 768), checksummed over the pseudo-header of RFC 768 /
//! RFC 8200 §8.1. Anything else is carried as it is, without offloads.

use crate::net::ethernet::EthernetFrame;
use crate::net::ipv4::{Ipv4Packet, internet_checksum};
use crate::net::ipv6::{self, Ipv6ExtHeader, Ipv6Header};
use crate::net::udp::UdpPacket;
use zerocopy::FromBytes;

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// 802.1Q tag.
pub const TPID_8021Q: u16 = 0x8100;
/// 802.1ad tag.
pub const TPID_8021AD: u16 = 0x88a8;
/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// IP protocol number of ICMP.
pub const PROTO_ICMP: u8 = 1;
/// IP protocol number of ICMPv6.
pub const PROTO_ICMPV6: u8 = 58;
/// Smallest frame on the wire, without FCS; shorter frames are padded with zeros on transmit.
pub const MIN_FRAME: usize = 60;

/// UDP destination port of RoCE v2 (IANA 4791; InfiniBand Annex A17).
pub const ROCE_V2_PORT: u16 = 4791;

/// Whether `frame` is RoCE v2 (UDP to port 4791 over IPv4 or IPv6): the RoCE engine's, not the
/// L2 path's.
pub fn is_roce_v2(frame: &[u8]) -> bool {
    parse(frame).and_then(|p| p.l4(frame.len())).is_some_and(|(proto, off, end)| {
        proto == PROTO_UDP && end >= off + 8 && UdpPacket::new_unchecked(&frame[off..end]).dst_port() == ROCE_V2_PORT
    })
}

/// The network layer of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L3 {
    /// IPv4 at `off`.
    V4 {
        /// Header offset in the frame.
        off: usize,
        /// Header length.
        hdr_len: usize,
        /// Source.
        src: [u8; 4],
        /// Destination.
        dst: [u8; 4],
        /// Protocol.
        proto: u8,
        /// A fragment (offset or more-fragments set): no transport header to look at.
        fragment: bool,
        /// `total_length`.
        total_len: usize,
    },
    /// IPv6 at `off`.
    V6 {
        /// Header offset in the frame.
        off: usize,
        /// Source.
        src: [u8; 16],
        /// Destination.
        dst: [u8; 16],
        /// The upper-layer protocol after the extension headers (`None`: a fragment or a header
        /// the model does not walk).
        proto: Option<u8>,
        /// Offset of the upper-layer header.
        l4_off: usize,
        /// End of the packet (header plus `payload_length`).
        end: usize,
    },
    /// Something else (or a truncated IP header).
    Other,
}

/// A parsed frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// Destination MAC.
    pub dst: [u8; 6],
    /// The outer VLAN tag: (TPID, TCI).
    pub vlan: Option<(u16, u16)>,
    /// The EtherType after the tags.
    pub ethertype: u16,
    /// The network layer.
    pub l3: L3,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Parse `frame` (from the destination MAC on, no FCS); `None` if shorter than an Ethernet
/// header.
pub fn parse(frame: &[u8]) -> Option<Parsed> {
    if frame.len() < 14 {
        return None;
    }
    let dst = EthernetFrame::new_unchecked(frame).dst().0;
    let mut off = 12;
    let mut ethertype = be16(frame, off)?;
    let mut vlan = None;
    let mut tags = 0;
    while matches!(ethertype, TPID_8021Q | TPID_8021AD) && tags < 2 {
        let tci = be16(frame, off + 2)?;
        if vlan.is_none() {
            vlan = Some((ethertype, tci));
        }
        off += 4;
        ethertype = be16(frame, off)?;
        tags += 1;
    }
    off += 2;
    let l3 = match ethertype {
        ETHERTYPE_IPV4 => parse_v4(frame, off),
        ETHERTYPE_IPV6 => parse_v6(frame, off),
        _ => L3::Other,
    };
    Some(Parsed { dst, vlan, ethertype, l3 })
}

fn parse_v4(f: &[u8], off: usize) -> L3 {
    // The header's own lengths are checked here, not by `Ipv4Packet::new_checked`: a frame the
    // host hands over for offloads may state a total length its buffer does not hold yet.
    let Some(h) = f.get(off..off + 20) else { return L3::Other };
    let ip = Ipv4Packet::new_unchecked(h);
    let hdr_len = ip.header_len();
    if ip.version() != 4 || hdr_len < 20 || f.len() < off + hdr_len {
        return L3::Other;
    }
    L3::V4 {
        off,
        hdr_len,
        src: ip.src().octets(),
        dst: ip.dst().octets(),
        proto: ip.protocol(),
        fragment: ip.more_frags() || ip.frag_offset() != 0,
        total_len: usize::from(ip.total_len()),
    }
}

fn parse_v6(f: &[u8], off: usize) -> L3 {
    let Some(Ok((h, _))) = f.get(off..).map(Ipv6Header::ref_from_prefix) else { return L3::Other };
    if h.version() != 6 {
        return L3::Other;
    }
    let end = off + ipv6::HEADER_LEN + usize::from(h.payload_len.get());
    let mut next = h.next_header;
    let mut at = off + ipv6::HEADER_LEN;
    let proto = loop {
        if Ipv6ExtHeader::carries_length(next) {
            let Some(Ok((ext, _))) = f.get(at..).map(Ipv6ExtHeader::ref_from_prefix) else { break None };
            next = ext.next_header;
            at += ext.bytes();
        } else if next == ipv6::EXT_FRAGMENT {
            break None;
        } else {
            break Some(next);
        }
    };
    L3::V6 { off, src: h.src, dst: h.dst, proto, l4_off: at, end }
}

impl Parsed {
    /// The transport protocol and the offsets of its header and of the packet's end, when there
    /// is a whole transport segment to look at.
    pub fn l4(&self, frame_len: usize) -> Option<(u8, usize, usize)> {
        let (proto, off, end) = match self.l3 {
            L3::V4 { off, hdr_len, proto, fragment: false, total_len, .. } => (proto, off + hdr_len, off + total_len),
            L3::V6 { proto: Some(p), l4_off, end, .. } => (p, l4_off, end),
            _ => return None,
        };
        (off <= end && end <= frame_len).then_some((proto, off, end))
    }

    /// The pseudo-header of the transport checksum for `proto` over `len` bytes.
    fn pseudo(&self, proto: u8, len: usize) -> Vec<u8> {
        let mut p = Vec::with_capacity(40);
        match self.l3 {
            L3::V4 { src, dst, .. } => {
                p.extend_from_slice(&src);
                p.extend_from_slice(&dst);
                p.extend_from_slice(&[0, proto]);
                p.extend_from_slice(&(len as u16).to_be_bytes());
            }
            L3::V6 { src, dst, .. } => {
                p.extend_from_slice(&src);
                p.extend_from_slice(&dst);
                p.extend_from_slice(&(len as u32).to_be_bytes());
                p.extend_from_slice(&[0, 0, 0, proto]);
            }
            L3::Other => {}
        }
        p
    }
}

/// Offset of the checksum field in a TCP or UDP header.
fn csum_field(proto: u8) -> Option<usize> {
    match proto {
        PROTO_TCP => Some(16),
        PROTO_UDP => Some(6),
        _ => None,
    }
}

/// Compute the IPv4 header checksum in place (TX `IP_CKSUM`). Returns false when the frame has
/// no IPv4 header.
pub fn fill_ipv4_checksum(frame: &mut [u8]) -> bool {
    let Some(p) = parse(frame) else { return false };
    // `parse` found the whole header (its length within the frame).
    let L3::V4 { off, .. } = p.l3 else { return false };
    Ipv4Packet::new_unchecked(&mut frame[off..]).fill_checksum();
    true
}

/// Compute the TCP or UDP checksum in place (TX `TCP_UDP_CHKSUM`), from scratch over the
/// pseudo-header and the segment. Returns false when there is no TCP/UDP segment.
pub fn fill_l4_checksum(frame: &mut [u8]) -> bool {
    let Some(p) = parse(frame) else { return false };
    let Some((proto, off, end)) = p.l4(frame.len()) else { return false };
    let Some(field) = csum_field(proto) else { return false };
    if end < off + field + 2 {
        return false;
    }
    frame[off + field..off + field + 2].fill(0);
    let pseudo = p.pseudo(proto, end - off);
    let mut c = internet_checksum(&[&pseudo, &frame[off..end]]);
    if proto == PROTO_UDP && c == 0 {
        c = 0xffff;
    }
    frame[off + field..off + field + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// What checking a received frame's checksums found: `None` = not checked (no such header).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChecksumCheck {
    /// The IPv4 header checksum was checked, and whether it was right.
    pub ip: Option<bool>,
    /// The TCP/UDP checksum was checked, and whether it was right.
    pub l4: Option<bool>,
}

/// Check the checksums of a received frame.
pub fn check_checksums(frame: &[u8], p: &Parsed) -> ChecksumCheck {
    let ip = match p.l3 {
        L3::V4 { off, .. } => Some(Ipv4Packet::new_unchecked(&frame[off..]).verify_checksum()),
        _ => None,
    };
    let l4 = p.l4(frame.len()).and_then(|(proto, off, end)| {
        let field = csum_field(proto)?;
        if end < off + field + 2 {
            return Some(false);
        }
        if proto == PROTO_UDP
            && matches!(p.l3, L3::V4 { .. })
            && UdpPacket::new_unchecked(&frame[off..end]).checksum() == 0
        {
            return None; // no UDP checksum over IPv4
        }
        let pseudo = p.pseudo(proto, end - off);
        Some(internet_checksum(&[&pseudo, &frame[off..end]]) == 0)
    });
    ChecksumCheck { ip, l4 }
}

/// Insert a VLAN tag (`tpid`, `tci`) after the source MAC.
pub fn insert_vlan(frame: &[u8], tpid: u16, tci: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len() + 4);
    out.extend_from_slice(&frame[..12]);
    out.extend_from_slice(&tpid.to_be_bytes());
    out.extend_from_slice(&tci.to_be_bytes());
    out.extend_from_slice(&frame[12..]);
    out
}

/// Remove the outer VLAN tag, returning the frame without it.
pub fn strip_vlan(frame: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len().saturating_sub(4));
    out.extend_from_slice(&frame[..12]);
    out.extend_from_slice(&frame[16..]);
    out
}

/// Why a frame could not be segmented.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LsoError {
    /// No TCP or UDP segment behind IPv4/IPv6.
    #[error("no TCP or UDP segment to split")]
    NoTransport,
    /// The header length the BD gives is not where the payload starts.
    #[error("header length {given} does not match the headers ({actual} bytes)")]
    HeaderLen {
        /// From the BD.
        given: usize,
        /// From the headers.
        actual: usize,
    },
    /// MSS 0.
    #[error("MSS 0")]
    ZeroMss,
    /// The TCP header's data offset is below its minimum of 5 words (RFC 9293 §3.1).
    #[error("TCP data offset {words} words, below the minimum of 5")]
    TcpDataOffset {
        /// The data offset field, in 32-bit words.
        words: u8,
    },
}

/// Split a TCP or UDP super-frame into frames of at most `mss` payload bytes (TX `LSO`): each
/// gets the headers, its own IPv4 length, identification (incremented per segment) and header
/// checksum or IPv6 payload length, its TCP sequence number (FIN and PSH on the last segment
/// only, CWR on the first only) or UDP length, and its transport checksum.
pub fn segment(frame: &[u8], hdr_len: usize, mss: usize) -> Result<Vec<Vec<u8>>, LsoError> {
    if mss == 0 {
        return Err(LsoError::ZeroMss);
    }
    let p = parse(frame).ok_or(LsoError::NoTransport)?;
    let (proto, l4_off, _) = p.l4(frame.len()).ok_or(LsoError::NoTransport)?;
    let actual = match proto {
        PROTO_TCP => {
            let words = frame.get(l4_off + 12).ok_or(LsoError::NoTransport)? >> 4;
            if words < 5 {
                return Err(LsoError::TcpDataOffset { words });
            }
            l4_off + usize::from(words) * 4
        }
        PROTO_UDP => l4_off + 8,
        _ => return Err(LsoError::NoTransport),
    };
    if hdr_len != actual || actual > frame.len() {
        return Err(LsoError::HeaderLen { given: hdr_len, actual });
    }
    let payload = &frame[hdr_len..];
    let chunks: Vec<&[u8]> = if payload.is_empty() { vec![payload] } else { payload.chunks(mss).collect() };
    let n = chunks.len();
    let seq0 = (proto == PROTO_TCP).then(|| u32::from_be_bytes(frame[l4_off + 4..l4_off + 8].try_into().expect("4")));
    let mut out = Vec::with_capacity(n);
    let mut sent = 0u32;
    for (i, chunk) in chunks.into_iter().enumerate() {
        let mut f = Vec::with_capacity(hdr_len + chunk.len());
        f.extend_from_slice(&frame[..hdr_len]);
        f.extend_from_slice(chunk);
        let l4_len = f.len() - l4_off;
        match p.l3 {
            L3::V4 { off, .. } => {
                let total = (f.len() - off) as u16;
                let mut ip = Ipv4Packet::new_unchecked(&mut f[off..]);
                ip.set_total_len(total);
                ip.set_ident(ip.ident().wrapping_add(i as u16));
                fill_ipv4_checksum(&mut f);
            }
            L3::V6 { off, .. } => {
                let plen = (f.len() - off - ipv6::HEADER_LEN) as u16;
                let (h, _) = Ipv6Header::mut_from_prefix(&mut f[off..]).expect("parsed as IPv6 before");
                h.payload_len.set(plen);
            }
            L3::Other => unreachable!("l4() found a transport header"),
        }
        if let Some(seq0) = seq0 {
            f[l4_off + 4..l4_off + 8].copy_from_slice(&seq0.wrapping_add(sent).to_be_bytes());
            let flags = &mut f[l4_off + 13];
            if i + 1 < n {
                *flags &= !(0x01 | 0x08); // FIN, PSH
            }
            if i > 0 {
                *flags &= !0x80; // CWR
            }
        } else {
            f[l4_off + 4..l4_off + 6].copy_from_slice(&(l4_len as u16).to_be_bytes());
        }
        fill_l4_checksum(&mut f);
        sent = sent.wrapping_add(chunk.len() as u32);
        out.push(f);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4/TCP frame with `payload`, checksums filled.
    fn tcp4(payload: &[u8], flags: u8) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        let total = 20 + 20 + payload.len();
        f.extend_from_slice(&[0x45, 0, (total >> 8) as u8, total as u8, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0]);
        f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[0x30, 0x39, 0x00, 0x50, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        f.extend_from_slice(payload);
        fill_ipv4_checksum(&mut f);
        fill_l4_checksum(&mut f);
        f
    }

    #[test]
    fn checksums_filled_on_transmit_verify_on_receive() {
        let f = tcp4(b"hello world", 0x18);
        let p = parse(&f).unwrap();
        assert_eq!(check_checksums(&f, &p), ChecksumCheck { ip: Some(true), l4: Some(true) });
        let mut bad = f.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(check_checksums(&bad, &parse(&bad).unwrap()).l4, Some(false));
        let arp = [0xffu8; 42];
        let p = parse(&arp).unwrap();
        assert_eq!(check_checksums(&arp, &p), ChecksumCheck::default());
    }

    #[test]
    fn vlan_tags_go_in_and_out() {
        let f = tcp4(b"x", 0x10);
        let t = insert_vlan(&f, TPID_8021Q, 0x2005);
        let p = parse(&t).unwrap();
        assert_eq!((p.vlan, p.ethertype), (Some((TPID_8021Q, 0x2005)), ETHERTYPE_IPV4));
        assert_eq!(check_checksums(&t, &p).l4, Some(true));
        assert_eq!(strip_vlan(&t), f);
    }

    #[test]
    fn tcp_segments_carry_their_own_headers() {
        let payload: Vec<u8> = (0..2500u32).map(|i| i as u8).collect();
        let f = tcp4(&payload, 0x19); // FIN | PSH | ACK
        let segs = segment(&f, 54, 1000).unwrap();
        assert_eq!(segs.len(), 3);
        let mut joined = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let p = parse(s).unwrap();
            assert_eq!(check_checksums(s, &p), ChecksumCheck { ip: Some(true), l4: Some(true) }, "segment {i}");
            let seq = u32::from_be_bytes(s[38..42].try_into().unwrap());
            assert_eq!(seq as usize, i * 1000);
            assert_eq!(s[47] & 0x09 != 0, i == 2, "FIN/PSH only on the last");
            assert_eq!(u16::from_be_bytes([s[18], s[19]]), 0x1234 + i as u16);
            joined.extend_from_slice(&s[54..]);
        }
        assert_eq!(joined, payload);
        assert_eq!(segment(&f, 40, 1000), Err(LsoError::HeaderLen { given: 40, actual: 54 }));
    }

    #[test]
    fn a_tcp_header_shorter_than_its_minimum_is_refused_not_indexed_past() {
        // Data offset 0 with a header length to match and a tiny MSS: each segment would be
        // shorter than a TCP header.
        let mut f = tcp4(&[7u8; 64], 0x10);
        f[46] = 0x00;
        assert_eq!(segment(&f, 34, 1), Err(LsoError::TcpDataOffset { words: 0 }));
        f[46] = 0x40;
        assert_eq!(segment(&f, 50, 4), Err(LsoError::TcpDataOffset { words: 4 }));
    }

    /// An IPv6/TCP frame with a hop-by-hop options header (8 bytes) before the TCP header,
    /// `payload`, checksum filled.
    fn tcp6_with_hop_by_hop(payload: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
        let plen = 8 + 20 + payload.len();
        f.extend_from_slice(&[0x60, 0, 0, 0, (plen >> 8) as u8, plen as u8, ipv6::EXT_HOP_BY_HOP, 64]);
        f.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        f.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        f.extend_from_slice(&[PROTO_TCP, 0, 1, 4, 0, 0, 0, 0]); // next TCP, length 0 (8 bytes), PadN
        f.extend_from_slice(&[0x30, 0x39, 0x00, 0x50, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        f.extend_from_slice(payload);
        assert!(fill_l4_checksum(&mut f));
        f
    }

    #[test]
    fn ipv6_extension_headers_are_walked_to_the_transport_header() {
        let payload: Vec<u8> = (0..2100u32).map(|i| i as u8).collect();
        let f = tcp6_with_hop_by_hop(&payload);
        let p = parse(&f).unwrap();
        let L3::V6 { src, dst, proto, l4_off, end, .. } = p.l3 else { panic!("{:?}", p.l3) };
        assert_eq!((src[15], dst[15], proto, l4_off, end), (1, 2, Some(PROTO_TCP), 14 + 40 + 8, f.len()));
        assert_eq!(p.l4(f.len()), Some((PROTO_TCP, 62, f.len())));
        assert_eq!(check_checksums(&f, &p).l4, Some(true));

        // Segmented: each segment's payload length is its own, and its checksum holds.
        let segs = segment(&f, 82, 1000).unwrap();
        assert_eq!(segs.len(), 3);
        for (i, s) in segs.iter().enumerate() {
            let plen = usize::from(u16::from_be_bytes([s[18], s[19]]));
            assert_eq!(plen, s.len() - 14 - 40, "segment {i}");
            assert_eq!(check_checksums(s, &parse(s).unwrap()).l4, Some(true), "segment {i}");
        }

        // A fragment has no transport header to look at; a truncated extension header neither.
        let mut frag = f.clone();
        frag[14 + 6] = ipv6::EXT_FRAGMENT;
        assert_eq!(parse(&frag).unwrap().l4(frag.len()), None);
        let cut = &f[..14 + 40];
        let L3::V6 { proto, .. } = parse(cut).unwrap().l3 else { panic!() };
        assert_eq!(proto, None);
        let mut not_six = f.clone();
        not_six[14] = 0x40;
        assert!(matches!(parse(&not_six).unwrap().l3, L3::Other));
    }
}
