//! Ethernet II frames (IEEE 802.3 with an EtherType; no VLAN tag, no FCS: frames here are what a
//! pcap with link type Ethernet holds).

use std::fmt;

use super::bytes::{be16, put16};
use super::error::{Layer, WireError, need};

/// EtherType of IPv4 (IEEE registry; RFC 894).
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of an IEEE 802.1Q VLAN tag. Tagged frames are not supported and are refused.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// EtherType of an IEEE 802.1ad (QinQ) service tag. Refused like [`ETHERTYPE_VLAN`].
pub const ETHERTYPE_QINQ: u16 = 0x88a8;
/// Bytes of an Ethernet II header.
pub const HEADER_LEN: usize = 14;
/// Smallest frame without FCS (IEEE 802.3 minimum of 64 bytes less the 4-byte FCS); shorter
/// frames are padded with zeros after the payload (Linux `ETH_ZLEN`).
pub const MIN_FRAME_LEN: usize = 60;

/// A 48-bit IEEE MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);

    /// Whether this is the broadcast address.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Whether the group bit (bit 0 of the first byte) is set: multicast or broadcast.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 1 != 0
    }

    /// Whether this is an individual (unicast) address.
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
    }
}

impl From<[u8; 6]> for MacAddr {
    fn from(b: [u8; 6]) -> Self {
        MacAddr(b)
    }
}

mod field {
    use std::ops::Range;
    pub(super) const DST: Range<usize> = 0..6;
    pub(super) const SRC: Range<usize> = 6..12;
    pub(super) const ETHERTYPE: usize = 12;
}

/// A view of an Ethernet II frame in a buffer.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// A view without checking the length; accessors panic on a buffer shorter than
    /// [`HEADER_LEN`].
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// A view of a buffer that holds at least a whole header.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        need(Layer::Ethernet, 0, buffer.as_ref(), HEADER_LEN)?;
        Ok(EthernetFrame { buffer })
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination address.
    pub fn dst(&self) -> MacAddr {
        let mut m = [0; 6];
        m.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        MacAddr(m)
    }

    /// Source address.
    pub fn src(&self) -> MacAddr {
        let mut m = [0; 6];
        m.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        MacAddr(m)
    }

    /// EtherType.
    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ETHERTYPE)
    }

    /// Everything after the header (including any padding to the minimum frame size).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Set the destination address.
    pub fn set_dst(&mut self, mac: MacAddr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&mac.0);
    }

    /// Set the source address.
    pub fn set_src(&mut self, mac: MacAddr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&mac.0);
    }

    /// Set the EtherType.
    pub fn set_ethertype(&mut self, ethertype: u16) {
        put16(self.buffer.as_mut(), field::ETHERTYPE, ethertype);
    }

    /// Everything after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }
}

/// The fields of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetRepr {
    /// Source address.
    pub src: MacAddr,
    /// Destination address.
    pub dst: MacAddr,
    /// EtherType.
    pub ethertype: u16,
}

impl EthernetRepr {
    /// Read the header of a checked frame.
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> EthernetRepr {
        EthernetRepr { src: frame.src(), dst: frame.dst(), ethertype: frame.ethertype() }
    }

    /// Write the header into a frame of at least [`HEADER_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_dst(self.dst);
        frame.set_src(self.src);
        frame.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_short_buffers_are_refused() {
        let repr = EthernetRepr {
            src: MacAddr([0x02, 0, 0, 0x01, 0x02, 0x03]),
            dst: MacAddr::BROADCAST,
            ethertype: ETHERTYPE_IPV4,
        };
        let mut buf = [0u8; 20];
        repr.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..14], &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 1, 2, 3, 8, 0]);
        let frame = EthernetFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(EthernetRepr::parse(&frame), repr);
        assert_eq!(frame.payload().len(), 6);
        for len in 0..HEADER_LEN {
            assert!(matches!(
                EthernetFrame::new_checked(&buf[..len]),
                Err(WireError::Truncated { layer: Layer::Ethernet, need: 14, .. })
            ));
        }
    }

    #[test]
    fn address_classes_and_display() {
        assert!(MacAddr::BROADCAST.is_broadcast() && MacAddr::BROADCAST.is_multicast());
        assert!(MacAddr([0x01, 0, 0x5e, 0, 0, 1]).is_multicast());
        assert!(MacAddr([0x02, 0, 0, 0, 0, 1]).is_unicast());
        assert_eq!(MacAddr([0x02, 0xab, 0, 0x10, 0x20, 0xff]).to_string(), "02:ab:00:10:20:ff");
    }
}
