//! What a new region holds: zeros, bytes drawn from the seed, or a counting pattern. The same
//! seed and region name give the same bytes on every run and every target.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::scenario::Fill;

/// A stable 64-bit hash of a name (FNV-1a), to give each region its own stream of the seed.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The bytes region `name` of `len` bytes holds at first with `fill` in a run seeded `seed`;
/// `None` for zeros (a new region is zeroed already).
pub fn contents(fill: Fill, seed: u64, name: &str, len: usize) -> Option<Vec<u8>> {
    match fill {
        Fill::Zero => None,
        Fill::Random => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ name_hash(name));
            let mut bytes = vec![0u8; len];
            rng.fill_bytes(&mut bytes);
            Some(bytes)
        }
        Fill::Pattern => {
            let start = (seed % 251) as usize;
            Some((0..len).map(|i| ((i + start) % 251) as u8).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_follow_the_seed_and_the_name() {
        let a = contents(Fill::Random, 7, "src", 4096).unwrap();
        assert_eq!(contents(Fill::Random, 7, "src", 4096).unwrap(), a, "same seed and name: same bytes");
        assert_ne!(contents(Fill::Random, 8, "src", 4096).unwrap(), a, "another seed");
        assert_ne!(contents(Fill::Random, 7, "dst", 4096).unwrap(), a, "another region");
        assert!(a.iter().any(|b| *b != 0));
        assert_eq!(contents(Fill::Pattern, 0, "x", 253).unwrap()[250..], [250, 0, 1]);
        assert_eq!(contents(Fill::Pattern, 1, "x", 2).unwrap(), [1, 2]);
        assert_eq!(contents(Fill::Zero, 7, "x", 10), None);
    }
}
