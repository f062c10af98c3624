//! What a driver needs from one PCI function ([`PciFunction`]), and config-space helpers over it.

use crate::dma::{DmaBuffer, HostPages};
use crate::{Clock, PciError};

/// What a driver needs from one PCI function, and nothing more.
///
/// BAR accesses never fail (as on hardware: a dead device reads all-ones); config-space accesses
/// and DMA allocation may. All methods take `&self`: a backend serialises what must be serialised.
pub trait PciFunction: Send + Sync {
    /// The function's bus address (`0000:41:00.0`).
    fn bus(&self) -> &str;
    /// Read `data.len()` bytes (1, 2 or 4, naturally aligned) of config space at `offset`.
    fn config_read(&self, offset: u16, data: &mut [u8]) -> Result<(), PciError>;
    /// Write `data` (1, 2 or 4 bytes, naturally aligned) to config space at `offset`.
    fn config_write(&self, offset: u16, data: &[u8]) -> Result<(), PciError>;
    /// Load 32 bits from BAR `bar` at `offset`.
    fn bar_read32(&self, bar: u8, offset: u64) -> u32;
    /// Store 32 bits to BAR `bar` at `offset`.
    fn bar_write32(&self, bar: u8, offset: u64, value: u32);
    /// Store 64 bits to BAR `bar` at `offset` as one access (doorbells need this).
    fn bar_write64(&self, bar: u8, offset: u64, value: u64);
    /// Allocate `len` bytes (rounded up to whole 4-KB pages) of zeroed memory the device can
    /// reach by DMA, page aligned, with its bus address. Freed (and unmapped from the device)
    /// when the returned buffer is dropped.
    fn alloc_dma(&self, len: usize) -> Result<DmaBuffer, PciError>;
    /// Map process memory the caller hands over for the device, whole pages
    /// ([`HostPages::capacity`] bytes), with its bus address. The returned buffer owns the
    /// memory: it is unmapped and freed when the buffer is dropped. A backend that cannot map
    /// process memory says so (the default).
    fn map_dma(&self, memory: HostPages) -> Result<DmaBuffer, PciError> {
        Err(PciError::Dma {
            len: memory.capacity(),
            reason: "this target cannot map process memory for the device".into(),
        })
    }
    /// Reset the function (PCIe function-level reset) and wait until it may be used again.
    fn reset(&self) -> Result<(), PciError>;
    /// The clock the driver times its waits by.
    fn clock(&self) -> &dyn Clock;
    /// Let every BAR store made so far reach the device. A backend whose transport holds posted
    /// stores back to send them together does so here, as a CPU's write-combining buffer
    /// drains at a fence; the driver calls this before it reads what the device writes to
    /// memory (a completion queue), and the backend's clock does before a wait. Stores on a
    /// bus reach the device by themselves: the default does nothing.
    fn flush_posted(&self) {}
}

/// Refuse a config-space access that is not a naturally aligned 1, 2 or 4 byte access inside the
/// 4 KiB of a PCIe function's config space (what backends that pass accesses on check first).
///
/// # Errors
///
/// [`PciError::Config`] naming the access.
pub fn check_config_access(offset: u16, len: usize) -> Result<(), PciError> {
    let aligned = matches!(len, 1 | 2 | 4) && usize::from(offset) % len == 0;
    if !aligned || usize::from(offset) + len > 4096 {
        return Err(PciError::Config {
            offset,
            len,
            reason: "not a naturally aligned 1, 2 or 4 byte access inside 4 KiB".into(),
        });
    }
    Ok(())
}

/// Config-space helpers over any [`PciFunction`].
pub trait ConfigExt {
    /// Read a 16-bit config register.
    fn config_read16(&self, offset: u16) -> Result<u16, PciError>;
    /// Write a 16-bit config register.
    fn config_write16(&self, offset: u16, value: u16) -> Result<(), PciError>;
    /// Read an 8-bit config register.
    fn config_read8(&self, offset: u16) -> Result<u8, PciError>;
    /// Read a 32-bit config register.
    fn config_read32(&self, offset: u16) -> Result<u32, PciError>;
    /// Find a standard capability by id in the capability list; its config-space offset.
    fn find_capability(&self, id: u8) -> Result<Option<u16>, PciError>;
}

impl<T: PciFunction + ?Sized> ConfigExt for T {
    fn config_read16(&self, offset: u16) -> Result<u16, PciError> {
        let mut b = [0u8; 2];
        self.config_read(offset, &mut b)?;
        Ok(u16::from_le_bytes(b))
    }
    fn config_write16(&self, offset: u16, value: u16) -> Result<(), PciError> {
        self.config_write(offset, &value.to_le_bytes())
    }
    fn config_read8(&self, offset: u16) -> Result<u8, PciError> {
        let mut b = [0u8; 1];
        self.config_read(offset, &mut b)?;
        Ok(b[0])
    }
    fn config_read32(&self, offset: u16) -> Result<u32, PciError> {
        let mut b = [0u8; 4];
        self.config_read(offset, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn find_capability(&self, id: u8) -> Result<Option<u16>, PciError> {
        const STATUS: u16 = 0x06;
        const STATUS_CAP_LIST: u16 = 0x10;
        const CAP_PTR: u16 = 0x34;
        if self.config_read16(STATUS)? & STATUS_CAP_LIST == 0 {
            return Ok(None);
        }
        let mut ptr = u16::from(self.config_read8(CAP_PTR)? & 0xfc);
        // A list longer than the 48 dwords of standard config space is malformed: stop.
        for _ in 0..48 {
            if ptr < 0x40 {
                return Ok(None);
            }
            if self.config_read8(ptr)? == id {
                return Ok(Some(ptr));
            }
            ptr = u16::from(self.config_read8(ptr + 1)? & 0xfc);
        }
        Ok(None)
    }
}

/// Standard config-space registers and capability ids the driver uses (Linux
/// include/uapi/linux/pci_regs.h).
pub mod regs {
    /// Command register.
    pub const COMMAND: u16 = 0x04;
    /// Command: memory space enable.
    pub const COMMAND_MEMORY: u16 = 0x0002;
    /// Command: bus master enable.
    pub const COMMAND_MASTER: u16 = 0x0004;
    /// Capability id of the PCI Express capability.
    pub const CAP_ID_EXP: u8 = 0x10;
    /// Capability id of MSI-X.
    pub const CAP_ID_MSIX: u8 = 0x11;
    /// Capability id of power management.
    pub const CAP_ID_PM: u8 = 0x01;
    /// Device Control register, offset within the PCIe capability (`PCI_EXP_DEVCTL`).
    pub const EXP_DEVCTL: u16 = 0x08;
    /// Device Control: relaxed ordering enable (`PCI_EXP_DEVCTL_RELAX_EN`).
    pub const EXP_DEVCTL_RELAX_EN: u16 = 0x0010;
    /// Device Control: initiate function-level reset (`PCI_EXP_DEVCTL_BCR_FLR`).
    pub const EXP_DEVCTL_BCR_FLR: u16 = 0x8000;
    /// Device Capabilities register, offset within the PCIe capability (`PCI_EXP_DEVCAP`).
    pub const EXP_DEVCAP: u16 = 0x04;
    /// Device Capabilities: function-level reset supported (`PCI_EXP_DEVCAP_FLR`).
    pub const EXP_DEVCAP_FLR: u32 = 0x1000_0000;
}
