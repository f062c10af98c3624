//! Byte orders of GIDs and MACs in RoCE commands (hardware-map §6b).
//!
//! ADD_GID and MODIFY_GID carry the GID fully byte-reversed (bnxt_re qplib_sp.c
//! `bnxt_qplib_add_sgid`: `be32_to_cpu` of each word, words in reverse order) and the source MAC
//! with the two bytes of each 16-bit half swapped (`be16_to_cpu` of each half). MODIFY_QP and
//! CREATE_AH carry the destination GID and MAC in wire order.

/// The 16 bytes of `gid` as ADD_GID/MODIFY_GID carry them; the same function turns command
/// bytes back into the GID.
pub fn gid_for_command(gid: [u8; 16]) -> [u8; 16] {
    let mut out = gid;
    out.reverse();
    out
}

/// The 6 bytes of `mac` as ADD_GID/MODIFY_GID carry them; the same function turns command
/// bytes back into the MAC.
pub fn mac_for_command(mac: [u8; 6]) -> [u8; 6] {
    [mac[1], mac[0], mac[3], mac[2], mac[5], mac[4]]
}

/// The IPv4-mapped GID `::ffff:a.b.c.d` RoCE v2 uses for an IPv4 address (Linux
/// `ipv6_addr_set_v4mapped`; hardware-map §6).
pub fn ipv4_mapped_gid(ip: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&ip);
    g
}

/// The IPv4 address of an IPv4-mapped GID, if it is one.
pub fn ipv4_of_gid(gid: &[u8; 16]) -> Option<[u8; 4]> {
    (gid[..10] == [0; 10] && gid[10..12] == [0xff, 0xff]).then(|| [gid[12], gid[13], gid[14], gid[15]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_orders_are_involutions() {
        let gid = ipv4_mapped_gid([10, 1, 2, 3]);
        let cmd = gid_for_command(gid);
        assert_eq!(&cmd[..4], &[3, 2, 1, 10]);
        assert_eq!(gid_for_command(cmd), gid);
        assert_eq!(ipv4_of_gid(&gid), Some([10, 1, 2, 3]));
        assert_eq!(ipv4_of_gid(&cmd), None);
        let mac = [0x00, 0x0a, 0xf7, 0x11, 0x22, 0x33];
        assert_eq!(mac_for_command(mac), [0x0a, 0x00, 0x11, 0xf7, 0x33, 0x22]);
        assert_eq!(mac_for_command(mac_for_command(mac)), mac);
    }
}
