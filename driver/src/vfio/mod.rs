//! The VFIO backend of the seam: real BCM57608 functions bound to the kernel's vfio-pci driver,
//! reached through `/dev/vfio` (Linux Documentation/driver-api/vfio.rst) with the type1 IOMMU.
//! [`crate::sysfs::SysfsMachine`] lists a machine's functions and takes them through here.
//!
//! * [`sys`]: the ioctls, each wrapped once;
//! * [`container`]: an IOMMU group in its container, and the container's bus addresses;
//! * [`iommu_info`]: what the container's IOMMU allows (usable ranges, mappings left);
//! * [`bar`]: BARs, mapped or through pread/pwrite;
//! * [`memory`]: DMA memory mapped into the container;
//! * [`function`]: a [`crate::PciFunction`] over them.
//!
//! Time is real here: a firmware timeout costs its wall time.

#[allow(unsafe_code)] // DMA and MMIO: each block has its SAFETY argument
pub mod bar;
pub mod container;
pub mod function;
pub mod iommu_info;
#[allow(unsafe_code)] // DMA and MMIO: each block has its SAFETY argument
pub mod memory;
#[allow(unsafe_code)] // DMA and MMIO: each block has its SAFETY argument
pub mod sys;

pub use container::{Container, ContainerError};
pub use function::VfioFunction;
