//! What running a scenario gave: a verdict, the steps with their (target clock) times, and what
//! the target noted.

use std::path::PathBuf;
use std::time::Duration;

/// How a scenario ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every step did what it should.
    Pass,
    /// A step did not (or the machine could not be built, or NICs left open failed to close).
    Fail(Failure),
    /// Not run on this target, for this reason.
    Skip(String),
}

impl Verdict {
    /// `PASS`, `FAIL` or `SKIP`.
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail(_) => "FAIL",
            Verdict::Skip(_) => "SKIP",
        }
    }
}

/// Why a scenario failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The step that failed; `None` when it was not a step (starting the target, cleaning up).
    pub step: Option<FailedStep>,
    /// What should have happened.
    pub expected: String,
    /// What happened.
    pub got: String,
}

/// Which step failed.
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    /// Its number, from 1.
    pub number: String,
    /// Line in the file.
    pub line: u64,
    /// The step as written.
    pub text: String,
    /// Target clock when it started.
    pub started: Duration,
    /// How long it took on the target's clock.
    pub took: Duration,
    /// Whether it did what it should.
    pub ok: bool,
    /// What happened, in a few words (an expected error's message, say).
    pub note: Option<String>,
}

/// Everything a run of one scenario on one target gave.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    pub target_time: Duration,
    /// Wall-clock time the run took.
    pub wall_time: Duration,
    /// What the target noted (unimplemented behaviour it was asked for).
    pub notes: Vec<String>,
}
