//! The payloads of the project's extension commands (`bnxt_vfio_user::ext`): what a client of
//! a model NIC sends to give a scenario a fresh NIC with its faults, and what it gets back when
//! it asks about the NIC's inner state. JSON, so other tools can speak it too.

use serde::{Deserialize, Serialize};

use bnxt_model::faults::FaultPlan;
use bnxt_model::firmware::options::FirmwareOptions;

/// `BNXT_RIG_RESTART`: replace the NIC by one just powered on, with this seed and fault plan
/// (the plan's NIC indexes are the server's: its one NIC is 0).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Restart {
    /// Seed of the model's random choices.
    pub seed: u64,
    /// Faults to inject: firmware faults (HWRM requests and RoCE commands) and the wire plan,
    /// which the server applies to the frames its NIC sends to the segment (see
    /// [`crate::vfio_user::uplink`]).
    #[serde(default)]
    pub faults: FaultPlan,
    /// The NIC's index in the client's run: the wire plan's draws are seeded from `seed` and
    /// it, so that the NICs of one run draw apart.
    #[serde(default)]
    pub nic: usize,
    /// Record the frames the NIC sends to the segment, as a pcap, into the file whose
    /// descriptor comes with the command (see [`crate::vfio_user::capture`]).
    #[serde(default)]
    pub capture: bool,
    /// What the NIC's firmware advertises beyond its defaults (firmware resource limits,
    /// fast-destroy QPs).
    #[serde(default)]
    pub firmware: FirmwareOptions,
}

/// What the wire fault stage of a served NIC's link to the segment did (`BNXT_RIG_STATE`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireFaultCounts {
    /// Frames that passed the stage.
    pub frames: u64,
    /// Dropped.
    pub dropped: u64,
    /// Duplicated.
    pub duplicated: u64,
    /// Held back behind the next frame.
    pub reordered: u64,
    /// Corrupted.
    pub corrupted: u64,
    /// Delayed.
    pub delayed: u64,
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
    /// What the wire fault stage did to the frames the NIC sent since the last restart.
    #[serde(default)]
    pub wire_faults: WireFaultCounts,
    /// Frames recorded in the capture the last restart asked for, if it asked for one (all of
    /// them are in its file when this reply is sent).
    #[serde(default)]
    pub captured_frames: Option<u64>,
    /// Objects the function holds in the firmware and the RoCE engine (rings, VNICs, filters,
    /// QPs, ...; `bnxt_model::held`).
    #[serde(default)]
    pub held_objects: usize,
    /// What they are (`2 rings, 1 VNICs`, or `nothing`).
    #[serde(default)]
    pub held: String,
    /// RoCE frames no L2 filter of the function passed to its RoCE engine.
    #[serde(default)]
    pub rx_no_l2_filter: u64,
}
