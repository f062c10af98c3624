//! DMA memory for a VFIO function: anonymous memory of this process, or pages a caller hands over
//! ([`bnxt_pci::dma::HostPages`]), mapped into the container's IOMMU domain with
//! `VFIO_IOMMU_MAP_DMA` at a bus address of the container's own. Dropping the buffer unmaps it
//! from the IOMMU first (after which the device cannot reach it), then frees it.

use std::ptr::NonNull;
use std::sync::Arc;

use rustix::mm::{MapFlags, ProtFlags};

use super::container::Container;
use super::sys;
use bnxt_pci::{DmaBuffer, HostPages, IovaLease, PAGE_SIZE, PciError};

/// What backs a mapping.
enum Backing {
    /// An anonymous mapping of this many bytes, unmapped on drop.
    Anonymous(usize),
    /// Pages the caller handed over, freed on drop.
    Pages(#[allow(dead_code)] HostPages),
}

/// One mapping: its memory, and the IOMMU mapping of it.
struct Mapped {
    container: Arc<Container>,
    ptr: NonNull<u8>,
    len: usize,
    iova: u64,
    backing: Backing,
    /// The bus addresses, given back once the IOMMU no longer maps them.
    lease: Option<IovaLease>,
}

// SAFETY: the memory is owned by this value and reached only through the DmaBuffer's raw-pointer
// copies; the container is Sync (descriptors only).
unsafe impl Send for Mapped {}
// SAFETY: as for Send.
unsafe impl Sync for Mapped {}

impl Drop for Mapped {
    fn drop(&mut self) {
        if let Err(e) = sys::unmap_dma(self.container.fd(), self.iova, self.len as u64) {
            // The device may still reach the memory: leak it rather than free it under the device.
            tracing::error!(iova = self.iova, len = self.len, error = %e, "VFIO_IOMMU_UNMAP_DMA failed; memory leaked");
            if let Backing::Pages(pages) = std::mem::replace(&mut self.backing, Backing::Anonymous(0)) {
                std::mem::forget(pages);
            }
            // Its bus addresses stay taken too: the IOMMU may still map them.
            std::mem::forget(self.lease.take());
            return;
        }
        if let Backing::Anonymous(len) = self.backing
            && len > 0
        {
            // SAFETY: the anonymous mapping made in `allocate`, no longer reachable by the device
            // (unmapped from the IOMMU above) nor by any buffer (its owner is us).
            if let Err(e) = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), len) } {
                tracing::warn!(error = %e, "munmap of DMA memory failed");
            }
        }
    }
}

/// Map `len` bytes at `ptr` for the device at a bus address that is a multiple of `align`.
fn map(
    container: &Arc<Container>,
    ptr: NonNull<u8>,
    len: usize,
    align: usize,
    backing: Backing,
) -> Result<DmaBuffer, PciError> {
    let unmap_here = |backing: Backing| {
        if let Backing::Anonymous(n) = backing {
            // SAFETY: the anonymous mapping made in `allocate`, never mapped for the device and
            // not handed out.
            let _ = unsafe { rustix::mm::munmap(ptr.as_ptr().cast(), n) };
        }
    };
    let lease = match container.iovas().lease_aligned(len, align as u64) {
        Ok(lease) => lease,
        Err(e) => {
            unmap_here(backing);
            return Err(PciError::Dma { len, reason: e.to_string() });
        }
    };
    let iova = lease.iova();
    // SAFETY: `ptr..ptr + len` is memory this process owns (`backing`), kept mapped until the
    // `Mapped` that owns it is dropped, which unmaps it from the IOMMU first.
    if let Err(e) = unsafe { sys::map_dma(container.fd(), ptr.as_ptr() as u64, iova, len as u64) } {
        let hint = if e.raw_os_error() == Some(libc::ENOMEM) {
            " (the pages could not be pinned: raise the locked-memory limit, `ulimit -l`)"
        } else {
            ""
        };
        let reason = format!("VFIO_IOMMU_MAP_DMA of {len} bytes at bus address {iova:#x}: {e}{hint}");
        unmap_here(backing);
        return Err(PciError::Dma { len, reason });
    }
    let owner = Mapped { container: container.clone(), ptr, len, iova, backing, lease: Some(lease) };
    // SAFETY: `ptr` is valid for `len` bytes for as long as `owner` lives (it unmaps the device's
    // view first, then frees); the device reaches the memory by DMA, so it is only ever reached
    // here through raw-pointer copies.
    Ok(unsafe { DmaBuffer::from_raw(ptr, len, iova, Box::new(owner)) })
}

/// Size of the huge pages DMA memory is taken from where it can be (x86-64's 2 MiB).
pub const HUGE_PAGE: usize = 2 << 20;

/// Allocate `len` bytes (rounded up to pages) of zeroed memory and map it for the container.
///
/// A length of whole 2 MiB pages (a NIC's context memory comes in such runs) is taken from the
/// machine's pool of 2 MiB huge pages when it has free ones (`vm.nr_hugepages`), else from
/// ordinary pages. Huge pages are pinned in one step and the IOMMU maps them as 2 MiB pages
/// where it can (Intel VT-d second-level large pages): 512 times fewer IOMMU entries, and
/// behind an emulated IOMMU 512 times fewer invalidations for the host to follow.
pub fn allocate(container: &Arc<Container>, len: usize) -> Result<DmaBuffer, PciError> {
    let len = len.max(1).div_ceil(PAGE_SIZE) * PAGE_SIZE;
    let rw = ProtFlags::READ | ProtFlags::WRITE;
    let huge = len.is_multiple_of(HUGE_PAGE).then(|| {
        // SAFETY: as below, from the huge-page pool; fails (ENOMEM) when the pool has too few.
        unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                rw,
                MapFlags::PRIVATE | MapFlags::HUGETLB | MapFlags::HUGE_2MB,
            )
        }
    });
    if let Some(Err(e)) = &huge {
        tracing::trace!(len, error = %e, "no 2 MiB huge pages for DMA memory; ordinary pages");
    }
    if let Some(Ok(raw)) = huge {
        let ptr =
            NonNull::new(raw.cast::<u8>()).ok_or_else(|| PciError::Dma { len, reason: "mmap returned null".into() })?;
        return map(container, ptr, len, HUGE_PAGE, Backing::Anonymous(len));
    }
    // SAFETY: a fresh private anonymous mapping (zero-filled); the kernel picks the address, so
    // nothing else refers to it.
    let raw = unsafe { rustix::mm::mmap_anonymous(std::ptr::null_mut(), len, rw, MapFlags::PRIVATE) }
        .map_err(|e| PciError::Dma { len, reason: format!("mmap: {e}") })?;
    let ptr =
        NonNull::new(raw.cast::<u8>()).ok_or_else(|| PciError::Dma { len, reason: "mmap returned null".into() })?;
    map(container, ptr, len, PAGE_SIZE, Backing::Anonymous(len))
}

/// Map `pages` (its whole capacity) for the container; the buffer owns them.
pub fn map_pages(container: &Arc<Container>, pages: HostPages) -> Result<DmaBuffer, PciError> {
    let len = pages.capacity();
    let ptr = pages.as_ptr();
    map(container, ptr, len, PAGE_SIZE, Backing::Pages(pages))
}
