//! Memory the device reaches by DMA.
//!
//! A [`DmaBuffer`] is a span of memory with a bus address. The device may read or write it at any
//! time (that is what DMA is), so the driver never holds a Rust reference into it: every access
//! copies in or out through raw-pointer operations, as `vm-memory`'s volatile slices do.

use std::any::Any;
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Weak};

/// Page size of DMA allocations.
pub const PAGE_SIZE: usize = 4096;

/// A span of DMA memory: where the device sees it (`iova`) and where this process sees it.
pub struct DmaBuffer {
    ptr: NonNull<u8>,
    len: usize,
    iova: u64,
    // Owns the memory and its device mapping; dropping it unmaps and frees them.
    _owner: Box<dyn Any + Send + Sync>,
}

// SAFETY: the buffer is a pointer into memory owned by `_owner` (itself Send + Sync); all
// accesses go through raw-pointer copies that take no references, so sharing the handle between
// threads cannot create aliasing Rust references. Concurrent writers race as hardware DMA does.
unsafe impl Send for DmaBuffer {}
// SAFETY: as for Send: `&DmaBuffer` only permits raw-pointer copies in and out.
unsafe impl Sync for DmaBuffer {}

impl fmt::Debug for DmaBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DmaBuffer").field("iova", &format_args!("{:#x}", self.iova)).field("len", &self.len).finish()
    }
}

impl DmaBuffer {
    /// Wrap memory a backend allocated and mapped for the device.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes of `len` bytes for as long as `owner` lives, and
    /// no Rust reference to those bytes may exist while the buffer does (other processes and the
    /// device may access them, as DMA does). `owner` is dropped with the buffer and must release
    /// the memory and its device mapping then, not before.
    pub unsafe fn from_raw(ptr: NonNull<u8>, len: usize, iova: u64, owner: Box<dyn Any + Send + Sync>) -> DmaBuffer {
        DmaBuffer { ptr, len, iova, _owner: owner }
    }

    /// The bus address the device uses for byte 0.
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn check(&self, offset: usize, len: usize) {
        let end = offset.checked_add(len);
        assert!(
            end.is_some_and(|e| e <= self.len),
            "DMA access of {len} bytes at offset {offset} is outside a buffer of {} bytes",
            self.len
        );
    }

    /// Copy bytes out of the buffer starting at `offset`.
    #[inline]
    pub fn read(&self, offset: usize, out: &mut [u8]) {
        self.check(offset, out.len());
        // SAFETY: the range is inside the buffer (checked above), which `from_raw`'s contract
        // keeps valid; `out` is a distinct Rust allocation, so the ranges do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(offset), out.as_mut_ptr(), out.len()) }
    }

    /// Copy bytes into the buffer starting at `offset`.
    #[inline]
    pub fn write(&self, offset: usize, data: &[u8]) {
        self.check(offset, data.len());
        // SAFETY: as in `read`, with the roles of the two ranges swapped.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.as_ptr().add(offset), data.len()) }
    }

    /// Set `len` bytes from `offset` to zero.
    pub fn zero(&self, offset: usize, len: usize) {
        self.check(offset, len);
        // SAFETY: the range is inside the buffer (checked above).
        unsafe { std::ptr::write_bytes(self.ptr.as_ptr().add(offset), 0, len) }
    }

    /// Load one byte with a volatile read, for polling a byte the device writes (a valid bit).
    #[inline]
    pub fn read_volatile_u8(&self, offset: usize) -> u8 {
        self.check(offset, 1);
        // SAFETY: the byte is inside the buffer (checked above); a volatile read of a u8 has no
        // alignment requirement and is not elided, so a device write is eventually seen.
        unsafe { std::ptr::read_volatile(self.ptr.as_ptr().add(offset)) }
    }

    /// Store one byte with a volatile write.
    pub fn write_volatile_u8(&self, offset: usize, value: u8) {
        self.check(offset, 1);
        // SAFETY: as in `read_volatile_u8`.
        unsafe { std::ptr::write_volatile(self.ptr.as_ptr().add(offset), value) }
    }

    /// Load a little-endian u32 at `offset`.
    pub fn read_u32(&self, offset: usize) -> u32 {
        let mut b = [0u8; 4];
        self.read(offset, &mut b);
        u32::from_le_bytes(b)
    }

    /// Load a little-endian u64 at `offset`.
    pub fn read_u64(&self, offset: usize) -> u64 {
        let mut b = [0u8; 8];
        self.read(offset, &mut b);
        u64::from_le_bytes(b)
    }

    /// Store a little-endian u32 at `offset`.
    pub fn write_u32(&self, offset: usize, value: u32) {
        self.write(offset, &value.to_le_bytes())
    }

    /// Store a little-endian u64 at `offset`.
    #[inline]
    pub fn write_u64(&self, offset: usize, value: u64) {
        self.write(offset, &value.to_le_bytes())
    }

    /// Bus address of byte `offset`.
    #[inline]
    pub fn iova_at(&self, offset: usize) -> u64 {
        self.check(offset, 0);
        self.iova + offset as u64
    }
}

impl DmaBuffer {
    /// The same buffer, and a [`DmaWatch`] on its memory that does not keep it: for a layer
    /// between a driver and its function that must read what the driver puts in DMA memory
    /// (requests, command queues) and write what the device would (answers), while the driver
    /// owns the memory. The memory is freed when the returned buffer is dropped, as before; the
    /// watch then finds nothing.
    pub fn watched(self) -> (DmaBuffer, DmaWatch) {
        let (ptr, len, iova) = (self.ptr, self.len, self.iova);
        let shared = Arc::new(self);
        let watch = DmaWatch { buffer: Arc::downgrade(&shared), iova, len };
        // The memory stays valid while `shared` lives, which the new buffer's owner keeps alive:
        // `from_raw`'s contract holds for it as it held for the original.
        (DmaBuffer { ptr, len, iova, _owner: Box::new(shared) }, watch)
    }
}

/// A handle on the memory of a [`DmaBuffer`] someone else owns (see [`DmaBuffer::watched`]).
#[derive(Debug, Clone)]
pub struct DmaWatch {
    buffer: Weak<DmaBuffer>,
    iova: u64,
    len: usize,
}

impl DmaWatch {
    /// The bus address of the buffer's first byte.
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether bus address `iova` falls inside it.
    pub fn covers(&self, iova: u64) -> bool {
        iova >= self.iova && iova - self.iova < self.len as u64
    }

    /// The buffer, while its owner still holds it (the memory then stays until the returned
    /// value is dropped too).
    pub fn get(&self) -> Option<Arc<DmaBuffer>> {
        self.buffer.upgrade()
    }
}

/// Process memory for the NIC: page-aligned, zeroed at allocation, owned by whoever holds it.
///
/// From [`HostPages::MAPPED_FROM`] bytes on it is an anonymous mapping of its own, whose pages the
/// kernel gives zeroed on first touch: a NIC's context memory (tens of MB, most of it never read
/// by the device) then costs nothing until used. A single page (a queue's page table, a QP's
/// ORRQ or IRRQ: six of them for every queue pair) is one of a pool carved out of larger
/// mappings (`page_pool`): from the heap, a page-aligned page costs about two pages of memory
/// in padding, and a NIC may hold 65,536 queue pairs. Other sizes come from the heap.
///
/// A caller fills it (through [`HostPages::as_mut_slice`] while it holds it alone) and hands it
/// to [`crate::PciFunction::map_dma`], which maps it for the device and returns a
/// [`DmaBuffer`] that owns it from then on: the memory is freed when that buffer is dropped.
pub struct HostPages {
    ptr: NonNull<u8>,
    len: usize,
    capacity: usize,
    /// Where the memory comes from, and so how it is given back.
    source: Source,
}

/// Where a [`HostPages`]' memory comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The heap (`alloc_zeroed`).
    Heap,
    /// An anonymous mapping of `capacity` bytes of its own (freed with `munmap`).
    Mapped,
    /// One page of the [`page_pool`].
    Pool,
}

/// Single pages for the NIC, carved out of anonymous mappings of [`page_pool::SLAB`] bytes.
/// A page given back is emptied (`MADV_DONTNEED`: the kernel takes its memory and gives a
/// zero page again on the next touch) and kept for the next one asked for; the mappings stay.
mod page_pool {
    use std::ptr::NonNull;
    use std::sync::Mutex;

    use super::PAGE_SIZE;

    /// Bytes mapped at a time: 2 MiB, 512 pages.
    pub(super) const SLAB: usize = 2 << 20;

    struct Pool {
        /// Pages given back, emptied.
        free: Vec<usize>,
        /// The next never-used page of the newest slab, and the end of that slab.
        next: usize,
        end: usize,
    }

    static POOL: Mutex<Pool> = Mutex::new(Pool { free: Vec::new(), next: 0, end: 0 });

    fn pool() -> std::sync::MutexGuard<'static, Pool> {
        // Nothing panics while the lock is held.
        POOL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A zeroed page, or `None` if no memory can be mapped.
    pub(super) fn take() -> Option<NonNull<u8>> {
        let mut p = pool();
        if let Some(page) = p.free.pop() {
            return NonNull::new(page as *mut u8);
        }
        if p.next == p.end {
            // SAFETY: a fresh private anonymous mapping: the kernel picks the address, nothing
            // else refers to it, and its pages read as zero until written.
            let raw = unsafe {
                rustix::mm::mmap_anonymous(
                    std::ptr::null_mut(),
                    SLAB,
                    rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                    rustix::mm::MapFlags::PRIVATE,
                )
            }
            .ok()?;
            p.next = raw as usize;
            p.end = p.next + SLAB;
        }
        let page = p.next;
        p.next += PAGE_SIZE;
        NonNull::new(page as *mut u8)
    }

    /// Give back a page `take` returned, no longer used by anyone.
    pub(super) fn give(page: NonNull<u8>) {
        // SAFETY: the page is one of the pool's mappings and nobody uses it any more: emptying
        // it only makes it read as zeros again.
        let emptied =
            unsafe { rustix::mm::madvise(page.as_ptr().cast(), PAGE_SIZE, rustix::mm::Advice::LinuxDontNeed) };
        if emptied.is_err() {
            // Not reused (it may hold bytes), only leaked: nothing else can be done in a drop.
            debug_assert!(false, "MADV_DONTNEED of a pool page failed: {emptied:?}");
            return;
        }
        pool().free.push(page.as_ptr() as usize);
    }
}

// SAFETY: `HostPages` owns its allocation exclusively (like a `Box<[u8]>`); moving it to another
// thread moves that ownership.
unsafe impl Send for HostPages {}
// SAFETY: shared references only permit reads of the bytes (`as_slice`), as for `Box<[u8]>`.
unsafe impl Sync for HostPages {}

impl fmt::Debug for HostPages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostPages").field("len", &self.len).field("capacity", &self.capacity).finish()
    }
}

impl HostPages {
    /// The size from which the pages are a mapping of their own rather than heap memory.
    pub const MAPPED_FROM: usize = 64 * 1024;

    fn layout(capacity: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(capacity, PAGE_SIZE).expect("a page-aligned layout of a page multiple")
    }

    /// `len` zeroed bytes in whole 4-KB pages.
    ///
    /// # Panics
    ///
    /// If `len` is 0; aborts as any allocation does if the memory cannot be had (see
    /// [`HostPages::try_new`]).
    pub fn new(len: usize) -> HostPages {
        assert!(len > 0, "process memory for the NIC must have at least one byte");
        HostPages::try_new(len).unwrap_or_else(|| std::alloc::handle_alloc_error(Self::layout(Self::capacity_of(len))))
    }

    /// As [`HostPages::new`], but `None` when the memory cannot be had (or `len` is 0), for
    /// sizes that come from input.
    pub fn try_new(len: usize) -> Option<HostPages> {
        if len == 0 || len > isize::MAX as usize - PAGE_SIZE {
            return None;
        }
        let capacity = Self::capacity_of(len);
        if capacity == PAGE_SIZE {
            return page_pool::take().map(|ptr| HostPages { ptr, len, capacity, source: Source::Pool });
        }
        if capacity >= Self::MAPPED_FROM {
            // SAFETY: a fresh private anonymous mapping: the kernel picks the address, so nothing
            // else refers to it, and its pages read as zero until written.
            let raw = unsafe {
                rustix::mm::mmap_anonymous(
                    std::ptr::null_mut(),
                    capacity,
                    rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                    rustix::mm::MapFlags::PRIVATE,
                )
            }
            .ok()?;
            return NonNull::new(raw.cast::<u8>()).map(|ptr| HostPages { ptr, len, capacity, source: Source::Mapped });
        }
        // Heap memory for small buffers: System's alloc_zeroed writes every byte (the alignment
        // is above malloc's), which is cheap below MAPPED_FROM.
        let layout = Self::layout(capacity);
        // SAFETY: the layout has a non-zero size (capacity >= PAGE_SIZE).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        NonNull::new(raw).map(|ptr| HostPages { ptr, len, capacity, source: Source::Heap })
    }

    /// `len` rounded up to whole pages (`len` at most `isize::MAX - PAGE_SIZE`).
    fn capacity_of(len: usize) -> usize {
        len.div_ceil(PAGE_SIZE) * PAGE_SIZE
    }

    /// Pages holding a copy of `bytes`.
    ///
    /// # Panics
    ///
    /// If `bytes` is empty.
    pub fn from_bytes(bytes: &[u8]) -> HostPages {
        let mut pages = HostPages::new(bytes.len());
        pages.as_mut_slice().copy_from_slice(bytes);
        pages
    }

    /// Length in bytes (as asked for).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes (never: see [`HostPages::new`]).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes allocated: the length rounded up to whole pages.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `capacity >= len` initialised (zeroed) bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, to fill before handing them over.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The first byte, for a backend that maps the pages for the device. The backend must keep
    /// `self` alive (usually as the [`DmaBuffer`]'s owner) for as long as the device may use them.
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.ptr
    }
}

impl Drop for HostPages {
    fn drop(&mut self) {
        if self.source == Source::Pool {
            page_pool::give(self.ptr);
            return;
        }
        if self.source == Source::Mapped {
            // SAFETY: the mapping of `capacity` bytes made in `try_new`, unmapped once; whoever
            // mapped it for a device (the DmaBuffer owning these pages) has unmapped it first.
            if let Err(e) = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.capacity) } {
                // Leaked rather than left half-freed; nothing else can be done in a drop.
                debug_assert!(false, "munmap of {} bytes failed: {e}", self.capacity);
            }
            return;
        }
        // SAFETY: allocated in `try_new` with this same layout, and not freed before.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.capacity)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_pages_that_cannot_be_had_are_none_not_an_abort() {
        assert!(HostPages::try_new(0).is_none());
        assert!(HostPages::try_new(usize::MAX).is_none());
        assert!(HostPages::try_new(1 << 62).is_none(), "no machine here has 4 EiB");
        let p = HostPages::try_new(5000).unwrap();
        assert_eq!((p.len(), p.capacity()), (5000, 8192));
        assert!(p.as_slice().iter().all(|&b| b == 0));
    }

    #[test]
    fn single_pages_come_from_the_pool_zeroed_even_when_reused() {
        let mut pages: Vec<HostPages> = (0..600).map(|_| HostPages::new(100)).collect();
        for p in &mut pages {
            assert_eq!((p.source, p.capacity()), (Source::Pool, PAGE_SIZE));
            assert_eq!(p.as_ptr().as_ptr() as usize % PAGE_SIZE, 0);
            assert!(p.as_slice().iter().all(|&b| b == 0));
            p.as_mut_slice().fill(0x5a);
        }
        let mut seen: Vec<usize> = pages.iter().map(|p| p.as_ptr().as_ptr() as usize).collect();
        seen.sort_unstable();
        assert!(seen.windows(2).all(|w| w[1] - w[0] >= PAGE_SIZE), "no two overlap (more than one slab)");
        let written = seen[7];
        drop(pages);
        // Given back dirty, taken again clean.
        let again: Vec<HostPages> = (0..600).map(|_| HostPages::new(PAGE_SIZE)).collect();
        assert!(again.iter().any(|p| p.as_ptr().as_ptr() as usize == written), "pages are reused");
        assert!(again.iter().all(|p| p.as_slice().iter().all(|&b| b == 0)));
    }

    #[test]
    fn large_host_pages_are_a_zeroed_mapping_of_their_own() {
        for len in [HostPages::MAPPED_FROM - 1, HostPages::MAPPED_FROM, 2 << 20] {
            let mut p = HostPages::new(len);
            assert_eq!(p.source == Source::Mapped, p.capacity() >= HostPages::MAPPED_FROM, "{len} bytes");
            assert_eq!(p.as_ptr().as_ptr() as usize % PAGE_SIZE, 0);
            assert!(p.as_slice().iter().all(|&b| b == 0), "{len} bytes read as zero");
            p.as_mut_slice()[len - 1] = 0xa5;
            assert_eq!(p.as_slice()[len - 1], 0xa5);
        }
    }

    #[test]
    fn host_pages_are_page_aligned_zeroed_and_keep_their_length() {
        let mut p = HostPages::new(5000);
        assert_eq!((p.len(), p.capacity()), (5000, 8192));
        assert_eq!(p.as_ptr().as_ptr() as usize % PAGE_SIZE, 0);
        assert!(p.as_slice().iter().all(|b| *b == 0));
        p.as_mut_slice()[4999] = 7;
        assert_eq!(p.as_slice()[4999], 7);
        let q = HostPages::from_bytes(b"hello");
        assert_eq!((q.as_slice(), q.capacity()), (&b"hello"[..], 4096));
    }

    #[test]
    fn a_watch_sees_the_owners_memory_until_the_owner_drops_it() {
        let pages = HostPages::new(8192);
        let ptr = pages.as_ptr();
        let buffer = buffer_over(pages, ptr, 0x10_0000);
        let (buffer, watch) = buffer.watched();
        assert_eq!((watch.iova(), watch.len()), (0x10_0000, 8192));
        assert!(watch.covers(0x10_1fff) && !watch.covers(0x10_2000) && !watch.covers(0xf_ffff));
        buffer.write_u32(4096, 0xfeed_f00d);
        let seen = watch.get().expect("the owner holds it");
        assert_eq!(seen.read_u32(4096), 0xfeed_f00d);
        seen.write_u32(0, 7);
        drop(seen);
        assert_eq!(buffer.read_u32(0), 7, "one memory, two handles");
        drop(buffer);
        assert!(watch.get().is_none(), "the owner let it go");
    }

    /// A buffer over `pages` (which its owner keeps) at `iova`.
    fn buffer_over(pages: HostPages, ptr: NonNull<u8>, iova: u64) -> DmaBuffer {
        let len = pages.capacity();
        // SAFETY: `ptr` is the first byte of `pages`, valid for `len` bytes while `pages` lives;
        // `pages` is the owner, and no reference into it is held.
        unsafe { DmaBuffer::from_raw(ptr, len, iova, Box::new(pages)) }
    }

    #[test]
    #[should_panic(expected = "at least one byte")]
    fn empty_host_pages_are_refused() {
        HostPages::new(0);
    }
}
