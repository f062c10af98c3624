//! The kernel's VFIO interface, as much of it as this backend uses: each ioctl wrapped once, with
//! its safety argument here and nowhere else.
//!
//! Numbers, flags and layouts: Linux `include/uapi/linux/vfio.h` (`VFIO_TYPE` ';', `VFIO_BASE`
//! 100, the `_IO` numbers of `VFIO_GET_API_VERSION` .. `VFIO_IOMMU_UNMAP_DMA`), taken through the
//! `vfio-bindings` crate (rust-vmm), which is generated from that header.

use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use vfio_bindings::bindings::vfio::{
    VFIO_BASE, VFIO_DMA_MAP_FLAG_READ, VFIO_DMA_MAP_FLAG_WRITE, VFIO_TYPE, vfio_group_status, vfio_iommu_type1_dma_map,
    vfio_iommu_type1_dma_unmap, vfio_region_info,
};

pub use vfio_bindings::bindings::vfio::{
    VFIO_API_VERSION, VFIO_GROUP_FLAGS_CONTAINER_SET, VFIO_GROUP_FLAGS_VIABLE, VFIO_PCI_CONFIG_REGION_INDEX,
    VFIO_REGION_INFO_FLAG_MMAP, VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE, VFIO_TYPE1v2_IOMMU,
};

/// `_IO(VFIO_TYPE, VFIO_BASE + n)`: VFIO's ioctls carry no size or direction in their numbers.
const fn op(n: u32) -> u32 {
    ((VFIO_TYPE as u32) << 8) | (VFIO_BASE + n)
}

const GET_API_VERSION: u32 = op(0);
const CHECK_EXTENSION: u32 = op(1);
const SET_IOMMU: u32 = op(2);
const GROUP_GET_STATUS: u32 = op(3);
const GROUP_SET_CONTAINER: u32 = op(4);
const GROUP_GET_DEVICE_FD: u32 = op(6);
const DEVICE_GET_REGION_INFO: u32 = op(8);
const DEVICE_RESET: u32 = op(11);
const IOMMU_GET_INFO: u32 = op(12);
const IOMMU_MAP_DMA: u32 = op(13);
const IOMMU_UNMAP_DMA: u32 = op(14);

/// The result of `ioctl(2)`: its non-negative return, or errno.
fn check(ret: libc::c_int) -> std::io::Result<libc::c_int> {
    if ret < 0 { Err(std::io::Error::last_os_error()) } else { Ok(ret) }
}

/// `argsz` of a VFIO argument structure.
fn argsz<T>() -> u32 {
    std::mem::size_of::<T>() as u32
}

/// `VFIO_GET_API_VERSION` on a container.
pub fn api_version(container: BorrowedFd<'_>) -> std::io::Result<i32> {
    // SAFETY: an argument-less ioctl on a descriptor we hold; it touches no memory of ours.
    check(unsafe { libc::ioctl(container.as_raw_fd(), GET_API_VERSION as libc::Ioctl) })
}

/// `VFIO_CHECK_EXTENSION`: whether the container supports IOMMU model `extension`.
pub fn has_extension(container: BorrowedFd<'_>, extension: u32) -> std::io::Result<bool> {
    // SAFETY: the argument is an integer passed by value; no memory of ours is touched.
    check(unsafe { libc::ioctl(container.as_raw_fd(), CHECK_EXTENSION as libc::Ioctl, extension as libc::c_ulong) })
        .map(|r| r > 0)
}

/// `VFIO_SET_IOMMU`: the container's IOMMU model (once a group is in it).
pub fn set_iommu(container: BorrowedFd<'_>, model: u32) -> std::io::Result<()> {
    // SAFETY: as for `has_extension`.
    check(unsafe { libc::ioctl(container.as_raw_fd(), SET_IOMMU as libc::Ioctl, model as libc::c_ulong) }).map(drop)
}

/// `VFIO_GROUP_GET_STATUS`: the group's flags (`VFIO_GROUP_FLAGS_*`).
pub fn group_flags(group: BorrowedFd<'_>) -> std::io::Result<u32> {
    let mut status = vfio_group_status { argsz: argsz::<vfio_group_status>(), flags: 0 };
    // SAFETY: the kernel writes at most `argsz` bytes into `status`, a live local of that size.
    check(unsafe { libc::ioctl(group.as_raw_fd(), GROUP_GET_STATUS as libc::Ioctl, &mut status) })?;
    Ok(status.flags)
}

/// `VFIO_GROUP_SET_CONTAINER`: put the group into the container.
pub fn group_set_container(group: BorrowedFd<'_>, container: BorrowedFd<'_>) -> std::io::Result<()> {
    let fd: libc::c_int = container.as_raw_fd();
    // SAFETY: the kernel reads one int from `&fd`, a live local.
    check(unsafe { libc::ioctl(group.as_raw_fd(), GROUP_SET_CONTAINER as libc::Ioctl, &fd) }).map(drop)
}

/// `VFIO_GROUP_GET_DEVICE_FD`: a descriptor for the device named `bus` in the group.
pub fn group_device(group: BorrowedFd<'_>, bus: &str) -> std::io::Result<OwnedFd> {
    let name = CString::new(bus).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: the kernel reads the NUL-terminated string `name`, which outlives the call.
    let fd = check(unsafe { libc::ioctl(group.as_raw_fd(), GROUP_GET_DEVICE_FD as libc::Ioctl, name.as_ptr()) })?;
    // SAFETY: on success the ioctl returns a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One region of a device, as `VFIO_DEVICE_GET_REGION_INFO` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionInfo {
    /// `VFIO_REGION_INFO_FLAG_*`.
    pub flags: u32,
    /// Its size in bytes (0: the device has no such region, an unimplemented BAR).
    pub size: u64,
    /// Where it lies in the device descriptor's file offsets (for pread/pwrite/mmap).
    pub offset: u64,
}

/// `VFIO_DEVICE_GET_REGION_INFO` for region `index` (BAR n is region n; config space is
/// [`VFIO_PCI_CONFIG_REGION_INDEX`]).
pub fn region_info(device: BorrowedFd<'_>, index: u32) -> std::io::Result<RegionInfo> {
    let mut info = vfio_region_info { argsz: argsz::<vfio_region_info>(), index, ..Default::default() };
    // SAFETY: the kernel writes at most `argsz` bytes into `info`, a live local of that size
    // (capability chains beyond it are only written when argsz says there is room).
    check(unsafe { libc::ioctl(device.as_raw_fd(), DEVICE_GET_REGION_INFO as libc::Ioctl, &mut info) })?;
    Ok(RegionInfo { flags: info.flags, size: info.size, offset: info.offset })
}

/// `VFIO_DEVICE_RESET`: a function-level reset (or whatever reset the kernel has for it).
pub fn device_reset(device: BorrowedFd<'_>) -> std::io::Result<()> {
    // SAFETY: an argument-less ioctl on a descriptor we hold.
    check(unsafe { libc::ioctl(device.as_raw_fd(), DEVICE_RESET as libc::Ioctl) }).map(drop)
}

/// `VFIO_IOMMU_GET_INFO`: the container's IOMMU information with its capability chain, as the
/// bytes the kernel wrote (read with `iommu_info::parse`).
pub fn iommu_info(container: BorrowedFd<'_>) -> std::io::Result<Vec<u8>> {
    use super::iommu_info::Type1Info;
    use zerocopy::{FromBytes, IntoBytes};
    let mut info = Type1Info { argsz: argsz::<Type1Info>(), ..Default::default() };
    // SAFETY: the kernel writes at most `argsz` bytes into `info`, a live local of that size; it
    // says in `argsz` how much room the capability chain needs.
    check(unsafe {
        libc::ioctl(container.as_raw_fd(), IOMMU_GET_INFO as libc::Ioctl, info.as_mut_bytes().as_mut_ptr())
    })?;
    let need = (info.argsz as usize).max(size_of::<Type1Info>());
    let mut buf = vec![0u8; need];
    buf[..4].copy_from_slice(&(need as u32).to_ne_bytes());
    // SAFETY: as above, with `buf` of `argsz` = `need` bytes.
    check(unsafe { libc::ioctl(container.as_raw_fd(), IOMMU_GET_INFO as libc::Ioctl, buf.as_mut_ptr()) })?;
    let written = Type1Info::read_from_prefix(&buf).map(|(i, _)| i.argsz as usize).unwrap_or(0);
    buf.truncate(written.clamp(size_of::<Type1Info>(), need));
    Ok(buf)
}

/// `VFIO_IOMMU_MAP_DMA`: let the container's devices read and write `size` bytes of this
/// process's memory at `vaddr` through bus address `iova`. The kernel pins the pages.
///
/// # Safety
///
/// `vaddr..vaddr + size` must be memory this process owns and keeps mapped until
/// [`unmap_dma`] of the same range returns: the device may write it at any time until then.
pub unsafe fn map_dma(container: BorrowedFd<'_>, vaddr: u64, iova: u64, size: u64) -> std::io::Result<()> {
    let map = vfio_iommu_type1_dma_map {
        argsz: argsz::<vfio_iommu_type1_dma_map>(),
        flags: VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
        vaddr,
        iova,
        size,
    };
    // SAFETY: the kernel reads `map`, a live local; what the mapping lets the device reach is
    // the caller's promise above.
    check(unsafe { libc::ioctl(container.as_raw_fd(), IOMMU_MAP_DMA as libc::Ioctl, &map) }).map(drop)
}

/// `VFIO_IOMMU_UNMAP_DMA`: take back the mapping at `iova` (the device can no longer reach it
/// once this returns).
pub fn unmap_dma(container: BorrowedFd<'_>, iova: u64, size: u64) -> std::io::Result<()> {
    let mut unmap =
        vfio_iommu_type1_dma_unmap { argsz: argsz::<vfio_iommu_type1_dma_unmap>(), iova, size, ..Default::default() };
    // SAFETY: the kernel reads and updates (`size`: what it unmapped) `unmap`, a live local of
    // `argsz` bytes; no bitmap is asked for.
    check(unsafe { libc::ioctl(container.as_raw_fd(), IOMMU_UNMAP_DMA as libc::Ioctl, &mut unmap) }).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_are_vfio_h_s() {
        // linux/vfio.h: VFIO_GET_API_VERSION is _IO(';', 100) = 0x3b64; VFIO_IOMMU_UNMAP_DMA is
        // _IO(';', 114) = 0x3b72.
        assert_eq!(GET_API_VERSION, 0x3b64);
        assert_eq!(GROUP_GET_DEVICE_FD, 0x3b6a);
        assert_eq!(DEVICE_RESET, 0x3b6f);
        assert_eq!(IOMMU_GET_INFO, 0x3b70);
        assert_eq!(IOMMU_MAP_DMA, 0x3b71);
        assert_eq!(IOMMU_UNMAP_DMA, 0x3b72);
    }
}
