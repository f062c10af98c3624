//! The scenario language: what a scenario file says, as typed values ([`Scenario`], [`Step`],
//! [`Fault`]). These types are the language three ways at once: serde reads files into them
//! (through [`crate::yaml::NodeDeserializer`], so errors carry line, column and field), schemars
//! derives the JSON Schema from them ([`schema`]), and the runner runs them. What a type cannot
//! say (a key that goes only with another, aliases defined before use) [`validate`] and
//! [`check`] say before anything runs.
//!
//! docs/scenarios.md is the reference for people writing scenarios.

pub mod check;
pub mod display;
pub mod faults;
pub mod firmware_names;
pub mod kinds;
pub mod load;
pub mod matrix;
pub mod names;
pub mod opcodes;
pub mod schema;
mod step_de;
pub mod steps;
pub mod validate;
pub mod values;

use std::borrow::Cow;
use std::path::PathBuf;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;

use kinds::{
    FastDestroyQps, Kind, MravEntries, NicCount, Opt, ScenarioName, Seed, Sentence, Switch, Tags, TargetKind, Time,
};

pub use faults::{Fault, FaultKind, FirmwareEntry, WireEntry, WireRule, fault_plan};
pub use load::{LoadError, Suite, load_paths};
pub use names::{Alias, NicRef};
pub use step_de::{STEP_EXTRAS, step_keys, step_keywords};
pub use steps::{
    Action, CompleteCheck, CountCheck, ErrorPattern, Expect, Fill, IdentityCheck, MemoryKind, NicsCheck, ReadStep,
    RegionMemory, RegionStep, RoomCheck, Step, StepList, Transfer,
};

/// The most NICs a scenario may ask for.
pub const MAX_NICS: usize = 64;

/// One scenario file (or one variant of a `matrix:` file).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "bnxt-rig scenario")]
pub struct Scenario {
    /// The file it came from.
    #[serde(skip)]
    pub file: PathBuf,
    /// Unique name: letters, digits, `-`, `_`, `.` (with a matrix, it uses every matrix name as
    /// `${name}`, so that a variant's name has its values in it).
    #[serde(with = "ScenarioName")]
    pub name: String,
    /// For a variant of a `matrix:` file, its values (`request=VER_GET`).
    #[serde(skip)]
    pub variant: Option<String>,
    /// What the scenario shows, in a sentence.
    #[serde(with = "Sentence")]
    pub about: String,
    /// The kinds of target it runs on; leave it out to run everywhere.
    #[serde(default, with = "Opt::<Targets>")]
    pub targets: Option<Vec<String>>,
    /// How many NICs the machine has (1 to 64).
    #[serde(with = "NicCount")]
    pub nics: usize,
    /// Seed of every random choice (MAC addresses, wire faults, data fills); 0 when absent,
    /// `--seed` overrides.
    #[serde(default, with = "Opt::<Seed>")]
    pub seed: Option<u64>,
    /// Words to select scenarios with (`--tag`, `--skip-tag`).
    #[serde(default, with = "Tags")]
    pub tags: Vec<String>,
    /// The longest the scenario may take on the target's clock (virtual time on the model);
    /// past it the verdict is TIMEOUT.
    #[serde(default, with = "Opt::<Time>")]
    pub timeout: Option<Duration>,
    /// How long the driver waits for a RoCE firmware command before it calls the NIC wedged
    /// (`OpenOptions::command_timeout`), on every target; the error messages and times the steps
    /// expect follow from it. Absent: the firmware's own ceiling (40 s on the model) on targets
    /// with a virtual clock, and `run --command-timeout` (2 s unless it says otherwise) on
    /// real-clock targets.
    #[serde(default, with = "Opt::<Time>")]
    pub command_timeout: Option<Duration>,
    /// Do not run the scenario, for this reason (it is reported as skipped).
    #[serde(default, with = "Opt::<SkipReason>")]
    pub skip: Option<String>,
    /// What a target must be able to do to run the scenario (faults, inspect steps and RoCE
    /// steps imply their own); elsewhere it is skipped with the reason.
    #[serde(default, with = "Capabilities")]
    pub requires: Vec<Capability>,
    /// Values that make several scenarios of the file: every combination is one, and `${name}`
    /// stands for its value anywhere in the file. (The variants are made before the file is
    /// read, so a scenario read has none.)
    #[serde(default)]
    pub matrix: Option<Matrix>,
    /// What the target injects.
    #[serde(default, with = "faults::Faults")]
    pub faults: Vec<Fault>,
    /// What every NIC's firmware advertises beyond its defaults, where the target can set it
    /// (the model's; elsewhere the scenario is skipped).
    #[serde(default)]
    pub firmware: FirmwareSettings,
    /// What to do, in order.
    #[serde(with = "StepList")]
    pub steps: Vec<Step>,
}

kinds::list!(
    /// `requires:`: a list of capabilities.
    Capabilities: Capability, "a list of capabilities, as [faults, virtual-time]"
);

/// `targets:`: a list of target kinds, not empty.
pub struct Targets;

impl kinds::Kind for Targets {
    type Value = Vec<String>;
    fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        struct Kinds;
        impl<'de> serde::de::Visitor<'de> for Kinds {
            type Value = Vec<String>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of target kinds, as [model]")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
                let mut kinds = Vec::new();
                while let Some(kind) = seq.next_element_seed(kinds::KindSeed::<TargetKind>::new())? {
                    kinds.push(kind);
                }
                if kinds.is_empty() {
                    let why = "the list of targets is empty (leave `targets` out to run everywhere)";
                    return Err(serde::de::Error::custom(why));
                }
                Ok(kinds)
            }
        }
        d.deserialize_seq(Kinds)
    }
}

impl JsonSchema for Targets {
    fn schema_name() -> Cow<'static, str> {
        "Targets".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let item = g.subschema_for::<TargetKind>().to_value();
        json_schema!({ "type": "array", "minItems": 1, "items": item })
    }
}

/// `firmware:`: what every NIC's firmware advertises beyond its defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FirmwareSettings {
    /// The firmware states resource limits of its own (FUNC_QCAPS `flags_ext2`
    /// SW_MAX_RESOURCE_LIMITS_SUPPORTED), and its MRAV context type the address vectors it keeps:
    /// the driver then holds every queue pair the firmware holds and the MRAV entries less those
    /// address vectors as regions.
    #[serde(default, with = "Opt::<Switch>")]
    pub resource_limits: Option<bool>,
    /// Queue pairs the firmware destroys fast (the QP context type's third split entry), which
    /// the driver adds beyond its 65,536 without firmware limits.
    #[serde(default, with = "Opt::<FastDestroyQps>")]
    pub fast_destroy_qps: Option<u32>,
    /// The MRAV context type's most entries (the model's default: 262,144); the driver keeps
    /// half of them, at most 262,144, for regions without firmware limits.
    #[serde(default, with = "Opt::<MravEntries>")]
    pub mrav_entries: Option<u32>,
}

impl FirmwareSettings {
    /// Whether it asks for anything beyond the defaults.
    pub fn is_default(&self) -> bool {
        !self.resource_limits.unwrap_or(false) && self.fast_destroy_qps.unwrap_or(0) == 0 && self.mrav_entries.is_none()
    }
}

/// `skip:`: why a scenario is not run.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Skip {
    /// Why (said in the report).
    #[serde(with = "Sentence")]
    reason: String,
}

/// `skip: {reason: ...}`, read as its reason.
pub struct SkipReason;

impl kinds::Kind for SkipReason {
    type Value = String;
    fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Skip::deserialize(d).map(|s| s.reason)
    }
}

impl JsonSchema for SkipReason {
    fn schema_name() -> Cow<'static, str> {
        Skip::schema_name()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        Skip::json_schema(g)
    }
}

/// `matrix:`, which [`matrix::expand`] reads from the tree before the file is decoded; here for
/// the schema and the keys a file may have.
#[derive(Debug, Clone)]
pub struct Matrix;

impl<'de> Deserialize<'de> for Matrix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Matrix, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Matrix)
    }
}

impl JsonSchema for Matrix {
    fn schema_name() -> Cow<'static, str> {
        "Matrix".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "minProperties": 1,
            "propertyNames": { "pattern": kinds::WORD_PATTERN },
            "additionalProperties": {
                "type": "array",
                "minItems": 1,
                "items": { "type": ["string", "integer", "boolean"] }
            }
        })
    }
}

impl Scenario {
    /// Every capability the scenario needs of a target: what `requires:` lists, and what its
    /// faults and steps show (firmware faults, wire faults, `inspect` steps, RoCE steps), in
    /// [`Capability::ALL`] order.
    pub fn needs(&self) -> Vec<Capability> {
        let mut needs = self.requires.clone();
        for fault in &self.faults {
            needs.push(match &fault.kind {
                FaultKind::Firmware(f) if !f.value.action.value.applies_to_roce() => Capability::MalformedAnswers,
                FaultKind::Firmware(_) => Capability::Faults,
                FaultKind::Wire(_) => Capability::WireFaults,
            });
        }
        if !self.firmware.is_default() {
            needs.push(Capability::FirmwareSettings);
        }
        visit_steps(&self.steps, &mut |step| {
            if step.action.is_roce() {
                needs.push(Capability::Roce);
            }
            if let Action::Fault(fault) = &step.action {
                needs.push(Capability::LiveFaults);
                if let FaultKind::Firmware(f) = &fault.kind
                    && !f.value.action.value.applies_to_roce()
                {
                    needs.push(Capability::MalformedAnswers);
                }
            }
        });
        Capability::ALL.iter().map(|(c, _)| *c).filter(|c| needs.contains(c)).collect()
    }

    /// Whether it has firmware faults (HWRM requests or RoCE commands), in its `faults:` or
    /// armed by `fault` steps.
    pub fn has_firmware_faults(&self) -> bool {
        self.faults.iter().any(|f| matches!(f.kind, FaultKind::Firmware(_))) || !self.live_faults().is_empty()
    }

    /// The NICs its firmware faults name, in its `faults:` or in `fault` steps.
    pub fn firmware_fault_nics(&self) -> Vec<usize> {
        let mut nics: Vec<usize> = self
            .faults
            .iter()
            .filter_map(|f| match &f.kind {
                FaultKind::Firmware(entry) => Some(entry.value.nic.value),
                FaultKind::Wire(_) => None,
            })
            .chain(self.live_faults().iter().map(faults::ModelFault::nic))
            .collect();
        nics.sort_unstable();
        nics.dedup();
        nics
    }

    /// The firmware faults its `fault` steps arm, in file order (a target that must be ready
    /// for them before the run starts reads them off here); those that hold together, which in
    /// a loaded scenario is every one.
    pub fn live_faults(&self) -> Vec<faults::ModelFault> {
        let mut live = Vec::new();
        visit_steps(&self.steps, &mut |step| {
            if let Action::Fault(Fault { kind: FaultKind::Firmware(entry), .. }) = &step.action
                && let Ok(fault) = faults::firmware_fault(entry)
            {
                live.push(fault);
            }
        });
        live
    }

    /// The steps a target without `supports` would skip (the scenario runs on without them):
    /// each with its number (`5`, `3.2` inside a repeat), line, text and the capability it needs.
    pub fn skipped_steps(&self, supports: &dyn Fn(Capability) -> bool) -> Vec<SkippedStep> {
        fn walk(steps: &[Step], prefix: &str, supports: &dyn Fn(Capability) -> bool, out: &mut Vec<SkippedStep>) {
            for (i, step) in steps.iter().enumerate() {
                let number = if prefix.is_empty() { (i + 1).to_string() } else { format!("{prefix}.{}", i + 1) };
                if let Some(needs) = step.action.step_needs().filter(|c| !supports(*c)) {
                    out.push(SkippedStep {
                        number: number.clone(),
                        line: step.at.line,
                        text: step.action.to_string(),
                        needs,
                    });
                }
                if let Action::Repeat { steps, .. } = &step.action {
                    walk(steps, &number, supports, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.steps, "", supports, &mut out);
        out
    }

    /// What the scenario takes for granted of the machine before its first step: relaxed
    /// ordering on or off in a NIC's Device Control while the driver does not hold the NIC, as a
    /// `config` step checking it before the NIC's first `open`, after a failed one or after a
    /// `close` says (the driver turns it off while it holds the NIC and gives the state it found
    /// back). The model powers its NICs on with it on; on real machines the platform decides, so
    /// where it differs the scenario is skipped with the reason (bus mastering and memory space
    /// are the driver's to set and stay checks).
    pub fn assumptions(&self) -> Vec<Assumption> {
        let mut held: Vec<(String, usize)> = Vec::new();
        let mut aliases: Vec<(String, usize)> = Vec::new();
        let mut out: Vec<Assumption> = Vec::new();
        visit_steps(&self.steps, &mut |step| match &step.action {
            Action::Open { nic, alias } => {
                aliases.push((alias.name.clone(), nic.value));
                if step.expect.error.is_none() {
                    held.push((alias.name.clone(), nic.value));
                }
            }
            Action::Close(alias) => held.retain(|(a, _)| *a != alias.name),
            Action::Config { nic, relaxed_ordering: Some(on), .. } => {
                let index = match nic {
                    NicRef::Index { nic, .. } => Some(*nic),
                    NicRef::Alias(a) => aliases.iter().rev().find(|(n, _)| *n == a.name).map(|(_, i)| *i),
                };
                if let Some(index) = index
                    && !held.iter().any(|(_, i)| *i == index)
                    && !out.iter().any(|a| a.nic == index)
                {
                    out.push(Assumption { nic: index, relaxed_ordering: *on, line: step.at.line });
                }
            }
            _ => {}
        });
        out
    }
}

/// A step a target cannot do, which it skips.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedStep {
    /// Its number (`5`, `3.2`).
    pub number: String,
    /// Its line in the file.
    pub line: u64,
    /// The step as written.
    pub text: String,
    /// What it needs of the target.
    pub needs: Capability,
}

/// A machine state a scenario takes for granted before its first step ([`Scenario::assumptions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assumption {
    /// The NIC's index.
    pub nic: usize,
    /// Relaxed ordering on (or off) before the NIC is first opened.
    pub relaxed_ordering: bool,
    /// The line of the `config` step that says so.
    pub line: u64,
}

impl std::fmt::Display for Assumption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on = if self.relaxed_ordering { "on" } else { "off" };
        write!(f, "relaxed ordering {on} at NIC {} while the driver does not hold it (line {})", self.nic, self.line)
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
                    Action::Region(r) => r.bytes,
                    Action::Repeat { times, steps, .. } => sum(steps).saturating_mul(u64::from(*times)),
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
    /// Make the firmware write malformed answers (`wrong-resp-len`, `wrong-seq-id`,
    /// `no-valid-byte`): only the model's firmware can; a layer at the seam withholds, delays
    /// and refuses, it does not forge.
    MalformedAnswers,
    /// Arm firmware faults in the middle of a run (`fault` steps).
    LiveFaults,
}

impl Capability {
    /// Every capability with its name in `requires:`.
    pub const ALL: [(Capability, &'static str); 9] = [
        (Capability::Faults, "faults"),
        (Capability::WireFaults, "wire-faults"),
        (Capability::Inspect, "inspect"),
        (Capability::VirtualTime, "virtual-time"),
        (Capability::Pcap, "pcap"),
        (Capability::Roce, "roce"),
        (Capability::FirmwareSettings, "firmware-settings"),
        (Capability::MalformedAnswers, "malformed-answers"),
        (Capability::LiveFaults, "live-faults"),
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

kinds::named!(Capability, "capability");
