//! The scenario language: what a scenario file says, as typed values ([`Scenario`], [`Step`],
//! [`Fault`]), decoded from YAML by [`decode`], checked before anything runs by [`check`].
//!
//! docs/scenarios.md is the reference for people writing scenarios.

pub mod check;
pub mod decode;
mod decode_fault;
mod decode_step;
pub mod display;
pub mod load;
pub mod matrix;
pub mod values;

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use bnxt_hsi::hwrm::ErrorCode;
use regex::Regex;

use crate::yaml::Pos;

pub use load::{LoadError, Suite, load_paths};

/// The most NICs a scenario may ask for.
pub const MAX_NICS: usize = 64;

/// One scenario file.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file it came from.
    pub file: PathBuf,
    /// Its name (unique in a suite; a matrix variant's has its values in it).
    pub name: String,
    /// For a variant of a `matrix:` file, its values (`request=VER_GET`).
    pub variant: Option<String>,
    /// What it shows, in a sentence.
    pub about: String,
    /// The kinds of target it runs on (`model`); `None` means every target.
    pub targets: Option<Vec<String>>,
    /// How many NICs the machine has.
    pub nics: usize,
    /// Seed of the model's random choices; 0 when the file names none.
    pub seed: Option<u64>,
    /// Tags for selecting scenarios.
    pub tags: Vec<String>,
    /// Faults the target injects.
    pub faults: Vec<Fault>,
    /// What to do, in order.
    pub steps: Vec<Step>,
}

/// A fault, with where it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// Where the fault is written.
    pub at: Pos,
    /// Its path (`faults[1]`).
    pub path: String,
    /// What it does.
    pub kind: FaultKind,
}

/// The kinds of fault.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultKind {
    /// The firmware misbehaves on one HWRM request type.
    Firmware(FirmwareFault),
}

/// The firmware does something other than answer a request normally.
#[derive(Debug, Clone, PartialEq)]
pub struct FirmwareFault {
    /// The NIC's index.
    pub nic: usize,
    /// Where the index is written.
    pub nic_at: Pos,
    /// The request's `req_type`.
    pub req_type: u16,
    /// The request's name, as written (upper case, without `HWRM_`).
    pub request: String,
    /// Which occurrence (from 1); every one when `None`.
    pub nth: Option<u32>,
    /// What the firmware does.
    pub action: FirmwareAction,
}

/// What a faulty firmware does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FirmwareAction {
    /// Never answers.
    NoResponse,
    /// Answers with this error code.
    Error(ErrorCode),
    /// Answers this much later.
    Delay(Duration),
}

/// One step, with where it is written.
#[derive(Debug, Clone)]
pub struct Step {
    /// Where the step starts.
    pub at: Pos,
    /// Its path (`steps[3]`, `steps[5].repeat.steps[0]`).
    pub path: String,
    /// What it does.
    pub action: Action,
    /// What must happen.
    pub expect: Expect,
}

/// What a step does.
#[derive(Debug, Clone)]
pub enum Action {
    /// `open`: open NIC `nic` and call it `alias`.
    Open {
        /// The NIC's index.
        nic: usize,
        /// Where the index is written.
        nic_at: Pos,
        /// The name later steps use.
        alias: Alias,
    },
    /// `close`: close the NIC called `alias` (a second close does nothing).
    Close {
        /// The alias.
        alias: Alias,
    },
    /// `config`: the NIC's PCI config-space state is as given.
    Config {
        /// Which NIC.
        nic: NicRef,
        /// Device Control: relaxed ordering enabled.
        relaxed_ordering: Option<bool>,
        /// Command: bus master enabled.
        bus_master: Option<bool>,
        /// Command: memory space enabled.
        memory: Option<bool>,
    },
    /// `identity`: who the open NIC is (name, bus, MAC, IPv4, GID), checked against the contract
    /// and the values given.
    Identity(IdentityCheck),
    /// `limits`: the open NIC's queue-pair and region limits.
    Limits {
        /// The alias.
        nic: Alias,
        /// Exact number of queue pairs.
        qps: Option<u32>,
        /// Exact number of regions.
        regions: Option<u32>,
    },
    /// `count`: how many NICs the machine has.
    Count(CountCheck),
    /// `wait`: let time pass.
    Wait(Duration),
    /// `repeat`: run the steps `times` times.
    Repeat {
        /// How many times.
        times: u32,
        /// The steps.
        steps: Vec<Step>,
    },
    /// `inspect`: the model's view of a NIC (model-only).
    Inspect {
        /// Which NIC.
        nic: NicRef,
        /// DMA mappings the NIC holds.
        dma_mappings: Option<usize>,
        /// Whether a driver is registered with the firmware.
        driver_registered: Option<bool>,
    },
}

impl Action {
    /// The step's key in the language.
    pub fn keyword(&self) -> &'static str {
        match self {
            Action::Open { .. } => "open",
            Action::Close { .. } => "close",
            Action::Config { .. } => "config",
            Action::Identity(_) => "identity",
            Action::Limits { .. } => "limits",
            Action::Count(_) => "count",
            Action::Wait(_) => "wait",
            Action::Repeat { .. } => "repeat",
            Action::Inspect { .. } => "inspect",
        }
    }

    /// Whether the step can fail in the driver (and so may `expect` an error).
    pub fn is_fallible(&self) -> bool {
        matches!(self, Action::Open { .. })
    }
}

/// What the `identity` step checks.
#[derive(Debug, Clone)]
pub struct IdentityCheck {
    /// The alias.
    pub nic: Alias,
    /// Expected name (`BNXT:1`).
    pub name: Option<String>,
    /// Expected bus address.
    pub bus: Option<String>,
    /// Expected MAC.
    pub mac: Option<[u8; 6]>,
    /// Expected IPv4 address.
    pub ipv4: Option<Ipv4Addr>,
    /// Expected GID.
    pub gid: Option<[u8; 16]>,
    /// NICs whose identity must differ from this one's.
    pub differs_from: Vec<Alias>,
}

/// What the `count` step checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountCheck {
    /// Exactly this many NICs.
    Equals(usize),
    /// At least this many.
    AtLeast(usize),
}

/// A name `open` gives a NIC, where it is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    /// The name.
    pub name: String,
    /// Where this use of it is written.
    pub at: Pos,
    /// The field's path.
    pub path: String,
}

/// A NIC named by index or by alias.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NicRef {
    /// By index.
    Index {
        /// The index.
        nic: usize,
        /// Where it is written.
        at: Pos,
        /// The field's path.
        path: String,
    },
    /// By alias (its index is the one its `open` named).
    Alias(Alias),
}

/// What must happen when a step runs. By default: it succeeds.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// The step fails with an error whose message matches this.
    pub error: Option<ErrorPattern>,
    /// The step takes at least this long (on the target's clock).
    pub takes_at_least: Option<Duration>,
    /// The step takes at most this long.
    pub takes_at_most: Option<Duration>,
    /// Where `expect` is written.
    pub at: Option<Pos>,
}

/// A regular expression an error message must match.
#[derive(Debug, Clone)]
pub struct ErrorPattern {
    /// The expression as written.
    pub text: String,
    /// The compiled expression.
    pub regex: Regex,
}
