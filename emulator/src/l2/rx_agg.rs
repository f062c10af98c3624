//! Receive placement across an RX ring's buffer and its aggregation ring's buffers: jumbo
//! placement and header-data split, as a VNIC's VNIC_PLCMODES_CFG asks
//! ([`crate::firmware::placement`]), for the frames bnxt_en's RX buffers no longer hold whole once
//! its MTU needs more than a page (bnxt.c `bnxt_set_ring_params`: aggregation rings with
//! `BNXT_FLAG_JUMBO`; `bnxt_rx_pkt`, `bnxt_agg_bufs_valid`, `__bnxt_rx_agg_pages`).
//!
//! The split point (the bytes that go into the RX ring's buffer):
//! - header-data split, for an IPv4 (IPv6) frame longer than `hds_threshold` with `HDS_IPV4`
//!   (`HDS_IPV6`): the start of the TCP payload (after the TCP header and its options), of the
//!   UDP payload, or of any other upper-layer header (the HSI, hsi_struct_def_dpdk.h
//!   `hwrm_vnic_plcmodes_cfg_input`); the completion says PLACEMENT_HDS;
//! - otherwise jumbo placement, for a frame longer than `jumbo_thresh`: its first `jumbo_thresh`
//!   bytes; PLACEMENT_JUMBO.
//!
//! Headers that do not fit the RX buffer are cut at the buffer's end instead (the model's choice;
//! bnxt_en's buffers always hold them). The rest fills aggregation buffers in ring order, each
//! up to its BD's length, at most 31 of them (the completion's 5-bit `agg_bufs`); each gets a
//! 16-byte RX_AGG completion (`rx_agg_cmp` / hsi `rx_abuf_cmpl`: type 0x12, the length placed in
//! it, the BD's opaque) right after the packet's two-entry completion, which counts them in
//! `agg_bufs` and gives the RX buffer's part as its length.

use crate::firmware::placement::Placement;
use crate::firmware::state::{FwState, RingType};

use super::frame::{L3, PROTO_TCP, PROTO_UDP, Parsed};

/// `RX_PKT_V3_CMPL_FLAGS_PLACEMENT` shift (in the completion's flags).
pub const PLACEMENT_SHIFT: u32 = 7;
/// `RX_PKT_V3_CMPL_FLAGS_PLACEMENT_JUMBO`.
pub const PLACEMENT_JUMBO: u32 = 1;
/// `RX_PKT_V3_CMPL_FLAGS_PLACEMENT_HDS`.
pub const PLACEMENT_HDS: u32 = 2;
/// `RX_PKT_V3_CMPL_AGG_BUFS` shift (in `misc_v1`; bnxt.h `RX_CMP_AGG_BUFS_SHIFT`).
pub const AGG_BUFS_SHIFT: u32 = 1;
/// Most aggregation buffers one packet takes (`RX_CMP_AGG_BUFS`, 5 bits).
pub const MAX_AGG_BUFS: usize = 31;
/// `CMP_TYPE_RX_AGG_CMP` (`RX_ABUF_CMPL_TYPE_RX_AGG`).
pub const CMP_TYPE_RX_AGG: u32 = 0x12;
/// Shift of the length in `rx_agg_cmp_len_flags_type` (`RX_AGG_CMP_LEN_SHIFT`).
pub const RX_AGG_CMP_LEN_SHIFT: u32 = 16;
/// `RX_BD_TYPE_RX_AGG_BD`.
pub const RX_BD_TYPE_RX_AGG: u32 = 0x6;

/// Where a frame is split: bytes for the RX buffer and the completion's placement code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// Bytes placed in the RX ring's buffer.
    pub head: usize,
    /// `PLACEMENT_JUMBO` or `PLACEMENT_HDS`.
    pub placement: u32,
}

/// The offset of the upper-layer payload of `p` in `data` (where header-data split cuts), if
/// `p` is an IP frame.
fn payload_offset(data: &[u8], p: &Parsed) -> Option<usize> {
    let upper = match p.l3 {
        L3::V4 { off, hdr_len, .. } => off + hdr_len,
        L3::V6 { l4_off, .. } => l4_off,
        L3::Other => return None,
    };
    Some(
        match p.l4(data.len()) {
            Some((PROTO_TCP, off, _)) => {
                let doff = usize::from(*data.get(off + 12)? >> 4) * 4;
                off + doff.max(20)
            }
            Some((PROTO_UDP, off, _)) => off + 8,
            _ => upper,
        }
        .min(data.len()),
    )
}

/// How `data` (parsed as `p`) is placed by a VNIC with `pl` when its RX buffer holds
/// `capacity` bytes: `None` for regular placement (all of it in the RX buffer).
pub fn split(pl: &Placement, data: &[u8], p: &Parsed, capacity: usize) -> Option<Split> {
    let len = data.len();
    let hds = match p.l3 {
        L3::V4 { .. } => pl.hds_ipv4,
        L3::V6 { .. } => pl.hds_ipv6,
        L3::Other => false,
    };
    let at = if hds && len > usize::from(pl.hds_threshold) {
        payload_offset(data, p).map(|head| (head, PLACEMENT_HDS))
    } else {
        None
    };
    let at = at.or_else(|| {
        let t = usize::from(pl.jumbo?);
        (len > t).then_some((if t == 0 { capacity } else { t }, PLACEMENT_JUMBO))
    })?;
    Some(Split { head: at.0.min(capacity).min(len), placement: at.1 })
}

/// The aggregation ring that serves RX ring `rx` (RING_ALLOC of an RX_AGG ring naming it),
/// the lowest-numbered if several do.
pub fn agg_ring_of(fw: &FwState, rx: u16) -> Option<u16> {
    fw.rings.iter().find(|(_, r)| r.ty == RingType::RxAgg && r.rx_ring_id == Some(rx)).map(|(id, _)| *id)
}

/// The 16-byte RX_AGG completion of `len` bytes placed in the aggregation buffer with `opaque`.
pub fn agg_completion(len: usize, opaque: u32) -> [u8; 16] {
    let mut e = [0u8; 16];
    e[0..4].copy_from_slice(&(CMP_TYPE_RX_AGG | ((len as u32) << RX_AGG_CMP_LEN_SHIFT)).to_le_bytes());
    e[4..8].copy_from_slice(&opaque.to_le_bytes());
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::l2::frame::parse;

    /// An Ethernet + IPv4 + `proto` frame of `len` bytes whose transport header is `l4` (its first
    /// bytes), the rest zero.
    fn ipv4(proto: u8, l4: &[u8], len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        f[23] = proto;
        f[34..34 + l4.len()].copy_from_slice(l4);
        f
    }

    fn bnxt_en() -> Placement {
        Placement { jumbo: Some(256), hds_ipv4: true, hds_ipv6: true, hds_threshold: 256 }
    }

    #[test]
    fn tcp_and_udp_split_at_their_payload_other_frames_at_the_jumbo_threshold() {
        let mut tcp = [0u8; 20];
        tcp[12] = 8 << 4; // 32-byte header with options
        let f = ipv4(PROTO_TCP, &tcp, 9000);
        let s = split(&bnxt_en(), &f, &parse(&f).unwrap(), 318).unwrap();
        assert_eq!(s, Split { head: 14 + 20 + 32, placement: PLACEMENT_HDS });
        let f = ipv4(PROTO_UDP, &[0; 8], 5000);
        assert_eq!(split(&bnxt_en(), &f, &parse(&f).unwrap(), 318).unwrap().head, 14 + 20 + 8);
        let f = ipv4(1, &[0; 8], 5000);
        assert_eq!(split(&bnxt_en(), &f, &parse(&f).unwrap(), 318).unwrap().head, 14 + 20, "ICMP: its header");
        let mut arp = vec![0u8; 1000];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(
            split(&bnxt_en(), &arp, &parse(&arp).unwrap(), 318),
            Some(Split { head: 256, placement: PLACEMENT_JUMBO })
        );
        let small = ipv4(PROTO_UDP, &[0; 8], 200);
        assert_eq!(split(&bnxt_en(), &small, &parse(&small).unwrap(), 318), None, "at most the thresholds: whole");
        assert_eq!(split(&Placement::default(), &f, &parse(&f).unwrap(), 318), None, "regular placement");
        let page = Placement { jumbo: Some(3000), ..Placement::default() };
        assert_eq!(split(&page, &f, &parse(&f).unwrap(), 2000).unwrap().head, 2000, "cut at the buffer's end");
    }

    #[test]
    fn an_aggregation_completion_carries_its_length_and_opaque() {
        let e = agg_completion(4096, 0x1234);
        assert_eq!(u32::from_le_bytes(e[0..4].try_into().unwrap()), 0x12 | (4096 << 16));
        assert_eq!(u32::from_le_bytes(e[4..8].try_into().unwrap()), 0x1234);
    }
}
