//! The payloads of the project's extension commands (`bnxt_vfio_user::ext`): what a client of
//! a model NIC sends to give a scenario a fresh NIC with its faults, and what it gets back when
//! it asks about the NIC's inner state. JSON, so other tools can speak it too.

use serde::{Deserialize, Serialize};

use bnxt_model::armed::{Action, Target};
use bnxt_model::faults::FaultPlan;
use bnxt_model::firmware::options::FirmwareOptions;
use bnxt_model::net::fault::FaultCounters;

use crate::world::NicState;

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

/// `BNXT_RIG_ARM`: arm a firmware fault on the NIC from now on, as `bnxt-model ctl fault add`
/// does ([`bnxt_model::armed`]: `nth` counts from the arming, 1 = the next request of that
/// type; `count` defaults to once with `nth`, every time without).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arm {
    /// What it acts on: an HWRM request by `req_type` or a RoCE command by opcode.
    pub target: Target,
    /// The occurrence from now it starts at.
    #[serde(default)]
    pub nth: Option<u32>,
    /// How many times it fires.
    #[serde(default)]
    pub count: Option<u32>,
    /// What it does (an action of the target's channel).
    pub action: Action,
}

/// `BNXT_RIG_ARM` reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Armed {
    /// The fault's id on the NIC.
    pub id: u64,
}

/// `BNXT_RIG_STATE` reply: the NIC as only a model can show it, and what its server did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The NIC, as the in-process world shows its NICs.
    pub nic: NicState,
    /// Interrupt eventfds the client has given.
    pub interrupt_eventfds: usize,
    /// Interrupts the NIC raised that were signalled to an eventfd.
    pub interrupts_signalled: u64,
    /// Interrupts the NIC raised with no eventfd to signal (or masked).
    pub interrupts_dropped: u64,
    /// What the wire fault stage did to the frames the NIC sent since the last restart.
    #[serde(default)]
    pub wire_faults: FaultCounters,
    /// Frames recorded in the capture the last restart asked for, if it asked for one (all of
    /// them are in its file when this reply is sent).
    #[serde(default)]
    pub captured_frames: Option<u64>,
}
