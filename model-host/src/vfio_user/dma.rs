//! Guest memory a vfio-user client lends the device with `VFIO_USER_DMA_MAP`: each region's file
//! descriptor is `mmap`ed (shared) and handed to the model as a [`DmaBacking`] at its DMA
//! address; `VFIO_USER_DMA_UNMAP` takes it back. A map without the write flag (QEMU sends them
//! behind a vIOMMU for buffers the guest maps `DMA_TO_DEVICE`) is mapped read-only, here and in
//! the model's address space, which refuses the device's writes to it.
//!
//! What is refused, and why (each with an errno for the reply and a reason for the log):
//! * a map without a file descriptor: the server would need `VFIO_USER_DMA_READ`/`WRITE`
//!   messages, which it does not implement (run QEMU with `memory-backend-memfd,share=on`);
//! * a map whose file could shrink under the mapping: touching mapped pages past the end of a
//!   file kills the process with SIGBUS, so the file must be a memfd sealed against shrinking
//!   (`F_SEAL_SHRINK`; QEMU's memfd backend seals by default) and long enough;
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
use rustix::fs::SealFlags;
use rustix::mm::{MapFlags, ProtFlags};

use super::{Refusal, refuse};
use bnxt_model::host_memory::{Access, DmaBacking};

/// Page size of DMA regions (the `pgsizes` the server advertises).
pub const PAGE: u64 = 4096;
/// Most regions mapped at once (the specification's default `max_dma_maps`).
pub const MAX_DMA_MAPS: usize = 65_535;

/// A shared mapping of a client's file, the model's view of one DMA region.
#[derive(Debug)]
pub struct MmapBacking {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping belongs to this value alone and is only reached through raw-pointer copies
// (the DmaBacking contract), so the handle may move and be shared between threads.
unsafe impl Send for MmapBacking {}
// SAFETY: as for Send.
unsafe impl Sync for MmapBacking {}

// SAFETY: `ptr` is a shared mapping of `len` bytes that stays in place until drop; the file
// behind it cannot shrink (sealed, checked in `map`), so every byte stays backed; this type
// hands out no Rust references to the bytes.
unsafe impl DmaBacking for MmapBacking {
    fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn len(&self) -> usize {
        self.len
    }
}

impl Drop for MmapBacking {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned in `map`, unmapped once; the model no
        // longer holds the backing (the last Arc is being dropped).
        if let Err(e) = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) } {
            tracing::warn!(error = %e, "munmap of a DMA region failed");
        }
    }
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
        // Linux refuses flags it does not know (vfio_iommu_type1.c `vfio_dma_do_map`: `map->flags
        // & ~mask`); of its flags only READ and WRITE mean anything for a vfio-user map.
        let unknown = req.flags & !(DMA_MAP_FLAG_READ | DMA_MAP_FLAG_WRITE);
        if unknown != 0 {
            return Err(refuse(
                errno::EINVAL,
                format!("{what}: unknown flags 0x{unknown:x} (READ 0x1 and WRITE 0x2 are known)"),
            ));
        }
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
        let seals = rustix::fs::fcntl_get_seals(&fd).map_err(|e| {
            refuse(
                errno::EINVAL,
                format!("{what}: the file is not a sealable memfd ({e}); it could shrink under the mapping"),
            )
        })?;
        if !seals.contains(SealFlags::SHRINK) {
            return Err(refuse(
                errno::EINVAL,
                format!(
                    "{what}: the memfd is not sealed against shrinking (F_SEAL_SHRINK); it could shrink under the mapping"
                ),
            ));
        }
        let file_len =
            rustix::fs::fstat(&fd).map_err(|e| refuse(errno::EBADF, format!("{what}: fstat failed: {e}")))?.st_size;
        let file_end = req.offset.checked_add(req.size);
        if file_end.is_none_or(|e| e > u64::try_from(file_len).unwrap_or(0)) {
            return Err(refuse(
                errno::EINVAL,
                format!("{what}: file offset 0x{:x} + size is past the end of the {file_len}-byte file", req.offset),
            ));
        }
        let len = usize::try_from(req.size)
            .map_err(|_| refuse(errno::EINVAL, format!("{what} does not fit the address space")))?;
        // SAFETY: a fresh shared mapping chosen by the kernel (null hint), of a file checked above
        // to be long enough and sealed against shrinking; nothing else refers to the new range.
        // A read-only one is mapped without write permission: the model's address space refuses
        // writes to it before they are made.
        let ptr = unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, prot, MapFlags::SHARED, &fd, req.offset) }
            .map_err(|e| refuse(errno::EFAULT, format!("{what}: mmap failed: {e}")))?;
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| refuse(errno::EFAULT, format!("{what}: mmap returned null")))?;
        let mapping =
            Mapping { iova: req.address, size: req.size, backing: Arc::new(MmapBacking { ptr, len }), access };
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
    fn unsafe_or_malformed_maps_are_refused() {
        let mut t = DmaTable::new();
        t.map(&req(0x10000, 0x2000, 0), Some(memfd(0x2000, true))).unwrap();
        let cases: Vec<(DmaMap, Option<OwnedFd>, u32, &str)> = vec![
            (req(0x11000, 0x1000, 0), Some(memfd(0x1000, true)), errno::EEXIST, "overlaps"),
            (req(0xf000, 0x2000, 0), Some(memfd(0x2000, true)), errno::EEXIST, "overlaps"),
            (req(0x40000, 0x1000, 0), None, errno::ENOTSUP, "without a file descriptor"),
            (req(0x40000, 0x1000, 0), Some(memfd(0x1000, false)), errno::EINVAL, "not sealed"),
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
        let file = tempfile::tempfile().unwrap();
        file.set_len(0x1000).unwrap();
        let err = t.map(&req(0x40000, 0x1000, 0), Some(file.into())).unwrap_err();
        assert!(err.reason.contains("shrink"), "{err}");
        assert_eq!(t.len(), 1);
    }
}
