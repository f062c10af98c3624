//! The DMA memory the driver was given through the seam, found by bus address: what the layer
//! reads when a submission points into memory (a short command's request, the CMDQ's slots, a
//! ring's page table) and where it writes what the device would have written (an answer).

use std::collections::BTreeMap;
use std::sync::Arc;

use bnxt_pci::{DmaBuffer, DmaWatch};

/// The buffers handed out, by bus address. Holds none of them: a buffer the driver dropped is
/// gone from here too.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    by_iova: BTreeMap<u64, DmaWatch>,
}

/// A place in a buffer the driver holds.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    watch: DmaWatch,
    offset: usize,
}

impl Memory {
    /// Note `watch`, replacing a buffer that was at its address before (bus addresses are
    /// reused once freed).
    pub(crate) fn add(&mut self, watch: DmaWatch) {
        if self.by_iova.len() >= 256 && self.by_iova.len().is_power_of_two() {
            self.by_iova.retain(|_, w| w.get().is_some());
        }
        self.by_iova.insert(watch.iova(), watch);
    }

    /// The live buffer bus address `iova` falls in, and where in it.
    pub(crate) fn place(&self, iova: u64) -> Option<Place> {
        let (_, watch) = self.by_iova.range(..=iova).next_back()?;
        if !watch.covers(iova) || watch.get().is_none() {
            return None;
        }
        Some(Place { watch: watch.clone(), offset: (iova - watch.iova()) as usize })
    }

    /// `len` bytes at bus address `iova`, if they lie whole in one live buffer.
    pub(crate) fn read(&self, iova: u64, len: usize) -> Option<Vec<u8>> {
        let place = self.place(iova)?;
        let mut out = vec![0u8; len];
        place.read(0, &mut out).then_some(out)
    }
}

impl Place {
    /// The place `by` bytes further on.
    pub(crate) fn at(&self, by: usize) -> Place {
        Place { watch: self.watch.clone(), offset: self.offset + by }
    }

    fn buffer(&self, at: usize, len: usize) -> Option<(Arc<DmaBuffer>, usize)> {
        let buffer = self.watch.get()?;
        let start = self.offset.checked_add(at)?;
        (start.checked_add(len)? <= buffer.len()).then_some((buffer, start))
    }

    /// Copy `out.len()` bytes from `at` past the place; false when the buffer is gone or too
    /// short.
    pub(crate) fn read(&self, at: usize, out: &mut [u8]) -> bool {
        match self.buffer(at, out.len()) {
            Some((b, start)) => {
                b.read(start, out);
                true
            }
            None => false,
        }
    }

    /// Write an answer of `bytes` at the place as a device writes one: everything but the byte
    /// at `last` first, then that byte (the valid byte the driver polls). False when the
    /// buffer is gone or too short.
    pub(crate) fn write_then(&self, bytes: &[u8], last: usize) -> bool {
        let Some((b, start)) = self.buffer(0, bytes.len()) else { return false };
        if last >= bytes.len() {
            return false;
        }
        b.write(start, &bytes[..last]);
        b.write(start + last + 1, &bytes[last + 1..]);
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        b.write_volatile_u8(start + last, bytes[last]);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bnxt_pci::HostPages;

    fn buffer(iova: u64, len: usize) -> DmaBuffer {
        let pages = HostPages::new(len);
        let ptr = pages.as_ptr();
        let len = pages.capacity();
        // SAFETY: `ptr` is the first byte of `pages`, valid for `len` bytes while `pages` (the
        // owner) lives; no reference into it is held.
        unsafe { DmaBuffer::from_raw(ptr, len, iova, Box::new(pages)) }
    }

    #[test]
    fn places_are_found_by_any_address_inside_a_live_buffer() {
        let mut memory = Memory::default();
        let (a, wa) = buffer(0x1000, 8192).watched();
        let (b, wb) = buffer(0x10_0000, 4096).watched();
        memory.add(wa);
        memory.add(wb);
        a.write_u32(4100, 0xabcd);
        assert_eq!(memory.read(0x1000 + 4100, 4).unwrap(), 0xabcdu32.to_le_bytes());
        assert!(memory.read(0x1000 + 8190, 4).is_none(), "across the end");
        assert!(memory.place(0x3000).is_none(), "between buffers");
        let p = memory.place(0x10_0010).unwrap();
        assert!(p.write_then(&[1, 2, 3, 4], 3));
        assert_eq!(b.read_u32(0x10), u32::from_le_bytes([1, 2, 3, 4]));
        drop(b);
        assert!(memory.place(0x10_0010).is_none(), "a dropped buffer is gone");
        assert!(!p.write_then(&[1, 2], 1), "and a place in it writes nothing");
        drop(a);
    }
}
