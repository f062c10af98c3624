//! What an open pins, measured: a [`Machine`] whose functions count the DMA memory the driver
//! asks them for, so that `doctor` reports what [`crate::Nic::open`] really allocates (context
//! memory sized from the firmware's own FUNC_BACKING_STORE_QCAPS_V2 answers, rings, command
//! buffers) rather than an estimate.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bnxt_pci::{DmaBuffer, HostPages, Layer, Machine, PciError, PciFunction};

use super::OpenCost;

/// A machine whose taken functions count the bytes of DMA memory allocated through them.
pub struct Pinned<'a> {
    inner: &'a dyn Machine,
    bytes: Arc<AtomicU64>,
}

impl<'a> Pinned<'a> {
    /// Count what is allocated through `inner`'s functions.
    pub fn new(inner: &'a dyn Machine) -> Pinned<'a> {
        Pinned { inner, bytes: Arc::new(AtomicU64::new(0)) }
    }

    /// Bytes allocated so far (frees are not subtracted: the most an open had at once is at most
    /// this).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

impl Machine for Pinned<'_> {
    fn buses(&self) -> Result<Vec<String>, PciError> {
        self.inner.buses()
    }

    fn take(&self, bus: &str) -> Result<Arc<dyn PciFunction>, PciError> {
        Ok(Arc::new(Counting { inner: self.inner.take(bus)?, bytes: self.bytes.clone() }))
    }
}

struct Counting {
    inner: Arc<dyn PciFunction>,
    bytes: Arc<AtomicU64>,
}

impl Layer for Counting {
    fn inner(&self) -> &dyn PciFunction {
        &*self.inner
    }

    fn alloc_dma(&self, len: usize) -> Result<DmaBuffer, PciError> {
        let b = self.inner.alloc_dma(len)?;
        self.bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
        Ok(b)
    }

    fn map_dma(&self, memory: HostPages) -> Result<DmaBuffer, PciError> {
        let b = self.inner.map_dma(memory)?;
        self.bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
        Ok(b)
    }
}

/// Open NIC `index` of `machine`, note what it allocated, and close it. `measured_on` says what
/// it was for the report.
///
/// # Errors
///
/// The open's error.
pub fn measure_open(machine: &dyn Machine, index: usize, measured_on: &str) -> Result<OpenCost, crate::Error> {
    let pinned = Pinned::new(machine);
    let mut nic = crate::Nic::open(&pinned, index)?;
    let bytes = pinned.bytes();
    let context_bytes = nic.context_memory_bytes() as u64;
    nic.close();
    Ok(OpenCost { bytes, context_bytes, measured_on: measured_on.into() })
}
