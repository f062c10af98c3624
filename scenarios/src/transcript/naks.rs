//! Which ACKNOWLEDGE frames of a run were NAKs, read from the run's pcap: the model's frame
//! events name a frame's opcode and PSN but not its AETH, which says ACK, RNR NAK or NAK.
//!
//! Frame layout: Ethernet II (14 bytes), IPv4 (its IHL), UDP (8 bytes) to port 4791, then the
//! BTH (12 bytes: opcode in byte 0, PSN in bytes 9 to 11) and, for an ACKNOWLEDGE, the AETH,
//! whose first byte's top three bits are 000 for an ACK, 001 for an RNR NAK and 011 for a NAK
//! (IBA Vol 1 §9.2.1 BTH, §9.3.5 AETH, Table 46 "AETH syndrome"; RoCE v2: Annex A17, UDP port
//! 4791).

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use pcap_file::pcap::PcapReader;

use super::{Line, PacketKind};

/// The RoCE v2 UDP destination port (IBA Annex A17).
const ROCE_V2_PORT: u16 = 4791;
/// The BTH opcode of an RC ACKNOWLEDGE.
const ACKNOWLEDGE: u8 = 0x11;

/// The NAKs of a pcap: the time each was captured (the time it was sent, on the model's clock)
/// and its PSN.
pub fn naks_in(path: &Path) -> Result<HashSet<(Duration, u32)>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = PcapReader::new(file).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut naks = HashSet::new();
    while let Some(packet) = reader.next_packet() {
        let packet = packet.map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(psn) = nak_psn(&packet.data) {
            naks.insert((packet.timestamp, psn));
        }
    }
    Ok(naks)
}

/// The PSN of `frame` if it is a RoCE v2 ACKNOWLEDGE whose AETH says NAK (RNR or other).
fn nak_psn(frame: &[u8]) -> Option<u32> {
    let ip = frame.get(14..)?;
    if u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]) != 0x0800 || ip.first()? >> 4 != 4 || *ip.get(9)? != 17 {
        return None;
    }
    let udp = ip.get(usize::from(ip[0] & 0x0f) * 4..)?;
    if u16::from_be_bytes([*udp.get(2)?, *udp.get(3)?]) != ROCE_V2_PORT {
        return None;
    }
    let bth = udp.get(8..20)?;
    if bth[0] != ACKNOWLEDGE {
        return None;
    }
    let syndrome = *udp.get(20)?;
    let psn = u32::from_be_bytes([0, bth[9], bth[10], bth[11]]);
    (syndrome >> 5 != 0).then_some(psn)
}

/// Mark the ACKNOWLEDGE frames of `lines` that `naks` holds as NAKs.
pub fn mark(lines: &mut [Line], naks: &HashSet<(Duration, u32)>) {
    for line in lines {
        if let Some(p) = &mut line.packet
            && p.kind == PacketKind::Sent
            && p.opcode == Some(ACKNOWLEDGE)
            && p.psn.is_some_and(|psn| naks.contains(&(line.at, psn)))
        {
            p.nak = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ACKNOWLEDGE frame with `syndrome` for `psn`.
    fn ack(syndrome: u8, psn: u32) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8 + 12 + 4 + 4];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[14 + 9] = 17;
        f[34 + 2..34 + 4].copy_from_slice(&ROCE_V2_PORT.to_be_bytes());
        f[42] = ACKNOWLEDGE;
        f[42 + 9..42 + 12].copy_from_slice(&psn.to_be_bytes()[1..]);
        f[54] = syndrome;
        f
    }

    #[test]
    fn naks_are_told_from_acks_by_their_syndrome() {
        assert_eq!(nak_psn(&ack(0x1f, 7)), None, "an ACK with credits");
        assert_eq!(nak_psn(&ack(0x20 | 0x0e, 7)), Some(7), "an RNR NAK");
        assert_eq!(nak_psn(&ack(0x60, 0x123456)), Some(0x123456), "a PSN sequence error NAK");
        let mut send = ack(0x60, 7);
        send[42] = 0x04;
        assert_eq!(nak_psn(&send), None, "not an ACKNOWLEDGE");
        assert_eq!(nak_psn(&[0u8; 20]), None);
    }
}
