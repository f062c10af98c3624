//! What running a scenario gave: a verdict, the steps with their (target clock) times, and what
//! the target noted.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

/// How a scenario ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "detail", rename_all = "kebab-case")]
pub enum Verdict {
    /// Every step did what it should.
    Pass,
    /// A step did not (or the machine could not be built, or NICs left open failed to close).
    Fail(Failure),
    /// Not run on this target, for this reason.
    Skip(String),
    /// A timeout passed: the scenario's, a step's, or the limit on wall time.
    Timeout(TimedOut),
}

impl Verdict {
    /// `PASS`, `FAIL`, `SKIP` or `TIMEOUT`.
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail(_) => "FAIL",
            Verdict::Skip(_) => "SKIP",
            Verdict::Timeout(_) => "TIMEOUT",
        }
    }

    /// Whether the run of the scenario counts against the run of the suite.
    pub fn is_bad(&self) -> bool {
        matches!(self, Verdict::Fail(_) | Verdict::Timeout(_))
    }
}

/// Which clock a timeout was on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeoutClock {
    /// The target's clock, virtual (the model).
    Virtual,
    /// The target's clock, real.
    Target,
    /// Wall time (`--wall-limit`): the run took too long whatever the target's clock said.
    Wall,
}

/// Which timeout passed, and where the scenario was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimedOut {
    /// Whose timeout: `scenario`, `step 4`, or `wall-limit`.
    pub whose: String,
    /// How long it allowed.
    #[serde(serialize_with = "crate::report::json::duration")]
    pub limit: Duration,
    /// On which clock.
    pub clock: TimeoutClock,
    /// The step that was running, if one was.
    pub step: Option<FailedStep>,
}

impl TimedOut {
    /// What passed, in words: `the timeout of step 4 (2s on the virtual clock)`.
    pub fn describe(&self) -> String {
        let clock = match self.clock {
            TimeoutClock::Virtual => "on the virtual clock",
            TimeoutClock::Target => "on the target's clock",
            TimeoutClock::Wall => "of wall time",
        };
        let limit = crate::scenario::values::format_duration(self.limit);
        match self.whose.as_str() {
            "wall-limit" => format!("the wall-time limit ({limit}) passed"),
            whose => format!("the timeout of the {whose} ({limit} {clock}) passed"),
        }
    }
}

/// Why a scenario failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// The step that failed; `None` when it was not a step (starting the target, cleaning up).
    pub step: Option<FailedStep>,
    /// What should have happened.
    pub expected: String,
    /// What happened.
    pub got: String,
}

/// Which step failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedStep {
    /// Its number, from 1, in the order of the file (`3`, or `5.2` inside a repeat).
    pub number: String,
    /// Line of the step in the file.
    pub line: u64,
    /// The step, as written (`open: {nic: 1, as: b}`).
    pub text: String,
    /// For a step inside repeats: the iteration of each enclosing repeat (from 1) and its count.
    pub iterations: Vec<(u32, u32)>,
}

/// One step that ran (top-level steps; a `repeat` is one record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepRecord {
    /// Its number, from 1.
    pub number: String,
    /// Line in the file.
    pub line: u64,
    /// The step as written.
    pub text: String,
    /// Target clock when it started.
    #[serde(serialize_with = "crate::report::json::duration")]
    pub started: Duration,
    /// How long it took on the target's clock.
    #[serde(serialize_with = "crate::report::json::duration")]
    pub took: Duration,
    /// Whether it did what it should.
    pub ok: bool,
    /// What happened, in a few words (an expected error's message, say).
    pub note: Option<String>,
    /// Not run on this target, for this reason (a model-only step, as `inspect`); the scenario
    /// ran on without it.
    pub skipped: Option<String>,
}

/// Everything a run of one scenario on one target gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScenarioOutcome {
    /// The scenario's name.
    pub name: String,
    /// Its file.
    pub file: PathBuf,
    /// The target it ran on (as `--target` names it).
    pub target: String,
    /// The seed it ran with.
    pub seed: u64,
    /// How it ended.
    pub verdict: Verdict,
    /// The steps that ran.
    pub steps: Vec<StepRecord>,
    /// Target clock at the end (virtual time on the model).
    #[serde(serialize_with = "crate::report::json::duration")]
    pub target_time: Duration,
    /// Wall-clock time the run took.
    #[serde(serialize_with = "crate::report::json::duration")]
    pub wall_time: Duration,
    /// What the target noted (unimplemented behaviour it was asked for).
    pub notes: Vec<String>,
    /// Files the run wrote (transcript, ladder diagram, pcap).
    pub artifacts: Vec<PathBuf>,
    /// The command that runs this scenario again the same way.
    pub replay: String,
    /// How long the driver waited for a RoCE firmware command (`None`: the firmware's own
    /// ceiling), when the scenario ran.
    #[serde(serialize_with = "crate::report::json::optional_duration")]
    pub command_timeout: Option<Duration>,
    /// For a scenario with firmware faults on a target that injects them at the driver's seam
    /// (`vfio-user`, `vfio`): what the layer did, in order (`VER_GET #1: no-response: not passed
    /// on`). `None` elsewhere.
    pub seam: Option<Vec<String>>,
}

impl ScenarioOutcome {
    /// The steps the target skipped.
    pub fn skipped_steps(&self) -> impl Iterator<Item = &StepRecord> {
        self.steps.iter().filter(|s| s.skipped.is_some())
    }
}
