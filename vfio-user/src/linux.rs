//! Constants vfio-user takes from Linux `include/uapi/linux/vfio.h` (the values of
//! `VFIO_DEVICE_FLAGS_*`, `VFIO_REGION_INFO_FLAG_*`, `VFIO_IRQ_INFO_*`, `VFIO_IRQ_SET_*`,
//! `VFIO_DMA_MAP_FLAG_*`, `VFIO_DMA_UNMAP_FLAG_*` and the vfio-pci region and interrupt indexes).

/// `VFIO_DEVICE_FLAGS_RESET`: the device supports reset.
pub const DEVICE_FLAGS_RESET: u32 = 1 << 0;
/// `VFIO_DEVICE_FLAGS_PCI`: a PCI device.
pub const DEVICE_FLAGS_PCI: u32 = 1 << 1;

/// `VFIO_REGION_INFO_FLAG_READ`.
pub const REGION_INFO_FLAG_READ: u32 = 1 << 0;
/// `VFIO_REGION_INFO_FLAG_WRITE`.
pub const REGION_INFO_FLAG_WRITE: u32 = 1 << 1;
/// `VFIO_REGION_INFO_FLAG_MMAP`.
pub const REGION_INFO_FLAG_MMAP: u32 = 1 << 2;
/// `VFIO_REGION_INFO_FLAG_CAPS`.
pub const REGION_INFO_FLAG_CAPS: u32 = 1 << 3;

/// `VFIO_PCI_BAR0_REGION_INDEX`; BAR n is region n (n = 0..5).
pub const PCI_BAR0_REGION_INDEX: u32 = 0;
/// `VFIO_PCI_ROM_REGION_INDEX`.
pub const PCI_ROM_REGION_INDEX: u32 = 6;
/// `VFIO_PCI_CONFIG_REGION_INDEX`.
pub const PCI_CONFIG_REGION_INDEX: u32 = 7;
/// `VFIO_PCI_VGA_REGION_INDEX`.
pub const PCI_VGA_REGION_INDEX: u32 = 8;
/// `VFIO_PCI_NUM_REGIONS`.
pub const PCI_NUM_REGIONS: u32 = 9;

/// `VFIO_PCI_INTX_IRQ_INDEX`.
pub const PCI_INTX_IRQ_INDEX: u32 = 0;
/// `VFIO_PCI_MSI_IRQ_INDEX`.
pub const PCI_MSI_IRQ_INDEX: u32 = 1;
/// `VFIO_PCI_MSIX_IRQ_INDEX`.
pub const PCI_MSIX_IRQ_INDEX: u32 = 2;
/// `VFIO_PCI_ERR_IRQ_INDEX`.
pub const PCI_ERR_IRQ_INDEX: u32 = 3;
/// `VFIO_PCI_REQ_IRQ_INDEX`.
pub const PCI_REQ_IRQ_INDEX: u32 = 4;
/// `VFIO_PCI_NUM_IRQS`.
pub const PCI_NUM_IRQS: u32 = 5;

/// `VFIO_IRQ_INFO_EVENTFD`: the interrupt can signal an eventfd.
pub const IRQ_INFO_EVENTFD: u32 = 1 << 0;
/// `VFIO_IRQ_INFO_MASKABLE`.
pub const IRQ_INFO_MASKABLE: u32 = 1 << 1;
/// `VFIO_IRQ_INFO_AUTOMASKED`.
pub const IRQ_INFO_AUTOMASKED: u32 = 1 << 2;
/// `VFIO_IRQ_INFO_NORESIZE`.
pub const IRQ_INFO_NORESIZE: u32 = 1 << 3;

/// `VFIO_IRQ_SET_DATA_NONE`.
pub const IRQ_SET_DATA_NONE: u32 = 1 << 0;
/// `VFIO_IRQ_SET_DATA_BOOL`.
pub const IRQ_SET_DATA_BOOL: u32 = 1 << 1;
/// `VFIO_IRQ_SET_DATA_EVENTFD`.
pub const IRQ_SET_DATA_EVENTFD: u32 = 1 << 2;
/// `VFIO_IRQ_SET_ACTION_MASK`.
pub const IRQ_SET_ACTION_MASK: u32 = 1 << 3;
/// `VFIO_IRQ_SET_ACTION_UNMASK`.
pub const IRQ_SET_ACTION_UNMASK: u32 = 1 << 4;
/// `VFIO_IRQ_SET_ACTION_TRIGGER`.
pub const IRQ_SET_ACTION_TRIGGER: u32 = 1 << 5;
/// `VFIO_IRQ_SET_DATA_TYPE_MASK`.
pub const IRQ_SET_DATA_TYPE_MASK: u32 = IRQ_SET_DATA_NONE | IRQ_SET_DATA_BOOL | IRQ_SET_DATA_EVENTFD;
/// `VFIO_IRQ_SET_ACTION_TYPE_MASK`.
pub const IRQ_SET_ACTION_TYPE_MASK: u32 = IRQ_SET_ACTION_MASK | IRQ_SET_ACTION_UNMASK | IRQ_SET_ACTION_TRIGGER;

/// `VFIO_DMA_MAP_FLAG_READ`: the device may read the region.
pub const DMA_MAP_FLAG_READ: u32 = 1 << 0;
/// `VFIO_DMA_MAP_FLAG_WRITE`: the device may write the region.
pub const DMA_MAP_FLAG_WRITE: u32 = 1 << 1;
/// `VFIO_DMA_UNMAP_FLAG_ALL`: unmap every region (QEMU sends it with address and size 0).
pub const DMA_UNMAP_FLAG_ALL: u32 = 1 << 1;

/// Linux errno values used in error replies (asm-generic/errno-base.h, errno.h).
pub mod errno {
    /// `EPERM`.
    pub const EPERM: u32 = 1;
    /// `ENOENT`.
    pub const ENOENT: u32 = 2;
    /// `EIO`.
    pub const EIO: u32 = 5;
    /// `EBADF`.
    pub const EBADF: u32 = 9;
    /// `ENOMEM`.
    pub const ENOMEM: u32 = 12;
    /// `EFAULT`.
    pub const EFAULT: u32 = 14;
    /// `EEXIST`.
    pub const EEXIST: u32 = 17;
    /// `EINVAL`.
    pub const EINVAL: u32 = 22;
    /// `ENOSPC`.
    pub const ENOSPC: u32 = 28;
    /// `E2BIG`.
    pub const E2BIG: u32 = 7;
    /// `ENOSYS`.
    pub const ENOSYS: u32 = 38;
    /// `ENOTSUP` (= `EOPNOTSUPP`).
    pub const ENOTSUP: u32 = 95;
}
