//! Packet sequence numbers: 24 bits on the wire, a count that never wraps inside the transport.
//!
//! IBA Vol 1 §9.7.1 (packet sequence numbers) numbers every request packet of a QP with a 24-bit
//! PSN that wraps from 0xffffff to 0, and splits the PSN circle around the responder's expected
//! PSN into two halves of 2^23: the half before it holds duplicates, the half after it packets
//! that arrived out of sequence. rdma_rxe compares PSNs the same way (rxe_hdr.h `psn_compare`:
//! the 24-bit difference, shifted left by 8 into a signed 32-bit value).
//!
//! Inside the transport a PSN is a [`Seq`]: a 64-bit count whose low 24 bits are the PSN on the
//! wire. A PSN read from a packet becomes a `Seq` by taking the count nearest to a reference the
//! transport already holds (its expected PSN, its oldest unacknowledged PSN), so everything after
//! that is plain integer arithmetic, wrap-around included.

/// Mask of a 24-bit PSN.
pub const PSN_MASK: u32 = 0x00ff_ffff;

/// Number of distinct PSNs.
pub const PSN_SPACE: u64 = 1 << 24;

/// The signed distance `a - b` on the 24-bit PSN circle, in `-2^23 .. 2^23`: positive when `a`
/// is after `b`.
pub fn psn_diff(a: u32, b: u32) -> i32 {
    ((a.wrapping_sub(b)) << 8) as i32 >> 8
}

/// A PSN as a count that does not wrap. Its low 24 bits are the PSN on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seq(u64);

impl Seq {
    /// The count for the first PSN of a queue (its initial SQ or RQ PSN). Counts start one PSN
    /// space up, so that unwrapping a PSN up to 2^23 before it never goes below zero.
    pub fn start(psn: u32) -> Seq {
        Seq(PSN_SPACE + u64::from(psn & PSN_MASK))
    }

    /// The PSN on the wire.
    pub fn wire(self) -> u32 {
        (self.0 & u64::from(PSN_MASK)) as u32
    }

    /// `n` PSNs later.
    pub fn plus(self, n: u64) -> Seq {
        Seq(self.0 + n)
    }

    /// `n` PSNs earlier (saturating at the count's origin).
    pub fn minus(self, n: u64) -> Seq {
        Seq(self.0.saturating_sub(n))
    }

    /// PSNs from `earlier` to `self` (zero when `earlier` is not earlier).
    pub fn since(self, earlier: Seq) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// The count of wire PSN `psn` nearest to `self`: within 2^23 before or after it.
    pub fn unwrap_near(self, psn: u32) -> Seq {
        let diff = i64::from(psn_diff(psn & PSN_MASK, self.wire()));
        Seq(self.0.saturating_add_signed(diff))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_wrap_at_24_bits() {
        assert_eq!(psn_diff(5, 3), 2);
        assert_eq!(psn_diff(3, 5), -2);
        assert_eq!(psn_diff(0, PSN_MASK), 1, "0 follows 0xffffff");
        assert_eq!(psn_diff(PSN_MASK, 0), -1);
        assert_eq!(psn_diff(0x7f_ffff, 0), 0x7f_ffff, "the last PSN of the later half");
        assert_eq!(psn_diff(0x80_0000, 0), -0x80_0000, "2^23 ahead reads as 2^23 behind");
    }

    #[test]
    fn counts_unwrap_across_the_wrap() {
        let s = Seq::start(PSN_MASK - 1);
        assert_eq!(s.wire(), PSN_MASK - 1);
        let later = s.unwrap_near(3);
        assert_eq!(later.since(s), 5);
        assert_eq!(later.wire(), 3);
        let earlier = later.unwrap_near(PSN_MASK);
        assert_eq!(later.since(earlier), 4);
        assert!(earlier < later);
        assert_eq!(s.plus(5), later);
        assert_eq!(later.minus(5), s);
        assert_eq!(s.since(later), 0);
        // Far before the start of the counts: never below zero.
        assert_eq!(Seq::start(0).unwrap_near(0x80_0000).wire(), 0x80_0000);
    }
}
