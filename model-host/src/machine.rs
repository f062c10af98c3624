//! The in-process model behind the driver's seam: a [`Machine`] whose functions are the NICs of
//! a [`World`], with the world's virtual clock as the driver's clock.
//!
//! DMA memory is page-aligned heap memory mapped into the NIC's I/O address space for as long as
//! the driver holds the [`DmaBuffer`]; dropping the buffer unmaps it. Bus addresses come from the
//! seam's [`IovaAllocator`] (upward, a guard page after each allocation, freed ones reused), so
//! an overrun faults in the model rather than reaching a neighbour.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bnxt_model::host_memory::DmaBacking;
use bnxt_pci::{
    Clock, ConfigExt, DmaBuffer, HostPages, Interrupted, IovaAllocator, IovaLease, Machine, PAGE_SIZE, PciError,
    PciFunction, check_config_access, regs,
};

use crate::world::{World, WorldConfig};
/// How long a function-level reset takes before the function may be used again (PCIe Base
/// Specification: 100 ms after initiating FLR).
const FLR_WAIT: Duration = Duration::from_millis(100);

/// A machine of model NICs sharing one world and one virtual clock.
pub struct ModelMachine {
    world: Arc<Mutex<World>>,
    buses: Vec<String>,
    held: Arc<Mutex<Vec<bool>>>,
}

impl ModelMachine {
    /// A machine holding a new world built from `config`.
    pub fn new(config: WorldConfig) -> Arc<ModelMachine> {
        let world = World::new(config);
        let buses = (0..world.nic_count()).map(|i| world.nic_state(i).bus).collect::<Vec<_>>();
        let held = Arc::new(Mutex::new(vec![false; buses.len()]));
        Arc::new(ModelMachine { world: Arc::new(Mutex::new(world)), buses, held })
    }

    /// The world, for inspection (NIC state, events). Do not hold the guard across driver calls.
    pub fn world(&self) -> MutexGuard<'_, World> {
        lock(&self.world)
    }

    /// A clock on the world's virtual time.
    pub fn clock(&self) -> ModelClock {
        ModelClock { world: self.world.clone() }
    }
}

fn lock(world: &Mutex<World>) -> MutexGuard<'_, World> {
    // Only a bug in the model panics while the world is locked, leaving it half-changed: every
    // later access panics too, so the run fails with that bug rather than on a broken device.
    world.lock().expect("the model panicked earlier, leaving the world half-changed")
}

impl Machine for ModelMachine {
    fn buses(&self) -> Result<Vec<String>, PciError> {
        Ok(self.buses.clone())
    }

    fn take(&self, bus: &str) -> Result<Arc<dyn PciFunction>, PciError> {
        let nic = self.buses.iter().position(|b| b == bus).ok_or_else(|| PciError::Take {
            bus: bus.to_string(),
            reason: "no such function on this machine".into(),
        })?;
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held[nic] {
            return Err(PciError::Busy { bus: bus.to_string(), holder: "this process".into() });
        }
        held[nic] = true;
        drop(held);
        Ok(Arc::new(ModelFunction {
            world: self.world.clone(),
            _held: HeldFlag { nic, held: self.held.clone() },
            nic,
            bus: bus.to_string(),
            iovas: Arc::default(),
            clock: self.clock(),
        }))
    }
}

/// Marks a NIC held while a function lives; releases it on drop.
struct HeldFlag {
    nic: usize,
    held: Arc<Mutex<Vec<bool>>>,
}

impl Drop for HeldFlag {
    fn drop(&mut self) {
        self.held.lock().unwrap_or_else(|e| e.into_inner())[self.nic] = false;
    }
}

/// The world's virtual clock: `sleep` advances the world.
#[derive(Clone)]
pub struct ModelClock {
    world: Arc<Mutex<World>>,
}

impl Clock for ModelClock {
    fn now(&self) -> Duration {
        lock(&self.world).now()
    }
    fn sleep(&self, d: Duration) -> Result<(), Interrupted> {
        lock(&self.world).advance(d);
        Ok(())
    }
}

/// One NIC of the world, held by the driver.
pub struct ModelFunction {
    world: Arc<Mutex<World>>,
    _held: HeldFlag,
    nic: usize,
    bus: String,
    iovas: Arc<IovaAllocator>,
    clock: ModelClock,
}

/// Keeps DMA memory alive and mapped while the driver's buffer lives; unmaps it on drop.
struct DmaGuard {
    world: Arc<Mutex<World>>,
    nic: usize,
    iova: u64,
    _backing: Arc<dyn DmaBacking>,
    // Given back after the mapping is gone (fields drop after `drop`).
    _lease: IovaLease,
}

/// Process memory the driver handed over for DMA (`PciFunction::map_dma`).
struct PagesBacking(HostPages);

// SAFETY: `HostPages` owns a page-aligned allocation of `capacity()` bytes that stays put while
// it lives; once handed over it is reached only by raw-pointer copies (the driver's DmaBuffer and
// the model's Iommu), never through a Rust reference.
unsafe impl DmaBacking for PagesBacking {
    fn as_ptr(&self) -> *mut u8 {
        self.0.as_ptr().as_ptr()
    }
    fn len(&self) -> usize {
        self.0.capacity()
    }
}

impl ModelFunction {
    /// Map `backing` at the next bus address (one unmapped guard page after it) for the device.
    fn lend(&self, backing: Arc<dyn DmaBacking>) -> Result<DmaBuffer, PciError> {
        let len = backing.len();
        let lease = self.iovas.lease(len).map_err(|e| PciError::Dma { len, reason: e.to_string() })?;
        let iova = lease.iova();
        lock(&self.world)
            .map_dma(self.nic, iova, backing.clone())
            .map_err(|e| PciError::Dma { len, reason: e.to_string() })?;
        let ptr = std::ptr::NonNull::new(backing.as_ptr()).expect("DMA backings are never null");
        let guard = DmaGuard { world: self.world.clone(), nic: self.nic, iova, _backing: backing, _lease: lease };
        // SAFETY: `ptr` points at `len` bytes owned by the backing that `guard` keeps alive (the
        // guard is the buffer's owner and is dropped with it); the memory is only ever accessed
        // by raw-pointer copies, by the driver's DmaBuffer and the model's Iommu.
        Ok(unsafe { DmaBuffer::from_raw(ptr, len, iova, Box::new(guard)) })
    }
}

impl Drop for DmaGuard {
    fn drop(&mut self) {
        // The mapping may already be gone if the world was rebuilt; nothing else can fail here.
        let _ = lock(&self.world).unmap_dma(self.nic, self.iova);
    }
}

impl PciFunction for ModelFunction {
    fn bus(&self) -> &str {
        &self.bus
    }

    fn config_read(&self, offset: u16, data: &mut [u8]) -> Result<(), PciError> {
        check_config_access(offset, data.len())?;
        lock(&self.world).config_read(self.nic, offset, data);
        Ok(())
    }

    fn config_write(&self, offset: u16, data: &[u8]) -> Result<(), PciError> {
        check_config_access(offset, data.len())?;
        lock(&self.world).config_write(self.nic, offset, data);
        Ok(())
    }

    fn bar_read32(&self, bar: u8, offset: u64) -> u32 {
        let mut b = [0u8; 4];
        lock(&self.world).bar_read(self.nic, bar, offset, &mut b);
        u32::from_le_bytes(b)
    }

    fn bar_write32(&self, bar: u8, offset: u64, value: u32) {
        lock(&self.world).bar_write(self.nic, bar, offset, &value.to_le_bytes())
    }

    fn bar_write64(&self, bar: u8, offset: u64, value: u64) {
        lock(&self.world).bar_write(self.nic, bar, offset, &value.to_le_bytes())
    }

    fn alloc_dma(&self, len: usize) -> Result<DmaBuffer, PciError> {
        let len = len.max(1).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        // HostPages: large buffers are mappings whose pages are zero until touched, so memory the
        // driver gives the device and neither side writes (most of a context area) costs nothing.
        let pages = HostPages::try_new(len)
            .ok_or_else(|| PciError::Dma { len, reason: "the machine has not that much memory to give".into() })?;
        self.lend(Arc::new(PagesBacking(pages)))
    }

    fn map_dma(&self, memory: HostPages) -> Result<DmaBuffer, PciError> {
        self.lend(Arc::new(PagesBacking(memory)))
    }

    fn reset(&self) -> Result<(), PciError> {
        let exp = self
            .find_capability(regs::CAP_ID_EXP)?
            .ok_or_else(|| PciError::Reset("no PCI Express capability".into()))?;
        let devcap = self.config_read32(exp + regs::EXP_DEVCAP)?;
        if devcap & regs::EXP_DEVCAP_FLR == 0 {
            return Err(PciError::Reset("the function does not support function-level reset".into()));
        }
        let devctl = self.config_read16(exp + regs::EXP_DEVCTL)?;
        self.config_write16(exp + regs::EXP_DEVCTL, devctl | regs::EXP_DEVCTL_BCR_FLR)?;
        self.clock.sleep(FLR_WAIT)?;
        Ok(())
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
}
