//! One PCI function behind a vfio-user socket, as the driver's seam sees it: config space is
//! region 7, BAR n is region n, reset is `VFIO_USER_DEVICE_RESET`, DMA memory is memfds lent with
//! `VFIO_USER_DMA_MAP`, and the clock is the real one.
//!
//! BAR stores are posted (sent without waiting for the server, as a PCIe memory write is posted,
//! and held back to go out together at the next flush: [`Client::region_write_posted`]); config-space writes wait for the server, as PCIe
//! configuration writes are non-posted. BAR accesses cannot fail on the seam (as on hardware). When the socket fails, a load reads
//! all-ones and a store is dropped, as for a device that fell off the bus; the failure is
//! logged, and every later access fails fast (the connection is marked broken).

use std::sync::Arc;

use bnxt_vfio_user::linux::PCI_CONFIG_REGION_INDEX;

use super::client::{Client, posted};
use super::machine::PostedFlushClock;
use super::memory::allocate;
use crate::held::HoldGuard;
use bnxt_pci::IovaAllocator;
use bnxt_pci::dma::DmaBuffer;
use bnxt_pci::{Clock, PciError, PciFunction, check_config_access};

/// A function reached through a vfio-user client.
pub struct VfioUserFunction {
    client: Arc<Client>,
    bus: String,
    iovas: Arc<IovaAllocator>,
    clock: PostedFlushClock,
    _held: HoldGuard,
}

impl VfioUserFunction {
    pub(super) fn new(client: Arc<Client>, bus: String, clock: PostedFlushClock, held: HoldGuard) -> VfioUserFunction {
        VfioUserFunction { client, bus, iovas: Arc::default(), clock, _held: held }
    }

    fn bar_region(&self, bar: u8) -> u32 {
        u32::from(bar)
    }
}

impl PciFunction for VfioUserFunction {
    fn bus(&self) -> &str {
        &self.bus
    }

    fn config_read(&self, offset: u16, data: &mut [u8]) -> Result<(), PciError> {
        check_config_access(offset, data.len())?;
        self.client.region_read(PCI_CONFIG_REGION_INDEX, u64::from(offset), data).map_err(|e| PciError::Config {
            offset,
            len: data.len(),
            reason: e.to_string(),
        })
    }

    fn config_write(&self, offset: u16, data: &[u8]) -> Result<(), PciError> {
        check_config_access(offset, data.len())?;
        self.client.region_write(PCI_CONFIG_REGION_INDEX, u64::from(offset), data).map_err(|e| PciError::Config {
            offset,
            len: data.len(),
            reason: e.to_string(),
        })
    }

    fn bar_read32(&self, bar: u8, offset: u64) -> u32 {
        let mut b = [0u8; 4];
        match self.client.region_read(self.bar_region(bar), offset, &mut b) {
            Ok(()) => u32::from_le_bytes(b),
            Err(e) => {
                tracing::error!(bus = %self.bus, bar, offset, error = %e, "BAR load failed; reads all-ones");
                u32::MAX
            }
        }
    }

    fn bar_write32(&self, bar: u8, offset: u64, value: u32) {
        if let Err(e) = self.client.region_write_posted(self.bar_region(bar), offset, &value.to_le_bytes()) {
            tracing::error!(bus = %self.bus, bar, offset, error = %e, "BAR store failed; dropped");
        }
    }

    fn bar_write64(&self, bar: u8, offset: u64, value: u64) {
        if let Err(e) = self.client.region_write_posted(self.bar_region(bar), offset, &value.to_le_bytes()) {
            tracing::error!(bus = %self.bus, bar, offset, error = %e, "BAR store failed; dropped");
        }
    }

    fn alloc_dma(&self, len: usize) -> Result<DmaBuffer, PciError> {
        allocate(&self.client, &self.iovas, len)
    }

    fn reset(&self) -> Result<(), PciError> {
        // The reply comes once the reset is done (as VFIO_DEVICE_RESET returns once it is).
        self.client.reset().map_err(|e| PciError::Reset(e.to_string()))
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }

    fn flush_posted(&self) {
        posted::send_all();
    }
}
