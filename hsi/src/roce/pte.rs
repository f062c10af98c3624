//! Page-table entries of RoCE queues and regions (roce_hsi.h `ptu_pte`, `ptu_pde`; bnxt_re
//! qplib_res.c `bnxt_qplib_alloc_init_hwq`: PTEs are `page | PTU_PTE_VALID`, and for queues
//! (`HWQ_TYPE_QUEUE`) the last page's PTE also has `PTU_PTE_LAST` and the one before it
//! `PTU_PTE_NEXT_TO_LAST`; hardware-map §5.1).

use super::layouts::PtuPte;

/// The entry names a page (`PTU_PTE_VALID`).
pub const VALID: u64 = PtuPte::VALID as u64;
/// The entry names a queue's last page (`PTU_PTE_LAST`).
pub const LAST: u64 = PtuPte::LAST as u64;
/// The entry names a queue's next-to-last page (`PTU_PTE_NEXT_TO_LAST`).
pub const NEXT_TO_LAST: u64 = PtuPte::NEXT_TO_LAST as u64;
/// The page address bits (`PTU_PTE_PAGE_MASK`).
pub const PAGE_MASK: u64 = PtuPte::PAGE_MASK;

/// The PTEs of a queue's `pages` (4-KiB aligned), in order, as bnxt_re writes them: valid, and
/// LAST / NEXT_TO_LAST on the last two.
pub fn queue_ptes(pages: &[u64]) -> Vec<u64> {
    let n = pages.len();
    pages
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let mut e = (p & PAGE_MASK) | VALID;
            if i + 1 == n {
                e |= LAST;
            } else if i + 2 == n {
                e |= NEXT_TO_LAST;
            }
            e
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_two_queue_pages_are_marked() {
        assert_eq!(queue_ptes(&[0x1000, 0x5000, 0x9000]), vec![0x1001, 0x5005, 0x9003]);
        assert_eq!(queue_ptes(&[0x2000]), vec![0x2003]);
        assert_eq!((VALID, LAST, NEXT_TO_LAST, PAGE_MASK), (1, 2, 4, !0xfff));
    }
}
