//! Why a backend could not do what the driver asked of a PCI function or machine.

/// Why a backend could not do what the driver asked of a PCI function or machine.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum PciError {
    /// The machine's PCI functions could not be listed.
    #[error("cannot list PCI functions: {0}")]
    List(String),
    /// There is no NIC with this index.
    #[error("no NIC {index} (the machine has {count})")]
    NoSuchNic {
        /// The index asked for.
        index: usize,
        /// How many NICs the machine has.
        count: usize,
    },
    /// Another holder (this process or another) already holds the function.
    #[error("{bus} is held by {holder}")]
    Busy {
        /// The function's bus address.
        bus: String,
        /// Who holds it, as far as the backend can tell.
        holder: String,
    },
    /// The function could not be taken (opened, mapped) for a reason the backend names.
    #[error("cannot take {bus}: {reason}")]
    Take {
        /// The function's bus address.
        bus: String,
        /// What went wrong.
        reason: String,
    },
    /// A config-space access failed.
    #[error("config space access at 0x{offset:03x} ({len} bytes) failed: {reason}")]
    Config {
        /// Offset of the access.
        offset: u16,
        /// Length of the access.
        len: usize,
        /// What went wrong.
        reason: String,
    },
    /// DMA memory could not be allocated or mapped.
    #[error("cannot allocate {len} bytes of DMA memory: {reason}")]
    Dma {
        /// Bytes asked for.
        len: usize,
        /// What went wrong.
        reason: String,
    },
    /// The function-level reset failed.
    #[error("function-level reset failed: {0}")]
    Reset(String),
    /// A wait of the backend's (the reset's) was cut short by the clock.
    #[error("{0}")]
    Interrupted(#[from] crate::Interrupted),
}
