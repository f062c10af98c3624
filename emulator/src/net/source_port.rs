//! The UDP source port of a RoCE v2 queue pair.
//!
//! The BCM57608's own choice is not documented. Broadcom's out-of-tree bnxt_re reconstructs it (for
//! reporting only) in ib_verbs.c `get_source_port`: Linux's `crc16` (CRC-16/ARC: polynomial 0x8005
//! reflected, initial value 0, no final xor) over the destination MAC, the source MAC, the
//! destination IPv4 address, the source IPv4 address and the 24-bit destination QP number (network
//! order), OR'ed with 0xc000 on P7 chips (`_is_chip_p7`). See hardware-map.md §6. The model uses
//! that reconstruction, so its ports agree with what the driver reports.

use std::net::Ipv4Addr;

use super::ethernet::MacAddr;

/// Bits OR'ed into the CRC on P7 chips (OOT bnxt_re ib_verbs.c `get_source_port`).
pub const P7_SOURCE_PORT_BITS: u16 = 0xc000;

/// CRC-16/ARC (reflected polynomial 0xa001) continued from `crc` over `data`, as Linux lib/crc16.c
/// `crc16` computes it.
pub fn crc16_arc(mut crc: u16, data: &[u8]) -> u16 {
    for &byte in data {
        crc ^= u16::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xa001 } else { crc >> 1 };
        }
    }
    crc
}

/// The UDP source port of a RoCE v2 IPv4 queue pair whose frames go from `smac`/`sip` to
/// `dmac`/`dip` and to destination QP `dest_qpn`.
pub fn roce_source_port(dmac: MacAddr, smac: MacAddr, dip: Ipv4Addr, sip: Ipv4Addr, dest_qpn: u32) -> u16 {
    let mut data = [0u8; 23];
    data[0..6].copy_from_slice(&dmac.0);
    data[6..12].copy_from_slice(&smac.0);
    data[12..16].copy_from_slice(&dip.octets());
    data[16..20].copy_from_slice(&sip.octets());
    data[20..23].copy_from_slice(&dest_qpn.to_be_bytes()[1..]);
    crc16_arc(0, &data) | P7_SOURCE_PORT_BITS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_arc_check_value() {
        // The catalogue check value of CRC-16/ARC (Greg Cook's CRC catalogue, "CRC-16/ARC"):
        // "123456789" gives 0xbb3d.
        assert_eq!(crc16_arc(0, b"123456789"), 0xbb3d);
        // Continuing byte by byte, as the driver calls crc16 one byte at a time, is the same.
        let bytewise = b"123456789".iter().fold(0, |c, b| crc16_arc(c, std::slice::from_ref(b)));
        assert_eq!(bytewise, 0xbb3d);
    }

    #[test]
    fn port_is_in_the_p7_range_and_depends_on_every_input() {
        let (a, b) = (MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]));
        let (ia, ib) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let base = roce_source_port(b, a, ib, ia, 0x11);
        assert_eq!(base & 0xc000, 0xc000);
        assert_ne!(base, roce_source_port(a, a, ib, ia, 0x11));
        assert_ne!(base, roce_source_port(b, b, ib, ia, 0x11));
        assert_ne!(base, roce_source_port(b, a, ia, ia, 0x11));
        assert_ne!(base, roce_source_port(b, a, ib, ib, 0x11));
        assert_ne!(base, roce_source_port(b, a, ib, ia, 0x12));
        // Only the low 24 bits of the QP number count.
        assert_eq!(base, roce_source_port(b, a, ib, ia, 0xff00_0011));
    }
}
