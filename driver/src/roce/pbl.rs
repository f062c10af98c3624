//! Page tables (PBLs) that point the NIC at ring and region memory, built as bnxt_re builds them
//! (qplib_res.c `bnxt_qplib_alloc_init_hwq`, `__alloc_pbl`; hardware-map §5.1).
//!
//! - Anything but a ring (`HWQ_TYPE_QUEUE`) that fits one page is level 0: the command carries
//!   the page itself.
//! - Up to 512 pages is level 1: one page of PTEs, each the page's bus address | VALID.
//! - More is level 2: PTE pages as at level 1 and, in front of them, PDEs (one contiguous run of
//!   `npde` pages) pointing at each PTE page | VALID.
//! - Rings are never level 0, and their last PTE carries LAST and the one before NEXT_TO_LAST
//!   (`PTU_PTE_LAST`, `PTU_PTE_NEXT_TO_LAST`), so the NIC knows where the ring wraps.

use bnxt_hsi::roce::layouts::PtuPte;

use bnxt_pci::dma::{DmaBuffer, PAGE_SIZE};
use bnxt_pci::{PciError, PciFunction};

/// Entries in one 4-KB table page (`MAX_PBL_LVL_1_PGS`).
pub(crate) const ENTRIES_PER_PAGE: usize = PAGE_SIZE / 8;

/// What the memory is, which decides the table's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PblKind {
    /// A ring the NIC wraps around (`HWQ_TYPE_QUEUE`): CREQ, NQ, SQ, RQ, CQ.
    Queue,
    /// Context memory (`HWQ_TYPE_CTX`): the CMDQ, ORRQ, IRRQ.
    Ctx,
    /// A memory region's pages (`HWQ_TYPE_MR`).
    Mr,
}

/// The table level bnxt_re picks for `pages` pages of `kind` memory.
pub(crate) fn level(pages: usize, kind: PblKind) -> u8 {
    if kind != PblKind::Queue && pages == 1 {
        0
    } else if pages <= ENTRIES_PER_PAGE {
        1
    } else {
        2
    }
}

/// The PTE for data page `i` of `n`.
pub(crate) fn pte(addr: u64, i: usize, n: usize, kind: PblKind) -> u64 {
    let mut e = addr | u64::from(PtuPte::VALID);
    if kind == PblKind::Queue {
        if i + 1 == n {
            e |= u64::from(PtuPte::LAST);
        } else if i + 2 == n {
            e |= u64::from(PtuPte::NEXT_TO_LAST);
        }
    }
    e
}

/// A built table: what a command names, and the table pages (freed with it).
pub(crate) struct Pbl {
    /// 0, 1 or 2.
    pub level: u8,
    /// What the command's `pbl`/`page_tbl_addr` carries: the data page at level 0, the PTE page
    /// at level 1, the first PDE page at level 2.
    pub base: u64,
    /// Number of data pages.
    pub pages: usize,
    tables: Vec<DmaBuffer>,
}

impl Pbl {
    /// Build the table for the data pages at `pages` (4-KB aligned bus addresses, in order).
    ///
    /// # Panics
    ///
    /// If `pages` is empty.
    pub(crate) fn build(function: &dyn PciFunction, pages: &[u64], kind: PblKind) -> Result<Pbl, PciError> {
        assert!(!pages.is_empty(), "a page table needs at least one page");
        let n = pages.len();
        let level = level(n, kind);
        let mut tables = Vec::new();
        let base = match level {
            0 => pages[0],
            1 => {
                let table = function.alloc_dma(PAGE_SIZE)?;
                write_entries(&table, pages.iter().enumerate().map(|(i, a)| pte(*a, i, n, kind)));
                let base = table.iova();
                tables.push(table);
                base
            }
            _ => {
                let npbl = n.div_ceil(ENTRIES_PER_PAGE);
                let npde = npbl.div_ceil(ENTRIES_PER_PAGE);
                let ptes = function.alloc_dma(npbl * PAGE_SIZE)?;
                write_entries(&ptes, pages.iter().enumerate().map(|(i, a)| pte(*a, i, n, kind)));
                let pdes = function.alloc_dma(npde * PAGE_SIZE)?;
                let valid = u64::from(PtuPte::VALID);
                write_entries(&pdes, (0..npbl).map(|p| ptes.iova_at(p * PAGE_SIZE) | valid));
                let base = pdes.iova();
                tables.push(pdes);
                tables.push(ptes);
                base
            }
        };
        Ok(Pbl { level, base, pages: n, tables })
    }

    /// The table pages, for inspection.
    #[cfg(test)]
    pub(crate) fn tables(&self) -> &[DmaBuffer] {
        &self.tables
    }

    /// Bytes of table memory.
    pub(crate) fn bytes(&self) -> usize {
        self.tables.iter().map(DmaBuffer::len).sum()
    }
}

/// Write consecutive 8-byte entries from the start of `table`.
fn write_entries(table: &DmaBuffer, entries: impl Iterator<Item = u64>) {
    let bytes: Vec<u8> = entries.flat_map(u64::to_le_bytes).collect();
    table.write(0, &bytes);
}

/// The bus addresses of the 4-KB pages of `buf`'s first `pages` pages.
pub(crate) fn pages_of(buf: &DmaBuffer, pages: usize) -> Vec<u64> {
    (0..pages).map(|p| buf.iova_at(p * PAGE_SIZE)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FakeFunction, Reply};

    const VALID: u64 = 1;
    const LAST: u64 = 2;
    const NEXT_TO_LAST: u64 = 4;

    fn fake() -> FakeFunction {
        FakeFunction::new(|_| Reply::Never)
    }

    #[test]
    fn levels_follow_bnxt_qplib_alloc_init_hwq() {
        assert_eq!(level(1, PblKind::Mr), 0);
        assert_eq!(level(1, PblKind::Ctx), 0);
        assert_eq!(level(1, PblKind::Queue), 1, "rings always have a PTE page");
        assert_eq!(level(2, PblKind::Mr), 1);
        assert_eq!(level(512, PblKind::Queue), 1);
        assert_eq!(level(513, PblKind::Mr), 2);
        assert_eq!(level(1 << 19, PblKind::Mr), 2, "a 2-GiB region");
    }

    #[test]
    fn a_one_page_region_names_its_page() {
        let f = fake();
        let pbl = Pbl::build(&f, &[0x7000], PblKind::Mr).unwrap();
        assert_eq!((pbl.level, pbl.base, pbl.tables().len()), (0, 0x7000, 0));
    }

    #[test]
    fn a_ring_marks_its_last_two_pages() {
        let f = fake();
        let pages: Vec<u64> = (0..256).map(|i| 0x100_0000 + i * 4096).collect();
        let pbl = Pbl::build(&f, &pages, PblKind::Queue).unwrap();
        assert_eq!(pbl.level, 1);
        let t = &pbl.tables()[0];
        assert_eq!(pbl.base, t.iova());
        assert_eq!(t.read_u64(0), pages[0] | VALID);
        assert_eq!(t.read_u64(254 * 8), pages[254] | VALID | NEXT_TO_LAST);
        assert_eq!(t.read_u64(255 * 8), pages[255] | VALID | LAST);
        assert_eq!(t.read_u64(256 * 8), 0);
        // A one-page ring: its only page is the last.
        let one = Pbl::build(&f, &pages[..1], PblKind::Queue).unwrap();
        assert_eq!(one.tables()[0].read_u64(0), pages[0] | VALID | LAST);
    }

    #[test]
    fn a_region_gets_plain_valid_ptes() {
        let f = fake();
        let pages: Vec<u64> = (0..3).map(|i| 0x4000 + i * 4096).collect();
        let pbl = Pbl::build(&f, &pages, PblKind::Mr).unwrap();
        let t = &pbl.tables()[0];
        for (i, p) in pages.iter().enumerate() {
            assert_eq!(t.read_u64(i * 8), p | VALID);
        }
    }

    #[test]
    fn level_2_pdes_point_at_every_pte_page() {
        let f = fake();
        let n: usize = 2 * 512 * 512 + 3; // more PTE pages than one PDE page holds
        let pages: Vec<u64> = (0..n as u64).map(|i| 0x1_0000_0000 + i * 4096).collect();
        let pbl = Pbl::build(&f, &pages, PblKind::Mr).unwrap();
        assert_eq!(pbl.level, 2);
        let (pdes, ptes) = (&pbl.tables()[0], &pbl.tables()[1]);
        let npbl = n.div_ceil(512);
        assert_eq!((pdes.len(), ptes.len()), (3 * 4096, npbl * 4096), "npde = ceil(npbl / 512) pages");
        assert_eq!(pbl.base, pdes.iova());
        for p in [0, 511, 512, npbl - 1] {
            assert_eq!(pdes.read_u64(p * 8), ptes.iova_at(p * 4096) | VALID, "PDE {p}");
        }
        assert_eq!(ptes.read_u64((n - 1) * 8), pages[n - 1] | VALID, "no LAST bit outside rings");
        assert_eq!(ptes.read_u64(513 * 8), pages[513] | VALID);
    }
}
