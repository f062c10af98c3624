//! The steps of the language: [`Step`] (one keyword with its [`Action`], and optionally `expect`
//! and `timeout`) and what each keyword takes. Read by serde, described by schemars, run by the
//! runner: these types are the language. Their doc comments are the descriptions editors show.

use std::net::Ipv4Addr;
use std::time::Duration;

use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Deserialize;

use super::kinds::{
    Bar, Bus, CompareBytes, CompleteCount, CompletionStatus, Count, FirmwareObjects, Frames, Gid, Ipv4, Kind, Mac,
    MessageBytes, NicIndex, NicsCounted, Offset, Opt, RegionBytes, RepeatTimes, Ring, Switch, Time,
};
use super::names::{Alias, NicRef};
use crate::yaml::{Located, OneOrMany, Pos};

/// The most times `repeat` may repeat.
pub const MAX_REPEAT: u64 = 1_000_000;
/// The most completions one `complete` step takes.
pub const MAX_COMPLETE_COUNT: u64 = 1 << 20;
/// How long `complete` waits for each completion when it does not say.
pub const DEFAULT_WITHIN: Duration = Duration::from_secs(10);

/// One step, with where it is written.
#[derive(Debug, Clone)]
pub struct Step {
    /// Where the step starts.
    pub at: Pos,
    /// Its path (`steps[3]`, `steps[5].repeat.steps[0]`).
    pub path: String,
    /// What it does.
    pub action: Action,
    /// Where its keyword's value starts.
    pub action_at: Pos,
    /// What must happen.
    pub expect: Expect,
    /// The longest one run of the step may take on the target's clock; past it the scenario
    /// ends with the verdict TIMEOUT.
    pub timeout: Option<Duration>,
    /// The iterations of enclosing repeats its names hold (`i` of `as: q${i}`), each once;
    /// empty for most steps.
    pub uses: Vec<String>,
}

/// The name of a repeat's iteration when its `index` does not say.
pub const DEFAULT_ITERATION: &str = "i";

impl Step {
    /// The step with every iteration its names hold put in by `value` (`q${i}` at `i` = 7 is
    /// `q7`); the step itself when it holds none. An iteration `value` has no number for is
    /// returned (the checks before running make sure every one has).
    pub fn resolved(&self, value: &dyn Fn(&str) -> Option<u32>) -> Result<std::borrow::Cow<'_, Step>, String> {
        if self.uses.is_empty() {
            return Ok(std::borrow::Cow::Borrowed(self));
        }
        let mut step = self.clone();
        for alias in step.action.names_mut() {
            *alias = alias.resolve(value)?;
        }
        Ok(std::borrow::Cow::Owned(step))
    }

    /// Whether the step, or one inside it, holds iteration `name` in its names.
    pub fn holds(&self, name: &str) -> bool {
        self.uses.iter().any(|u| u == name)
            || matches!(&self.action, Action::Repeat { steps, .. } if steps.iter().any(|s| s.holds(name)))
    }
}

/// What a step does: its keyword and what the keyword takes.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Open a NIC and name it.
    Open {
        /// The NIC's index (0 to `nics` - 1).
        #[serde(with = "super::kinds::At::<NicIndex>")]
        nic: Located<usize>,
        /// The name later steps use for it.
        #[serde(rename = "as")]
        alias: Alias,
    },
    /// Close a NIC, by its alias (a second close does nothing).
    Close(Alias),
    /// The NIC's PCI config-space state (at least one of the switches).
    Config {
        /// A NIC index or alias (also of a closed NIC, or of one whose open failed).
        nic: NicRef,
        /// PCIe Device Control: relaxed ordering enabled.
        #[serde(default, with = "Opt::<Switch>")]
        relaxed_ordering: Option<bool>,
        /// Command register: bus master enabled.
        #[serde(default, with = "Opt::<Switch>")]
        bus_master: Option<bool>,
        /// Command register: memory space enabled.
        #[serde(default, with = "Opt::<Switch>")]
        memory: Option<bool>,
    },
    /// Who an open NIC is, checked against the contract and the values given.
    Identity(IdentityCheck),
    /// An open NIC's queue-pair and region limits.
    Limits {
        /// The NIC's alias.
        nic: Alias,
        /// Exact number of queue pairs.
        #[serde(default, with = "Opt::<Count>")]
        qps: Option<u32>,
        /// Exact number of regions.
        #[serde(default, with = "Opt::<Count>")]
        regions: Option<u32>,
    },
    /// How many NICs the machine has (one of the two).
    Count(NicsCheck),
    /// Let time pass on the target's clock.
    Wait(#[serde(with = "Time")] Duration),
    /// Arm a firmware fault from this point of the run, written as a `faults:` entry is
    /// (`firmware: {nic, request, action, ...}`); `nth` counts the requests (or commands) from
    /// here (1: the next one, which it alone meets); without `nth` it meets every one from here.
    Fault(super::faults::Fault),
    /// Steps several times.
    Repeat {
        /// How many times (1 to 1,000,000).
        #[serde(with = "RepeatTimes")]
        times: u32,
        /// The name by which the steps' names refer to the iteration, from 0 (`as: q${i}`);
        /// `i` when absent.
        #[serde(default, with = "Opt::<super::kinds::IterationName>")]
        index: Option<String>,
        /// The steps.
        #[serde(with = "StepList")]
        steps: Vec<Step>,
    },
    /// What the model sees of a NIC (model only; at least one check).
    Inspect {
        /// A NIC index or alias.
        nic: NicRef,
        /// DMA mappings the host gave the NIC.
        #[serde(default, with = "Opt::<super::kinds::DmaMappings>")]
        dma_mappings: Option<u32>,
        /// Whether a driver is registered with the firmware.
        #[serde(default, with = "Opt::<Switch>")]
        driver_registered: Option<bool>,
        /// Objects the function holds in the firmware and the RoCE engine: rings, statistics
        /// contexts, VNICs, RSS contexts, L2 filters, GIDs, CQs, QPs, SRQs, memory keys,
        /// address handles (0 once a driver closed cleanly).
        #[serde(default, with = "Opt::<FirmwareObjects>")]
        firmware_objects: Option<u32>,
        /// RoCE frames no L2 filter of the function passed to its RoCE engine (the model's
        /// counter of that name).
        #[serde(default, with = "Opt::<Frames>")]
        rx_no_l2_filter: Option<u32>,
    },
    /// Register memory on a NIC.
    Region(RegionStep),
    /// Give a region back, by its name.
    Deregister(Alias),
    /// Make a queue pair on a NIC.
    Qp {
        /// The NIC's alias.
        #[serde(rename = "on")]
        nic: Alias,
        /// The queue pair's name.
        #[serde(rename = "as")]
        name: Alias,
    },
    /// Connect two queue pairs, each to the other.
    Connect {
        /// One queue pair.
        qp: Alias,
        /// The other (on the same NIC or another).
        peer: Alias,
    },
    /// Post a send.
    Send(Transfer),
    /// Post a receive.
    Receive(Transfer),
    /// Post an RDMA READ between two regions of one NIC.
    Read(ReadStep),
    /// The next completions of a ring.
    Complete(CompleteCheck),
    /// Two ranges of regions hold the same bytes.
    Compare {
        /// One region.
        region: Alias,
        /// Offset in it (0 when absent).
        #[serde(default, with = "Offset")]
        at: u64,
        /// The other region.
        with: Alias,
        /// Offset in it (0 when absent).
        #[serde(default, with = "Offset")]
        with_at: u64,
        /// How many bytes.
        #[serde(with = "CompareBytes")]
        bytes: u64,
    },
    /// How many more entries a ring takes (one of the two checks).
    Room(RoomCheck),
    /// Destroy a queue pair, by its name (work outstanding is abandoned).
    Destroy(Alias),
}

/// `identity`: who an open NIC is (name, bus, MAC, IPv4, GID), checked against the contract and
/// the values given.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdentityCheck {
    /// The NIC's alias.
    pub nic: Alias,
    /// Its name (`BNXT:1`).
    #[serde(default)]
    pub name: Option<String>,
    /// Its bus address (`0000:02:00.0`).
    #[serde(default)]
    pub bus: Option<String>,
    /// Its MAC address (`02:00:00:00:00:01`).
    #[serde(default, with = "Opt::<Mac>")]
    pub mac: Option<[u8; 6]>,
    /// Its IPv4 address.
    #[serde(default, with = "Opt::<Ipv4>")]
    pub ipv4: Option<Ipv4Addr>,
    /// Its GID, as an IPv6 address.
    #[serde(default, with = "Opt::<Gid>")]
    pub gid: Option<[u8; 16]>,
    /// Open NICs whose MAC and IPv4 must differ from this one's.
    #[serde(default, with = "Aliases")]
    pub differs_from: Vec<Alias>,
}

/// `count`: how many NICs the machine has (one of the two).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NicsCheck {
    /// Exactly this many.
    #[serde(default, with = "Opt::<NicsCounted>")]
    pub equals: Option<usize>,
    /// At least this many.
    #[serde(default, with = "Opt::<NicsCounted>")]
    pub at_least: Option<usize>,
}

impl NicsCheck {
    /// The check, once it is known to give one of the two.
    pub fn check(&self) -> Option<CountCheck> {
        count_check(self.equals, self.at_least)
    }
}

/// What a `count` or `room` step checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountCheck {
    /// Exactly this many.
    Equals(usize),
    /// At least this many.
    AtLeast(usize),
}

/// `equals` or `at_least`, when exactly one is given.
fn count_check(equals: Option<usize>, at_least: Option<usize>) -> Option<CountCheck> {
    match (equals, at_least) {
        (Some(n), None) => Some(CountCheck::Equals(n)),
        (None, Some(n)) => Some(CountCheck::AtLeast(n)),
        _ => None,
    }
}

/// `region`: memory on a NIC, registered, filled as said.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegionStep {
    /// The NIC's alias.
    #[serde(rename = "on")]
    pub nic: Alias,
    /// The region's name.
    #[serde(rename = "as")]
    pub name: Alias,
    /// Its size (`4096`, `64KiB`, `2MiB`).
    #[serde(with = "RegionBytes")]
    pub bytes: u64,
    /// What it holds at first: `zero` (the default), `random` (from the seed) or `pattern`.
    #[serde(default)]
    pub fill: Fill,
    /// Whose memory: `host` (the default: the driver allocates it), `pages` (the process's
    /// memory, pinned and registered) or `device` (another device's, named by `device` and
    /// `bar`).
    #[serde(default)]
    pub memory: MemoryKind,
    /// With `memory: device`: the device's bus address (`0000:81:00.0`).
    #[serde(default, with = "Opt::<super::kinds::At<Bus>>")]
    pub device: Option<Located<String>>,
    /// With `memory: device`: its BAR (0 to 5; 0 when absent).
    #[serde(default, with = "Opt::<super::kinds::At<Bar>>")]
    pub bar: Option<Located<u8>>,
}

impl RegionStep {
    /// Whose memory the region is, once the step is known to say it whole.
    pub fn region_memory(&self) -> RegionMemory {
        match (self.memory, &self.device) {
            (MemoryKind::Device, Some(bus)) => {
                RegionMemory::Device { bus: bus.value.clone(), bar: self.bar.as_ref().map_or(0, |b| b.value) }
            }
            (MemoryKind::Pages, _) => RegionMemory::Pages,
            _ => RegionMemory::Host,
        }
    }
}

/// What a new region holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fill {
    /// Zeros.
    #[default]
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

/// The kinds of memory a region may be, by the name `memory:` gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryKind {
    /// The driver's own.
    #[default]
    Host,
    /// The process's pages.
    Pages,
    /// Another device's.
    Device,
}

impl MemoryKind {
    /// Every kind with its name.
    pub const ALL: [(MemoryKind, &'static str); 3] =
        [(MemoryKind::Host, "host"), (MemoryKind::Pages, "pages"), (MemoryKind::Device, "device")];
}

super::kinds::named!(Fill, "fill");
super::kinds::named!(MemoryKind, "memory");

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

/// A post of a range of a region on a queue pair (`send`, `receive`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Transfer {
    /// The queue pair.
    pub qp: Alias,
    /// The region (on the queue pair's NIC).
    pub region: Alias,
    /// Offset in the region (0 when absent).
    #[serde(default, with = "Offset")]
    pub at: u64,
    /// How many bytes.
    #[serde(with = "MessageBytes")]
    pub bytes: u64,
}

/// `read`: an RDMA READ of `bytes` of region `from` at `from_at` into `region` at `at`, between
/// two regions of the queue pair's NIC.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadStep {
    /// The queue pair (connected to another on the same NIC).
    pub qp: Alias,
    /// Where the bytes land.
    pub region: Alias,
    /// Offset in `region` (0 when absent).
    #[serde(default, with = "Offset")]
    pub at: u64,
    /// The region read.
    pub from: Alias,
    /// Offset in `from` (0 when absent).
    #[serde(default, with = "Offset")]
    pub from_at: u64,
    /// How many bytes.
    #[serde(with = "MessageBytes")]
    pub bytes: u64,
}

impl ReadStep {
    /// Where the bytes land, as a post on the queue pair.
    pub fn into(&self) -> Transfer {
        Transfer { qp: self.qp.clone(), region: self.region.clone(), at: self.at, bytes: self.bytes }
    }
}

/// `complete`: the next `count` completions of a ring come within `within`, as said.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteCheck {
    /// The queue pair.
    pub qp: Alias,
    /// Which ring: `send` (sends and reads) or `receive`.
    #[serde(with = "Ring")]
    pub side: bnxt::Side,
    /// The status each must have (`ok` when absent).
    #[serde(default = "ok", with = "CompletionStatus")]
    pub status: bnxt::Status,
    /// The bytes each must report.
    #[serde(default, with = "Opt::<MessageBytes>")]
    pub bytes: Option<u64>,
    /// How long to wait for each, on the target's clock (10s when absent).
    #[serde(default = "default_within", with = "Time")]
    pub within: Duration,
    /// How many completions (1 when absent).
    #[serde(default = "one", with = "CompleteCount")]
    pub count: u32,
}

fn ok() -> bnxt::Status {
    bnxt::Status::Ok
}

fn default_within() -> Duration {
    DEFAULT_WITHIN
}

fn one() -> u32 {
    1
}

/// `room`: how many more entries a ring takes (one of the two checks).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoomCheck {
    /// The queue pair.
    pub qp: Alias,
    /// Which ring.
    #[serde(with = "Ring")]
    pub side: bnxt::Side,
    /// Exactly this many.
    #[serde(default, with = "Opt::<super::kinds::RingEntries>")]
    pub equals: Option<u32>,
    /// At least this many.
    #[serde(default, with = "Opt::<super::kinds::RingEntries>")]
    pub at_least: Option<u32>,
}

impl RoomCheck {
    /// The check, once it is known to give one of the two.
    pub fn check(&self) -> Option<CountCheck> {
        count_check(self.equals.map(|n| n as usize), self.at_least.map(|n| n as usize))
    }
}

/// `expect`: what must happen when the step runs (at least one). By default: it succeeds.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The step fails with an error whose message matches this regular expression.
    #[serde(default)]
    pub error: Option<ErrorPattern>,
    /// The step is misuse the driver refuses (it panics, the contract's Invalid_argument) with a
    /// message matching this.
    #[serde(default)]
    pub misuse: Option<ErrorPattern>,
    /// The step takes at least this long on the target's clock.
    #[serde(default, with = "Opt::<Time>")]
    pub takes_at_least: Option<Duration>,
    /// The step takes at most this long on the target's clock.
    #[serde(default, with = "Opt::<Time>")]
    pub takes_at_most: Option<Duration>,
    /// Where `expect` is written.
    #[serde(skip)]
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

/// The largest compiled size of an `expect: {error: ...}` expression.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

impl<'de> Deserialize<'de> for ErrorPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ErrorPattern, D::Error> {
        let make: fn(&str) -> Result<ErrorPattern, String> = |text| {
            let regex = RegexBuilder::new(text).size_limit(REGEX_SIZE_LIMIT).build().map_err(|err| {
                let reason = first_line(&err.to_string());
                format!("{} is not a regular expression: {reason}", crate::yaml::node::quote_short(text))
            })?;
            Ok(ErrorPattern { text: text.to_string(), regex })
        };
        super::kinds::FromText { what: "a regular expression the message must match", make }.read(d)
    }
}

super::kinds::schema!(ErrorPattern, |g| super::kinds::text_schema());

/// regex's messages span several lines (the pattern, a caret, the reason); keep the reason.
fn first_line(message: &str) -> String {
    let last = message.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or(message).trim();
    last.strip_prefix("error: ").unwrap_or(last).to_string()
}

/// A list of aliases, or one alias.
pub struct Aliases;

impl Kind for Aliases {
    type Value = Vec<Alias>;
    fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Alias>, D::Error> {
        OneOrMany::<Alias>::deserialize(d).map(|a| a.0)
    }
}

super::kinds::schema!(Aliases, |g| OneOrMany::<Alias>::json_schema(g));

/// A list of steps: at least one.
pub struct StepList;

impl Kind for StepList {
    type Value = Vec<Step>;
    fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Step>, D::Error> {
        struct Steps;
        impl<'de> serde::de::Visitor<'de> for Steps {
            type Value = Vec<Step>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of steps")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Step>, A::Error> {
                let mut steps = Vec::new();
                while let Some(step) = seq.next_element()? {
                    steps.push(step);
                }
                if steps.is_empty() {
                    return Err(serde::de::Error::custom("the list of steps is empty"));
                }
                Ok(steps)
            }
        }
        d.deserialize_seq(Steps)
    }
}

super::kinds::schema!(StepList, |g| {
    let step = g.subschema_for::<Step>().to_value();
    schemars::json_schema!({ "type": "array", "minItems": 1, "items": step })
});

impl Action {
    /// Every name the step gives or uses (not those of the steps inside a repeat), to put
    /// iterations in ([`Step::resolved`]).
    pub fn names_mut(&mut self) -> Vec<&mut Alias> {
        fn nic(r: &mut NicRef) -> Vec<&mut Alias> {
            match r {
                NicRef::Alias(a) => vec![a],
                NicRef::Index { .. } => Vec::new(),
            }
        }
        match self {
            Action::Open { alias, .. } => vec![alias],
            Action::Close(a) | Action::Deregister(a) | Action::Destroy(a) => vec![a],
            Action::Config { nic: r, .. } | Action::Inspect { nic: r, .. } => nic(r),
            Action::Identity(c) => std::iter::once(&mut c.nic).chain(c.differs_from.iter_mut()).collect(),
            Action::Limits { nic, .. } => vec![nic],
            Action::Count(_) | Action::Wait(_) | Action::Fault(_) | Action::Repeat { .. } => Vec::new(),
            Action::Region(r) => vec![&mut r.nic, &mut r.name],
            Action::Qp { nic, name } => vec![nic, name],
            Action::Connect { qp, peer } => vec![qp, peer],
            Action::Send(t) | Action::Receive(t) => vec![&mut t.qp, &mut t.region],
            Action::Read(r) => vec![&mut r.qp, &mut r.region, &mut r.from],
            Action::Complete(c) => vec![&mut c.qp],
            Action::Compare { region, with, .. } => vec![region, with],
            Action::Room(r) => vec![&mut r.qp],
        }
    }

    /// The step's keyword in the language (its variant's name, as serde reads it; a test keeps
    /// the two the same).
    pub fn keyword(&self) -> &'static str {
        match self {
            Action::Open { .. } => "open",
            Action::Close(_) => "close",
            Action::Config { .. } => "config",
            Action::Identity(_) => "identity",
            Action::Limits { .. } => "limits",
            Action::Count(_) => "count",
            Action::Wait(_) => "wait",
            Action::Fault(_) => "fault",
            Action::Repeat { .. } => "repeat",
            Action::Inspect { .. } => "inspect",
            Action::Region(_) => "region",
            Action::Deregister(_) => "deregister",
            Action::Qp { .. } => "qp",
            Action::Connect { .. } => "connect",
            Action::Send(_) => "send",
            Action::Receive(_) => "receive",
            Action::Read(_) => "read",
            Action::Complete(_) => "complete",
            Action::Compare { .. } => "compare",
            Action::Room(_) => "room",
            Action::Destroy(_) => "destroy",
        }
    }

    /// Whether the step can fail in the driver with an error (and so may `expect` one).
    pub fn is_fallible(&self) -> bool {
        matches!(
            self,
            Action::Open { .. }
                | Action::Region(_)
                | Action::Deregister(_)
                | Action::Qp { .. }
                | Action::Connect { .. }
                | Action::Destroy(_)
        )
    }

    /// What only some targets can do that this step needs, where the scenario runs on without
    /// it on the others: `inspect` (a look inside the NIC) needs [`super::Capability::Inspect`]. Every
    /// model-only step is named here; the runner skips it where the target lacks it and reports
    /// it as a skipped step.
    pub fn step_needs(&self) -> Option<super::Capability> {
        match self {
            Action::Inspect { .. } => Some(super::Capability::Inspect),
            _ => None,
        }
    }

    /// Whether the step uses RoCE (regions, queue pairs).
    pub fn is_roce(&self) -> bool {
        matches!(
            self,
            Action::Region(_)
                | Action::Deregister(_)
                | Action::Qp { .. }
                | Action::Connect { .. }
                | Action::Send(_)
                | Action::Receive(_)
                | Action::Read(_)
                | Action::Complete(_)
                | Action::Compare { .. }
                | Action::Room(_)
                | Action::Destroy(_)
        )
    }
}
