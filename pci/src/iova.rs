//! Bus addresses (IOVAs) for DMA memory: one allocator for every backend of the seam.
//!
//! Addresses are handed out from the ranges the I/O address space allows (a VFIO container
//! reports them with `VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE`; the model allows anything), lowest
//! first, each allocation followed by one unmapped guard page so that a device overrunning a
//! buffer faults instead of reaching its neighbour. Freed addresses are reused (a lab run that
//! registers and deregisters regions for hours must not run out of address space), and the
//! number of live allocations can be capped (vfio's `dma_entry_limit`, 65,535 by default).

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::dma::PAGE_SIZE;

/// The first address of the default range: above 4 GiB, so that 32-bit truncation bugs show.
pub const DEFAULT_BASE: u64 = 0x1_0000_0000;
/// The last address of the default range: the top of a 48-bit address space.
pub const DEFAULT_LAST: u64 = (1 << 48) - 1;

/// Why no address could be handed out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IovaError {
    /// No free span of the address space is long enough.
    #[error("no {len}-byte span of bus addresses is free (ranges {ranges})")]
    Exhausted {
        /// Bytes asked for.
        len: u64,
        /// The ranges the allocator hands out from.
        ranges: String,
    },
    /// As many allocations as the address space allows are live.
    #[error("{limit} DMA mappings are live, the most the I/O address space allows")]
    TooMany {
        /// The limit.
        limit: usize,
    },
    /// A zero-length allocation.
    #[error("a DMA allocation of 0 bytes")]
    Empty,
}

#[derive(Debug)]
struct Spans {
    /// Free spans, start → length in bytes (page multiples), never adjacent (merged on free).
    free: BTreeMap<u64, u64>,
    /// Live allocations.
    live: usize,
}

/// Hands out page-aligned bus addresses from a set of ranges, with a guard page after each.
#[derive(Debug)]
pub struct IovaAllocator {
    spans: Mutex<Spans>,
    ranges: Vec<RangeInclusive<u64>>,
    limit: usize,
}

impl Default for IovaAllocator {
    fn default() -> IovaAllocator {
        IovaAllocator::new(&[DEFAULT_BASE..=DEFAULT_LAST], usize::MAX)
    }
}

/// A span of bus addresses, given back when dropped.
#[derive(Debug)]
pub struct IovaLease {
    allocator: Arc<IovaAllocator>,
    iova: u64,
    len: u64,
}

impl IovaLease {
    /// The first bus address.
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// Bytes leased (a page multiple; the guard page after them is not counted).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the lease is empty (it never is).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for IovaLease {
    fn drop(&mut self) {
        self.allocator.give(self.iova, self.len + PAGE_SIZE as u64);
    }
}

fn page_down(x: u64) -> u64 {
    x & !(PAGE_SIZE as u64 - 1)
}

impl IovaAllocator {
    /// An allocator over `ranges` (inclusive, as VFIO reports them; cut to whole pages), with at
    /// most `limit` allocations live at once.
    pub fn new(ranges: &[RangeInclusive<u64>], limit: usize) -> IovaAllocator {
        let mut free = BTreeMap::new();
        let mut kept = Vec::new();
        for r in ranges {
            let start = r.start().checked_add(PAGE_SIZE as u64 - 1).map(page_down);
            let end = r.end().checked_add(1).map(page_down).unwrap_or(page_down(u64::MAX));
            if let Some(start) = start
                && end > start
            {
                free.insert(start, end - start);
                kept.push(start..=end - 1);
            }
        }
        let spans = Mutex::new(Spans { free: merge(free), live: 0 });
        IovaAllocator { spans, ranges: kept, limit }
    }

    fn spans(&self) -> MutexGuard<'_, Spans> {
        // Nothing panics while the lock is held; a poisoned lock means a broken invariant.
        self.spans.lock().expect("the IOVA allocator's lock is never held across a panic")
    }

    /// Lease `len` bytes (rounded up to whole pages) at the lowest free address that has room
    /// for them and a guard page.
    ///
    /// # Errors
    ///
    /// [`IovaError`] when nothing fits or the limit of live allocations is reached.
    pub fn lease(self: &Arc<Self>, len: usize) -> Result<IovaLease, IovaError> {
        self.lease_aligned(len, PAGE_SIZE as u64)
    }

    /// As [`IovaAllocator::lease`], at an address that is a multiple of `align` (a power of two,
    /// at least a page): memory of 2 MiB pages at a 2 MiB-aligned bus address is what lets an
    /// IOMMU map it with 2 MiB entries (VT-d maps a large page only where both the bus and the
    /// physical address are aligned to it). What lies before the aligned start stays free.
    ///
    /// # Errors
    ///
    /// As for [`IovaAllocator::lease`].
    pub fn lease_aligned(self: &Arc<Self>, len: usize, align: u64) -> Result<IovaLease, IovaError> {
        assert!(
            align.is_power_of_two() && align >= PAGE_SIZE as u64,
            "IOVA alignment {align:#x} is not a power of two of at least a page"
        );
        if len == 0 {
            return Err(IovaError::Empty);
        }
        let len = (len as u64).div_ceil(PAGE_SIZE as u64) * PAGE_SIZE as u64;
        let need = len.saturating_add(PAGE_SIZE as u64);
        let mut s = self.spans();
        if s.live >= self.limit {
            return Err(IovaError::TooMany { limit: self.limit });
        }
        let fits = |(&start, &span): (&u64, &u64)| {
            let at = start.checked_next_multiple_of(align)?;
            (at.checked_add(need)? <= start + span).then_some((start, span, at))
        };
        let Some((start, span, at)) = s.free.iter().find_map(fits) else {
            return Err(IovaError::Exhausted { len, ranges: self.describe() });
        };
        s.free.remove(&start);
        if at > start {
            s.free.insert(start, at - start);
        }
        if start + span > at + need {
            s.free.insert(at + need, start + span - at - need);
        }
        s.live += 1;
        drop(s);
        Ok(IovaLease { allocator: self.clone(), iova: at, len })
    }

    fn give(&self, start: u64, len: u64) {
        let mut s = self.spans();
        s.live -= 1;
        let (mut start, mut len) = (start, len);
        if let Some((&before, &blen)) = s.free.range(..start).next_back()
            && before + blen == start
        {
            s.free.remove(&before);
            start = before;
            len += blen;
        }
        if let Some(&alen) = s.free.get(&(start + len)) {
            s.free.remove(&(start + len));
            len += alen;
        }
        s.free.insert(start, len);
    }

    /// Live allocations.
    pub fn live(&self) -> usize {
        self.spans().live
    }

    fn describe(&self) -> String {
        let r: Vec<String> = self.ranges.iter().map(|r| format!("{:#x}-{:#x}", r.start(), r.end())).collect();
        r.join(", ")
    }
}

/// Merge adjacent or overlapping spans.
fn merge(free: BTreeMap<u64, u64>) -> BTreeMap<u64, u64> {
    let mut out: BTreeMap<u64, u64> = BTreeMap::new();
    for (start, len) in free {
        if let Some((&s, l)) = out.iter_mut().next_back()
            && s + *l >= start
        {
            *l = (*l).max(start + len - s);
            continue;
        }
        out.insert(start, len);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = PAGE_SIZE as u64;

    #[test]
    fn leases_go_upward_with_a_guard_page_and_freed_spans_are_reused() {
        let a = Arc::new(IovaAllocator::default());
        let x = a.lease(1).unwrap();
        let y = a.lease(3 * PAGE_SIZE).unwrap();
        assert_eq!(x.iova(), DEFAULT_BASE);
        assert_eq!(x.len(), P);
        assert_eq!(y.iova(), DEFAULT_BASE + 2 * P, "one guard page after the first");
        drop(x);
        let z = a.lease(PAGE_SIZE).unwrap();
        assert_eq!(z.iova(), DEFAULT_BASE, "the freed span is reused");
        drop(y);
        drop(z);
        assert_eq!(a.live(), 0);
        let big = a.lease(10 * PAGE_SIZE).unwrap();
        assert_eq!(big.iova(), DEFAULT_BASE, "freed spans merge back into one");
    }

    #[test]
    fn only_the_given_ranges_are_used_and_exhaustion_is_an_error() {
        // Two ranges as a container might report them, the first with room for one page only.
        let a = Arc::new(IovaAllocator::new(&[0x1000..=0x2fff, 0x10_0000..=0x10_3fff], usize::MAX));
        let one = a.lease(PAGE_SIZE).unwrap();
        assert_eq!(one.iova(), 0x1000);
        let two = a.lease(2 * PAGE_SIZE).unwrap();
        assert_eq!(two.iova(), 0x10_0000, "the first range has no room for two pages and a guard");
        let e = a.lease(2 * PAGE_SIZE).unwrap_err();
        assert!(matches!(e, IovaError::Exhausted { len, .. } if len == 2 * P), "{e}");
        assert!(e.to_string().contains("0x1000-0x2fff, 0x100000-0x103fff"), "{e}");
        assert_eq!(a.lease(0).unwrap_err(), IovaError::Empty);
    }

    #[test]
    fn aligned_leases_leave_what_lies_before_them_free_and_give_it_all_back() {
        const HUGE: u64 = 2 << 20;
        let a = Arc::new(IovaAllocator::default());
        let small = a.lease(4096).unwrap();
        let big = a.lease_aligned(HUGE as usize, HUGE).unwrap();
        assert_eq!(big.iova() % HUGE, 0, "{:#x} is 2 MiB-aligned", big.iova());
        assert_eq!(big.iova(), DEFAULT_BASE + HUGE, "the first aligned address after the small lease");
        let between = a.lease(4096).unwrap();
        assert_eq!(between.iova(), DEFAULT_BASE + 2 * P, "the gap before the aligned lease is reused");
        drop((small, big, between));
        assert_eq!(a.live(), 0);
        assert_eq!(a.spans().free.len(), 1, "every span merged back into one");
    }

    #[test]
    fn the_limit_of_live_mappings_holds_and_frees_make_room() {
        let a = Arc::new(IovaAllocator::new(&[DEFAULT_BASE..=DEFAULT_LAST], 2));
        let x = a.lease(1).unwrap();
        let _y = a.lease(1).unwrap();
        assert_eq!(a.lease(1).unwrap_err(), IovaError::TooMany { limit: 2 });
        drop(x);
        assert!(a.lease(1).is_ok());
    }

    /// regions-10k's pattern (scenarios/roce/regions-10k.yaml): ten leases of mixed sizes live at
    /// a time, given back in another order, a thousand times over, inside a range that holds only
    /// a few rounds' worth: without reuse and merging the range would run out within a few rounds.
    #[test]
    fn ten_thousand_leases_ten_live_at_a_time_fit_in_a_small_range_under_a_small_limit() {
        let pages = [1, 2, 1, 4, 1, 1, 3, 1, 1, 16];
        let round: u64 = pages.iter().map(|p| (p + 1) * P).sum();
        let a = Arc::new(IovaAllocator::new(&[DEFAULT_BASE..=DEFAULT_BASE + 2 * round - 1], 10));
        let mut highest = 0;
        for _ in 0..1000 {
            let mut live: Vec<Option<IovaLease>> =
                pages.iter().map(|&n| Some(a.lease(n as usize * PAGE_SIZE).unwrap())).collect();
            highest = highest.max(live.iter().flatten().map(|l| l.iova() + l.len()).max().unwrap());
            assert_eq!(a.lease(1).unwrap_err(), IovaError::TooMany { limit: 10 });
            for i in [3, 0, 9, 1, 5, 2, 8, 4, 7, 6] {
                live[i] = None;
            }
        }
        assert_eq!(a.live(), 0);
        assert!(highest <= DEFAULT_BASE + round, "reuse keeps every round where the first was: {highest:#x}");
    }

    #[test]
    fn ranges_are_cut_to_whole_pages() {
        let a = Arc::new(IovaAllocator::new(&[0x1001..=0x4000, 0x5000..=0x5fff], usize::MAX));
        // 0x1001..=0x4000 holds the whole pages 0x2000..0x4000: one page and its guard.
        assert_eq!(a.lease(1).unwrap().iova(), 0x2000);
        let a = Arc::new(IovaAllocator::new(&[0x10..=0x20], usize::MAX));
        assert!(a.lease(1).is_err(), "no whole page");
    }
}
