//! Context memory and the page tables that point the firmware at it.
//!
//! As bnxt_en builds them (bnxt.c `bnxt_alloc_ctx_pg_tbls`, `bnxt_alloc_ctx_mem_blk`,
//! `bnxt_alloc_ring`, `bnxt_hwrm_set_pg_attr`; hardware-map §3.3): 4-KB pages; more than 512 pages
//! or a request for two levels gives level 2 (a page of PDEs, each pointing at a page of up to 512
//! PTEs); more than one page or a request for one level gives level 1 (one full page of PTEs);
//! otherwise level 0 (`page_dir` is the data page itself). Every PDE and PTE is the page's bus
//! address with `PTU_PTE_VALID`; context tables carry no LAST/NEXT_TO_LAST bits.
//!
//! Initialisation (`__bnxt_init_ctx_mem`, applied page by page as `bnxt_alloc_ring` does): in
//! every 4-KB page, starting at the page's first byte and stepping by the entry size, the init
//! byte is written at the init offset. For entry sizes that do not divide 4096 this marks page
//! offsets rather than entry starts, exactly as bnxt_en does.
//!
//! Data pages are allocated in runs of up to 512 pages (one PTE page's worth, 2 MB) rather than
//! one by one; the firmware sees the same tables either way.

use bnxt_hsi::backing_store::{PTE_VALID, PTES_PER_PAGE};

use super::caps::CtxInit;
use bnxt_pci::dma::{DmaBuffer, PAGE_SIZE};
use bnxt_pci::{PciError, PciFunction};

const PTES: usize = PTES_PER_PAGE as usize;

/// The levels of page table for `pages` data pages when bnxt_en asks for `requested` levels.
pub(crate) fn level(pages: usize, requested: u8) -> u8 {
    if pages > PTES || requested > 1 {
        2
    } else if pages > 1 || requested == 1 {
        1
    } else {
        0
    }
}

/// One instance of a context type's memory: its data pages and its page tables.
pub(crate) struct Block {
    /// Levels of page table (0, 1 or 2).
    pub level: u8,
    /// What CFG_V2's `page_dir` carries: the top table page, or the data page at level 0.
    pub page_dir: u64,
    /// Every buffer, tables and data.
    buffers: Vec<DmaBuffer>,
}

impl Block {
    /// Allocate `pages` zeroed data pages, initialise their entries, and build the tables.
    pub(crate) fn build(
        function: &dyn PciFunction,
        pages: usize,
        requested_level: u8,
        init: Option<(CtxInit, u16)>,
    ) -> Result<Block, PciError> {
        let level = level(pages, requested_level);
        let template = init.map(|(init, entry_size)| init_page(init, entry_size));
        let mut data = Vec::new();
        let mut remaining = pages;
        while remaining > 0 {
            let run = remaining.min(PTES);
            let buf = function.alloc_dma(run * PAGE_SIZE)?;
            if let Some(t) = &template {
                for p in 0..run {
                    buf.write(p * PAGE_SIZE, t);
                }
            }
            data.push((buf, run));
            remaining -= run;
        }
        let data_pages = || data.iter().flat_map(|(buf, run)| (0..*run).map(move |p| buf.iova_at(p * PAGE_SIZE)));

        let mut buffers = Vec::new();
        let page_dir = match level {
            0 => data[0].0.iova(),
            1 => {
                let table = function.alloc_dma(PAGE_SIZE)?;
                write_entries(&table, 0, data_pages());
                let dir = table.iova();
                buffers.push(table);
                dir
            }
            _ => {
                let tables = pages.div_ceil(PTES);
                let pte_pages = function.alloc_dma(tables * PAGE_SIZE)?;
                let pages: Vec<u64> = data_pages().collect();
                for (t, chunk) in pages.chunks(PTES).enumerate() {
                    write_entries(&pte_pages, t * PAGE_SIZE, chunk.iter().copied());
                }
                let pde_page = function.alloc_dma(PAGE_SIZE)?;
                write_entries(&pde_page, 0, (0..tables).map(|t| pte_pages.iova_at(t * PAGE_SIZE)));
                let dir = pde_page.iova();
                buffers.push(pde_page);
                buffers.push(pte_pages);
                dir
            }
        };
        buffers.extend(data.into_iter().map(|(buf, _)| buf));
        Ok(Block { level, page_dir, buffers })
    }

    /// Bytes of DMA memory the block holds, tables included.
    pub(crate) fn bytes(&self) -> usize {
        self.buffers.iter().map(DmaBuffer::len).sum()
    }

    /// The buffers, for inspection.
    #[cfg(test)]
    pub(crate) fn buffers(&self) -> &[DmaBuffer] {
        &self.buffers
    }
}

/// Write one table page's worth of entries (address | VALID) at `offset` of `table`.
fn write_entries(table: &DmaBuffer, offset: usize, addrs: impl Iterator<Item = u64>) {
    let mut page = vec![0u8; PAGE_SIZE];
    for (i, addr) in addrs.take(PTES).enumerate() {
        page[i * 8..i * 8 + 8].copy_from_slice(&(addr | PTE_VALID).to_le_bytes());
    }
    table.write(offset, &page);
}

/// A 4-KB page with the init byte in place (`__bnxt_init_ctx_mem` for one page).
fn init_page(init: CtxInit, entry_size: u16) -> Vec<u8> {
    let mut page = vec![0u8; PAGE_SIZE];
    let step = usize::from(entry_size.max(1));
    for start in (0..PAGE_SIZE).step_by(step) {
        if let Some(b) = page.get_mut(start + init.offset) {
            *b = init.value;
        }
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FakeFunction, Reply};

    fn fake() -> FakeFunction {
        FakeFunction::new(|_| Reply::Never)
    }

    #[test]
    fn levels_follow_bnxt_alloc_ctx_pg_tbls() {
        assert_eq!(level(1, 0), 0);
        assert_eq!(level(1, 1), 1);
        assert_eq!(level(2, 0), 1);
        assert_eq!(level(512, 1), 1);
        assert_eq!(level(513, 1), 2);
        assert_eq!(level(1, 2), 2);
    }

    #[test]
    fn level_0_points_at_the_data_page() {
        let f = fake();
        let b = Block::build(&f, 1, 0, None).unwrap();
        assert_eq!(b.level, 0);
        assert_eq!(b.buffers().len(), 1);
        assert_eq!(b.page_dir, b.buffers()[0].iova());
    }

    #[test]
    fn level_1_is_one_full_page_of_valid_ptes() {
        let f = fake();
        let b = Block::build(&f, 3, 1, None).unwrap();
        assert_eq!(b.level, 1);
        let table = &b.buffers()[0];
        let data = &b.buffers()[1];
        assert_eq!(b.page_dir, table.iova());
        for i in 0..3 {
            assert_eq!(table.read_u64(i * 8), data.iova_at(i * 4096) | 1);
        }
        assert_eq!(table.read_u64(3 * 8), 0, "no entry past the last page");
    }

    #[test]
    fn level_2_has_pdes_to_pte_pages_to_every_data_page() {
        let f = fake();
        let pages = 512 + 7;
        let b = Block::build(&f, pages, 2, None).unwrap();
        assert_eq!(b.level, 2);
        let pde = &b.buffers()[0];
        assert_eq!(b.page_dir, pde.iova());
        let pte = &b.buffers()[1];
        assert_eq!(pde.read_u64(0), pte.iova() | 1);
        assert_eq!(pde.read_u64(8), pte.iova_at(4096) | 1);
        assert_eq!(pde.read_u64(16), 0);
        // Follow every PTE and count distinct valid data pages.
        let mut seen = std::collections::BTreeSet::new();
        for t in 0..2 {
            for i in 0..512 {
                let e = pte.read_u64(t * 4096 + i * 8);
                if e != 0 {
                    assert_eq!(e & 0xfff, 1, "only the valid bit");
                    seen.insert(e & !0xfff);
                }
            }
        }
        assert_eq!(seen.len(), pages);
        let data: Vec<&DmaBuffer> = b.buffers()[2..].iter().collect();
        assert_eq!(data.len(), 2, "one run of 512 pages and one of 7");
        assert!(seen.contains(&data[1].iova_at(6 * 4096)));
    }

    #[test]
    fn entries_get_the_init_byte_at_its_offset_in_every_page() {
        let f = fake();
        let init = CtxInit { value: 0xa5, offset: 8 };
        let b = Block::build(&f, 2, 1, Some((init, 1024))).unwrap();
        let data = &b.buffers()[1];
        for page in 0..2 {
            for entry in 0..4 {
                let mut byte = [0u8];
                data.read(page * 4096 + entry * 1024 + 8, &mut byte);
                assert_eq!(byte[0], 0xa5);
            }
            let mut other = [0u8];
            data.read(page * 4096 + 9, &mut other);
            assert_eq!(other[0], 0);
        }
        // An entry size that does not divide the page restarts at each page, as bnxt_en does.
        let page = init_page(CtxInit { value: 1, offset: 0 }, 3000);
        assert_eq!((page[0], page[3000]), (1, 1));
    }

    #[test]
    fn dropping_a_block_frees_all_its_memory() {
        let f = fake();
        let b = Block::build(&f, 600, 2, None).unwrap();
        assert_eq!(f.dma_live(), 4);
        drop(b);
        assert_eq!(f.dma_live(), 0);
    }
}
