//! `bnxt-model-host`: what runs the BCM57608 model (crate `bnxt-model`, the device without I/O)
//! and connects it to the world.
//!
//! - [`world`]: the in-process executor, several NICs on one segment and one virtual clock,
//!   deterministic; [`machine`] puts its NICs behind the driver's seam (`bnxt-pci`) as PCI
//!   functions whose clock is the world's.
//! - [`serve`]: the real-time executor of one NIC (`bnxt-model serve`), with [`vfio_user`], the
//!   vfio-user server QEMU's `vfio-user-pci` device and the driver's vfio-user backend connect to,
//!   and the segment hub (`bnxt-model segment`) joining model processes and QEMU guests on one
//!   virtual Ethernet ([`stream`]: QEMU's stream-netdev framing).
//! - [`pcap`]: the model's captures written as pcap files (through `bnxt_output`, which writes
//!   every output file without writing through a link placed at its path).
#![deny(missing_docs)]
#![warn(unreachable_pub)]
// Unsafe code only where memory-mapped I/O and DMA need it: the modules that allow it say so.
#![deny(unsafe_code)]

#[allow(unsafe_code)] // DMA and MMIO: each block has its SAFETY argument
pub mod machine;
pub mod pcap;
pub mod serve;
pub mod stream;
pub mod vfio_user;
pub mod world;
