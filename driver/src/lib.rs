//! `bnxt`: a user-space driver for the Broadcom BCM57608 (PCI 14e4:1760) and its RoCE v2 engine.
//!
//! It re-creates the OCaml library Rig_bnxt's contract in Rust: [`Nic::open`] takes a NIC's PCI
//! function, resets it, turns PCIe relaxed ordering off, brings its firmware up over HWRM the way
//! Linux's bnxt_en does, gives it context memory, starts its RoCE engine the way bnxt_re does
//! (the firmware command channel, ADD_GID of its identity on the fabric); [`Nic::close`] undoes
//! all of it. On an open NIC, [`Region`]s are memory the NIC writes and reads, and [`Qp`]s are
//! reliable-connected queue pairs that send, receive and read between regions.
//!
//! The driver reaches the device only through the [`PciFunction`] seam (crate `bnxt-pci`), so the
//! same code runs against the in-process model, a model behind a vfio-user socket
//! ([`vfio_user`]) or a real card through the kernel's VFIO ([`vfio`]); docs/contract.md says
//! what of the contract is implemented.
#![deny(missing_docs)]
#![warn(unreachable_pub)]
// Unsafe code only where memory-mapped I/O and DMA need it: the modules that allow it say so.
#![deny(unsafe_code)]

pub mod binding;
mod bringup;
mod ctx_mem;
pub mod error;
mod fw_health;
pub mod held;
mod hwrm;
mod l2;
pub mod preflight;
pub mod qp;
mod quarantine;
pub mod region;
mod roce;
mod session;
pub mod sysfs;
#[cfg(test)]
#[allow(unsafe_code)] // DMA and MMIO: each block has its SAFETY argument
mod testing;
pub mod trace;
pub mod vfio;
pub mod vfio_user;
mod wait;

pub use bnxt_pci::{Clock, Machine, PciError, PciFunction, RealClock};
pub use error::Error;
pub mod nic;
pub use nic::{Doorbells, Identity, Limits, Nic, OpenOptions, buses, count, name_of};
pub use qp::{Completion, Endpoint, Qp, RecvQueue, SendQueue, Side, Status};
pub use region::{DeviceMemory, Region};
