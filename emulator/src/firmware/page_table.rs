//! Walking the page tables a driver gives the firmware for context memory and rings
//! (hardware-map §3.3; bnxt.c `bnxt_alloc_ctx_pg_tbls`, `bnxt_alloc_ring`,
//! `bnxt_hwrm_set_pg_attr`; roce_hsi.h `ptu_pte`/`ptu_pde`).
//!
//! Level 0: the root is the only data page. Level 1: the root is a table of page-table entries,
//! one per data page. Level 2: the root is a table of directory entries, each pointing at a
//! table of page-table entries. Every entry must have its valid bit (`PTU_PTE_VALID`) set; the
//! address bits are `entry & !0xfff` (the ring-only LAST/NEXT_TO_LAST bits are ignored). A table
//! page holds `page_size / 8` entries. Every data page must be aligned to the page size, and
//! every byte the memory will hold must be reachable through the function's DMA mappings.

use bnxt_hsi::backing_store::{PTE_ADDR_MASK, PTE_VALID};

use crate::host_memory::{DmaError, HostMemory};

/// Alignment every page table must have (tables are written as whole 4-KiB pages by drivers).
pub const TABLE_ALIGN: u64 = 4096;

/// Where the tables are and how they are shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSpec {
    /// Address of the root (the data page at level 0).
    pub root: u64,
    /// Number of table levels: 0, 1 or 2.
    pub level: u8,
    /// Bytes per page.
    pub page_size: u64,
}

/// Why a page table was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageTableError {
    /// The level is not 0, 1 or 2.
    #[error("page table level {0} is not 0, 1 or 2")]
    BadLevel(u8),
    /// Nothing to map.
    #[error("the memory is empty")]
    Empty,
    /// The memory needs more pages than the tables can name.
    #[error("{pages} pages of {page_size} bytes do not fit a level-{level} page table (at most {max})")]
    TooManyPages {
        /// Pages needed.
        pages: u64,
        /// Bytes per page.
        page_size: u64,
        /// The table level.
        level: u8,
        /// Most pages that level can name.
        max: u64,
    },
    /// A table or data page is not aligned.
    #[error("{what} at 0x{addr:x} is not aligned to {align} bytes")]
    Unaligned {
        /// What it is.
        what: &'static str,
        /// Its address.
        addr: u64,
        /// The alignment required.
        align: u64,
    },
    /// An entry lacks its valid bit.
    #[error("entry {index} of the {what} at 0x{table:x} is not valid (0x{value:016x})")]
    InvalidEntry {
        /// Which table.
        what: &'static str,
        /// The table's address.
        table: u64,
        /// The entry's index.
        index: u64,
        /// The entry.
        value: u64,
    },
    /// A table or data page is not reachable through the DMA mappings.
    #[error("{what} at 0x{addr:x} is not reachable: {error}")]
    Unreachable {
        /// What it is.
        what: &'static str,
        /// Its address.
        addr: u64,
        /// The refusal.
        error: DmaError,
    },
}

/// The data pages (addresses, in order) holding `bytes` bytes through the tables `spec` names,
/// after checking every table entry and every data byte is reachable.
pub fn walk(mem: &dyn HostMemory, spec: TableSpec, bytes: u64) -> Result<Vec<u64>, PageTableError> {
    walk_split(mem, spec, spec.page_size, bytes)
}

/// As [`walk`], but a level-1 table is one contiguous table of as many entries as there are
/// data pages, however many table pages that takes (DPDK drivers/net/bnxt/bnxt_ethdev.c
/// `bnxt_alloc_ctx_mem_blk` reserves `nr_pages * 8` bytes for it, 4 KiB aligned); bnxt_en's
/// tables of at most one page are the short case. Levels 0 and 2 are as [`walk`]'s.
pub fn walk_long_level1(mem: &dyn HostMemory, spec: TableSpec, bytes: u64) -> Result<Vec<u64>, PageTableError> {
    if spec.level != 1 || spec.page_size == 0 {
        return walk(mem, spec, bytes);
    }
    let entries = bytes.div_ceil(spec.page_size);
    let table = entries.saturating_mul(8).next_multiple_of(TABLE_ALIGN).max(spec.page_size);
    walk_split(mem, spec, table, bytes)
}

/// As [`walk`], with page-table pages of `table_page_size` bytes (each holding
/// `table_page_size / 8` entries) while data pages are `spec.page_size` bytes: RoCE commands
/// name the two sizes apart (REGISTER_MR `log2_pbl_pg_size`, CREATE_QP `sq_pbl_pg_size`).
pub fn walk_split(
    mem: &dyn HostMemory,
    spec: TableSpec,
    table_page_size: u64,
    bytes: u64,
) -> Result<Vec<u64>, PageTableError> {
    let TableSpec { root, level, page_size } = spec;
    if bytes == 0 {
        return Err(PageTableError::Empty);
    }
    let per_table = table_page_size / 8;
    let pages = bytes.div_ceil(page_size);
    let max = match level {
        0 => 1,
        1 => per_table,
        2 => per_table.saturating_mul(per_table),
        other => return Err(PageTableError::BadLevel(other)),
    };
    if pages > max {
        return Err(PageTableError::TooManyPages { pages, page_size, level, max });
    }
    let data = match level {
        0 => vec![root],
        1 => read_table(mem, root, pages, "page table")?,
        _ => {
            let dirs = read_table(mem, root, pages.div_ceil(per_table), "page directory")?;
            // Grown table by table: each table is probed before it is read, so what is allocated
            // never exceeds guest memory that exists (a size alone may claim 2^54 pages).
            let mut data = Vec::new();
            for (j, dir) in dirs.iter().enumerate() {
                let n = (pages - j as u64 * per_table).min(per_table);
                data.extend(read_table(mem, *dir, n, "page table")?);
            }
            data
        }
    };
    for (i, &page) in data.iter().enumerate() {
        if !page.is_multiple_of(page_size) {
            return Err(PageTableError::Unaligned { what: "data page", addr: page, align: page_size });
        }
        let used = (bytes - i as u64 * page_size).min(page_size);
        mem.probe(page, used).map_err(|error| PageTableError::Unreachable { what: "data page", addr: page, error })?;
    }
    Ok(data)
}

/// The addresses in the first `n` entries of the table at `table`.
fn read_table(mem: &dyn HostMemory, table: u64, n: u64, what: &'static str) -> Result<Vec<u64>, PageTableError> {
    if !table.is_multiple_of(TABLE_ALIGN) {
        return Err(PageTableError::Unaligned { what, addr: table, align: TABLE_ALIGN });
    }
    // Probed first: `n` comes from sizes the driver gave, and is allocated for only when the
    // memory it names is mapped.
    let len = n.saturating_mul(8);
    mem.probe(table, len).map_err(|error| PageTableError::Unreachable { what, addr: table, error })?;
    let mut raw = vec![0u8; len as usize];
    mem.read(table, &mut raw).map_err(|error| PageTableError::Unreachable { what, addr: table, error })?;
    raw.chunks_exact(8)
        .enumerate()
        .map(|(index, e)| {
            let value = u64::from_le_bytes(e.try_into().expect("8-byte chunk"));
            if value & PTE_VALID == 0 {
                return Err(PageTableError::InvalidEntry { what, table, index: index as u64, value });
            }
            Ok(value & PTE_ADDR_MASK)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_memory::{HeapBacking, Iommu};
    use std::sync::Arc;

    const BASE: u64 = 0x10_0000;

    fn memory(pages: usize) -> (Iommu, Arc<HeapBacking>) {
        let mem = Arc::new(HeapBacking::new(pages * 4096));
        let mut iommu = Iommu::new();
        iommu.map(BASE, mem.clone(), 0, (pages * 4096) as u64).unwrap();
        (iommu, mem)
    }

    fn put(iommu: &Iommu, addr: u64, entries: &[u64]) {
        let bytes: Vec<u8> = entries.iter().flat_map(|e| e.to_le_bytes()).collect();
        iommu.view(true).write(addr, &bytes).unwrap();
    }

    #[test]
    fn level_two_tables_lead_to_every_data_page() {
        // Root at page 0, two PTE tables at pages 1 and 2, 514 data pages from page 3 on: the
        // first table is full (512 entries), the second names the last two pages.
        let (iommu, _mem) = memory(520);
        put(&iommu, BASE, &[(BASE + 0x1000) | 1, (BASE + 0x2000) | 1]);
        let data: Vec<u64> = (0..514).map(|i| BASE + (3 + i) * 0x1000).collect();
        let ptes: Vec<u64> = data.iter().map(|a| a | 1).collect();
        put(&iommu, BASE + 0x1000, &ptes[..512]);
        put(&iommu, BASE + 0x2000, &ptes[512..]);
        let spec = TableSpec { root: BASE, level: 2, page_size: 4096 };
        assert_eq!(walk(&iommu.view(true), spec, 514 * 4096 - 100).unwrap(), data);
    }

    #[test]
    fn bad_tables_are_refused_with_the_reason() {
        let (iommu, _mem) = memory(4);
        let view = iommu.view(true);
        put(&iommu, BASE, &[(BASE + 0x1000) | 1, BASE + 0x2000]);
        let spec = TableSpec { root: BASE, level: 1, page_size: 4096 };
        assert!(matches!(walk(&view, spec, 8192), Err(PageTableError::InvalidEntry { index: 1, .. })));
        put(&iommu, BASE, &[(BASE + 0x1000) | 1, 0x9000_0000 | 1]);
        assert!(matches!(walk(&view, spec, 8192), Err(PageTableError::Unreachable { what: "data page", .. })));
        assert!(matches!(walk(&view, TableSpec { level: 3, ..spec }, 1), Err(PageTableError::BadLevel(3))));
        assert!(matches!(walk(&view, TableSpec { level: 0, ..spec }, 8192), Err(PageTableError::TooManyPages { .. })));
        assert!(matches!(walk(&view, TableSpec { root: BASE + 8, ..spec }, 10), Err(PageTableError::Unaligned { .. })));
        assert!(matches!(walk(&iommu.view(false), spec, 10), Err(PageTableError::Unreachable { .. })));
        let big = TableSpec { root: BASE, level: 1, page_size: 64 << 10 };
        put(&iommu, BASE, &[(BASE + 0x1000) | 1]);
        assert!(matches!(walk(&view, big, 10), Err(PageTableError::Unaligned { what: "data page", .. })));
    }

    #[test]
    fn a_long_level_one_table_is_read_as_one_contiguous_table() {
        // 600 data pages: a 4800-byte table over two pages (DPDK's layout); `walk` refuses it.
        let (iommu, _mem) = memory(610);
        let data: Vec<u64> = (0..600).map(|i| BASE + (2 + i) * 0x1000).collect();
        put(&iommu, BASE, &data.iter().map(|a| a | 1).collect::<Vec<_>>());
        let spec = TableSpec { root: BASE, level: 1, page_size: 4096 };
        let view = iommu.view(true);
        assert!(matches!(walk(&view, spec, 600 * 4096), Err(PageTableError::TooManyPages { max: 512, .. })));
        assert_eq!(walk_long_level1(&view, spec, 600 * 4096).unwrap(), data);
        // An entry past the first page is checked as the others are.
        put(&iommu, BASE + 520 * 8, &[BASE + 0x5000]);
        assert!(matches!(
            walk_long_level1(&view, spec, 600 * 4096),
            Err(PageTableError::InvalidEntry { index: 520, .. })
        ));
        // A table running past the mapped memory is refused before anything is read.
        let err = walk_long_level1(&view, spec, 1 << 40).unwrap_err();
        assert!(matches!(err, PageTableError::Unreachable { what: "page table", .. }), "{err:?}");
    }

    #[test]
    fn sizes_claiming_more_than_memory_are_refused_before_anything_is_allocated() {
        // 1 GiB table pages, 4 KiB data pages, level 2: up to 2^54 pages could be named. Only 4
        // pages are mapped, so the root's claim of 2^23 directory entries is unreachable.
        let (iommu, _mem) = memory(4);
        let spec = TableSpec { root: BASE, level: 2, page_size: 4096 };
        let err = walk_split(&iommu.view(true), spec, 1 << 30, 1 << 62).unwrap_err();
        assert!(matches!(err, PageTableError::Unreachable { what: "page directory", .. }), "{err:?}");
        // Level 1: a table of 2^27 entries (1 GiB).
        let spec = TableSpec { root: BASE, level: 1, page_size: 4096 };
        let err = walk_split(&iommu.view(true), spec, 1 << 30, 1 << 39).unwrap_err();
        assert!(matches!(err, PageTableError::Unreachable { what: "page table", .. }), "{err:?}");
    }
}
