//! A VFIO group in its own container: the IOMMU domain the functions of one IOMMU group share.
//!
//! Linux Documentation/driver-api/vfio.rst ("VFIO Usage Example"): open `/dev/vfio/vfio` (the
//! container), check the API version and the type1 IOMMU extension, open `/dev/vfio/GROUP`, check
//! that it is viable (every device in it bound to vfio-pci or none), put it into the container,
//! set the IOMMU model, and only then get device descriptors from the group. DMA mappings are the
//! container's: every function of the group reaches them.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};

use super::iommu_info::{self, IommuLimits};
use super::sys;
use bnxt_pci::{IovaAllocator, iova};

/// Why a group could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    /// A file could not be opened.
    #[error("open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Another process has the group open (the kernel lets one open it at a time).
    #[error("{path} is open in another process")]
    Busy {
        /// The group's file.
        path: PathBuf,
    },
    /// An ioctl failed.
    #[error("{what}: {source}")]
    Ioctl {
        /// Which step.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// The kernel's VFIO lacks what this backend needs.
    #[error("{0}")]
    Unsupported(String),
}

/// An open group in its container, with the container's bus-address allocator.
#[derive(Debug)]
pub struct Container {
    // Field order is drop order: the group leaves the container before the container closes.
    group: OwnedFd,
    container: OwnedFd,
    group_path: PathBuf,
    iovas: Arc<IovaAllocator>,
}

fn open(path: &Path) -> Result<OwnedFd, ContainerError> {
    rustix::fs::open(path, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).map_err(|e| {
        if e == rustix::io::Errno::BUSY {
            ContainerError::Busy { path: path.to_path_buf() }
        } else {
            ContainerError::Open { path: path.to_path_buf(), source: e.into() }
        }
    })
}

impl Container {
    /// Open IOMMU group `group` under `dev_vfio` (normally `/dev/vfio`) in a container of its own
    /// with the type1 (v2) IOMMU model.
    pub fn open(dev_vfio: &Path, group: &str) -> Result<Arc<Container>, ContainerError> {
        let ioctl = |what: &'static str| move |source: std::io::Error| ContainerError::Ioctl { what, source };
        let container = open(&dev_vfio.join("vfio"))?;
        let version = sys::api_version(container.as_fd()).map_err(ioctl("VFIO_GET_API_VERSION"))?;
        if version != sys::VFIO_API_VERSION as i32 {
            return Err(ContainerError::Unsupported(format!(
                "the kernel's VFIO API is version {version}, this backend speaks {}",
                sys::VFIO_API_VERSION
            )));
        }
        if !sys::has_extension(container.as_fd(), sys::VFIO_TYPE1v2_IOMMU).map_err(ioctl("VFIO_CHECK_EXTENSION"))? {
            return Err(ContainerError::Unsupported(
                "the kernel's VFIO has no type1v2 IOMMU (no IOMMU enabled? boot with intel_iommu=on or amd_iommu=on)"
                    .into(),
            ));
        }
        let group_path = dev_vfio.join(group);
        let group_fd = open(&group_path)?;
        let flags = sys::group_flags(group_fd.as_fd()).map_err(ioctl("VFIO_GROUP_GET_STATUS"))?;
        if flags & sys::VFIO_GROUP_FLAGS_VIABLE == 0 {
            return Err(ContainerError::Unsupported(format!(
                "IOMMU group {group} is not viable: another device in it is bound to a kernel driver \
                 (bind every device of the group to vfio-pci)"
            )));
        }
        sys::group_set_container(group_fd.as_fd(), container.as_fd()).map_err(ioctl("VFIO_GROUP_SET_CONTAINER"))?;
        sys::set_iommu(container.as_fd(), sys::VFIO_TYPE1v2_IOMMU).map_err(ioctl("VFIO_SET_IOMMU"))?;
        let info = sys::iommu_info(container.as_fd()).map_err(ioctl("VFIO_IOMMU_GET_INFO"))?;
        let limits = iommu_info::parse(&info).map_err(|e| ContainerError::Unsupported(e.to_string()))?;
        let iovas = Arc::new(allocator_for(&limits));
        Ok(Arc::new(Container { group: group_fd, container, group_path, iovas }))
    }

    /// A descriptor for device `bus` of the group.
    pub fn device(&self, bus: &str) -> Result<OwnedFd, ContainerError> {
        sys::group_device(self.group.as_fd(), bus)
            .map_err(|source| ContainerError::Ioctl { what: "VFIO_GROUP_GET_DEVICE_FD", source })
    }

    /// The container's descriptor (for DMA mappings).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.container.as_fd()
    }

    /// Bus addresses for the container's mappings.
    pub fn iovas(&self) -> &Arc<IovaAllocator> {
        &self.iovas
    }

    /// The group's file (`/dev/vfio/12`).
    pub fn group_path(&self) -> &Path {
        &self.group_path
    }
}

/// The bus addresses a container hands out: the kernel's usable ranges above 4 GiB (so that
/// 32-bit truncation bugs show), or all of them when none lies that high, and no more mappings
/// than the kernel has room for (`dma_entry_limit`).
fn allocator_for(limits: &IommuLimits) -> IovaAllocator {
    let preferred = iova::DEFAULT_BASE..=iova::DEFAULT_LAST;
    let ranges = match &limits.ranges {
        None => vec![preferred],
        Some(ranges) => {
            let high: Vec<_> = ranges
                .iter()
                .filter_map(|r| {
                    let (s, e) = ((*r.start()).max(*preferred.start()), (*r.end()).min(*preferred.end()));
                    (s <= e).then_some(s..=e)
                })
                .collect();
            if high.is_empty() { ranges.clone() } else { high }
        }
    };
    let limit = limits.dma_avail.map_or(usize::MAX, |n| n as usize);
    IovaAllocator::new(&ranges, limit)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn the_allocator_keeps_to_the_kernels_ranges_above_4_gib_and_its_mapping_limit() {
        let limits =
            IommuLimits { ranges: Some(vec![0..=0xfedf_ffff, 0xfef0_0000..=(1 << 39) - 1]), dma_avail: Some(2) };
        let a = Arc::new(allocator_for(&limits));
        let x = a.lease(4096).unwrap();
        assert_eq!(x.iova(), iova::DEFAULT_BASE);
        let _y = a.lease(4096).unwrap();
        assert!(a.lease(4096).is_err(), "no more than the kernel's limit");
        // An IOMMU with no room above 4 GiB: its own ranges.
        let low = IommuLimits { ranges: Some(vec![0x1000..=0xffff_ffff]), dma_avail: None };
        assert_eq!(Arc::new(allocator_for(&low)).lease(1).unwrap().iova(), 0x1000);
        // A kernel that says nothing: the default.
        assert_eq!(Arc::new(allocator_for(&IommuLimits::default())).lease(1).unwrap().iova(), iova::DEFAULT_BASE);
    }
}
