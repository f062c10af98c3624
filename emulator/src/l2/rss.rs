//! Receive-side scaling: which (RX ring, completion ring) pair of a VNIC a frame goes to.
//!
//! The hash is Toeplitz (VNIC_RSS_CFG `ring_select_mode` TOEPLITZ, the default; Microsoft's
//! "Verifying the RSS Hash Calculation"), over the IP addresses and, when the VNIC's `hash_type`
//! includes the protocol's 4-tuple type, the ports: source address, destination address, source
//! port, destination port, in network order. The low bits of the hash index the VNIC's ring
//! table: 64 pairs per RSS context, contexts in `ring_table_pair_index` order (bnxt.c
//! `bnxt_fill_hw_rss_tbl_p5`, `bnxt_hwrm_vnic_set_rss_p5`).

use bnxt_hsi::hwrm::layouts::HwrmVnicRssCfgInput as R;

use crate::firmware::l2_config::{RSS_KEY_BYTES, Vnic};

use super::frame::{L3, PROTO_TCP, PROTO_UDP, Parsed};

/// The Toeplitz hash of `input` under `key`.
pub fn toeplitz(key: &[u8; RSS_KEY_BYTES], input: &[u8]) -> u32 {
    let mut result = 0u32;
    let mut window = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
    for (next, byte) in (4usize..).zip(input) {
        for bit in (0..8).rev() {
            if byte & (1 << bit) != 0 {
                result ^= window;
            }
            let incoming = key.get(next).map_or(0, |k| (k >> bit) & 1);
            window = (window << 1) | u32::from(incoming);
        }
    }
    result
}

/// What the hash covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashKind {
    /// Addresses only.
    L3,
    /// Addresses and ports.
    L4,
}

/// The hash input for a frame under `hash_type`, if the frame is of a hashed type.
pub fn hash_input(p: &Parsed, frame: &[u8], hash_type: u32) -> Option<(Vec<u8>, HashKind)> {
    let ports = |proto: u8| -> Option<[u8; 4]> {
        let (pr, off, end) = p.l4(frame.len())?;
        (pr == proto && end >= off + 4).then(|| frame[off..off + 4].try_into().expect("4 bytes"))
    };
    let (mut input, four, two) = match p.l3 {
        L3::V4 { src, dst, proto, .. } => {
            let four = match proto {
                PROTO_TCP => hash_type & R::HASH_TYPE_TCP_IPV4 != 0,
                PROTO_UDP => hash_type & R::HASH_TYPE_UDP_IPV4 != 0,
                _ => false,
            };
            ([src.as_slice(), dst.as_slice()].concat(), four.then_some(proto), hash_type & R::HASH_TYPE_IPV4 != 0)
        }
        L3::V6 { src, dst, proto, .. } => {
            let four = match proto {
                Some(PROTO_TCP) => hash_type & R::HASH_TYPE_TCP_IPV6 != 0,
                Some(PROTO_UDP) => hash_type & R::HASH_TYPE_UDP_IPV6 != 0,
                _ => false,
            };
            (
                [src.as_slice(), dst.as_slice()].concat(),
                four.then_some(proto).flatten(),
                hash_type & R::HASH_TYPE_IPV6 != 0,
            )
        }
        L3::Other => return None,
    };
    if let Some(ports) = four.and_then(ports) {
        input.extend_from_slice(&ports);
        return Some((input, HashKind::L4));
    }
    two.then_some((input, HashKind::L3))
}

/// Where a frame goes: an RX ring, the completion ring paired with it, and the hash if one was
/// computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Steering {
    /// The RX ring.
    pub rx: u16,
    /// Its completion ring.
    pub cmpl: u16,
    /// The RSS hash and what it covered.
    pub hash: Option<(u32, HashKind)>,
}

/// The ring pair `vnic` steers a frame to, with the hash when one was computed; the VNIC's
/// default pair when it has no RSS table or the frame is not hashed.
pub fn select(vnic: &Vnic, p: &Parsed, frame: &[u8]) -> Option<Steering> {
    let steer = |(rx, cmpl): (u16, u16), hash| Steering { rx, cmpl, hash };
    let mut tables: Vec<_> = vnic.rss.values().filter(|t| t.hash_type != 0 && !t.pairs.is_empty()).collect();
    tables.sort_by_key(|t| t.pair_index);
    let default = vnic.default_rx_ring.zip(vnic.default_cmpl_ring);
    let Some(first) = tables.first() else { return default.map(|d| steer(d, None)) };
    let Some((input, kind)) = hash_input(p, frame, first.hash_type) else { return default.map(|d| steer(d, None)) };
    let hash = toeplitz(&first.key, &input);
    let total: usize = tables.iter().map(|t| t.pairs.len()).sum();
    let mut slot = hash as usize % total;
    for t in &tables {
        if slot < t.pairs.len() {
            return Some(steer(t.pairs[slot], Some((hash, kind))));
        }
        slot -= t.pairs.len();
    }
    default.map(|d| steer(d, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key and two IPv4 vectors of Microsoft's "Verifying the RSS Hash Calculation".
    const KEY: [u8; 40] = [
        0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca,
        0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b,
        0xbe, 0xac, 0x01, 0xfa,
    ];

    #[test]
    fn toeplitz_matches_the_published_vectors() {
        // 66.9.149.187:2794 -> 161.142.100.80:1766
        let two = [66, 9, 149, 187, 161, 142, 100, 80];
        assert_eq!(toeplitz(&KEY, &two), 0x323e_8fc2);
        let mut four = two.to_vec();
        four.extend_from_slice(&[0x0a, 0xea, 0x06, 0xe6]);
        assert_eq!(toeplitz(&KEY, &four), 0x51cc_c178);
        // 199.92.111.2:14230 -> 65.69.140.83:4739
        let two = [199, 92, 111, 2, 65, 69, 140, 83];
        assert_eq!(toeplitz(&KEY, &two), 0xd718_262a);
    }
}
