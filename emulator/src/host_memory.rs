//! The model's only way to touch host memory: DMA through mappings it was given.
//!
//! A host (the in-process target, or the vfio-user server for QEMU) maps spans of its memory at
//! bus addresses with [`Iommu::map`]. Every read or write the model makes goes through
//! [`HostMemory`], which checks that every byte of the access is mapped (and, for a write, mapped
//! writable); anything else is refused with a [`DmaError`] and touches no memory at all. As
//! behind a real IOMMU, an access may run across adjacent mappings (a guest's IOMMU maps its
//! buffers page by page), and a mapping may be read-only (a buffer the host maps towards the
//! device only, as Linux's DMA API does for `DMA_TO_DEVICE`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// Memory a host lends the model for DMA.
///
/// # Safety
///
/// Implementors promise that `as_ptr()` is valid for reads and writes of `len()` bytes for as
/// long as the value lives, that it stays at the same address, and that no Rust reference to
/// those bytes is held while the model may access them (the model copies in and out with raw
/// pointer operations, as a device does with DMA).
pub unsafe trait DmaBacking: Send + Sync {
    /// First byte of the memory.
    fn as_ptr(&self) -> *mut u8;
    /// Length in bytes.
    fn len(&self) -> usize;
    /// Whether the memory is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A flag that turns true once the memory was taken from the device under its mapping (a
    /// client shrank the file behind a shared mapping, and the pages now hold nothing of the
    /// client's): every access to it fails from then on, the one that found out included.
    /// `None` (the default) for memory that cannot go away.
    fn revocation(&self) -> Option<&'static AtomicBool> {
        None
    }
}

/// Why a DMA access was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DmaError {
    /// No mapping covers the whole access.
    #[error("DMA {kind} of {len} bytes at 0x{addr:x} is outside every mapping")]
    Unmapped {
        /// "read" or "write".
        kind: &'static str,
        /// Bus address of the access.
        addr: u64,
        /// Length of the access.
        len: usize,
    },
    /// The access writes a read-only mapping.
    #[error("DMA write of {len} bytes at 0x{addr:x} reaches a read-only mapping")]
    ReadOnly {
        /// Bus address of the access.
        addr: u64,
        /// Length of the access.
        len: usize,
    },
    /// The memory was taken back from under the mapping ([`DmaBacking::revocation`]).
    #[error("DMA {kind} of {len} bytes at 0x{addr:x} reaches memory its owner took back (the file behind it shrank)")]
    Revoked {
        /// "read" or "write".
        kind: &'static str,
        /// Bus address of the access.
        addr: u64,
        /// Length of the access.
        len: usize,
    },
    /// The function's bus-master enable is off, so it may not start DMA.
    #[error("DMA {kind} of {len} bytes at 0x{addr:x} with bus mastering off")]
    BusMasterOff {
        /// "read" or "write".
        kind: &'static str,
        /// Bus address of the access.
        addr: u64,
        /// Length of the access.
        len: usize,
    },
}

/// Why a mapping was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// The new mapping overlaps an existing one.
    #[error("mapping 0x{addr:x}+0x{len:x} overlaps the mapping at 0x{existing:x}")]
    Overlap {
        /// Bus address asked for.
        addr: u64,
        /// Length asked for.
        len: u64,
        /// Start of the mapping it overlaps.
        existing: u64,
    },
    /// The mapping is empty or wraps around the address space.
    #[error("mapping 0x{addr:x}+0x{len:x} is empty or wraps")]
    Bad {
        /// Bus address asked for.
        addr: u64,
        /// Length asked for.
        len: u64,
    },
    /// Nothing is mapped at that address.
    #[error("nothing is mapped at 0x{addr:x}")]
    NotMapped {
        /// Bus address asked for.
        addr: u64,
    },
}

/// DMA access to host memory, as the model sees it.
pub trait HostMemory {
    /// Copy `out.len()` bytes from bus address `addr`.
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), DmaError>;
    /// Copy `data` to bus address `addr`.
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaError>;

    /// Read a little-endian u64.
    fn read_u64(&self, addr: u64) -> Result<u64, DmaError> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Check that `len` bytes at `addr` could be read, without keeping them (the firmware checks
    /// that every page a driver hands it is reachable). The default reads them in 4-KiB pieces;
    /// implementations that can check without copying override it.
    fn probe(&self, addr: u64, len: u64) -> Result<(), DmaError> {
        let mut buf = [0u8; 4096];
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(buf.len() as u64) as usize;
            let at = addr.checked_add(done).ok_or(DmaError::Unmapped { kind: "read", addr, len: len as usize })?;
            self.read(at, &mut buf[..n])?;
            done += n as u64;
        }
        Ok(())
    }
}

/// What the device may do with a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read and write.
    ReadWrite,
    /// Read only: a write is refused.
    ReadOnly,
}

#[derive(Clone)]
struct Mapping {
    start: u64,
    len: u64,
    backing: Arc<dyn DmaBacking>,
    offset: usize,
    access: Access,
    /// The backing's revocation flag, read once at map time.
    revoked: Option<&'static AtomicBool>,
}

impl Mapping {
    /// Whether the `len` bytes at `addr` (ending at `end`) all lie in this mapping.
    fn holds(&self, addr: u64, end: u64) -> bool {
        self.start <= addr && end <= self.start + self.len
    }
}

/// How many recently used mappings an address space remembers.
const HINTS: usize = 4;

/// One function's I/O address space: the host memory mapped for it, by bus address.
///
/// The mappings are kept in a tree by bus address (a driver holding 65,536 queue pairs has some
/// 600,000, mapped and unmapped in any order). A device touches a handful of them at a time (a
/// ring, a region, a completion queue), so the address space remembers the last few it found
/// and tries them before searching: each hint points at a mapping in the tree, which is checked
/// to hold the access before it is used. The tree changes only through `&mut self`
/// (`Iommu::maps_mut`), which forgets every hint first, so a hint never outlives the node it
/// points into.
#[derive(Default)]
pub struct Iommu {
    maps: BTreeMap<u64, Mapping>,
    /// How many mappings can be revoked (memory of a file that can shrink): with none, no
    /// access needs to look for a revoked one.
    revocable: usize,
    /// Recently found mappings, each null or pointing at a value of `maps` as it is now.
    hints: [AtomicPtr<Mapping>; HINTS],
    next_hint: AtomicUsize,
}

/// The same mappings of the same memory (the backings are shared, not copied); the copy starts
/// with no remembered mappings.
impl Clone for Iommu {
    fn clone(&self) -> Iommu {
        Iommu { maps: self.maps.clone(), revocable: self.revocable, ..Iommu::default() }
    }
}

impl Iommu {
    /// An empty address space.
    pub fn new() -> Iommu {
        Iommu::default()
    }

    /// The tree, to change: every hint is forgotten first, since a change may move or free the
    /// values the hints point at.
    fn maps_mut(&mut self) -> &mut BTreeMap<u64, Mapping> {
        for hint in &mut self.hints {
            *hint.get_mut() = std::ptr::null_mut();
        }
        &mut self.maps
    }

    /// Map `len` bytes of `backing`, starting `offset` bytes into it, at bus address `addr`, for
    /// reading and writing.
    pub fn map(&mut self, addr: u64, backing: Arc<dyn DmaBacking>, offset: usize, len: u64) -> Result<(), MapError> {
        self.map_with(addr, backing, offset, len, Access::ReadWrite)
    }

    /// As [`Iommu::map`], with the access the device gets.
    pub fn map_with(
        &mut self,
        addr: u64,
        backing: Arc<dyn DmaBacking>,
        offset: usize,
        len: u64,
        access: Access,
    ) -> Result<(), MapError> {
        let end = addr.checked_add(len).filter(|_| len > 0).ok_or(MapError::Bad { addr, len })?;
        let fits = (offset as u64).checked_add(len).is_some_and(|e| e <= backing.len() as u64);
        if !fits {
            return Err(MapError::Bad { addr, len });
        }
        // Every mapping before `at` starts below `end`; the last of them must end by `addr`
        // (then all of them do, none overlapping another), and every one from `at` on starts at
        // or after `end`.
        if let Some((_, m)) = self.maps.range(..end).next_back()
            && m.start + m.len > addr
        {
            return Err(MapError::Overlap { addr, len, existing: m.start });
        }
        let revoked = backing.revocation();
        self.revocable += usize::from(revoked.is_some());
        self.maps_mut().insert(addr, Mapping { start: addr, len, backing, offset, access, revoked });
        Ok(())
    }

    /// Remove the mapping that starts at `addr`.
    pub fn unmap(&mut self, addr: u64) -> Result<(), MapError> {
        let m = self.maps_mut().remove(&addr).ok_or(MapError::NotMapped { addr })?;
        self.revocable -= usize::from(m.revoked.is_some());
        Ok(())
    }

    /// Remove every mapping that lies wholly inside `[addr, addr + len)`; how many were removed.
    pub fn unmap_range(&mut self, addr: u64, len: u64) -> usize {
        let end = addr.saturating_add(len);
        let before = self.maps.len();
        self.maps_mut().retain(|_, m| !(m.start >= addr && m.start.saturating_add(m.len) <= end));
        self.revocable = self.maps.values().filter(|m| m.revoked.is_some()).count();
        before - self.maps.len()
    }

    /// Remove every mapping.
    pub fn clear(&mut self) {
        self.maps_mut().clear();
        self.revocable = 0;
    }

    /// Number of mappings.
    pub fn len(&self) -> usize {
        self.maps.len()
    }

    /// Whether nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }

    /// The mapping that holds all `len` bytes at `addr`, if one does.
    fn mapping(&self, addr: u64, len: usize) -> Option<&Mapping> {
        let end = addr.checked_add(len as u64)?;
        for hint in &self.hints {
            let p = hint.load(Ordering::Relaxed);
            if p.is_null() {
                continue;
            }
            // SAFETY: a non-null hint was stored below from a reference to a value of
            // `self.maps`, and every change to the tree goes through `maps_mut`, which nulls the
            // hints with `&mut self` first; so `p` points at a live value of the tree, which
            // cannot change while this `&self` borrow lasts. Hints are stored and loaded whole
            // (one atomic pointer each), so a racing store is either seen or not.
            let m = unsafe { &*p };
            if m.holds(addr, end) {
                return Some(m);
            }
        }
        let (_, m) = self.maps.range(..=addr).next_back()?;
        if !m.holds(addr, end) {
            return None;
        }
        let slot = self.next_hint.load(Ordering::Relaxed) % HINTS;
        self.hints[slot].store(std::ptr::from_ref(m).cast_mut(), Ordering::Relaxed);
        self.next_hint.store((slot + 1) % HINTS, Ordering::Relaxed);
        Some(m)
    }

    /// Pointer to `len` bytes at `addr` if one mapping covers them all, with the mapping's
    /// revocation flag.
    fn locate(&self, addr: u64, len: usize, write: bool) -> Option<(*mut u8, Option<&'static AtomicBool>)> {
        let m = self.mapping(addr, len)?;
        if write && m.access == Access::ReadOnly {
            return None;
        }
        let within = m.offset + (addr - m.start) as usize;
        // SAFETY: `within + len <= m.offset + m.len <= backing.len()` (checked at map time and
        // by `mapping`), so the pointer stays inside the backing's allocation.
        Some((unsafe { m.backing.as_ptr().add(within) }, m.revoked))
    }

    /// Whether any mapping an access ran through was revoked.
    fn any_revoked(&self, addr: u64, len: usize) -> bool {
        if self.revocable == 0 {
            return false;
        }
        let end = addr.saturating_add(len as u64);
        // The mapping that holds `addr` (if one does) and every later one that starts before the end.
        let first = self.maps.range(..=addr).next_back().map_or(addr, |(start, _)| *start);
        self.maps
            .range(first..end.max(first + 1))
            .map(|(_, m)| m)
            .filter(|m| m.start + m.len > addr)
            .any(|m| m.revoked.is_some_and(|r| r.load(Ordering::Acquire)))
    }

    /// The pieces of an access no single mapping holds: for each mapping it runs through, in
    /// order, a pointer and a length. `Err` with the error to report when a byte is unmapped, or
    /// (for a write) mapped read-only.
    fn pieces(&self, kind: &'static str, addr: u64, len: usize) -> Result<Vec<(*mut u8, usize)>, DmaError> {
        let unmapped = DmaError::Unmapped { kind, addr, len };
        let end = addr.checked_add(len as u64).ok_or(unmapped.clone())?;
        let first = self.maps.range(..=addr).next_back().map(|(start, _)| *start).ok_or(unmapped.clone())?;
        let mut maps = self.maps.range(first..).map(|(_, m)| m);
        let mut at = addr;
        let mut out = Vec::new();
        while at < end {
            let m = maps.next().filter(|m| m.start <= at && at < m.start + m.len).ok_or(unmapped.clone())?;
            if kind == "write" && m.access == Access::ReadOnly {
                return Err(DmaError::ReadOnly { addr, len });
            }
            let n = (end.min(m.start + m.len) - at) as usize;
            let within = m.offset + (at - m.start) as usize;
            // SAFETY: `at..at + n` lies inside mapping `m`, so `within + n <= m.offset + m.len
            // <= backing.len()`: the pointer stays inside the backing's allocation.
            out.push((unsafe { m.backing.as_ptr().add(within) }, n));
            at += n as u64;
        }
        Ok(out)
    }

    /// A view of this address space that refuses every access when `bus_master` is false.
    #[inline]
    pub fn view(&self, bus_master: bool) -> IommuView<'_> {
        IommuView { iommu: self, bus_master }
    }
}

/// [`HostMemory`] over an [`Iommu`], gated by the function's bus-master enable.
pub struct IommuView<'a> {
    iommu: &'a Iommu,
    bus_master: bool,
}

impl HostMemory for IommuView<'_> {
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), DmaError> {
        if !self.bus_master {
            return Err(DmaError::BusMasterOff { kind: "read", addr, len: out.len() });
        }
        let revoked = DmaError::Revoked { kind: "read", addr, len: out.len() };
        if let Some((src, flag)) = self.iommu.locate(addr, out.len(), false) {
            // SAFETY: `locate` checked that `out.len()` bytes at `src` lie inside one mapping,
            // whose backing (`DmaBacking` contract) is valid and referenced by no Rust reference;
            // `out` is the model's own buffer, so the two do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
            // Checked after the copy: a copy that ran into memory taken back was what found out.
            return if flag.is_some_and(|f| f.load(Ordering::Acquire)) { Err(revoked) } else { Ok(()) };
        }
        let mut done = 0;
        for (src, n) in self.iommu.pieces("read", addr, out.len())? {
            // SAFETY: as above, for each piece `pieces` found inside one mapping; the pieces
            // together are exactly `out.len()` bytes.
            unsafe { std::ptr::copy_nonoverlapping(src, out[done..].as_mut_ptr(), n) };
            done += n;
        }
        if self.iommu.any_revoked(addr, out.len()) { Err(revoked) } else { Ok(()) }
    }

    fn probe(&self, addr: u64, len: u64) -> Result<(), DmaError> {
        let err_len = usize::try_from(len).unwrap_or(usize::MAX);
        if !self.bus_master {
            return Err(DmaError::BusMasterOff { kind: "read", addr, len: err_len });
        }
        let len = usize::try_from(len).map_err(|_| DmaError::Unmapped { kind: "read", addr, len: err_len })?;
        if self.iommu.any_revoked(addr, len) {
            return Err(DmaError::Revoked { kind: "read", addr, len });
        }
        if self.iommu.locate(addr, len, false).is_some() {
            return Ok(());
        }
        self.iommu.pieces("read", addr, len).map(drop)
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        if !self.bus_master {
            return Err(DmaError::BusMasterOff { kind: "write", addr, len: data.len() });
        }
        let revoked = DmaError::Revoked { kind: "write", addr, len: data.len() };
        if let Some((dst, flag)) = self.iommu.locate(addr, data.len(), true) {
            // SAFETY: as in `read`, with source and destination swapped.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
            return if flag.is_some_and(|f| f.load(Ordering::Acquire)) { Err(revoked) } else { Ok(()) };
        }
        // Every piece is found (and checked writable) before any byte is written.
        let mut done = 0;
        for (dst, n) in self.iommu.pieces("write", addr, data.len())? {
            // SAFETY: as in `read`'s pieces, with source and destination swapped.
            unsafe { std::ptr::copy_nonoverlapping(data[done..].as_ptr(), dst, n) };
            done += n;
        }
        if self.iommu.any_revoked(addr, data.len()) { Err(revoked) } else { Ok(()) }
    }
}

/// Page-aligned, zeroed heap memory usable as a [`DmaBacking`] (the in-process target's DMA
/// memory, and tests').
pub struct HeapBacking {
    ptr: std::ptr::NonNull<u8>,
    layout: std::alloc::Layout,
}

// SAFETY: the allocation is owned exclusively by this value and only accessed through raw
// pointers by its users (DmaBacking contract), so moving or sharing the handle is sound.
unsafe impl Send for HeapBacking {}
// SAFETY: see Send.
unsafe impl Sync for HeapBacking {}

impl HeapBacking {
    /// Allocate `len` zeroed bytes (at least one page), aligned to 4096; aborts as any
    /// allocation does if the memory cannot be had (see [`HeapBacking::try_new`]).
    pub fn new(len: usize) -> HeapBacking {
        HeapBacking::try_new(len).unwrap_or_else(|| {
            let len = len.max(1).next_multiple_of(4096);
            std::alloc::handle_alloc_error(std::alloc::Layout::from_size_align(len, 4096).expect("a valid layout"))
        })
    }

    /// As [`HeapBacking::new`], but `None` when the memory cannot be had, for sizes that come
    /// from input.
    pub fn try_new(len: usize) -> Option<HeapBacking> {
        let len = len.max(1).checked_next_multiple_of(4096)?;
        let layout = std::alloc::Layout::from_size_align(len, 4096).ok()?;
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        std::ptr::NonNull::new(raw).map(|ptr| HeapBacking { ptr, layout })
    }
}

impl Drop for HeapBacking {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

// SAFETY: the pointer is valid for `layout.size()` bytes until drop and never moves; the type
// itself hands out no references to the bytes.
unsafe impl DmaBacking for HeapBacking {
    fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn len(&self) -> usize {
        self.layout.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_backing_that_cannot_be_had_is_none_not_an_abort() {
        assert!(HeapBacking::try_new(usize::MAX).is_none());
        assert!(HeapBacking::try_new(1 << 62).is_none(), "no machine here has 4 EiB");
        assert_eq!(HeapBacking::try_new(1).unwrap().len(), 4096);
    }

    #[test]
    fn accesses_inside_a_mapping_reach_memory_and_others_are_refused() {
        let mut iommu = Iommu::new();
        let mem = Arc::new(HeapBacking::new(8192));
        iommu.map(0x10_0000, mem.clone(), 0, 8192).unwrap();
        let view = iommu.view(true);
        view.write(0x10_0ffe, &[1, 2, 3, 4]).unwrap();
        let mut out = [0u8; 4];
        view.read(0x10_0ffe, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        assert!(matches!(view.read(0x10_1ffe, &mut out), Err(DmaError::Unmapped { .. })));
        assert!(matches!(view.write(0x0f_fffe, &[0; 4]), Err(DmaError::Unmapped { .. })));
        assert!(matches!(iommu.view(false).read(0x10_0000, &mut out), Err(DmaError::BusMasterOff { .. })));
    }

    #[test]
    fn a_remembered_mapping_is_forgotten_when_the_tree_changes() {
        // Each access leaves a hint pointing at its mapping; unmapping and mapping other memory
        // at the same bus address must not reach the old mapping through it.
        let mut iommu = Iommu::new();
        let (old, new) = (Arc::new(HeapBacking::new(4096)), Arc::new(HeapBacking::new(4096)));
        iommu.map(0x20_0000, old.clone(), 0, 4096).unwrap();
        iommu.view(true).write(0x20_0010, &[7; 4]).unwrap();
        iommu.unmap(0x20_0000).unwrap();
        let mut out = [0u8; 4];
        assert!(matches!(iommu.view(true).read(0x20_0010, &mut out), Err(DmaError::Unmapped { .. })));
        iommu.map_with(0x20_0000, new, 0, 4096, Access::ReadOnly).unwrap();
        iommu.view(true).read(0x20_0010, &mut out).unwrap();
        assert_eq!(out, [0; 4], "the new memory, not the old");
        assert!(matches!(iommu.view(true).write(0x20_0010, &[1; 4]), Err(DmaError::ReadOnly { .. })));
        iommu.clear();
        assert!(matches!(iommu.view(true).read(0x20_0010, &mut out), Err(DmaError::Unmapped { .. })));
    }

    #[test]
    fn accesses_run_across_adjacent_mappings_page_by_page_and_stop_at_gaps() {
        let mut iommu = Iommu::new();
        let mem = Arc::new(HeapBacking::new(6 * 4096));
        // Six adjacent one-page mappings of one backing, at bus addresses in order but each
        // page of host memory in reverse, so a cached span that reached past its mapping would
        // land on the wrong bytes.
        for i in 0..6u64 {
            iommu.map(0x10_0000 + i * 4096, mem.clone(), (5 - i as usize) * 4096, 4096).unwrap();
        }
        {
            let view = iommu.view(true);
            for round in 0..3 {
                for i in 0..6u64 {
                    let at = 0x10_0000 + i * 4096 + 8;
                    view.write(at, &[i as u8 + round; 8]).unwrap();
                    let mut out = [0u8; 8];
                    view.read(at, &mut out).unwrap();
                    assert_eq!(out, [i as u8 + round; 8]);
                    // The last 4 bytes of page i and the first 4 of page i + 1: two mappings, whose
                    // host pages are not adjacent; past the last page, a gap.
                    let across = 0x10_0000 + i * 4096 + 4092;
                    let mut two = [0u8; 8];
                    if i < 5 {
                        view.write(across, &[0xa0, 0xa1, 0xa2, 0xa3, 0xb0, 0xb1, 0xb2, 0xb3]).unwrap();
                        view.read(across, &mut two).unwrap();
                        assert_eq!(two, [0xa0, 0xa1, 0xa2, 0xa3, 0xb0, 0xb1, 0xb2, 0xb3]);
                        // Each half landed in its own host page.
                        let mut half = [0u8; 4];
                        view.read(across + 4, &mut half).unwrap();
                        assert_eq!(half, [0xb0, 0xb1, 0xb2, 0xb3]);
                    } else {
                        assert!(matches!(view.read(across, &mut two), Err(DmaError::Unmapped { .. })));
                        assert!(matches!(view.write(across, &[0; 8]), Err(DmaError::Unmapped { .. })));
                    }
                }
            }
            assert!(matches!(view.read(0x10_0000 + 6 * 4096, &mut [0u8; 1]), Err(DmaError::Unmapped { .. })));
            // All six pages in one read: each page's bytes in bus order.
            let mut all = vec![0u8; 6 * 4096];
            view.read(0x10_0000, &mut all).unwrap();
            for i in 0..6 {
                assert_eq!(all[i * 4096 + 8..i * 4096 + 16], [i as u8 + 2; 8], "page {i}");
            }
        }
        // Remembered mappings move or go when others are unmapped: every access still finds the
        // mapping that holds it, or none; an access across a gap is refused whole.
        iommu.unmap(0x10_0000 + 2 * 4096).unwrap();
        iommu.unmap(0x10_0000).unwrap();
        let view = iommu.view(true);
        let mut page = [0u8; 8];
        for i in 0..6u64 {
            let got = view.read(0x10_0000 + i * 4096 + 8, &mut page);
            if i == 0 || i == 2 {
                assert!(matches!(got, Err(DmaError::Unmapped { .. })), "page {i} was unmapped");
                if i == 2 {
                    let before = view.read(0x10_0000 + 4096 + 8, &mut page).map(|()| page);
                    assert!(matches!(
                        view.write(0x10_0000 + 4096 + 8, &vec![0xee; 2 * 4096]),
                        Err(DmaError::Unmapped { .. })
                    ));
                    assert_eq!(view.read(0x10_0000 + 4096 + 8, &mut page).map(|()| page), before, "nothing written");
                }
            } else {
                assert_eq!((got, page), (Ok(()), [i as u8 + 2; 8]), "page {i}");
            }
        }
    }

    #[test]
    fn a_read_only_mapping_is_read_and_never_written() {
        let mut iommu = Iommu::new();
        let mem = Arc::new(HeapBacking::new(2 * 4096));
        iommu.map(0x1000, mem.clone(), 0, 4096).unwrap();
        iommu.map_with(0x2000, mem, 4096, 4096, Access::ReadOnly).unwrap();
        let view = iommu.view(true);
        view.write(0x1ffc, &[1, 2, 3, 4]).unwrap();
        let mut out = [9u8; 8];
        view.read(0x1ffc, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4, 0, 0, 0, 0]);
        assert_eq!(view.write(0x2000, &[7]), Err(DmaError::ReadOnly { addr: 0x2000, len: 1 }));
        // Across into the read-only page: refused whole, the writable half untouched.
        assert!(matches!(view.write(0x1ffc, &[5; 8]), Err(DmaError::ReadOnly { .. })));
        view.read(0x1ffc, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4, 0, 0, 0, 0]);
    }

    #[test]
    fn overlapping_and_bad_mappings_are_refused() {
        let mut iommu = Iommu::new();
        let mem = Arc::new(HeapBacking::new(8192));
        iommu.map(0x2000, mem.clone(), 0, 0x2000).unwrap();
        assert!(matches!(iommu.map(0x3000, mem.clone(), 0, 0x1000), Err(MapError::Overlap { .. })));
        assert!(matches!(iommu.map(0x1000, mem.clone(), 0, 0x1001), Err(MapError::Overlap { .. })));
        assert!(matches!(iommu.map(0x9000, mem.clone(), 4096, 8192), Err(MapError::Bad { .. })));
        assert!(matches!(iommu.map(u64::MAX - 10, mem.clone(), 0, 4096), Err(MapError::Bad { .. })));
        iommu.map(0x4000, mem, 0, 0x1000).unwrap();
        assert_eq!(iommu.len(), 2);
        iommu.unmap(0x2000).unwrap();
        assert_eq!(iommu.unmap_range(0, 0x10000), 1);
        assert!(iommu.is_empty());
    }
}
