//! The model as a vfio-user device: what `bnxt-model serve` puts behind the UNIX socket QEMU's
//! `vfio-user-pci` device (or the driver's vfio-user backend) connects to.
//!
//! Written from the protocol specification (QEMU `docs/interop/vfio-user.rst`) and checked
//! against QEMU 11's client (hw/vfio-user/); the wire format is `bnxt_vfio_user`'s. Parts:
//!
//! * [`protocol`]: each command checked and answered, without I/O;
//! * [`nic`]: the served NIC, a one-NIC world on the executor's clock;
//! * [`regions`]: BARs 0/2/4 and config space as vfio-pci regions;
//! * [`irqs`]: INTx and MSI-X, and the client's eventfds;
//! * [`dma`]: guest memory from `DMA_MAP` (shared memfds and files, `mmap`ed);
//! * [`shrink_guard`]: surviving a client that shrinks a file it lent;
//! * [`control`]: the project's extension commands' JSON (fresh NIC with a fault plan; state);
//! * [`uplink`]: the NIC's link to a segment hub, with the wire plan's fault stage;
//! * [`capture`]: a run's pcap of the frames the NIC sends, into a file the client hands over.
//!
//! The I/O (socket, clock, signals) is the executor's: [`crate::serve`].

/// A command the server refuses: the errno for the error reply (the specification: header
/// only) and what was wrong, for the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Refusal {
    /// Errno for the error reply.
    pub errno: u32,
    /// What was wrong.
    pub reason: String,
}

/// A [`Refusal`].
pub fn refuse(errno: u32, reason: impl Into<String>) -> Refusal {
    Refusal { errno, reason: reason.into() }
}

pub mod capture;
pub mod control;
#[allow(unsafe_code)] // DMA and MMIO: each block has its SAFETY argument
pub mod dma;
pub mod irqs;
pub mod nic;
pub mod protocol;
pub mod regions;
#[allow(unsafe_code)] // DMA and MMIO: each block has its SAFETY argument
pub mod shrink_guard;
pub mod uplink;
