//! Big-endian field access for the header views (network byte order, as every header here uses).
//!
//! Callers check lengths first (the views' `new_checked`); these index directly.

pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

pub(crate) fn be24(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]])
}

pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

pub(crate) fn be64(b: &[u8], at: usize) -> u64 {
    (u64::from(be32(b, at)) << 32) | u64::from(be32(b, at + 4))
}

pub(crate) fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

pub(crate) fn put24(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 3].copy_from_slice(&v.to_be_bytes()[1..]);
}

pub(crate) fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

pub(crate) fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_in_network_order() {
        let mut b = [0u8; 8];
        put24(&mut b, 1, 0x12_3456);
        assert_eq!(b[..4], [0, 0x12, 0x34, 0x56]);
        assert_eq!(be24(&b, 1), 0x12_3456);
        put64(&mut b, 0, 0x0102_0304_0506_0708);
        assert_eq!(b, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(be64(&b, 0), 0x0102_0304_0506_0708);
        assert_eq!(be32(&b, 4), 0x0506_0708);
        put16(&mut b, 6, 0xabcd);
        assert_eq!(be16(&b, 6), 0xabcd);
        put32(&mut b, 0, 0xdead_beef);
        assert_eq!(b[..4], [0xde, 0xad, 0xbe, 0xef]);
    }
}
