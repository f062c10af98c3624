//! Guest memory a vfio-user client lends the device with `VFIO_USER_DMA_MAP`: each region's file
//! descriptor is `mmap`ed (shared) and handed to the model as a [`DmaBacking`] at its DMA
//! address; `VFIO_USER_DMA_UNMAP` takes it back. A map without the write flag (QEMU sends them
//! behind a vIOMMU for buffers the guest maps `DMA_TO_DEVICE`) is mapped read-only, here and in
//! the model's address space, which refuses the device's writes to it.
//!
//! The file may be any regular file the client can share: a memfd, sealed against shrinking
//! (QEMU's memfd backend seals by default) or not (`seal=off`), or a file on hugetlbfs or any
//! other file system (`memory-backend-file,share=on`), as vhost-user and other vfio-user servers
//! take them. The region must lie inside the file when it is mapped. A file on hugetlbfs is
//! mapped in whole huge pages (hugetlbfs maps nothing smaller; `fstatfs` gives the page size),
//! the region being a part of that mapping. A file that can shrink (every one but a memfd sealed
//! with `F_SEAL_SHRINK`) may be truncated by the client while it is mapped; what happens then is
//! [`super::shrink_guard`]: the server survives, and the DMA that finds out and every later one
//! into that region fail.
//!
//! What is refused, and why (each with an errno for the reply and a reason for the log):
//! * a map without a file descriptor: the server would need `VFIO_USER_DMA_READ`/`WRITE`
//!   messages, which it does not implement (run QEMU with `share=on` memory);
//! * a descriptor that is not a regular file, or a region past its end;
//! * a map without the read flag (a device cannot be given write-only memory here);
//! * addresses, offsets or sizes that are not 4-KiB aligned (the page size the server
//!   advertises), that wrap, or that overlap an existing region (`EEXIST`, as the specification
//!   says); more than [`MAX_DMA_MAPS`] regions.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::Arc;

use bnxt_vfio_user::linux::{DMA_MAP_FLAG_READ, DMA_MAP_FLAG_WRITE, DMA_UNMAP_FLAG_ALL, errno};
use bnxt_vfio_user::payload::{DmaMap, DmaUnmap};
use rustix::fs::{FileType, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};

use super::shrink_guard::Guard;
use super::{Refusal, refuse};
use bnxt_model::host_memory::{Access, DmaBacking};

/// `f_type` of hugetlbfs (Linux include/uapi/linux/magic.h `HUGETLBFS_MAGIC`).
pub const HUGETLBFS_MAGIC: u64 = 0x9584_58f6;

/// Page size of DMA regions (the `pgsizes` the server advertises).
pub const PAGE: u64 = 4096;
/// Most regions mapped at once (the specification's default `max_dma_maps`).
pub const MAX_DMA_MAPS: usize = 65_535;

/// A shared mapping of a client's file, the model's view of one DMA region: `len` bytes at
/// `ptr`, inside a mapping of `map_len` bytes at `base` (whole pages of the file's page size).
#[derive(Debug)]
pub struct MmapBacking {
    base: NonNull<u8>,
    map_len: usize,
    ptr: NonNull<u8>,
    len: usize,
    /// Registration with the SIGBUS handler, for a file that can shrink.
    guard: Option<Guard>,
}

// SAFETY: the mapping belongs to this value alone and is only reached through raw-pointer copies
// (the DmaBacking contract), so the handle may move and be shared between threads.
unsafe impl Send for MmapBacking {}
// SAFETY: as for Send.
unsafe impl Sync for MmapBacking {}

// SAFETY: `ptr..ptr + len` lies in a mapping that stays in place until drop; every byte stays
// accessible: the file behind it cannot shrink (sealed), or, if it can, the range is registered
// with the SIGBUS handler, which puts the server's own zero pages in place of what went away
// (and raises the revocation flag) before the access that found out completes; this type hands
// out no Rust references to the bytes.
unsafe impl DmaBacking for MmapBacking {
    fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn len(&self) -> usize {
        self.len
    }
    fn revocation(&self) -> Option<&'static std::sync::atomic::AtomicBool> {
        self.guard.as_ref().map(Guard::revoked)
    }
}

impl Drop for MmapBacking {
    fn drop(&mut self) {
        // Unregistered before it is unmapped: the handler never touches a range no longer ours.
        self.guard = None;
        // SAFETY: `base`/`map_len` are exactly what mmap returned in `map`, unmapped once; the
        // model no longer holds the backing (the last Arc is being dropped).
        if let Err(e) = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.map_len) } {
            tracing::warn!(error = %e, "munmap of a DMA region failed");
        }
    }
}

/// What the server learns of a client's file before mapping it.
struct FileFacts {
    /// Bytes.
    len: u64,
    /// Its page size: the huge page size on hugetlbfs, else 4 KiB.
    page: u64,
    /// Whether it can shrink (all but a memfd sealed with `F_SEAL_SHRINK`).
    can_shrink: bool,
}

fn file_facts(fd: &OwnedFd, what: &str) -> Result<FileFacts, Refusal> {
    let st = rustix::fs::fstat(fd).map_err(|e| refuse(errno::EBADF, format!("{what}: fstat failed: {e}")))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(refuse(errno::EINVAL, format!("{what}: the descriptor is not a regular file")));
    }
    let fs = rustix::fs::fstatfs(fd).map_err(|e| refuse(errno::EBADF, format!("{what}: fstatfs failed: {e}")))?;
    let page = if fs.f_type as u64 == HUGETLBFS_MAGIC { (fs.f_bsize as u64).max(PAGE) } else { PAGE };
    if !page.is_power_of_two() {
        return Err(refuse(errno::EINVAL, format!("{what}: the file's page size {page} is not a power of two")));
    }
    // Files that are not memfds have no seals (EINVAL): they can shrink.
    let sealed = rustix::fs::fcntl_get_seals(fd).is_ok_and(|s| s.contains(SealFlags::SHRINK));
    Ok(FileFacts { len: u64::try_from(st.st_size).unwrap_or(0), page, can_shrink: !sealed })
}

/// One mapped region.
#[derive(Debug, Clone)]
pub struct Mapping {
    /// DMA address.
    pub iova: u64,
    /// Size in bytes.
    pub size: u64,
    /// The memory.
    pub backing: Arc<MmapBacking>,
    /// What the device may do with it.
    pub access: Access,
}

/// Every region the client has mapped, by DMA address.
#[derive(Debug, Default)]
pub struct DmaTable {
    maps: BTreeMap<u64, Mapping>,
}

impl DmaTable {
    /// Nothing mapped.
    pub fn new() -> DmaTable {
        DmaTable::default()
    }

    /// Number of regions.
    pub fn len(&self) -> usize {
        self.maps.len()
    }

    /// Whether nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }

    /// Every region, by address.
    pub fn mappings(&self) -> impl Iterator<Item = &Mapping> {
        self.maps.values()
    }

    /// Check and map a `DMA_MAP` request with the descriptor that came with it.
    pub fn map(&mut self, req: &DmaMap, fd: Option<OwnedFd>) -> Result<Mapping, Refusal> {
        let what = format!("DMA_MAP of 0x{:x}+0x{:x}", req.address, req.size);
        let Some(fd) = fd else {
            return Err(refuse(
                errno::ENOTSUP,
                format!(
                    "{what} came without a file descriptor; DMA_READ/DMA_WRITE are not implemented, so guest memory must be shared (QEMU: memory-backend-memfd,share=on)"
                ),
            ));
        };
        if req.flags & DMA_MAP_FLAG_READ == 0 {
            return Err(refuse(
                errno::ENOTSUP,
                format!("{what} is not readable (flags 0x{:x}); write-only DMA memory is not supported", req.flags),
            ));
        }
        let (access, prot) = if req.flags & DMA_MAP_FLAG_WRITE == 0 {
            (Access::ReadOnly, ProtFlags::READ)
        } else {
            (Access::ReadWrite, ProtFlags::READ | ProtFlags::WRITE)
        };
        if req.size == 0
            || !req.size.is_multiple_of(PAGE)
            || !req.address.is_multiple_of(PAGE)
            || !req.offset.is_multiple_of(PAGE)
        {
            return Err(refuse(
                errno::EINVAL,
                format!(
                    "{what} at file offset 0x{:x}: address, offset and size must be non-zero multiples of 4 KiB",
                    req.offset
                ),
            ));
        }
        let end =
            req.address.checked_add(req.size).ok_or_else(|| refuse(errno::EINVAL, format!("{what} wraps around")))?;
        if let Some((&start, m)) = self.maps.range(..end).next_back()
            && start + m.size > req.address
        {
            return Err(refuse(errno::EEXIST, format!("{what} overlaps the region at 0x{start:x}+0x{:x}", m.size)));
        }
        if self.maps.len() >= MAX_DMA_MAPS {
            return Err(refuse(errno::ENOSPC, format!("{what}: already {MAX_DMA_MAPS} regions")));
        }
        let facts = file_facts(&fd, &what)?;
        let file_end = req.offset.checked_add(req.size);
        if file_end.is_none_or(|e| e > facts.len) {
            return Err(refuse(
                errno::EINVAL,
                format!("{what}: file offset 0x{:x} + size is past the end of the {}-byte file", req.offset, facts.len),
            ));
        }
        // Whole pages of the file's page size around the region (one 4-KiB page is one page
        // but on hugetlbfs).
        let map_off = req.offset & !(facts.page - 1);
        let map_end = (req.offset + req.size).next_multiple_of(facts.page);
        let (map_len, inner, len) = match (
            usize::try_from(map_end - map_off),
            usize::try_from(req.offset - map_off),
            usize::try_from(req.size),
        ) {
            (Ok(m), Ok(i), Ok(l)) => (m, i, l),
            _ => return Err(refuse(errno::EINVAL, format!("{what} does not fit the address space"))),
        };
        // SAFETY: a fresh shared mapping chosen by the kernel (null hint) of whole pages of the
        // file, the region inside the file (checked above); nothing else refers to the new
        // range. A read-only one is mapped without write permission: the model's address space
        // refuses writes to it before they are made.
        let raw = unsafe { rustix::mm::mmap(std::ptr::null_mut(), map_len, prot, MapFlags::SHARED, &fd, map_off) }
            .map_err(|e| refuse(errno::EFAULT, format!("{what}: mmap failed: {e}")))?;
        let base = NonNull::new(raw.cast::<u8>())
            .ok_or_else(|| refuse(errno::EFAULT, format!("{what}: mmap returned null")))?;
        let guard = if facts.can_shrink {
            match Guard::new(base.as_ptr(), map_len, prot.bits() as i32) {
                Ok(g) => Some(g),
                Err(e) => {
                    // SAFETY: exactly the mapping made above, not yet shared with anyone.
                    let _ = unsafe { rustix::mm::munmap(base.as_ptr().cast(), map_len) };
                    return Err(refuse(errno::ENOSPC, format!("{what}: the file can shrink, and {e}")));
                }
            }
        } else {
            None
        };
        // SAFETY: `inner + len <= map_len`: the region lies in the pages mapped.
        let ptr = unsafe { NonNull::new_unchecked(base.as_ptr().add(inner)) };
        let kind = if facts.can_shrink { "the file can shrink: guarded" } else { "sealed against shrinking" };
        tracing::info!("{what}: mapped in pages of {} bytes; {kind}", facts.page);
        let backing = MmapBacking { base, map_len, ptr, len, guard };
        let mapping = Mapping { iova: req.address, size: req.size, backing: Arc::new(backing), access };
        self.maps.insert(req.address, mapping.clone());
        Ok(mapping)
    }

    /// Apply a `DMA_UNMAP` request; the regions removed. A request names one region exactly, or
    /// a range holding whole regions, or every region with [`DMA_UNMAP_FLAG_ALL`].
    pub fn unmap(&mut self, req: &DmaUnmap) -> Result<Vec<Mapping>, Refusal> {
        if req.flags & DMA_UNMAP_FLAG_ALL != 0 {
            return Ok(std::mem::take(&mut self.maps).into_values().collect());
        }
        if req.flags != 0 {
            return Err(refuse(
                errno::ENOTSUP,
                format!("DMA_UNMAP flags 0x{:x} are not supported (only UNMAP_ALL)", req.flags),
            ));
        }
        let end = req.address.saturating_add(req.size);
        let doomed: Vec<u64> = self
            .maps
            .range(req.address..end)
            .filter(|(s, m)| s.saturating_add(m.size) <= end)
            .map(|(s, _)| *s)
            .collect();
        if doomed.is_empty() {
            return Err(refuse(
                errno::ENOENT,
                format!("DMA_UNMAP of 0x{:x}+0x{:x} names no mapped region", req.address, req.size),
            ));
        }
        Ok(doomed.into_iter().filter_map(|s| self.maps.remove(&s)).collect())
    }

    /// Drop every region (the client went away).
    pub fn clear(&mut self) -> Vec<Mapping> {
        std::mem::take(&mut self.maps).into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bnxt_vfio_user::linux::DMA_MAP_FLAG_READ;
    use rustix::fs::MemfdFlags;

    fn memfd(len: u64, seal: bool) -> OwnedFd {
        let fd = rustix::fs::memfd_create("dma-test", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).unwrap();
        rustix::fs::ftruncate(&fd, len).unwrap();
        if seal {
            rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW).unwrap();
        }
        fd
    }

    fn req(address: u64, size: u64, offset: u64) -> DmaMap {
        DmaMap { argsz: 32, flags: DMA_MAP_FLAG_READ | DMA_MAP_FLAG_WRITE, offset, address, size }
    }

    #[test]
    fn maps_share_the_file_and_unmap_exactly() {
        let mut t = DmaTable::new();
        let fd = memfd(0x4000, true);
        let m = t.map(&req(0x10000, 0x2000, 0x2000), Some(fd.try_clone().unwrap())).unwrap();
        // SAFETY: the mapping is 0x2000 bytes long.
        unsafe { m.backing.as_ptr().add(0x10).write(0x5a) };
        let mut b = [0u8; 1];
        rustix::io::pread(&fd, &mut b, 0x2010).unwrap();
        assert_eq!(b[0], 0x5a, "the server's view is the client's file");
        t.map(&req(0x20000, 0x1000, 0), Some(fd.try_clone().unwrap())).unwrap();
        assert_eq!(t.len(), 2);
        let gone = t.unmap(&DmaUnmap { argsz: 24, flags: 0, address: 0x10000, size: 0x2000 }).unwrap();
        assert_eq!(gone.len(), 1);
        let err = t.unmap(&DmaUnmap { argsz: 24, flags: 0, address: 0x10000, size: 0x2000 }).unwrap_err();
        assert_eq!(err.errno, errno::ENOENT);
        assert_eq!(t.unmap(&DmaUnmap { argsz: 24, flags: DMA_UNMAP_FLAG_ALL, address: 0, size: 0 }).unwrap().len(), 1);
        assert!(t.is_empty());
    }

    #[test]
    fn a_map_without_the_write_flag_is_read_only() {
        let mut t = DmaTable::new();
        let fd = memfd(0x1000, true);
        rustix::io::pwrite(&fd, &[0x42], 0x10).unwrap();
        let m = t.map(&DmaMap { flags: DMA_MAP_FLAG_READ, ..req(0x40000, 0x1000, 0) }, Some(fd)).unwrap();
        assert_eq!(m.access, Access::ReadOnly);
        // SAFETY: the mapping is 0x1000 bytes long and readable.
        assert_eq!(unsafe { m.backing.as_ptr().add(0x10).read() }, 0x42);
        let w = t.map(&req(0x50000, 0x1000, 0), Some(memfd(0x1000, true))).unwrap();
        assert_eq!(w.access, Access::ReadWrite);
    }

    #[test]
    fn a_file_the_client_shrinks_under_its_mapping_fails_dma_and_harms_nothing_else() {
        use bnxt_model::host_memory::{DmaError, HostMemory, Iommu};
        let mut t = DmaTable::new();
        let shrinking = memfd(0x4000, false);
        let steady = memfd(0x4000, true);
        let other = memfd(0x2000, false);
        let a = t.map(&req(0x10000, 0x4000, 0), Some(shrinking.try_clone().unwrap())).unwrap();
        let b = t.map(&req(0x20000, 0x4000, 0), Some(steady)).unwrap();
        let c = t.map(&req(0x30000, 0x2000, 0), Some(other.try_clone().unwrap())).unwrap();
        assert!(a.backing.revocation().is_some(), "an unsealed memfd can shrink: guarded");
        assert!(b.backing.revocation().is_none(), "a memfd sealed against shrinking cannot");
        let mut io = Iommu::new();
        for m in [&a, &b, &c] {
            io.map_with(m.iova, m.backing.clone(), 0, m.size, m.access).unwrap();
        }
        let v = io.view(true);
        v.write(0x13000, &[1, 2, 3]).unwrap();
        let mut got = [0u8; 3];
        rustix::io::pread(&shrinking, &mut got, 0x3000).unwrap();
        assert_eq!(got, [1, 2, 3], "the region is the client's file");
        // The client cuts the file to one page: the next touch of a page past its end would be
        // SIGBUS. The server lives on; the access fails, and so does every later one there.
        rustix::fs::ftruncate(&shrinking, 0x1000).unwrap();
        let mut buf = [0u8; 3];
        assert!(matches!(v.read(0x13000, &mut buf), Err(DmaError::Revoked { .. })), "{:?}", v.read(0x13000, &mut buf));
        assert!(matches!(v.write(0x10000, &[9]), Err(DmaError::Revoked { .. })), "a page still in the file too");
        assert!(matches!(v.probe(0x10000, 16), Err(DmaError::Revoked { .. })));
        rustix::io::pread(&shrinking, &mut buf[..1], 0).unwrap();
        assert_eq!(buf[0], 0, "nothing reached the client's file after it shrank");
        // Every other region is untouched: the sealed one, and another unsealed one.
        for at in [0x23000, 0x31000] {
            v.write(at, &[7, 8]).unwrap();
            let mut back = [0u8; 2];
            v.read(at, &mut back).unwrap();
            assert_eq!(back, [7, 8]);
        }
        rustix::io::pread(&other, &mut buf[..2], 0x1000).unwrap();
        assert_eq!(buf[..2], [7, 8]);
        // A read spanning the revoked region and the next fails as a whole.
        let mut span = [0u8; 8];
        assert!(v.read(0x13ffc, &mut span).is_err());
        // Unmapped as any region; a new map of the same client file works again.
        io.unmap(0x10000).unwrap();
        let gone = t.unmap(&DmaUnmap { argsz: 24, flags: 0, address: 0x10000, size: 0x4000 }).unwrap();
        drop(gone);
        drop(a);
        let again = t.map(&req(0x10000, 0x1000, 0), Some(shrinking)).unwrap();
        io.map_with(again.iova, again.backing.clone(), 0, again.size, again.access).unwrap();
        io.view(true).write(0x10000, &[5]).unwrap();
    }

    #[test]
    fn unsafe_or_malformed_maps_are_refused() {
        let mut t = DmaTable::new();
        t.map(&req(0x10000, 0x2000, 0), Some(memfd(0x2000, true))).unwrap();
        let cases: Vec<(DmaMap, Option<OwnedFd>, u32, &str)> = vec![
            (req(0x11000, 0x1000, 0), Some(memfd(0x1000, true)), errno::EEXIST, "overlaps"),
            (req(0xf000, 0x2000, 0), Some(memfd(0x2000, true)), errno::EEXIST, "overlaps"),
            (req(0x40000, 0x1000, 0), None, errno::ENOTSUP, "without a file descriptor"),
            (req(0x40000, 0x2000, 0), Some(memfd(0x1000, true)), errno::EINVAL, "past the end"),
            (req(0x40000, 0x1000, u64::MAX - 0xfff), Some(memfd(0x1000, true)), errno::EINVAL, "past the end"),
            (req(0x40800, 0x1000, 0), Some(memfd(0x1000, true)), errno::EINVAL, "multiples of 4 KiB"),
            (req(u64::MAX - 0xfff, 0x2000, 0), Some(memfd(0x2000, true)), errno::EINVAL, "wraps"),
            (
                DmaMap { flags: DMA_MAP_FLAG_WRITE, ..req(0x40000, 0x1000, 0) },
                Some(memfd(0x1000, true)),
                errno::ENOTSUP,
                "not readable",
            ),
        ];
        for (r, fd, want_errno, want) in cases {
            let err = t.map(&r, fd).unwrap_err();
            assert_eq!(err.errno, want_errno, "{err}");
            assert!(err.reason.contains(want), "{err}");
        }
        let (a, _) = rustix::pipe::pipe().unwrap();
        let err = t.map(&req(0x40000, 0x1000, 0), Some(a)).unwrap_err();
        assert!(err.reason.contains("not a regular file"), "{err}");
        assert_eq!(t.len(), 1);
    }
}
