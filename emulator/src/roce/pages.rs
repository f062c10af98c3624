//! Host memory of a queue or a region as the RoCE engine holds it: the bus addresses of its
//! pages, in order, after the page tables were walked and checked.
//!
//! Every access still goes through the function's DMA view ([`HostMemory`]), so a page the host
//! unmapped later is refused there; this type only turns offsets into bus addresses and splits
//! accesses at page boundaries.

use crate::firmware::page_table::{PageTableError, TableSpec, walk_split};
use crate::host_memory::{DmaError, HostMemory};

/// Pages of host memory holding `len` bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageList {
    pages: Vec<u64>,
    page_shift: u32,
    len: u64,
}

/// How a command describes a queue's or region's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PblSpec {
    /// The level-0 address: the data page (level 0), the page table (1), or the directory (2).
    pub root: u64,
    /// Page-table levels, 0 to 2.
    pub level: u8,
    /// log2 of the data page size.
    pub page_shift: u32,
    /// log2 of the size of the page-table pages.
    pub table_shift: u32,
}

/// Why an offset range is not inside a page list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PagesError {
    /// The range runs past the end.
    #[error("{len} bytes at offset {offset} run past the end of {size} bytes")]
    OutOfRange {
        /// Offset asked for.
        offset: u64,
        /// Length asked for.
        len: u64,
        /// Bytes the memory holds.
        size: u64,
    },
    /// The DMA view refused the access.
    #[error(transparent)]
    Dma(#[from] DmaError),
}

impl PageList {
    /// The pages the tables `spec` describe, holding `len` bytes, every table entry and data
    /// byte checked reachable.
    pub fn walk(mem: &dyn HostMemory, spec: PblSpec, len: u64) -> Result<PageList, PageTableError> {
        let table = TableSpec { root: spec.root, level: spec.level, page_size: 1u64 << spec.page_shift };
        let pages = walk_split(mem, table, 1u64 << spec.table_shift, len)?;
        Ok(PageList { pages, page_shift: spec.page_shift, len })
    }

    /// One physically contiguous buffer of `len` bytes at `base` (4-KiB aligned), checked
    /// reachable.
    pub fn contiguous(mem: &dyn HostMemory, base: u64, len: u64) -> Result<PageList, PageTableError> {
        const SHIFT: u32 = 12;
        if len == 0 {
            return Err(PageTableError::Empty);
        }
        if !base.is_multiple_of(1 << SHIFT) {
            return Err(PageTableError::Unaligned { what: "buffer", addr: base, align: 1 << SHIFT });
        }
        mem.probe(base, len).map_err(|error| PageTableError::Unreachable { what: "buffer", addr: base, error })?;
        let n = len.div_ceil(1 << SHIFT);
        Ok(PageList { pages: (0..n).map(|i| base + (i << SHIFT)).collect(), page_shift: SHIFT, len })
    }

    /// Pages the firmware already holds (an HWRM ring: `pages` of `page_size` bytes).
    pub fn from_pages(pages: Vec<u64>, page_size: u64, len: u64) -> Option<PageList> {
        if !page_size.is_power_of_two() || (pages.len() as u64).saturating_mul(page_size) < len {
            return None;
        }
        Some(PageList { pages, page_shift: page_size.trailing_zeros(), len })
    }

    /// Bytes held.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes per page.
    pub fn page_size(&self) -> u64 {
        1 << self.page_shift
    }

    /// The page addresses.
    pub fn pages(&self) -> &[u64] {
        &self.pages
    }

    /// Bus address of the byte at `offset`.
    pub fn addr(&self, offset: u64) -> Option<u64> {
        if offset >= self.len {
            return None;
        }
        let page = self.pages.get((offset >> self.page_shift) as usize)?;
        Some(page + (offset & (self.page_size() - 1)))
    }

    fn check(&self, offset: u64, len: u64) -> Result<(), PagesError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(PagesError::OutOfRange { offset, len, size: self.len }),
        }
    }

    /// Each (bus address, length) piece of `len` bytes at `offset`, split at page boundaries.
    pub fn pieces(&self, offset: u64, len: u64) -> Result<impl Iterator<Item = (u64, u64)> + '_, PagesError> {
        self.check(offset, len)?;
        let ps = self.page_size();
        let mut at = offset;
        let end = offset + len;
        Ok(std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let n = (ps - (at & (ps - 1))).min(end - at);
            let addr = self.pages[(at >> self.page_shift) as usize] + (at & (ps - 1));
            at += n;
            Some((addr, n))
        }))
    }

    /// Copy `out.len()` bytes at `offset` out of host memory.
    pub fn read(&self, mem: &dyn HostMemory, offset: u64, out: &mut [u8]) -> Result<(), PagesError> {
        let mut done = 0usize;
        for (addr, n) in self.pieces(offset, out.len() as u64)? {
            let n = n as usize;
            mem.read(addr, &mut out[done..done + n])?;
            done += n;
        }
        Ok(())
    }

    /// Copy `data` into host memory at `offset`.
    pub fn write(&self, mem: &dyn HostMemory, offset: u64, data: &[u8]) -> Result<(), PagesError> {
        let mut done = 0usize;
        for (addr, n) in self.pieces(offset, data.len() as u64)? {
            let n = n as usize;
            mem.write(addr, &data[done..done + n])?;
            done += n;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_memory::{HeapBacking, Iommu};
    use std::sync::Arc;

    #[test]
    fn accesses_split_at_page_boundaries_and_stay_inside() {
        let mem = Arc::new(HeapBacking::new(4 * 4096));
        let mut iommu = Iommu::new();
        iommu.map(0x10_0000, mem, 0, 4 * 4096).unwrap();
        let view = iommu.view(true);
        // Two pages in reverse order: offset 4096 lives in the first physical page.
        let pl = PageList::from_pages(vec![0x10_1000, 0x10_0000], 4096, 8192).unwrap();
        pl.write(&view, 4094, &[1, 2, 3, 4]).unwrap();
        let mut b = [0u8; 2];
        view.read(0x10_1ffe, &mut b).unwrap();
        assert_eq!(b, [1, 2]);
        view.read(0x10_0000, &mut b).unwrap();
        assert_eq!(b, [3, 4]);
        let mut out = [0u8; 4];
        pl.read(&view, 4094, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        assert!(matches!(pl.read(&view, 8190, &mut out), Err(PagesError::OutOfRange { .. })));
        assert_eq!(pl.addr(4096), Some(0x10_0000));
        assert_eq!(pl.addr(8192), None);
        let c = PageList::contiguous(&view, 0x10_0000, 3 * 4096).unwrap();
        assert_eq!(c.pages(), &[0x10_0000, 0x10_1000, 0x10_2000]);
        assert!(PageList::contiguous(&view, 0x10_0000, 5 * 4096).is_err());
    }
}
