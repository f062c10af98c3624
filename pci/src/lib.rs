//! `bnxt-pci`: the seam between a BCM57608 driver and a PCI function.
//!
//! [`PciFunction`] is what a driver needs from one function and nothing more (config space, BAR
//! loads and stores, DMA memory with bus addresses, function-level reset, a [`Clock`]);
//! [`Machine`] lists a machine's functions and hands one out. A backend implements them for one
//! kind of target: the in-process model (crate `bnxt-model-host`), a vfio-user socket or the
//! kernel's VFIO for a real card (both in the driver crate `bnxt`). The driver above them is the
//! same code for all.
#![deny(missing_docs)]
#![warn(unreachable_pub)]
// Unsafe code only where memory-mapped I/O and DMA need it: the modules that allow it say so.
#![deny(unsafe_code)]

mod clock;
#[allow(unsafe_code)] // DMA and MMIO: each block has its SAFETY argument
pub mod dma;
mod error;
mod function;
pub mod iova;
mod layer;
mod machine;

pub use clock::{Clock, Interrupted, RealClock, precise_timers};
pub use dma::{DmaBuffer, DmaWatch, HostPages, PAGE_SIZE};
pub use error::PciError;
pub use function::{ConfigExt, PciFunction, check_config_access, regs};
pub use iova::{IovaAllocator, IovaError, IovaLease};
pub use layer::Layer;
pub use machine::Machine;
