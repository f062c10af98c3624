//! `bnxt-model`: a software BCM57608, the device and only the device: PCI config space, BAR
//! registers, the HWRM firmware, the RoCE engine and the virtual Ethernet segment's switch, as
//! state machines without I/O.
//!
//! Inputs are config-space and BAR accesses, frames from the wire and the passage of time (a
//! [`std::time::Duration`] since the start of the run, given by whoever drives the model);
//! outputs are DMA reads and writes through [`host_memory::HostMemory`], frames to the wire,
//! interrupts, the next deadline, typed [`events`] and the segment's [`net::capture`]. Nothing
//! here opens a file or a socket, starts a thread or reads a clock: the hosts that do (the
//! in-process executor `World`, `bnxt-model serve`, the segment hub) are the crate
//! `bnxt-model-host`.
//!
//! Every register, layout and behaviour follows a public source, cited beside it (see
//! `docs/sources.md`). What the model does not implement is loud: logged, counted, and a failure
//! in strict mode.
#![deny(missing_docs)]
// Items no other crate can reach say so (`pub(crate)`), so that the dead-code lint sees them.
#![warn(unreachable_pub)]
// Unsafe code only where memory-mapped I/O and DMA need it: the modules that allow it say so.
#![deny(unsafe_code)]

pub mod armed;
pub mod config_space;
pub mod device;
pub mod events;
pub mod faults;
pub mod firmware;
pub mod held;
#[allow(unsafe_code)] // DMA and MMIO: each block has its SAFETY argument
pub mod host_memory;
pub mod l2;
pub mod names;
pub mod net;
pub mod regs;
pub mod roce;
pub mod vpd;
