//! A software BCM57608: PCI config space, BAR registers, the HWRM firmware and (later) the RoCE
//! engine, built as a state machine without I/O.
//!
//! Inputs are config-space and BAR accesses, frames from the wire and the passage of (virtual)
//! time; outputs are DMA reads and writes through [`host_memory::HostMemory`], frames to the
//! wire, interrupts and timer requests. [`world::World`] is the in-process executor: several
//! NICs, one virtual clock, deterministic.
//!
//! Every register, layout and behaviour follows a public source, cited beside it (see
//! `docs/sources.md`). What the model does not implement is loud: logged, counted, and a failure
//! in strict mode.
#![deny(missing_docs)]

pub mod config_space;
pub mod device;
pub mod events;
pub mod faults;
pub mod firmware;
pub mod host_memory;
pub mod l2;
pub mod net;
pub mod regs;
pub mod roce;
pub mod serve;
pub mod vfio_user;
pub mod vpd;
pub mod world;
