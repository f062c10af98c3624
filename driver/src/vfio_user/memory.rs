//! DMA memory for a vfio-user function: a memfd per allocation, sealed against shrinking and
//! growing (so the server can map it without fear of SIGBUS), mapped here and lent to the server
//! with `VFIO_USER_DMA_MAP` at a bus address of the function's own address space. Dropping the
//! buffer unmaps it on the server first, then here.

use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::Arc;

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};

use super::client::Client;
use bnxt_pci::{DmaBuffer, IovaAllocator, IovaLease, PAGE_SIZE, PciError};

/// One allocation: the memfd, its mapping here, and its mapping on the server.
struct Lent {
    client: Arc<Client>,
    _memfd: OwnedFd,
    ptr: NonNull<u8>,
    len: usize,
    iova: u64,
    // Given back to the allocator after the server let go of the region (fields drop after `drop`).
    _lease: IovaLease,
}

// SAFETY: the mapping is owned by this value and only reached through the DmaBuffer's raw-pointer
// copies; the client is Sync (a mutex inside).
unsafe impl Send for Lent {}
// SAFETY: as for Send.
unsafe impl Sync for Lent {}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Err(e) = self.client.dma_unmap(self.iova, self.len as u64) {
            tracing::warn!(iova = self.iova, error = %e, "the server did not take back a DMA region");
        }
        // SAFETY: `ptr`/`len` are what mmap returned in `allocate`; unmapped once, after the
        // server let go of the region, with no buffer left pointing into it (its owner is us).
        if let Err(e) = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) } {
            tracing::warn!(error = %e, "munmap of DMA memory failed");
        }
    }
}

/// Allocate `len` bytes (rounded up to pages) of zeroed DMA memory lent to `client`'s device.
pub fn allocate(client: &Arc<Client>, iovas: &Arc<IovaAllocator>, len: usize) -> Result<DmaBuffer, PciError> {
    let len = len.max(1).div_ceil(PAGE_SIZE) * PAGE_SIZE;
    let fail = |reason: String| PciError::Dma { len, reason };
    let memfd = rustix::fs::memfd_create("bnxt-dma", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)
        .map_err(|e| fail(format!("memfd_create: {e}")))?;
    rustix::fs::ftruncate(&memfd, len as u64).map_err(|e| fail(format!("ftruncate: {e}")))?;
    rustix::fs::fcntl_add_seals(&memfd, SealFlags::SHRINK | SealFlags::GROW)
        .map_err(|e| fail(format!("sealing the memfd: {e}")))?;
    // SAFETY: a fresh shared mapping of a memfd of exactly `len` bytes that can no longer shrink;
    // the kernel picks the address, so nothing else refers to it.
    let raw = unsafe {
        rustix::mm::mmap(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, &memfd, 0)
    }
    .map_err(|e| fail(format!("mmap: {e}")))?;
    let ptr = NonNull::new(raw.cast::<u8>()).ok_or_else(|| fail("mmap returned null".into()))?;
    let unmap_here = || {
        // SAFETY: the mapping made above, not handed out.
        let _ = unsafe { rustix::mm::munmap(ptr.as_ptr().cast(), len) };
    };
    let lease = match iovas.lease(len) {
        Ok(lease) => lease,
        Err(e) => {
            unmap_here();
            return Err(fail(e.to_string()));
        }
    };
    let iova = lease.iova();
    if let Err(e) = client.dma_map(iova, len as u64, 0, memfd.as_fd()) {
        unmap_here();
        return Err(fail(e.to_string()));
    }
    let owner = Lent { client: client.clone(), _memfd: memfd, ptr, len, iova, _lease: lease };
    // SAFETY: `ptr` is valid for `len` bytes for as long as `owner` lives (it unmaps on drop,
    // after the server let go); the memory is shared with the server process, which is the
    // device side of DMA, and is only reached through raw-pointer copies here.
    Ok(unsafe { DmaBuffer::from_raw(ptr, len, iova, Box::new(owner)) })
}
