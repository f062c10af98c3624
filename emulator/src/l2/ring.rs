//! Ring bookkeeping shared by every L2 ring: positions with their epoch, rings of buffer
//! descriptors the driver produces (TX, RX), and rings of completions the device produces (L2
//! completion rings, NQs).
//!
//! Positions run over twice the ring length: the low part is the index, passing the length flips
//! the epoch (bnxt.h `DB_RING_IDX`/`DB_EPOCH`: the doorbell carries the index and, in bit 24, the
//! raw index's bit just above the ring mask). A completion's valid bit is 1 on the producer's
//! first pass and flips at every wrap (bnxt.h `TX_CMP_VALID`, `NQ_CMP_VALID`: valid when the bit
//! equals `!(raw_cons & ring_size)`); in every 16-byte completion and NQ format it is bit 0 of
//! byte 8. A record is written with its entries' old valid bits first, then the valid bytes from
//! the last entry to the first, so a driver polling the first entry never reads half a record.

use crate::host_memory::HostMemory;
use crate::roce::pages::{PageList, PagesError};

use super::descriptors::ENTRY_BYTES;

/// Offset of the byte holding the valid bit in every completion and NQ entry.
pub const VALID_BYTE: usize = 8;

/// A position in a ring of `len` entries, counted over `2 * len` (index plus epoch).
pub fn raw_of(index: u32, epoch: bool, len: u32) -> u32 {
    index + if epoch { len } else { 0 }
}

/// How far `to` is ahead of `from` in a ring of `len` entries.
pub fn distance(from: u32, to: u32, len: u32) -> u32 {
    let two = 2 * u64::from(len);
    ((u64::from(to) + two - u64::from(from)) % two) as u32
}

/// Why a ring index from a doorbell was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// The index is not below the ring length.
    #[error("index {index} is not below the ring length {len}")]
    TooLarge {
        /// Index rung.
        index: u32,
        /// Ring length.
        len: u32,
    },
    /// The new position would be more than a ring ahead, or behind.
    #[error("position {new} is not within a ring of {from} (length {len})")]
    OutOfWindow {
        /// Position rung (index plus epoch).
        new: u32,
        /// The position it must not pass or fall behind.
        from: u32,
        /// Ring length.
        len: u32,
    },
}

/// Check a rung `index`/`epoch` of a ring of `len` entries and return its raw position.
pub fn checked_raw(index: u32, epoch: bool, len: u32) -> Result<u32, IndexError> {
    if index >= len {
        return Err(IndexError::TooLarge { index, len });
    }
    Ok(raw_of(index, epoch, len))
}

/// A ring of 16-byte descriptors the driver fills and the device consumes (TX, RX).
#[derive(Debug, Clone)]
pub struct BdRing {
    mem: PageList,
    len: u32,
    /// Producer (raw), as the driver last rang it.
    pub prod: u32,
    /// Consumer (raw): the next descriptor the device takes.
    pub cons: u32,
}

impl BdRing {
    /// A ring of `len` entries in `mem`.
    pub fn new(mem: PageList, len: u32) -> BdRing {
        BdRing { mem, len, prod: 0, cons: 0 }
    }

    /// Entries.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the ring has no entries (never: RING_ALLOC refuses length 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Descriptors posted and not yet taken.
    pub fn available(&self) -> u32 {
        distance(self.cons, self.prod, self.len)
    }

    /// A producer doorbell at `index`/`epoch`: the producer may move forward by at most the
    /// ring's length past the consumer.
    pub fn set_producer(&mut self, index: u32, epoch: bool) -> Result<(), IndexError> {
        let new = checked_raw(index, epoch, self.len)?;
        if distance(self.cons, new, self.len) > self.len {
            return Err(IndexError::OutOfWindow { new, from: self.cons, len: self.len });
        }
        self.prod = new;
        Ok(())
    }

    /// Read the descriptor `ahead` entries past the consumer.
    pub fn peek(&self, mem: &dyn HostMemory, ahead: u32) -> Result<[u8; ENTRY_BYTES], PagesError> {
        let idx = (self.cons + ahead) % self.len;
        let mut out = [0u8; ENTRY_BYTES];
        self.mem.read(mem, u64::from(idx) * ENTRY_BYTES as u64, &mut out)?;
        Ok(out)
    }

    /// Take `n` descriptors.
    pub fn advance(&mut self, n: u32) {
        self.cons = (self.cons + n) % (2 * self.len);
    }
}

/// A ring of 16-byte entries the device writes and the driver consumes (L2 completion rings,
/// NQs).
#[derive(Debug, Clone)]
pub struct CmplRing {
    mem: PageList,
    len: u32,
    /// Producer (raw): where the next entry goes.
    pub prod: u32,
    /// Consumer (raw), as the driver last rang it.
    pub cons: u32,
}

impl CmplRing {
    /// A ring of `len` entries in `mem`.
    pub fn new(mem: PageList, len: u32) -> CmplRing {
        CmplRing { mem, len, prod: 0, cons: 0 }
    }

    /// Entries.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the ring has no entries (never: RING_ALLOC refuses length 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entries written and not yet given back.
    pub fn outstanding(&self) -> u32 {
        distance(self.cons, self.prod, self.len)
    }

    /// Entries that can be written without overwriting unconsumed ones.
    pub fn room(&self) -> u32 {
        self.len - self.outstanding().min(self.len)
    }

    /// A consumer doorbell at `index`/`epoch`: the consumer may move up to the producer.
    pub fn set_consumer(&mut self, index: u32, epoch: bool) -> Result<(), IndexError> {
        let new = checked_raw(index, epoch, self.len)?;
        if distance(self.cons, new, self.len) > self.outstanding() {
            return Err(IndexError::OutOfWindow { new, from: self.cons, len: self.len });
        }
        self.cons = new;
        Ok(())
    }

    /// Write the entries of one record at the producer (the caller checked the room) and move the
    /// producer past them. Each entry's valid bit is set here.
    pub fn write(&mut self, mem: &dyn HostMemory, entries: &[[u8; ENTRY_BYTES]]) -> Result<(), PagesError> {
        let mut slots = Vec::with_capacity(entries.len());
        let mut result = Ok(());
        for e in entries {
            let valid = u8::from(self.prod < self.len);
            let off = u64::from(self.prod % self.len) * ENTRY_BYTES as u64;
            let mut stale = *e;
            stale[VALID_BYTE] = (stale[VALID_BYTE] & !1) | (valid ^ 1);
            if result.is_ok() {
                result = self.mem.write(mem, off, &stale);
            }
            slots.push((off, (e[VALID_BYTE] & !1) | valid));
            self.prod = (self.prod + 1) % (2 * self.len);
        }
        for (off, byte) in slots.into_iter().rev() {
            if result.is_ok() {
                result = self.mem.write(mem, off + VALID_BYTE as u64, &[byte]);
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_memory::{HeapBacking, Iommu};
    use std::sync::Arc;

    fn ring_mem(len: u32) -> (Iommu, PageList) {
        let mut iommu = Iommu::new();
        iommu.map(0x10000, Arc::new(HeapBacking::new(4096)), 0, 4096).unwrap();
        let pages = PageList::from_pages(vec![0x10000], 4096, u64::from(len) * 16).unwrap();
        (iommu, pages)
    }

    #[test]
    fn positions_wrap_over_twice_the_length() {
        assert_eq!(raw_of(3, true, 8), 11);
        assert_eq!(distance(14, 2, 8), 4);
        assert_eq!(checked_raw(8, false, 8), Err(IndexError::TooLarge { index: 8, len: 8 }));
    }

    #[test]
    fn completions_carry_the_pass_as_their_valid_bit() {
        let (iommu, pages) = ring_mem(4);
        let view = iommu.view(true);
        let mut r = CmplRing::new(pages, 4);
        for i in 0..4u8 {
            r.write(&view, &[[i; 16]]).unwrap();
        }
        assert_eq!(r.room(), 0);
        let mut e = [0u8; 16];
        view.read(0x10000 + 16 * 2, &mut e).unwrap();
        assert_eq!((e[0], e[8] & 1), (2, 1), "first pass: valid 1");
        r.set_consumer(2, false).unwrap();
        assert_eq!(r.set_consumer(1, false), Err(IndexError::OutOfWindow { new: 1, from: 2, len: 4 }));
        r.write(&view, &[[9; 16], [10; 16]]).unwrap();
        view.read(0x10000, &mut e).unwrap();
        assert_eq!((e[0], e[8] & 1), (9, 0), "second pass: valid 0");
        assert_eq!(r.outstanding(), 4);
        r.set_consumer(2, true).unwrap();
        assert_eq!(r.outstanding(), 0);
    }

    #[test]
    fn producers_may_not_run_more_than_a_ring_ahead() {
        let (_iommu, pages) = ring_mem(8);
        let mut r = BdRing::new(pages, 8);
        r.set_producer(5, false).unwrap();
        assert_eq!(r.available(), 5);
        r.advance(5);
        r.set_producer(4, true).unwrap();
        assert_eq!(r.available(), 7);
        assert!(r.set_producer(5, true).is_ok(), "exactly a ring ahead");
        assert!(matches!(r.set_producer(6, true), Err(IndexError::OutOfWindow { .. })));
    }
}
