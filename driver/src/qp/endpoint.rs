//! A queue pair's endpoint: what a peer needs to connect to it, exchanged by other means.

use std::net::Ipv4Addr;

use bnxt_hsi::roce::gid::ipv4_mapped_gid;

use crate::nic::Identity;

/// PSNs are 24 bits (`BTH_PSN_MASK`, qplib_fp.h).
pub(crate) const PSN_MASK: u32 = 0xff_ffff;

/// Where a queue pair is on the fabric and where its packet sequence starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Endpoint {
    /// The NIC's MAC address.
    pub mac: [u8; 6],
    /// The NIC's IPv4 address, 10.x.y.z from the MAC's last three bytes.
    pub ipv4: Ipv4Addr,
    /// The queue pair's number.
    pub qpn: u32,
    /// The PSN of the queue pair's first packet (24 bits).
    pub psn: u32,
}

impl Endpoint {
    /// The endpoint of queue pair `qpn` on the NIC known as `identity`, its first PSN derived
    /// from both (`starting_psn`).
    pub(crate) fn new(identity: &Identity, qpn: u32) -> Endpoint {
        Endpoint { mac: identity.mac, ipv4: identity.ipv4, qpn, psn: starting_psn(&identity.mac, qpn) }
    }

    /// The RoCE v2 GID of the endpoint's NIC: `::ffff:a.b.c.d`.
    pub fn gid(&self) -> [u8; 16] {
        ipv4_mapped_gid(self.ipv4.octets())
    }
}

/// A queue pair's first PSN: a hash of its NIC's MAC and its number, so that a new queue pair
/// that takes a destroyed one's number does not start where the old one did (verbs programs pick
/// one at random, as ibv_rc_pingpong's `lrand48() & 0xffffff`; a hash keeps model runs
/// reproducible). splitmix64's finaliser (Steele, Lea, Flood, 2014) mixes the bits.
fn starting_psn(mac: &[u8; 6], qpn: u32) -> u32 {
    let mut key = [0u8; 8];
    key[..6].copy_from_slice(mac);
    let mut x = u64::from_le_bytes(key) ^ (u64::from(qpn) << 40) ^ u64::from(qpn);
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x as u32) & PSN_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_carries_its_nics_address_and_serialises_plainly() {
        let id = Identity::from_mac([0x00, 0x0a, 0xf7, 0x01, 0x02, 0x03]);
        let e = Endpoint::new(&id, 0x101);
        assert_eq!(e.ipv4, Ipv4Addr::new(10, 1, 2, 3));
        assert_eq!(e.gid(), id.gid);
        assert!(e.psn <= PSN_MASK);
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<Endpoint>(&json).unwrap(), e);
        assert!(json.contains("\"qpn\":257"), "{json}");
    }

    #[test]
    fn starting_psns_differ_by_queue_pair_and_nic_and_are_stable() {
        let a = [0x00, 0x0a, 0xf7, 0x01, 0x02, 0x03];
        let b = [0x00, 0x0a, 0xf7, 0x01, 0x02, 0x04];
        assert_eq!(starting_psn(&a, 5), starting_psn(&a, 5));
        assert_ne!(starting_psn(&a, 5), starting_psn(&a, 6));
        assert_ne!(starting_psn(&a, 5), starting_psn(&b, 5));
    }
}
