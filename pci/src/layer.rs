//! A function wrapped around another ([`Layer`]): it names the function it wraps and overrides
//! only the accesses it changes; every other access reaches the wrapped function unchanged.
//!
//! The runner's watched function (its clock), the driver's pinned-memory count (its DMA) and the
//! fault-injection seam (its HWRM and CMDQ stores) each change a few of [`PciFunction`]'s
//! methods; this is where the rest are passed on, once.

use crate::dma::{DmaBuffer, HostPages};
use crate::{Clock, PciError, PciFunction};

/// A [`PciFunction`] made of another: each method defaults to the same call on
/// [`Layer::inner`]. Every `Layer` is a `PciFunction` (the blanket implementation below).
pub trait Layer: Send + Sync {
    /// The function this one wraps.
    fn inner(&self) -> &dyn PciFunction;

    /// [`PciFunction::bus`].
    fn bus(&self) -> &str {
        self.inner().bus()
    }
    /// [`PciFunction::config_read`].
    fn config_read(&self, offset: u16, data: &mut [u8]) -> Result<(), PciError> {
        self.inner().config_read(offset, data)
    }
    /// [`PciFunction::config_write`].
    fn config_write(&self, offset: u16, data: &[u8]) -> Result<(), PciError> {
        self.inner().config_write(offset, data)
    }
    /// [`PciFunction::bar_read32`].
    fn bar_read32(&self, bar: u8, offset: u64) -> u32 {
        self.inner().bar_read32(bar, offset)
    }
    /// [`PciFunction::bar_write32`].
    fn bar_write32(&self, bar: u8, offset: u64, value: u32) {
        self.inner().bar_write32(bar, offset, value)
    }
    /// [`PciFunction::bar_write64`].
    fn bar_write64(&self, bar: u8, offset: u64, value: u64) {
        self.inner().bar_write64(bar, offset, value)
    }
    /// [`PciFunction::alloc_dma`].
    fn alloc_dma(&self, len: usize) -> Result<DmaBuffer, PciError> {
        self.inner().alloc_dma(len)
    }
    /// [`PciFunction::map_dma`].
    fn map_dma(&self, memory: HostPages) -> Result<DmaBuffer, PciError> {
        self.inner().map_dma(memory)
    }
    /// [`PciFunction::reset`].
    fn reset(&self) -> Result<(), PciError> {
        self.inner().reset()
    }
    /// [`PciFunction::clock`].
    fn clock(&self) -> &dyn Clock {
        self.inner().clock()
    }
    /// [`PciFunction::flush_posted`].
    fn flush_posted(&self) {
        self.inner().flush_posted()
    }
}

impl<T: Layer> PciFunction for T {
    fn bus(&self) -> &str {
        Layer::bus(self)
    }
    fn config_read(&self, offset: u16, data: &mut [u8]) -> Result<(), PciError> {
        Layer::config_read(self, offset, data)
    }
    fn config_write(&self, offset: u16, data: &[u8]) -> Result<(), PciError> {
        Layer::config_write(self, offset, data)
    }
    fn bar_read32(&self, bar: u8, offset: u64) -> u32 {
        Layer::bar_read32(self, bar, offset)
    }
    fn bar_write32(&self, bar: u8, offset: u64, value: u32) {
        Layer::bar_write32(self, bar, offset, value)
    }
    fn bar_write64(&self, bar: u8, offset: u64, value: u64) {
        Layer::bar_write64(self, bar, offset, value)
    }
    fn alloc_dma(&self, len: usize) -> Result<DmaBuffer, PciError> {
        Layer::alloc_dma(self, len)
    }
    fn map_dma(&self, memory: HostPages) -> Result<DmaBuffer, PciError> {
        Layer::map_dma(self, memory)
    }
    fn reset(&self) -> Result<(), PciError> {
        Layer::reset(self)
    }
    fn clock(&self) -> &dyn Clock {
        Layer::clock(self)
    }
    fn flush_posted(&self) {
        Layer::flush_posted(self)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::Interrupted;

    /// A function that remembers its last 32-bit store and reads back `0x1760_14e4` elsewhere.
    struct Base(AtomicU32);

    impl Clock for Base {
        fn now(&self) -> Duration {
            Duration::from_secs(7)
        }
        fn sleep(&self, _: Duration) -> Result<(), Interrupted> {
            Ok(())
        }
    }

    impl PciFunction for Base {
        fn bus(&self) -> &str {
            "0000:01:00.0"
        }
        fn config_read(&self, _: u16, data: &mut [u8]) -> Result<(), PciError> {
            data.fill(0xab);
            Ok(())
        }
        fn config_write(&self, _: u16, _: &[u8]) -> Result<(), PciError> {
            Ok(())
        }
        fn bar_read32(&self, _: u8, _: u64) -> u32 {
            self.0.load(Ordering::SeqCst)
        }
        fn bar_write32(&self, _: u8, _: u64, value: u32) {
            self.0.store(value, Ordering::SeqCst)
        }
        fn bar_write64(&self, _: u8, _: u64, value: u64) {
            self.0.store(value as u32, Ordering::SeqCst)
        }
        fn alloc_dma(&self, len: usize) -> Result<DmaBuffer, PciError> {
            Err(PciError::Dma { len, reason: "none here".into() })
        }
        fn reset(&self) -> Result<(), PciError> {
            self.0.store(0, Ordering::SeqCst);
            Ok(())
        }
        fn clock(&self) -> &dyn Clock {
            self
        }
    }

    /// Inverts what is stored through it; everything else is the base's.
    struct Inverting(Base);

    impl Layer for Inverting {
        fn inner(&self) -> &dyn PciFunction {
            &self.0
        }
        fn bar_write32(&self, bar: u8, offset: u64, value: u32) {
            self.0.bar_write32(bar, offset, !value)
        }
    }

    #[test]
    fn a_layer_changes_what_it_overrides_and_passes_on_the_rest() {
        let f: &dyn PciFunction = &Inverting(Base(AtomicU32::new(0)));
        f.bar_write32(0, 0, 0x0000_ffff);
        assert_eq!(f.bar_read32(0, 0), 0xffff_0000, "the override ran");
        f.bar_write64(0, 0, 5);
        assert_eq!(f.bar_read32(0, 0), 5, "the 64-bit store was passed on unchanged");
        assert_eq!(f.bus(), "0000:01:00.0");
        let mut b = [0u8; 2];
        f.config_read(0, &mut b).unwrap();
        assert_eq!(b, [0xab, 0xab]);
        assert!(matches!(f.alloc_dma(4096), Err(PciError::Dma { len: 4096, .. })));
        f.reset().unwrap();
        assert_eq!(f.bar_read32(0, 0), 0);
        assert_eq!(f.clock().now(), Duration::from_secs(7));
    }
}
