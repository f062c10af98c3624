//! The scenario language: what a scenario file says, as typed values ([`Scenario`], [`Step`],
//! [`Fault`]), decoded from YAML by [`decode`], checked before anything runs by [`check`].
//!
//! docs/scenarios.md is the reference for people writing scenarios.

pub mod check;
pub mod decode;
mod decode_fault;
mod decode_step;
pub mod display;
pub mod firmware_names;
pub mod language;
pub mod load;
pub mod matrix;
pub mod opcodes;
pub mod values;

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::roce::rcfw::CreqStatus;
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
    /// The longest the scenario may take on the target's clock (virtual time on the model); past
    /// it the scenario ends with the verdict TIMEOUT.
    pub timeout: Option<Duration>,
    /// Why the scenario is not run anywhere for now (`skip: {reason: ...}`), if it is not.
    pub skip: Option<String>,
    /// What a target must be able to do to run the scenario, beyond what its faults and steps
    /// already show (see [`Scenario::needs`]).
    pub requires: Vec<Capability>,
    /// Faults the target injects.
    pub faults: Vec<Fault>,
    /// What the NICs' firmware advertises beyond its defaults (`firmware:`).
    pub firmware: FirmwareSettings,
    /// What to do, in order.
    pub steps: Vec<Step>,
}

/// `firmware:`: what the firmware of every NIC advertises beyond its defaults, where a target
/// can set it (the model's; a card's firmware is what it is).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FirmwareSettings {
    /// The firmware states resource limits of its own (FUNC_QCAPS SW_MAX_RESOURCE_LIMITS), and
    /// its MRAV context type the address vectors it keeps.
    pub resource_limits: bool,
    /// QPs the firmware destroys fast (the QP context type's third split entry).
    pub fast_destroy_qps: u32,
}

impl Scenario {
    /// Every capability the scenario needs of a target: what `requires:` lists, and what its
    /// faults and steps show (firmware faults, wire faults, `inspect` steps, RoCE steps), in
    /// [`Capability::ALL`] order.
    pub fn needs(&self) -> Vec<Capability> {
        let mut needs = self.requires.clone();
        for fault in &self.faults {
            needs.push(match fault.kind {
                FaultKind::Firmware(_) | FaultKind::RoceCommand(_) => Capability::Faults,
                FaultKind::Wire(_) => Capability::WireFaults,
            });
        }
        if self.firmware != FirmwareSettings::default() {
            needs.push(Capability::FirmwareSettings);
        }
        visit_steps(&self.steps, &mut |step| match &step.action {
            Action::Inspect { .. } => needs.push(Capability::Inspect),
            action if action.is_roce() => needs.push(Capability::Roce),
            _ => {}
        });
        Capability::ALL.iter().map(|(c, _)| *c).filter(|c| needs.contains(c)).collect()
    }
}

impl Scenario {
    /// The most memory its regions could hold at once: every `region` step's bytes, those inside
    /// a repeat once per time round (an upper bound: regions deregistered meanwhile count too).
    pub fn region_bytes(&self) -> u64 {
        fn sum(steps: &[Step]) -> u64 {
            steps
                .iter()
                .map(|s| match &s.action {
                    Action::Region { bytes, .. } => *bytes,
                    Action::Repeat { times, steps } => sum(steps).saturating_mul(u64::from(*times)),
                    _ => 0,
                })
                .fold(0, u64::saturating_add)
        }
        sum(&self.steps)
    }
}

/// Call `f` on every step of `steps`, those inside repeats too, in file order.
pub fn visit_steps<'s>(steps: &'s [Step], f: &mut impl FnMut(&'s Step)) {
    for step in steps {
        f(step);
        if let Action::Repeat { steps, .. } = &step.action {
            visit_steps(steps, f);
        }
    }
}

/// Something a target may or may not be able to do, as `requires:` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// Inject firmware faults (`faults: - firmware: ...`).
    Faults,
    /// Inject faults on the wire between NICs (`faults: - wire: ...`).
    WireFaults,
    /// Show a NIC's inner state (`inspect` steps).
    Inspect,
    /// Run on a virtual clock (a 40-second timeout costs no wall time; times are exact).
    VirtualTime,
    /// Capture the frames between NICs (`--pcap`).
    Pcap,
    /// Move bytes over RoCE between NICs (regions, queue pairs).
    Roce,
    /// Set what the NICs' firmware advertises (`firmware:`).
    FirmwareSettings,
}

impl Capability {
    /// Every capability with its name in `requires:`.
    pub const ALL: [(Capability, &'static str); 7] = [
        (Capability::Faults, "faults"),
        (Capability::WireFaults, "wire-faults"),
        (Capability::Inspect, "inspect"),
        (Capability::VirtualTime, "virtual-time"),
        (Capability::Pcap, "pcap"),
        (Capability::Roce, "roce"),
        (Capability::FirmwareSettings, "firmware-settings"),
    ];

    /// Its name in `requires:` (`wire-faults`).
    pub fn name(self) -> &'static str {
        Capability::ALL.iter().find(|(c, _)| *c == self).map(|(_, n)| *n).expect("every capability is named")
    }

    /// The capability named `name`.
    pub fn by_name(name: &str) -> Option<Capability> {
        Capability::ALL.iter().find(|(_, n)| *n == name).map(|(c, _)| *c)
    }
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
    /// The RoCE firmware misbehaves on one command of its channel (a `firmware` fault whose
    /// `request` names a RoCE command).
    RoceCommand(RoceCommandFault),
    /// The wire between the NICs loses, duplicates, reorders, corrupts or delays frames.
    Wire(WireFault),
}

/// Faults on the wire: a probability per kind and rules, drawn from the scenario's seed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WireFault {
    /// Chance a frame is lost.
    pub drop: f64,
    /// Chance a frame arrives twice.
    pub duplicate: f64,
    /// Chance a frame is held back behind the next.
    pub reorder: f64,
    /// Chance a frame has a bit flipped.
    pub corrupt: f64,
    /// Chance a frame is delayed.
    pub delay: f64,
    /// How much later a delayed frame arrives (the model's default when absent).
    pub delay_by: Option<Duration>,
    /// Longest a reordered frame waits for a next one (the model's default when absent).
    pub reorder_hold: Option<Duration>,
    /// Rules for chosen frames, looked at before the probabilities; the first that fires wins.
    pub rules: Vec<WireRule>,
}

/// A wire fault on chosen frames; every condition left out matches every frame.
#[derive(Debug, Clone, PartialEq)]
pub struct WireRule {
    /// Frames this NIC sends.
    pub nic: Option<usize>,
    /// Where `nic` is written.
    pub nic_at: Pos,
    /// Frames with this BTH opcode.
    pub opcode: Option<u8>,
    /// Frames with this PSN.
    pub psn: Option<u32>,
    /// Only the nth matching frame (from 1).
    pub nth: Option<u64>,
    /// What happens to the frame.
    pub kind: WireFaultKind,
    /// For `delay`: by how much.
    pub delay: Option<Duration>,
}

/// What a wire fault does to a frame: the model's own kinds, by the same names.
pub use bnxt_model::faults::WireFaultKind;

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

/// The RoCE firmware does something other than complete a command normally.
#[derive(Debug, Clone, PartialEq)]
pub struct RoceCommandFault {
    /// The NIC's index.
    pub nic: usize,
    /// Where the index is written.
    pub nic_at: Pos,
    /// The command's CMDQ opcode.
    pub opcode: u8,
    /// The command's name (roce_hsi.h, without `CMDQ_BASE_OPCODE_`).
    pub command: String,
    /// Which occurrence (from 1); every one when `None`.
    pub nth: Option<u32>,
    /// What the firmware does.
    pub action: CommandAction,
}

/// What a faulty RoCE firmware does with a command.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CommandAction {
    /// Takes it and never completes it.
    NoResponse,
    /// Completes it with this status instead of acting on it.
    Error(CreqStatus),
    /// Completes it this much later.
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
    /// The longest one run of the step may take on the target's clock; past it the scenario
    /// ends with the verdict TIMEOUT.
    pub timeout: Option<Duration>,
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
        /// What must hold.
        checks: InspectChecks,
    },
    /// `region`: register `bytes` of memory on a NIC, filled as said, and call it `name`.
    Region {
        /// The NIC's alias.
        nic: Alias,
        /// The region's name.
        name: Alias,
        /// Its size.
        bytes: u64,
        /// What it holds at first.
        fill: Fill,
        /// Whose memory it is.
        memory: RegionMemory,
    },
    /// `deregister`: give a region back.
    Deregister {
        /// The region.
        region: Alias,
    },
    /// `qp`: make a queue pair on a NIC and call it `name`.
    Qp {
        /// The NIC's alias.
        nic: Alias,
        /// The queue pair's name.
        name: Alias,
    },
    /// `connect`: connect two queue pairs to each other.
    Connect {
        /// One queue pair.
        qp: Alias,
        /// The other.
        peer: Alias,
    },
    /// `send`: post a send of `bytes` of `region` from `at`.
    Send(Transfer),
    /// `receive`: post a receive into `bytes` of `region` from `at`.
    Receive(Transfer),
    /// `read`: post an RDMA READ of `bytes` of region `from` at `from_at` into `region` at `at`.
    Read {
        /// Where the bytes land, and the queue pair.
        into: Transfer,
        /// The region read.
        from: Alias,
        /// Where in it.
        from_at: u64,
    },
    /// `complete`: the next `count` completions of a ring come within `within`, as said.
    Complete(CompleteCheck),
    /// `compare`: two ranges of regions hold the same bytes.
    Compare {
        /// One region.
        region: Alias,
        /// Where in it.
        at: u64,
        /// The other.
        with: Alias,
        /// Where in it.
        with_at: u64,
        /// How many bytes.
        bytes: u64,
    },
    /// `room`: how many more entries a ring takes.
    Room {
        /// The queue pair.
        qp: Alias,
        /// Which ring.
        side: bnxt::Side,
        /// What the room must be.
        check: CountCheck,
    },
    /// `destroy`: destroy a queue pair (work outstanding is abandoned).
    Destroy {
        /// The queue pair.
        qp: Alias,
    },
}

/// What an `inspect` step checks of a NIC (at least one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InspectChecks {
    /// DMA mappings the NIC holds.
    pub dma_mappings: Option<usize>,
    /// Whether a driver is registered with the firmware.
    pub driver_registered: Option<bool>,
    /// Objects the function holds in the firmware and the RoCE engine (rings, VNICs, L2 filters,
    /// QPs, ...).
    pub firmware_objects: Option<usize>,
    /// RoCE frames no L2 filter of the function passed to its RoCE engine.
    pub rx_no_l2_filter: Option<u64>,
}

/// What a new region holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Zeros.
    Zero,
    /// Bytes drawn from the scenario's seed and the region's name.
    Random,
    /// A counting pattern: the byte at offset `i` is `(i + seed) mod 251`.
    Pattern,
}

impl Fill {
    /// Every fill with its name.
    pub const ALL: [(Fill, &'static str); 3] =
        [(Fill::Zero, "zero"), (Fill::Random, "random"), (Fill::Pattern, "pattern")];

    /// Its name.
    pub fn name(self) -> &'static str {
        Fill::ALL.iter().find(|(f, _)| *f == self).map(|(_, n)| *n).expect("every fill is named")
    }
}

/// Whose memory a region is (the contract's `Region.host`, `Region.pages`, `Region.device`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionMemory {
    /// Memory the driver allocates for the device (`Region::host`).
    Host,
    /// Memory of the process, handed to the driver to pin and register (`Region::pages`).
    Pages,
    /// Another device's memory behind one of its BARs (`Region::device`).
    Device {
        /// The device's bus address.
        bus: String,
        /// The BAR.
        bar: u8,
    },
}

impl RegionMemory {
    /// The names `memory:` takes.
    pub const NAMES: [&'static str; 3] = ["host", "pages", "device"];

    /// Its name.
    pub fn name(&self) -> &'static str {
        match self {
            RegionMemory::Host => "host",
            RegionMemory::Pages => "pages",
            RegionMemory::Device { .. } => "device",
        }
    }
}

/// A post of a range of a region on a queue pair.
#[derive(Debug, Clone)]
pub struct Transfer {
    /// The queue pair.
    pub qp: Alias,
    /// The region.
    pub region: Alias,
    /// Offset in the region.
    pub at: u64,
    /// How many bytes.
    pub bytes: u64,
}

/// What the `complete` step checks.
#[derive(Debug, Clone)]
pub struct CompleteCheck {
    /// The queue pair.
    pub qp: Alias,
    /// Which ring.
    pub side: bnxt::Side,
    /// The status each completion must have.
    pub status: bnxt::Status,
    /// The bytes each must report, if given.
    pub bytes: Option<u64>,
    /// How long to wait for each, on the target's clock.
    pub within: Duration,
    /// How many completions.
    pub count: u32,
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
            Action::Region { .. } => "region",
            Action::Deregister { .. } => "deregister",
            Action::Qp { .. } => "qp",
            Action::Connect { .. } => "connect",
            Action::Send(_) => "send",
            Action::Receive(_) => "receive",
            Action::Read { .. } => "read",
            Action::Complete(_) => "complete",
            Action::Compare { .. } => "compare",
            Action::Room { .. } => "room",
            Action::Destroy { .. } => "destroy",
        }
    }

    /// Whether the step can fail in the driver with an error (and so may `expect` one).
    pub fn is_fallible(&self) -> bool {
        matches!(
            self,
            Action::Open { .. }
                | Action::Region { .. }
                | Action::Deregister { .. }
                | Action::Qp { .. }
                | Action::Connect { .. }
                | Action::Destroy { .. }
        )
    }

    /// Whether the step uses RoCE (regions, queue pairs).
    pub fn is_roce(&self) -> bool {
        matches!(
            self,
            Action::Region { .. }
                | Action::Deregister { .. }
                | Action::Qp { .. }
                | Action::Connect { .. }
                | Action::Send(_)
                | Action::Receive(_)
                | Action::Read { .. }
                | Action::Complete(_)
                | Action::Compare { .. }
                | Action::Room { .. }
                | Action::Destroy { .. }
        )
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
    /// The step is misuse the driver refuses by panicking (the contract's Invalid_argument),
    /// with a message matching this.
    pub misuse: Option<ErrorPattern>,
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
