//! Whole RoCE v2 frames: `Ethernet / IPv4 / UDP / BTH / [DETH | RETH | AETH] / [ImmDt] / payload / pad /
//! ICRC` (IBA Vol 1 Annex A17 over IPv4; the transport headers of §9.2-9.3).
//!
//! [`build_frame`], [`build_frame_with`] and [`build_frame_overwrite`] write the headers, let the
//! payload be written once (copied from a slice, or written in place by a closure, e.g. straight
//! from host memory), pad it to 4 bytes and compute the ICRC in one pass. They reuse the bytes of
//! the buffer they are given; [`build_frame_overwrite`] does not clear the payload before the
//! closure writes it, so a recycled buffer has each of its bytes written once. [`RoceFrame::parse`] checks everything a receiver
//! checks and returns the headers and a borrowed payload; each error names what was wrong and
//! maps to a [`DropReason`](super::error::DropReason) for the receiver's counters.

use std::net::Ipv4Addr;

use super::bth::{self, BthPacket, BthRepr};
use super::error::{Layer, WireError, need};
use super::ethernet::{self, ETHERTYPE_IPV4, ETHERTYPE_QINQ, ETHERTYPE_VLAN, EthernetFrame, EthernetRepr, MacAddr};
use super::ext::{self, AethRepr, AtomicEthRepr, DethRepr, RethRepr};
use super::icrc::{self, ICRC_LEN};
use super::ipv4::{self, Ipv4Packet, Ipv4Repr, PROTOCOL_UDP, ipv4_of_mac};
use super::opcode::Opcode;
use super::source_port::roce_source_port;
use super::udp::{self, ROCE_V2_UDP_DPORT, UdpPacket, UdpRepr};

/// Offset of the IPv4 header in a frame.
pub const IPV4_OFFSET: usize = ethernet::HEADER_LEN;
/// Offset of the UDP header in a frame.
pub const UDP_OFFSET: usize = IPV4_OFFSET + ipv4::HEADER_LEN;
/// Offset of the BTH in a frame.
pub const BTH_OFFSET: usize = UDP_OFFSET + udp::HEADER_LEN;
/// Offset of the first extended header (or the payload) in a frame.
pub const EXT_OFFSET: usize = BTH_OFFSET + bth::HEADER_LEN;

/// Where a queue pair's frames go: constant from the QP's RTR on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Path {
    /// This NIC's MAC address.
    pub src_mac: MacAddr,
    /// The peer's MAC address.
    pub dst_mac: MacAddr,
    /// This NIC's IPv4 address.
    pub src_ip: Ipv4Addr,
    /// The peer's IPv4 address.
    pub dst_ip: Ipv4Addr,
    /// UDP source port.
    pub src_port: u16,
}

impl Path {
    /// The path from the NIC with `src_mac` to the NIC with `dst_mac` and its QP `dest_qp`: IPv4
    /// addresses from the MACs ([`ipv4_of_mac`]) and the source port as the P7 chooses it
    /// ([`roce_source_port`]).
    pub fn between(src_mac: MacAddr, dst_mac: MacAddr, dest_qp: u32) -> Path {
        let (src_ip, dst_ip) = (ipv4_of_mac(src_mac), ipv4_of_mac(dst_mac));
        Path { src_mac, dst_mac, src_ip, dst_ip, src_port: roce_source_port(dst_mac, src_mac, dst_ip, src_ip, dest_qp) }
    }

    /// The path back: addresses swapped, with the source port the peer would choose for
    /// `dest_qp` (a QP of this end).
    pub fn reversed(&self, dest_qp: u32) -> Path {
        Path::between(self.dst_mac, self.src_mac, dest_qp)
    }
}

/// The transport headers of one packet: BTH and the extended headers its opcode calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transport {
    /// Base transport header. The frame builder sets its pad count from the payload length.
    pub bth: BthRepr,
    /// DETH, present exactly when [`Opcode::has_deth`] (UD).
    pub deth: Option<DethRepr>,
    /// RETH, present exactly when [`Opcode::has_reth`].
    pub reth: Option<RethRepr>,
    /// AETH, present exactly when [`Opcode::has_aeth`].
    pub aeth: Option<AethRepr>,
    /// Immediate data, present exactly when [`Opcode::has_immdt`].
    pub immdt: Option<u32>,
    /// AtomicETH, present exactly when [`Opcode::has_atomic_eth`] (CmpSwap, FetchAdd).
    pub atomic: Option<AtomicEthRepr>,
    /// AtomicAckETH (the original remote data), present exactly when
    /// [`Opcode::has_atomic_ack_eth`] (ATOMIC Acknowledge).
    pub atomic_ack: Option<u64>,
}

impl Transport {
    /// Just a BTH (SEND and WRITE Middle, SEND First/Last/Only, READ response Middle).
    pub fn bth(bth: BthRepr) -> Transport {
        Transport { bth, deth: None, reth: None, aeth: None, immdt: None, atomic: None, atomic_ack: None }
    }

    /// Bytes of BTH and extended headers.
    pub fn headers_len(&self) -> usize {
        bth::HEADER_LEN + self.bth.opcode.ext_headers_len()
    }

    /// Check the extended headers against the opcode, and that `payload_len` is allowed.
    pub fn check(&self, payload_len: usize) -> Result<(), WireError> {
        let op = self.bth.opcode;
        if self.deth.is_some() != op.has_deth() {
            return Err(WireError::Emit { layer: Layer::Deth, why: "a DETH goes with the UD opcodes only" });
        }
        if self.reth.is_some() != op.has_reth() {
            return Err(WireError::Emit {
                layer: Layer::Reth,
                why: "a RETH goes with RDMA WRITE First/Only and READ Request only",
            });
        }
        if self.aeth.is_some() != op.has_aeth() {
            return Err(WireError::Emit {
                layer: Layer::Aeth,
                why: "an AETH goes with Acknowledge, ATOMIC Acknowledge and READ response First/Last/Only only",
            });
        }
        if self.atomic.is_some() != op.has_atomic_eth() {
            return Err(WireError::Emit {
                layer: Layer::AtomicEth,
                why: "an AtomicETH goes with CmpSwap and FetchAdd only",
            });
        }
        if self.atomic_ack.is_some() != op.has_atomic_ack_eth() {
            return Err(WireError::Emit {
                layer: Layer::AtomicAckEth,
                why: "an AtomicAckETH goes with ATOMIC Acknowledge only",
            });
        }
        if self.immdt.is_some() != op.has_immdt() {
            return Err(WireError::Emit {
                layer: Layer::ImmDt,
                why: "immediate data goes with the *with Immediate opcodes only",
            });
        }
        if payload_len > 0 && !op.has_payload() {
            return Err(WireError::Emit {
                layer: Layer::Payload,
                why: "READ requests, atomics and Acknowledges carry no payload",
            });
        }
        Ok(())
    }
}

/// Pad bytes after `payload_len` bytes of payload (IBA §9.2.4: to a multiple of 4).
pub fn pad_count(payload_len: usize) -> usize {
    (4 - payload_len % 4) % 4
}

/// Bytes of the IPv4 packet (header to ICRC) for these headers and payload.
pub fn ip_packet_len(transport: &Transport, payload_len: usize) -> usize {
    ipv4::HEADER_LEN + udp::HEADER_LEN + transport.headers_len() + payload_len + pad_count(payload_len) + ICRC_LEN
}

/// Bytes of the whole frame, with Ethernet padding to [`ethernet::MIN_FRAME_LEN`].
pub fn frame_len(transport: &Transport, payload_len: usize) -> usize {
    (IPV4_OFFSET + ip_packet_len(transport, payload_len)).max(ethernet::MIN_FRAME_LEN)
}

/// Build a frame carrying `payload` into `out` (its contents replaced; its capacity, and its
/// bytes when it is long enough, are reused).
pub fn build_frame(path: &Path, transport: &Transport, payload: &[u8], out: &mut Vec<u8>) -> Result<(), WireError> {
    build_frame_overwrite(path, transport, payload.len(), out, |dst| {
        dst.copy_from_slice(payload);
        Ok::<(), WireError>(())
    })
}

/// Build a frame whose `payload_len` bytes of payload `fill` writes in place (given a zeroed
/// slice of exactly that length), into `out` (its contents replaced). An error from `fill` is
/// returned as is, with `out` left unspecified.
pub fn build_frame_with<E: From<WireError>>(
    path: &Path,
    transport: &Transport,
    payload_len: usize,
    out: &mut Vec<u8>,
    fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
) -> Result<(), E> {
    build_frame_overwrite(path, transport, payload_len, out, |dst| {
        dst.fill(0);
        fill(dst)
    })
}

/// Build a frame whose `payload_len` bytes of payload `fill` writes in place, into `out` (its
/// contents replaced), without clearing the payload first: the slice `fill` gets holds whatever
/// `out` held at those offsets (bytes of an earlier frame when `out` is a recycled buffer,
/// zeroes where `out` had to grow), so `fill` must write every byte of it, as a gather from
/// host memory does. With a recycled buffer every byte of the frame is then written once.
/// An error from `fill` is returned as is, with `out` left unspecified.
pub fn build_frame_overwrite<E: From<WireError>>(
    path: &Path,
    transport: &Transport,
    payload_len: usize,
    out: &mut Vec<u8>,
    fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
) -> Result<(), E> {
    let layout = Layout::of(transport, payload_len)?;
    // Reuse the bytes already there; grow (zero-filled, as safe code must) only past them.
    if out.len() >= layout.frame_end {
        out.truncate(layout.frame_end);
    } else {
        out.resize(layout.frame_end, 0);
    }
    write_headers(path, transport, &layout, &mut out[..layout.headers_end])?;
    fill(&mut out[layout.headers_end..layout.payload_end])?;
    Ok(finish(out, &layout)?)
}

/// Where the parts of a frame end, for given headers and payload length.
struct Layout {
    /// End of the transport headers (start of the payload).
    headers_end: usize,
    /// End of the payload (start of the pad bytes).
    payload_end: usize,
    /// End of the pad bytes (start of the ICRC).
    pad_end: usize,
    /// End of the IPv4 packet (after the ICRC).
    ip_end: usize,
    /// End of the frame (after Ethernet padding, if any).
    frame_end: usize,
}

impl Layout {
    /// Check the headers against the payload length and lay the frame out.
    fn of(t: &Transport, payload_len: usize) -> Result<Layout, WireError> {
        t.check(payload_len)?;
        let ip_len = ip_packet_len(t, payload_len);
        if ip_len > usize::from(u16::MAX) {
            return Err(WireError::Emit { layer: Layer::Ipv4, why: "packet longer than 65535 bytes" });
        }
        let headers_end = EXT_OFFSET + t.bth.opcode.ext_headers_len();
        let payload_end = headers_end + payload_len;
        let pad_end = payload_end + pad_count(payload_len);
        let ip_end = IPV4_OFFSET + ip_len;
        debug_assert_eq!(pad_end + ICRC_LEN, ip_end);
        Ok(Layout { headers_end, payload_end, pad_end, ip_end, frame_end: ip_end.max(ethernet::MIN_FRAME_LEN) })
    }
}

/// Write Ethernet, IPv4, UDP and transport headers over `out` (exactly the headers' bytes; every
/// byte is written, reserved bits as zeroes).
fn write_headers(path: &Path, t: &Transport, layout: &Layout, out: &mut [u8]) -> Result<(), WireError> {
    // Zero first: the emitters set fields, not the reserved bits between them.
    out.fill(0);
    let ip_len = layout.ip_end - IPV4_OFFSET;
    EthernetRepr { src: path.src_mac, dst: path.dst_mac, ethertype: ETHERTYPE_IPV4 }
        .emit(&mut EthernetFrame::new_unchecked(&mut *out));
    Ipv4Repr::roce(path.src_ip, path.dst_ip, ip_len - ipv4::HEADER_LEN)
        .emit(&mut Ipv4Packet::new_unchecked(&mut out[IPV4_OFFSET..]))?;
    UdpRepr {
        src_port: path.src_port,
        dst_port: ROCE_V2_UDP_DPORT,
        payload_len: ip_len - ipv4::HEADER_LEN - udp::HEADER_LEN,
    }
    .emit(&mut UdpPacket::new_unchecked(&mut out[UDP_OFFSET..]))?;
    let mut bth = t.bth;
    bth.pad_count = (layout.pad_end - layout.payload_end) as u8;
    bth.emit(&mut BthPacket::new_unchecked(&mut out[BTH_OFFSET..]));
    let mut at = EXT_OFFSET;
    if let Some(deth) = t.deth {
        deth.emit(&mut out[at..]);
        at += ext::DETH_LEN;
    }
    if let Some(reth) = t.reth {
        reth.emit(&mut out[at..]);
        at += ext::RETH_LEN;
    }
    if let Some(atomic) = t.atomic {
        atomic.emit(&mut out[at..]);
        at += ext::ATOMIC_ETH_LEN;
    }
    if let Some(aeth) = t.aeth {
        aeth.emit(&mut out[at..]);
        at += ext::AETH_LEN;
    }
    if let Some(orig) = t.atomic_ack {
        ext::emit_atomic_ack(orig, &mut out[at..]);
        at += ext::ATOMIC_ACK_ETH_LEN;
    }
    if let Some(imm) = t.immdt {
        ext::emit_immdt(imm, &mut out[at..]);
        at += ext::IMMDT_LEN;
    }
    debug_assert_eq!(at, layout.headers_end);
    Ok(())
}

/// Write the pad bytes, the ICRC and Ethernet padding after the payload.
fn finish(out: &mut [u8], layout: &Layout) -> Result<(), WireError> {
    out[layout.payload_end..layout.pad_end].fill(0);
    let icrc = icrc::compute(&out[IPV4_OFFSET..layout.pad_end])?;
    out[layout.pad_end..layout.ip_end].copy_from_slice(&icrc.to_le_bytes());
    out[layout.ip_end..layout.frame_end].fill(0);
    Ok(())
}

/// A received RoCE v2 frame, checked: its headers and its payload (without pad, ICRC and Ethernet
/// padding), borrowed from the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoceFrame<'a> {
    /// Ethernet header.
    pub eth: EthernetRepr,
    /// IPv4 header.
    pub ip: Ipv4Repr,
    /// UDP header.
    pub udp: UdpRepr,
    /// Transport headers (the BTH's pad count as carried).
    pub transport: Transport,
    /// Payload.
    pub payload: &'a [u8],
    /// ICRC as carried (verified unless parsed with [`RoceFrame::parse_unverified`]).
    pub icrc: u32,
}

impl<'a> RoceFrame<'a> {
    /// Parse and check a frame as a receiver does: Ethernet II with EtherType IPv4 (no VLAN tag),
    /// IPv4 without options or fragments with a good header checksum, UDP to port 4791 with a
    /// length matching IP's and a good (or zero) checksum, the ICRC, then the BTH (an RC opcode
    /// of [`Opcode`], TVer 0), the extended headers its opcode calls for and the pad count.
    pub fn parse(frame: &'a [u8]) -> Result<RoceFrame<'a>, WireError> {
        let outer = Outer::parse(frame)?;
        icrc::verify(&frame[IPV4_OFFSET..outer.ip_end])?.into_result()?;
        Self::parse_transport(frame, outer)
    }

    /// As [`RoceFrame::parse`], without checking the ICRC (for taps and tools).
    pub fn parse_unverified(frame: &'a [u8]) -> Result<RoceFrame<'a>, WireError> {
        let outer = Outer::parse(frame)?;
        Self::parse_transport(frame, outer)
    }

    /// The BTH and what follows it, once the outer headers and (when asked) the ICRC passed.
    pub(super) fn parse_transport(frame: &'a [u8], outer: Outer) -> Result<RoceFrame<'a>, WireError> {
        let Outer { eth, ip, udp, ip_end } = outer;
        let icrc = icrc::carried(&frame[IPV4_OFFSET..ip_end])?;
        let body_end = ip_end - ICRC_LEN;
        let bth = BthRepr::parse(&BthPacket::new_unchecked(&frame[BTH_OFFSET..]))?;
        let op: Opcode = bth.opcode;
        let mut at_byte = EXT_OFFSET;
        let mut take = |layer: Layer, len: usize| -> Result<&'a [u8], WireError> {
            let rest = &frame[at_byte..body_end];
            need(layer, at_byte, rest, len)?;
            at_byte += len;
            Ok(&rest[..len])
        };
        let deth = if op.has_deth() { Some(DethRepr::parse(take(Layer::Deth, ext::DETH_LEN)?)?) } else { None };
        let reth = if op.has_reth() { Some(RethRepr::parse(take(Layer::Reth, ext::RETH_LEN)?)?) } else { None };
        let atomic = if op.has_atomic_eth() {
            Some(AtomicEthRepr::parse(take(Layer::AtomicEth, ext::ATOMIC_ETH_LEN)?)?)
        } else {
            None
        };
        let aeth = if op.has_aeth() { Some(AethRepr::parse(take(Layer::Aeth, ext::AETH_LEN)?)?) } else { None };
        let atomic_ack = if op.has_atomic_ack_eth() {
            Some(ext::parse_atomic_ack(take(Layer::AtomicAckEth, ext::ATOMIC_ACK_ETH_LEN)?)?)
        } else {
            None
        };
        let immdt = if op.has_immdt() { Some(ext::parse_immdt(take(Layer::ImmDt, ext::IMMDT_LEN)?)?) } else { None };
        let rest = &frame[at_byte..body_end];
        let pad = usize::from(bth.pad_count);
        if pad > rest.len() || (!op.has_payload() && rest.len() != pad) {
            return Err(WireError::BadLength {
                layer: Layer::Payload,
                field: if op.has_payload() { "BTH pad count" } else { "payload of an opcode without one" },
                stated: pad,
                actual: rest.len(),
            });
        }
        Ok(RoceFrame {
            eth,
            ip,
            udp,
            transport: Transport { bth, deth, reth, aeth, immdt, atomic, atomic_ack },
            payload: &rest[..rest.len() - pad],
            icrc,
        })
    }
}

/// The checked headers outside the BTH, and where the IPv4 packet ends.
pub(super) struct Outer {
    eth: EthernetRepr,
    ip: Ipv4Repr,
    udp: UdpRepr,
    /// End of the IPv4 packet (after the ICRC) in the frame.
    pub(super) ip_end: usize,
}

impl Outer {
    /// Every check [`RoceFrame::parse`] makes before the ICRC: Ethernet, IPv4, UDP, and room for
    /// a BTH and an ICRC.
    pub(super) fn parse(frame: &[u8]) -> Result<Outer, WireError> {
        let e = EthernetFrame::new_checked(frame)?;
        let eth = EthernetRepr::parse(&e);
        match eth.ethertype {
            ETHERTYPE_IPV4 => {}
            t @ (ETHERTYPE_VLAN | ETHERTYPE_QINQ) => {
                return Err(WireError::Unsupported {
                    layer: Layer::Ethernet,
                    field: "EtherType",
                    value: t.into(),
                    why: "VLAN-tagged frames are not supported",
                });
            }
            t => {
                return Err(WireError::Unsupported {
                    layer: Layer::Ethernet,
                    field: "EtherType",
                    value: t.into(),
                    why: "not IPv4 (RoCE v2 over IPv6 is not supported)",
                });
            }
        }
        let ip_packet = Ipv4Packet::new_checked(&frame[IPV4_OFFSET..]).map_err(|e| at(e, IPV4_OFFSET))?;
        let ip = Ipv4Repr::parse(&ip_packet)?;
        if ip.protocol != PROTOCOL_UDP {
            return Err(WireError::Unsupported {
                layer: Layer::Ipv4,
                field: "protocol",
                value: ip.protocol.into(),
                why: "not UDP",
            });
        }
        let ip_end = IPV4_OFFSET + ip.total_len();
        let datagram = &frame[UDP_OFFSET..ip_end];
        let u = UdpPacket::new_checked(datagram).map_err(|e| at(e, UDP_OFFSET))?;
        let udp = UdpRepr::parse(&u);
        if udp::HEADER_LEN + udp.payload_len != datagram.len() {
            return Err(WireError::BadLength {
                layer: Layer::Udp,
                field: "length",
                stated: udp::HEADER_LEN + udp.payload_len,
                actual: datagram.len(),
            });
        }
        if udp.dst_port != ROCE_V2_UDP_DPORT {
            return Err(WireError::Unsupported {
                layer: Layer::Udp,
                field: "destination port",
                value: udp.dst_port.into(),
                why: "not 4791 (RoCE v2)",
            });
        }
        u.verify_checksum(ip.src, ip.dst)?;
        need(Layer::Bth, BTH_OFFSET, &frame[BTH_OFFSET..ip_end], bth::HEADER_LEN + ICRC_LEN)?;
        Ok(Outer { eth, ip, udp, ip_end })
    }
}

/// Shift a view's offset to the position of its layer in the frame.
fn at(e: WireError, offset: usize) -> WireError {
    match e {
        WireError::Truncated { layer, need, got, .. } => WireError::Truncated { layer, offset, need, got },
        other => other,
    }
}

/// A quick look at the BTH of what looks like a RoCE v2 IPv4 frame (EtherType IPv4, IHL 5, UDP,
/// destination port 4791, long enough), without any checks of checksums or lengths: for fault
/// rules and logs. `None` for anything else.
pub fn peek_bth(frame: &[u8]) -> Option<BthPacket<&[u8]>> {
    if frame.len() < EXT_OFFSET {
        return None;
    }
    let ip = Ipv4Packet::new_unchecked(&frame[IPV4_OFFSET..]);
    if EthernetFrame::new_unchecked(frame).ethertype() != ETHERTYPE_IPV4
        || ip.version() != 4
        || ip.header_len() != ipv4::HEADER_LEN
        || ip.protocol() != PROTOCOL_UDP
        || UdpPacket::new_unchecked(&frame[UDP_OFFSET..]).dst_port() != ROCE_V2_UDP_DPORT
    {
        return None;
    }
    Some(BthPacket::new_unchecked(&frame[BTH_OFFSET..EXT_OFFSET]))
}

/// The AETH of a RoCE v2 frame whose opcode carries one (ACKNOWLEDGE, READ response First, Last
/// and Only: IBA Vol 1 §9.3.5), if the frame is long enough to hold it.
pub fn peek_aeth(frame: &[u8]) -> Option<AethRepr> {
    let opcode = Opcode::try_from(peek_bth(frame)?.opcode()).ok()?;
    if !opcode.has_aeth() {
        return None;
    }
    AethRepr::parse(frame.get(EXT_OFFSET..)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::ext::{NakCode, Syndrome};
    use crate::net::icrc::vectors::SCAPY_UC_SEND_ONLY;

    fn path() -> Path {
        Path::between(MacAddr([0x02, 0, 0, 0x00, 0x00, 0x01]), MacAddr([0x02, 0, 0, 0x00, 0x01, 0x02]), 0x11)
    }

    fn every_kind() -> Vec<(Transport, usize)> {
        let reth = RethRepr { va: 0x1000, rkey: 0x55, dma_len: 8192 };
        let aeth = AethRepr { syndrome: Syndrome::Ack { credits: 0x1f }, msn: 7 };
        let deth = DethRepr { qkey: 0x1111_1111, src_qp: 0x42 };
        let atomic = AtomicEthRepr { va: 0x2008, rkey: 0x66, swap_add: 0x1122_3344_5566_7788, compare: 9 };
        let b = |op| BthRepr::new(op, 0x11, 100);
        vec![
            (Transport::bth(b(Opcode::SendFirst)), 4096),
            (Transport::bth(b(Opcode::SendMiddle)), 4096),
            (Transport::bth(b(Opcode::SendLast)), 1),
            (Transport { immdt: Some(0xdead_beef), ..Transport::bth(b(Opcode::SendLastImm)) }, 3),
            (Transport::bth(b(Opcode::SendOnly)), 0),
            (Transport { immdt: Some(1), ..Transport::bth(b(Opcode::SendOnlyImm)) }, 5),
            (Transport { reth: Some(reth), ..Transport::bth(b(Opcode::WriteFirst)) }, 4096),
            (Transport::bth(b(Opcode::WriteMiddle)), 4096),
            (Transport::bth(b(Opcode::WriteLast)), 2),
            (Transport { immdt: Some(2), ..Transport::bth(b(Opcode::WriteLastImm)) }, 6),
            (Transport { reth: Some(reth), ..Transport::bth(b(Opcode::WriteOnly)) }, 7),
            (Transport { reth: Some(reth), immdt: Some(3), ..Transport::bth(b(Opcode::WriteOnlyImm)) }, 8),
            (Transport { reth: Some(reth), ..Transport::bth(b(Opcode::ReadRequest)) }, 0),
            (Transport { aeth: Some(aeth), ..Transport::bth(b(Opcode::ReadResponseFirst)) }, 4096),
            (Transport::bth(b(Opcode::ReadResponseMiddle)), 4096),
            (Transport { aeth: Some(aeth), ..Transport::bth(b(Opcode::ReadResponseLast)) }, 9),
            (Transport { aeth: Some(aeth), ..Transport::bth(b(Opcode::ReadResponseOnly)) }, 10),
            (Transport { aeth: Some(aeth), ..Transport::bth(b(Opcode::Acknowledge)) }, 0),
            (Transport { deth: Some(deth), ..Transport::bth(b(Opcode::UdSendOnly)) }, 11),
            (Transport { deth: Some(deth), immdt: Some(4), ..Transport::bth(b(Opcode::UdSendOnlyImm)) }, 12),
            (Transport { atomic: Some(atomic), ..Transport::bth(b(Opcode::CompareSwap)) }, 0),
            (Transport { atomic: Some(atomic), ..Transport::bth(b(Opcode::FetchAdd)) }, 0),
            (
                Transport {
                    aeth: Some(aeth),
                    atomic_ack: Some(0x0102_0304_0506_0708),
                    ..Transport::bth(b(Opcode::AtomicAcknowledge))
                },
                0,
            ),
            (
                Transport {
                    aeth: Some(AethRepr { syndrome: Syndrome::Nak(NakCode::PsnSequenceError), msn: 3 }),
                    ..Transport::bth(b(Opcode::Acknowledge))
                },
                0,
            ),
        ]
    }

    #[test]
    fn every_opcode_round_trips_through_build_and_parse() {
        let p = path();
        for (t, len) in every_kind() {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let mut frame = Vec::new();
            build_frame(&p, &t, &payload, &mut frame).unwrap();
            assert_eq!(frame.len(), frame_len(&t, len), "{:?}", t.bth.opcode);
            assert!(frame.len() >= 60);
            let parsed = RoceFrame::parse(&frame).unwrap();
            assert_eq!(parsed.payload, &payload[..]);
            let mut expect = t;
            expect.bth.pad_count = pad_count(len) as u8;
            assert_eq!(parsed.transport, expect);
            assert_eq!((parsed.eth.src, parsed.eth.dst), (p.src_mac, p.dst_mac));
            assert_eq!((parsed.ip.src, parsed.ip.dst, parsed.ip.ttl, parsed.ip.tos), (p.src_ip, p.dst_ip, 64, 0));
            assert_eq!((parsed.udp.src_port, parsed.udp.dst_port), (p.src_port, 4791));
            assert_eq!(peek_bth(&frame).unwrap().psn(), 100);
        }
    }

    #[test]
    fn the_closure_builder_writes_the_same_frame() {
        let p = path();
        let t = Transport::bth(BthRepr::new(Opcode::SendOnly, 0x11, 5));
        let payload = b"hello, fabric";
        let mut a = Vec::new();
        build_frame(&p, &t, payload, &mut a).unwrap();
        let mut b = vec![1, 2, 3];
        build_frame_with::<WireError>(&p, &t, payload.len(), &mut b, |dst| {
            dst.copy_from_slice(payload);
            Ok(())
        })
        .unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn a_recycled_buffer_gives_the_same_frame_as_a_fresh_one() {
        let p = path();
        for (t, len) in every_kind() {
            let payload: Vec<u8> = (0..len).map(|i| (i * 5 + 1) as u8).collect();
            let mut fresh = Vec::new();
            build_frame(&p, &t, &payload, &mut fresh).unwrap();
            // Longer and shorter than the frame, full of bytes that must not survive.
            for stale_len in [0, 10, fresh.len() - 1, fresh.len(), fresh.len() + 100, 9000] {
                let mut reused = vec![0xee; stale_len];
                build_frame_overwrite::<WireError>(&p, &t, len, &mut reused, |dst| {
                    dst.copy_from_slice(&payload);
                    Ok(())
                })
                .unwrap();
                assert_eq!(reused, fresh, "{:?} over {stale_len} stale bytes", t.bth.opcode);
                let mut zeroed = vec![0xee; stale_len];
                build_frame_with::<WireError>(&p, &t, len, &mut zeroed, |dst| {
                    assert!(dst.iter().all(|b| *b == 0), "build_frame_with hands over zeroes");
                    dst.copy_from_slice(&payload);
                    Ok(())
                })
                .unwrap();
                assert_eq!(zeroed, fresh);
            }
        }
    }

    #[test]
    fn inconsistent_headers_are_refused_at_build() {
        let p = path();
        let mut out = Vec::new();
        let no_reth = Transport::bth(BthRepr::new(Opcode::WriteOnly, 1, 1));
        assert!(matches!(build_frame(&p, &no_reth, b"x", &mut out), Err(WireError::Emit { layer: Layer::Reth, .. })));
        let ack_no_aeth = Transport::bth(BthRepr::new(Opcode::Acknowledge, 1, 1));
        assert!(build_frame(&p, &ack_no_aeth, &[], &mut out).is_err());
        let read_with_payload = Transport {
            reth: Some(RethRepr { va: 0, rkey: 0, dma_len: 4 }),
            ..Transport::bth(BthRepr::new(Opcode::ReadRequest, 1, 1))
        };
        assert!(matches!(
            build_frame(&p, &read_with_payload, b"data", &mut out),
            Err(WireError::Emit { layer: Layer::Payload, .. })
        ));
        let too_big = vec![0u8; 70_000];
        assert!(build_frame(&p, &Transport::bth(BthRepr::new(Opcode::SendOnly, 1, 1)), &too_big, &mut out).is_err());
    }

    #[test]
    fn parses_scapys_frame_up_to_its_uc_opcode() {
        // Everything up to the BTH is accepted (including its non-zero UDP checksum and ICRC);
        // the UC opcode is not one the model handles.
        let err = RoceFrame::parse(&SCAPY_UC_SEND_ONLY).unwrap_err();
        assert!(matches!(err, WireError::Unsupported { layer: Layer::Bth, field: "opcode", value: 0x24, .. }), "{err}");
    }

    #[test]
    fn each_check_names_what_is_wrong() {
        let p = path();
        let t = Transport::bth(BthRepr::new(Opcode::SendOnly, 0x11, 5));
        let mut good = Vec::new();
        build_frame(&p, &t, &[0xab; 40], &mut good).unwrap();
        let broken = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut b = good.clone();
            f(&mut b);
            RoceFrame::parse(&b).unwrap_err()
        };
        let vlan = broken(&|b| b[12..14].copy_from_slice(&[0x81, 0x00]));
        assert!(vlan.to_string().contains("VLAN"), "{vlan}");
        assert!(matches!(broken(&|b| b[12] = 0x86), WireError::Unsupported { field: "EtherType", .. }));
        assert!(matches!(broken(&|b| b[IPV4_OFFSET + 15] ^= 1), WireError::Ipv4Checksum { .. }));
        assert!(matches!(
            broken(&|b| {
                b[UDP_OFFSET + 3] = 0x00;
                Ipv4Packet::new_unchecked(&mut b[IPV4_OFFSET..]).fill_checksum();
            }),
            WireError::Unsupported { field: "destination port", .. }
        ));
        assert!(matches!(broken(&|b| b[UDP_OFFSET + 7] = 1), WireError::UdpChecksum { .. }));
        assert!(matches!(broken(&|b| b[UDP_OFFSET + 5] -= 4), WireError::BadLength { layer: Layer::Udp, .. }));
        assert!(matches!(broken(&|b| b[EXT_OFFSET + 3] ^= 0x20), WireError::Icrc { .. }));
        assert!(matches!(broken(&|b| b.truncate(b.len() - 1)), WireError::BadLength { layer: Layer::Ipv4, .. }));
        // A change in the masked BTH byte (F/B/reserved) is not an ICRC error.
        let mut becn = good.clone();
        becn[BTH_OFFSET + 4] = 0x40;
        assert!(RoceFrame::parse(&becn).unwrap().transport.bth.becn);
    }

    #[test]
    fn short_frames_are_padded_and_the_padding_is_ignored() {
        let p = path();
        let t = Transport::bth(BthRepr::new(Opcode::SendOnly, 0x11, 5));
        let mut frame = Vec::new();
        build_frame(&p, &t, &[], &mut frame).unwrap();
        assert_eq!(frame.len(), 60);
        assert_eq!(frame_len(&t, 0), 60);
        assert_eq!(RoceFrame::parse(&frame).unwrap().payload, &[] as &[u8]);
        frame.extend_from_slice(&[0xee; 8]);
        assert!(RoceFrame::parse(&frame).is_ok(), "trailing bytes past IP's total length are padding");
    }

    #[test]
    fn path_between_uses_fabric_addresses_and_p7_ports() {
        let p = path();
        assert_eq!(p.src_ip, Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(p.dst_ip, Ipv4Addr::new(10, 0, 1, 2));
        assert_eq!(p.src_port & 0xc000, 0xc000);
        let back = p.reversed(0x22);
        assert_eq!((back.src_mac, back.dst_mac, back.src_ip, back.dst_ip), (p.dst_mac, p.src_mac, p.dst_ip, p.src_ip));
    }
}
