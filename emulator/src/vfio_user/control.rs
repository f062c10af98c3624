//! The payloads of the project's extension commands (`bnxt_vfio_user::ext`): what a client of
//! a model NIC sends to give a scenario a fresh NIC with its faults, and what it gets back when
//! it asks about the NIC's inner state. JSON, so other tools can speak it too.

use serde::{Deserialize, Serialize};

use crate::faults::FaultPlan;

/// `BNXT_RIG_RESTART`: replace the NIC by one just powered on, with this seed and fault plan
/// (the plan's NIC indexes are the server's: its one NIC is 0).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Restart {
    /// Seed of the model's random choices.
    pub seed: u64,
    /// Faults to inject.
    #[serde(default)]
    pub faults: FaultPlan,
}

/// `BNXT_RIG_STATE` reply: the NIC as only a model can show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// MAC address the firmware reports.
    pub mac: [u8; 6],
    /// Command register: memory space enable.
    pub memory_enabled: bool,
    /// Command register: bus master enable.
    pub bus_master: bool,
    /// PCIe Device Control: relaxed ordering enable.
    pub relaxed_ordering: bool,
    /// DMA regions the client has mapped.
    pub dma_mappings: usize,
    /// Whether a driver is registered with the firmware.
    pub driver_registered: bool,
    /// HWRM requests answered CMD_NOT_SUPPORTED, by `req_type`, with counts.
    pub unsupported_requests: Vec<(u16, u64)>,
    /// Everything unimplemented the NIC was asked for.
    pub unimplemented: u64,
    /// DMA the firmware attempted that failed.
    pub dma_errors: u64,
    /// HWRM responses not yet written.
    pub pending_responses: usize,
    /// Interrupt eventfds the client has given.
    pub interrupt_eventfds: usize,
    /// Interrupts the NIC raised that were signalled to an eventfd.
    pub interrupts_signalled: u64,
    /// Interrupts the NIC raised with no eventfd to signal (or masked).
    pub interrupts_dropped: u64,
}
