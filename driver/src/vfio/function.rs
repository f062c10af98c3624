//! One PCI function held through the kernel's VFIO (vfio-pci), as the driver's seam sees it:
//! config space is the device descriptor's config region, BARs 0, 2 and 4 are its BAR regions,
//! reset is `VFIO_DEVICE_RESET`, DMA memory is mapped into the group's container, and the clock
//! is the real one.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use super::bar::Bar;
use super::container::Container;
use super::memory;
use super::sys::{self, RegionInfo};
use crate::held::HoldGuard;
use bnxt_pci::dma::{DmaBuffer, HostPages};
use bnxt_pci::{Clock, PciError, PciFunction, RealClock, check_config_access};

/// The BARs the BCM57608 implements (64-bit BARs 0, 2 and 4: hardware-map §1).
const BARS: [u8; 3] = [0, 2, 4];

/// A function held through VFIO.
pub struct VfioFunction {
    bus: String,
    device: Arc<OwnedFd>,
    config: RegionInfo,
    bars: Vec<Bar>,
    container: Arc<Container>,
    clock: RealClock,
    _held: HoldGuard,
}

impl VfioFunction {
    /// Open device `bus` of `container`'s group and map its BARs.
    pub fn open(container: Arc<Container>, bus: &str, held: HoldGuard) -> Result<VfioFunction, PciError> {
        let take = |reason: String| PciError::Take { bus: bus.to_string(), reason };
        let device = Arc::new(container.device(bus).map_err(|e| take(e.to_string()))?);
        let region = |index: u32| {
            sys::region_info(device.as_fd(), index)
                .map_err(|e| take(format!("VFIO_DEVICE_GET_REGION_INFO of region {index}: {e}")))
        };
        let config = region(sys::VFIO_PCI_CONFIG_REGION_INDEX)?;
        let mut bars = Vec::new();
        for bar in BARS {
            let info = region(u32::from(bar))?;
            if info.size == 0 {
                return Err(take(format!("BAR {bar} is not implemented on this function")));
            }
            bars.push(Bar::new(device.clone(), bar, info));
        }
        Ok(VfioFunction { bus: bus.to_string(), device, config, bars, container, clock: RealClock::new(), _held: held })
    }

    fn bar(&self, bar: u8) -> Option<&Bar> {
        let found = BARS.iter().position(|&b| b == bar).and_then(|i| self.bars.get(i));
        if found.is_none() {
            tracing::error!(bus = %self.bus, bar, "access to a BAR the function does not have");
        }
        found
    }
}

impl PciFunction for VfioFunction {
    fn bus(&self) -> &str {
        &self.bus
    }

    fn config_read(&self, offset: u16, data: &mut [u8]) -> Result<(), PciError> {
        check_config_access(offset, data.len())?;
        let len = data.len();
        let fail = |reason: String| PciError::Config { offset, len, reason };
        match rustix::io::pread(self.device.as_fd(), &mut *data, self.config.offset + u64::from(offset)) {
            Ok(n) if n == data.len() => Ok(()),
            Ok(n) => Err(fail(format!("read {n} bytes"))),
            Err(e) => Err(fail(e.to_string())),
        }
    }

    fn config_write(&self, offset: u16, data: &[u8]) -> Result<(), PciError> {
        check_config_access(offset, data.len())?;
        let fail = |reason: String| PciError::Config { offset, len: data.len(), reason };
        match rustix::io::pwrite(self.device.as_fd(), data, self.config.offset + u64::from(offset)) {
            Ok(n) if n == data.len() => Ok(()),
            Ok(n) => Err(fail(format!("wrote {n} bytes"))),
            Err(e) => Err(fail(e.to_string())),
        }
    }

    fn bar_read32(&self, bar: u8, offset: u64) -> u32 {
        self.bar(bar).map_or(u32::MAX, |b| b.read32(offset))
    }

    fn bar_write32(&self, bar: u8, offset: u64, value: u32) {
        if let Some(b) = self.bar(bar) {
            b.write32(offset, value)
        }
    }

    fn bar_write64(&self, bar: u8, offset: u64, value: u64) {
        if let Some(b) = self.bar(bar) {
            b.write64(offset, value)
        }
    }

    fn alloc_dma(&self, len: usize) -> Result<DmaBuffer, PciError> {
        memory::allocate(&self.container, len)
    }

    fn map_dma(&self, pages: HostPages) -> Result<DmaBuffer, PciError> {
        memory::map_pages(&self.container, pages)
    }

    fn reset(&self) -> Result<(), PciError> {
        sys::device_reset(self.device.as_fd()).map_err(|e| PciError::Reset(format!("VFIO_DEVICE_RESET: {e}")))
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
}
