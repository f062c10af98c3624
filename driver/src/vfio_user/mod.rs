//! The vfio-user backend of the seam: a [`crate::Machine`] whose functions live in other
//! processes (`bnxt-model serve`, or any vfio-user server of a BCM57608), reached over UNIX
//! sockets with the vfio-user protocol (QEMU `docs/interop/vfio-user.rst`).
//!
//! * [`client`]: the protocol client (one connection per function);
//! * [`function`]: a [`crate::PciFunction`] over it;
//! * [`memory`]: DMA memory as sealed memfds lent with `VFIO_USER_DMA_MAP`;
//! * [`machine`]: the machine and the real clock.
//!
//! Time is real here: a firmware timeout costs its wall time.

pub mod client;
pub mod function;
pub mod machine;
#[allow(unsafe_code)] // DMA and MMIO: each block has its SAFETY argument
pub mod memory;

pub use bnxt_pci::RealClock;
pub use client::{Client, ClientError};
pub use function::VfioUserFunction;
pub use machine::VfioUserMachine;
