//! A BAR of a VFIO device: mapped into this process where the kernel allows it
//! (`VFIO_REGION_INFO_FLAG_MMAP`), otherwise reached with pread/pwrite on the device descriptor at
//! the region's offset (Linux Documentation/driver-api/vfio.rst, "VFIO device API").
//!
//! An access outside the BAR or not naturally aligned is a driver bug; it is logged and reads
//! all-ones (a store is dropped), as the seam's BAR accesses never fail.

use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::Arc;

use rustix::mm::{MapFlags, ProtFlags};

use super::sys::{self, RegionInfo};

enum Access {
    /// Mapped here: `ptr` is valid for the BAR's `size` bytes while the value lives.
    Mapped(NonNull<u8>),
    /// Through the device descriptor at this file offset.
    File(u64),
}

/// One BAR.
pub struct Bar {
    index: u8,
    size: u64,
    access: Access,
    device: Arc<OwnedFd>,
}

// SAFETY: the mapping is owned by this value and reached only through volatile loads and stores
// of whole naturally aligned words, which any thread may make (they are device accesses).
unsafe impl Send for Bar {}
// SAFETY: as for Send.
unsafe impl Sync for Bar {}

impl Bar {
    /// BAR `index` of `device` as `info` describes it; mapped when the kernel allows it.
    pub fn new(device: Arc<OwnedFd>, index: u8, info: RegionInfo) -> Bar {
        let mut access = Access::File(info.offset);
        if info.flags & sys::VFIO_REGION_INFO_FLAG_MMAP != 0
            && let Ok(len) = usize::try_from(info.size)
            && len > 0
        {
            // SAFETY: a fresh shared mapping of the device's BAR at the offset the kernel gave for
            // it; the kernel picks the address, so nothing else refers to it. It is unmapped on drop.
            let mapped = unsafe {
                rustix::mm::mmap(
                    std::ptr::null_mut(),
                    len,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::SHARED,
                    device.as_fd(),
                    info.offset,
                )
            };
            match mapped {
                Ok(p) => access = NonNull::new(p.cast::<u8>()).map(Access::Mapped).unwrap_or(access),
                Err(e) => tracing::warn!(bar = index, error = %e, "BAR cannot be mapped; using pread/pwrite"),
            }
        }
        Bar { index, size: info.size, access, device }
    }

    /// Whether an access of `len` bytes at `offset` lies inside the BAR and is aligned.
    fn check(&self, offset: u64, len: u64) -> bool {
        let ok = offset.is_multiple_of(len) && offset.checked_add(len).is_some_and(|end| end <= self.size);
        if !ok {
            tracing::error!(bar = self.index, offset, len, size = self.size, "BAR access outside the BAR or unaligned");
        }
        ok
    }

    /// Load 32 bits.
    pub fn read32(&self, offset: u64) -> u32 {
        if !self.check(offset, 4) {
            return u32::MAX;
        }
        match self.access {
            // SAFETY: `offset + 4 <= size` and aligned (checked), inside the live mapping.
            Access::Mapped(p) => unsafe { p.as_ptr().add(offset as usize).cast::<u32>().read_volatile() },
            Access::File(base) => {
                let mut b = [0u8; 4];
                match rustix::io::pread(self.device.as_fd(), &mut b, base + offset) {
                    Ok(4) => u32::from_le_bytes(b),
                    other => {
                        tracing::error!(bar = self.index, offset, result = ?other, "BAR load failed; reads all-ones");
                        u32::MAX
                    }
                }
            }
        }
    }

    /// Store 32 bits.
    pub fn write32(&self, offset: u64, value: u32) {
        if !self.check(offset, 4) {
            return;
        }
        match self.access {
            // SAFETY: as for `read32`.
            Access::Mapped(p) => unsafe { p.as_ptr().add(offset as usize).cast::<u32>().write_volatile(value) },
            Access::File(base) => self.file_write(base + offset, &value.to_le_bytes()),
        }
    }

    /// Store 64 bits as one access.
    pub fn write64(&self, offset: u64, value: u64) {
        if !self.check(offset, 8) {
            return;
        }
        match self.access {
            // SAFETY: as for `read32`, with 8 bytes.
            Access::Mapped(p) => unsafe { p.as_ptr().add(offset as usize).cast::<u64>().write_volatile(value) },
            Access::File(base) => self.file_write(base + offset, &value.to_le_bytes()),
        }
    }

    fn file_write(&self, at: u64, bytes: &[u8]) {
        match rustix::io::pwrite(self.device.as_fd(), bytes, at) {
            Ok(n) if n == bytes.len() => {}
            other => tracing::error!(bar = self.index, at, result = ?other, "BAR store failed; dropped"),
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Access::Mapped(p) = self.access {
            // SAFETY: the mapping made in `new`, of `size` bytes, unmapped once; no access is in
            // flight (we are being dropped).
            if let Err(e) = unsafe { rustix::mm::munmap(p.as_ptr().cast(), self.size as usize) } {
                tracing::warn!(bar = self.index, error = %e, "munmap of a BAR failed");
            }
        }
    }
}
