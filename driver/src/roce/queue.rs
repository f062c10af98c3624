//! Queue memory: a ring of fixed-size entries (plus, for a send queue, its MSN/PSN table after
//! the ring) in whole 4-KB pages, with the page table the NIC walks, sized as bnxt_re sizes it
//! (qplib_res.c `bnxt_qplib_alloc_init_hwq`: the depth rounded up to a power of two for the
//! memory, the auxiliary area in pages of its own; hardware-map §5.1), and the index arithmetic
//! of its producer or consumer (`bnxt_qplib_hwq_incr_prod`, `bnxt_qplib_hwq_incr_cons`).

use bnxt_pci::dma::{DmaBuffer, PAGE_SIZE};
use bnxt_pci::{PciError, PciFunction};

use super::pbl::{Pbl, PblKind, pages_of};

/// The shape of a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Entries (slots) the queue wraps at (`hwq->depth`).
    pub depth: u32,
    /// Bytes per entry.
    pub stride: usize,
    /// Entries of the auxiliary area after the ring (0 for none).
    pub aux_depth: u32,
    /// Bytes per auxiliary entry.
    pub aux_stride: usize,
}

impl Shape {
    /// A plain ring.
    pub(crate) fn ring(depth: u32, stride: usize) -> Shape {
        Shape { depth, stride, aux_depth: 0, aux_stride: 0 }
    }

    /// Pages bnxt_re allocates: the ring at its power-of-two depth, then the auxiliary area.
    pub(crate) fn pages(&self) -> usize {
        let ring = self.depth.next_power_of_two() as usize * self.stride.next_power_of_two();
        let aux = self.aux_depth as usize * self.aux_stride.next_power_of_two();
        ring.div_ceil(PAGE_SIZE) + aux.div_ceil(PAGE_SIZE)
    }

    /// Byte offset of the auxiliary area: right after `depth` entries
    /// (qplib_fp.c `bnxt_qplib_init_psn_ptr`: `bnxt_qplib_get_qe(hwq, hwq->depth)`).
    pub(crate) fn aux_offset(&self) -> usize {
        self.depth as usize * self.stride
    }
}

/// A queue's memory and page table.
pub(crate) struct Queue {
    /// Its shape.
    pub shape: Shape,
    data: DmaBuffer,
    pbl: Pbl,
}

impl Queue {
    /// Allocate zeroed memory for `shape` in 4-KB pages and build its table for `kind`.
    pub(crate) fn alloc(function: &dyn PciFunction, shape: Shape, kind: PblKind) -> Result<Queue, PciError> {
        let pages = shape.pages();
        let data = function.alloc_dma(pages * PAGE_SIZE)?;
        let pbl = Pbl::build(function, &pages_of(&data, pages), kind)?;
        Ok(Queue { shape, data, pbl })
    }

    /// The table's level.
    pub(crate) fn level(&self) -> u8 {
        self.pbl.level
    }

    /// What a command names as the queue's table (`pbl`, `page_tbl_addr`).
    pub(crate) fn base(&self) -> u64 {
        self.pbl.base
    }

    /// Number of data pages.
    pub(crate) fn pages(&self) -> usize {
        self.pbl.pages
    }

    /// The memory.
    pub(crate) fn data(&self) -> &DmaBuffer {
        &self.data
    }

    /// Byte offset of entry `index` (below the depth).
    pub(crate) fn offset(&self, index: u32) -> usize {
        debug_assert!(index < self.shape.depth);
        index as usize * self.shape.stride
    }

    /// Bytes of DMA memory held, table included.
    pub(crate) fn bytes(&self) -> usize {
        self.data.len() + self.pbl.bytes()
    }

    /// The table, for inspection.
    #[cfg(test)]
    pub(crate) fn pbl(&self) -> &Pbl {
        &self.pbl
    }
}

/// An index into a ring of `depth` entries and its epoch, which flips at each wrap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Cursor {
    /// The index, below the depth.
    pub index: u32,
    /// Flips at each wrap.
    pub epoch: bool,
}

impl Cursor {
    /// Advance by `n` (at most `depth`) in a ring of `depth` entries.
    pub(crate) fn advance(&mut self, n: u32, depth: u32) {
        debug_assert!(n <= depth);
        let next = self.index + n;
        if next >= depth {
            self.index = next - depth;
            self.epoch = !self.epoch;
        } else {
            self.index = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FakeFunction, Reply};

    #[test]
    fn shapes_take_the_pages_bnxt_re_allocates() {
        // CREQ: 64 Ki 16-byte entries = 256 pages; NQ: 128 Ki = 512 pages.
        assert_eq!(Shape::ring(65_536, 16).pages(), 256);
        assert_eq!(Shape::ring(131_072, 16).pages(), 512);
        // SQ of 4096 static WQEs: 32 Ki slots of 16 bytes, then a 4096-entry MSN table of 8 bytes.
        let sq = Shape { depth: 32_768, stride: 16, aux_depth: 4096, aux_stride: 8 };
        assert_eq!(sq.pages(), 128 + 8);
        assert_eq!(sq.aux_offset(), 512 * 1024);
        // A CQ of 4097 entries is allocated as 8192.
        assert_eq!(Shape::ring(4097, 32).pages(), 64);
    }

    #[test]
    fn a_queue_is_one_run_of_pages_behind_a_ring_table() {
        let f = FakeFunction::new(|_| Reply::Never);
        let q = Queue::alloc(&f, Shape::ring(4097, 32), PblKind::Queue).unwrap();
        assert_eq!((q.level(), q.pages(), q.data().len()), (1, 64, 64 * 4096));
        assert_eq!(q.offset(4096), 4096 * 32);
        assert_eq!(q.pbl().tables()[0].read_u64(63 * 8), q.data().iova_at(63 * 4096) | 1 | 2);
    }

    #[test]
    fn cursors_wrap_at_any_depth_and_flip_their_epoch() {
        let mut c = Cursor::default();
        c.advance(8, 32_768);
        assert_eq!(c, Cursor { index: 8, epoch: false });
        c.advance(32_760, 32_768);
        assert_eq!(c, Cursor { index: 0, epoch: true });
        let mut c = Cursor { index: 4096, epoch: true };
        c.advance(1, 4097);
        assert_eq!(c, Cursor { index: 0, epoch: false });
    }
}
