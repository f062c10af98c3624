//! The fixed part of each command's payload (what follows the header), as the specification
//! lays it out (QEMU `docs/interop/vfio-user.rst`; the same structs as QEMU's
//! hw/vfio-user/protocol.h and Linux `<linux/vfio.h>` where the message is derived from an
//! ioctl). Offsets are from the end of the header; sizes are asserted below.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

macro_rules! payload {
    ($(#[$m:meta])* $name:ident, $size:expr, { $($(#[$fm:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
        pub struct $name { $($(#[$fm])* pub $field: $ty),* }
        const _: () = assert!(size_of::<$name>() == $size);
    };
}

payload!(
    /// `VFIO_USER_VERSION` request and reply, followed by optional JSON capabilities with a
    /// terminating NUL.
    Version, 4, {
        /// Major version (0).
        major: u16,
        /// Minor version (0).
        minor: u16,
    }
);

payload!(
    /// `VFIO_USER_DMA_MAP` request (`struct vfio_iommu_type1_dma_map`); a file descriptor to
    /// `mmap` may come with it.
    DmaMap, 32, {
        /// Size of this structure.
        argsz: u32,
        /// [`crate::linux::DMA_MAP_FLAG_READ`] / [`crate::linux::DMA_MAP_FLAG_WRITE`].
        flags: u32,
        /// Offset of the region in the file descriptor.
        offset: u64,
        /// DMA (bus) address of the region.
        address: u64,
        /// Size of the region.
        size: u64,
    }
);

payload!(
    /// `VFIO_USER_DMA_UNMAP` request and reply (`struct vfio_iommu_type1_dma_unmap`).
    DmaUnmap, 24, {
        /// Request: largest reply payload; reply: the reply payload's size.
        argsz: u32,
        /// [`crate::linux::DMA_UNMAP_FLAG_ALL`] or 0.
        flags: u32,
        /// DMA address of the region.
        address: u64,
        /// Size of the region.
        size: u64,
    }
);

payload!(
    /// `VFIO_USER_DEVICE_GET_INFO` request and reply (`struct vfio_device_info`).
    DeviceInfo, 16, {
        /// Request: largest reply payload; reply: the full reply payload's size.
        argsz: u32,
        /// [`crate::linux::DEVICE_FLAGS_RESET`], [`crate::linux::DEVICE_FLAGS_PCI`].
        flags: u32,
        /// Number of regions.
        num_regions: u32,
        /// Number of interrupt types.
        num_irqs: u32,
    }
);

payload!(
    /// `VFIO_USER_DEVICE_GET_REGION_INFO` request and reply (`struct vfio_region_info`).
    RegionInfo, 32, {
        /// Request: largest reply payload; reply: the full reply payload's size.
        argsz: u32,
        /// `VFIO_REGION_INFO_FLAG_*`.
        flags: u32,
        /// Region index.
        index: u32,
        /// Offset of the first region capability (0: none).
        cap_offset: u32,
        /// Size of the region.
        size: u64,
        /// Offset to `mmap` the region's file descriptor at.
        offset: u64,
    }
);

payload!(
    /// `VFIO_USER_DEVICE_GET_IRQ_INFO` request and reply (`struct vfio_irq_info`).
    IrqInfo, 16, {
        /// Request: largest reply payload; reply: the full reply payload's size.
        argsz: u32,
        /// `VFIO_IRQ_INFO_*`.
        flags: u32,
        /// Interrupt type (`VFIO_PCI_*_IRQ_INDEX`).
        index: u32,
        /// Number of interrupts of this type.
        count: u32,
    }
);

payload!(
    /// `VFIO_USER_DEVICE_SET_IRQS` request (`struct vfio_irq_set`), followed by `count` booleans
    /// with `VFIO_IRQ_SET_DATA_BOOL`; eventfds come as file descriptors.
    IrqSet, 20, {
        /// Size of the request payload, data included.
        argsz: u32,
        /// One `VFIO_IRQ_SET_DATA_*` and one `VFIO_IRQ_SET_ACTION_*` bit.
        flags: u32,
        /// Interrupt type.
        index: u32,
        /// First interrupt of the range.
        start: u32,
        /// Number of interrupts.
        count: u32,
    }
);

payload!(
    /// `VFIO_USER_REGION_READ` / `VFIO_USER_REGION_WRITE` request and reply, followed by the data
    /// (write request, read reply).
    RegionAccess, 16, {
        /// Offset into the region.
        offset: u64,
        /// Region index.
        region: u32,
        /// Bytes to transfer.
        count: u32,
    }
);

payload!(
    /// `VFIO_USER_REGION_WRITE_MULTI` request: how many [`WriteOne`] follow.
    WriteMulti, 8, {
        /// Number of writes.
        wr_cnt: u64,
    }
);

payload!(
    /// One write of a `VFIO_USER_REGION_WRITE_MULTI` request (at most 8 bytes).
    WriteOne, 24, {
        /// Offset into the region.
        offset: u64,
        /// Region index.
        region: u32,
        /// Bytes to write (1-8).
        count: u32,
        /// The data (the first `count` bytes are used).
        data: [u8; 8],
    }
);
