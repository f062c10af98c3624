//! Why a frame could not be parsed or built, and the receive-side drop reasons derived from it.

use std::fmt;

/// The protocol layer an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layer {
    /// Ethernet II header.
    Ethernet,
    /// IPv4 header.
    Ipv4,
    /// UDP header.
    Udp,
    /// InfiniBand Base Transport Header.
    Bth,
    /// Datagram Extended Transport Header.
    Deth,
    /// RDMA Extended Transport Header.
    Reth,
    /// ACK Extended Transport Header.
    Aeth,
    /// Immediate data.
    ImmDt,
    /// Atomic Extended Transport Header.
    AtomicEth,
    /// Atomic Acknowledge Extended Transport Header.
    AtomicAckEth,
    /// Payload, pad bytes and ICRC after the transport headers.
    Payload,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Ethernet => "Ethernet",
            Layer::Ipv4 => "IPv4",
            Layer::Udp => "UDP",
            Layer::Bth => "BTH",
            Layer::Deth => "DETH",
            Layer::Reth => "RETH",
            Layer::Aeth => "AETH",
            Layer::ImmDt => "ImmDt",
            Layer::AtomicEth => "AtomicETH",
            Layer::AtomicAckEth => "AtomicAckETH",
            Layer::Payload => "payload",
        })
    }
}

/// A frame (or a header in it) that could not be parsed, or a header that could not be emitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than the header (or the length a header states) needs.
    #[error("{layer} at byte {offset}: {got} bytes left, {need} needed")]
    Truncated {
        /// Layer being read.
        layer: Layer,
        /// Offset of the layer in the frame (0 when a view is used on its own).
        offset: usize,
        /// Bytes needed.
        need: usize,
        /// Bytes there.
        got: usize,
    },
    /// A field holds a value this model does not accept (valid elsewhere, or simply wrong).
    #[error("{layer} {field} is {value:#x}: {why}")]
    Unsupported {
        /// Layer being read.
        layer: Layer,
        /// Field name.
        field: &'static str,
        /// Value found.
        value: u64,
        /// What was expected.
        why: &'static str,
    },
    /// A length field disagrees with the bytes there or with another length.
    #[error("{layer} {field} says {stated} bytes, but {actual} are there")]
    BadLength {
        /// Layer being read.
        layer: Layer,
        /// Field name.
        field: &'static str,
        /// Value of the field.
        stated: usize,
        /// What the frame or the enclosing header implies.
        actual: usize,
    },
    /// The IPv4 header checksum does not verify.
    #[error("IPv4 header checksum {found:#06x} is wrong (the header sums to {sum:#06x}, not 0xffff)")]
    Ipv4Checksum {
        /// Checksum field as carried.
        found: u16,
        /// Ones'-complement sum of the header including the checksum field.
        sum: u16,
    },
    /// A non-zero UDP checksum does not verify.
    #[error("UDP checksum {found:#06x} is wrong (expected {expected:#06x})")]
    UdpChecksum {
        /// Checksum field as carried.
        found: u16,
        /// Checksum computed over the pseudo-header and datagram.
        expected: u16,
    },
    /// The invariant CRC does not match the packet.
    #[error("ICRC {carried:#010x} is wrong (computed {computed:#010x})")]
    Icrc {
        /// ICRC as carried (the four trailing bytes read little-endian).
        carried: u32,
        /// ICRC computed over the packet.
        computed: u32,
    },
    /// A header to emit is inconsistent with the opcode or with the buffer.
    #[error("cannot emit {layer}: {why}")]
    Emit {
        /// Layer being written.
        layer: Layer,
        /// What is wrong.
        why: &'static str,
    },
}

/// Why a receiver drops a frame: a coarse class of [`WireError`], for counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// Too short for its headers or their lengths.
    Truncated,
    /// Not RoCE v2 over IPv4 (other ethertype, VLAN tag, protocol, port, IP options, fragment).
    NotRoce,
    /// Well-formed headers with values the model refuses (version, opcode, lengths).
    Malformed,
    /// IPv4 header checksum wrong.
    Ipv4Checksum,
    /// UDP checksum wrong.
    UdpChecksum,
    /// ICRC wrong.
    Icrc,
}

impl WireError {
    /// The drop counter this error belongs to.
    pub fn drop_reason(&self) -> DropReason {
        match self {
            WireError::Truncated { .. } => DropReason::Truncated,
            WireError::Unsupported { layer, .. } => match layer {
                Layer::Ethernet | Layer::Ipv4 | Layer::Udp => DropReason::NotRoce,
                _ => DropReason::Malformed,
            },
            WireError::BadLength { .. } | WireError::Emit { .. } => DropReason::Malformed,
            WireError::Ipv4Checksum { .. } => DropReason::Ipv4Checksum,
            WireError::UdpChecksum { .. } => DropReason::UdpChecksum,
            WireError::Icrc { .. } => DropReason::Icrc,
        }
    }
}

/// Counts of frames a receiver dropped, by [`DropReason`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DropCounters {
    /// [`DropReason::Truncated`].
    pub truncated: u64,
    /// [`DropReason::NotRoce`].
    pub not_roce: u64,
    /// [`DropReason::Malformed`].
    pub malformed: u64,
    /// [`DropReason::Ipv4Checksum`].
    pub ipv4_checksum: u64,
    /// [`DropReason::UdpChecksum`].
    pub udp_checksum: u64,
    /// [`DropReason::Icrc`].
    pub icrc: u64,
}

impl DropCounters {
    /// Count one frame dropped for `error`, returning its reason.
    pub fn count(&mut self, error: &WireError) -> DropReason {
        let reason = error.drop_reason();
        *match reason {
            DropReason::Truncated => &mut self.truncated,
            DropReason::NotRoce => &mut self.not_roce,
            DropReason::Malformed => &mut self.malformed,
            DropReason::Ipv4Checksum => &mut self.ipv4_checksum,
            DropReason::UdpChecksum => &mut self.udp_checksum,
            DropReason::Icrc => &mut self.icrc,
        } += 1;
        reason
    }

    /// Total frames dropped.
    pub fn total(&self) -> u64 {
        self.truncated + self.not_roce + self.malformed + self.ipv4_checksum + self.udp_checksum + self.icrc
    }
}

/// Check that `buf` holds at least `need` bytes for `layer`.
pub(crate) fn need(layer: Layer, offset: usize, buf: &[u8], need: usize) -> Result<(), WireError> {
    if buf.len() < need { Err(WireError::Truncated { layer, offset, need, got: buf.len() }) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_count_under_their_reason() {
        let mut c = DropCounters::default();
        let errors = [
            WireError::Truncated { layer: Layer::Bth, offset: 42, need: 12, got: 3 },
            WireError::Unsupported { layer: Layer::Ethernet, field: "EtherType", value: 0x8100, why: "VLAN" },
            WireError::Unsupported { layer: Layer::Bth, field: "opcode", value: 0x64, why: "UD" },
            WireError::BadLength { layer: Layer::Udp, field: "length", stated: 9, actual: 8 },
            WireError::Ipv4Checksum { found: 1, sum: 2 },
            WireError::UdpChecksum { found: 1, expected: 2 },
            WireError::Icrc { carried: 1, computed: 2 },
            WireError::Icrc { carried: 3, computed: 4 },
        ];
        let reasons: Vec<DropReason> = errors.iter().map(|e| c.count(e)).collect();
        assert_eq!(
            reasons,
            [
                DropReason::Truncated,
                DropReason::NotRoce,
                DropReason::Malformed,
                DropReason::Malformed,
                DropReason::Ipv4Checksum,
                DropReason::UdpChecksum,
                DropReason::Icrc,
                DropReason::Icrc
            ]
        );
        assert_eq!((c.truncated, c.not_roce, c.malformed, c.ipv4_checksum, c.udp_checksum, c.icrc), (1, 1, 2, 1, 1, 2));
        assert_eq!(c.total(), 8);
        assert_eq!(errors[0].to_string(), "BTH at byte 42: 3 bytes left, 12 needed");
        assert_eq!(errors[6].to_string(), "ICRC 0x00000001 is wrong (computed 0x00000002)");
    }
}
