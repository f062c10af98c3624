//! The runner: each scenario on a fresh machine of the target, its steps in order, the first
//! step that does not do what it should ending it. A panic in the driver or the model fails the
//! scenario with its message; it never takes the runner down. A timeout that passes ends the
//! scenario with the verdict TIMEOUT ([`watch`]); [`schedule`] runs several scenarios at once,
//! each on its own thread, and stops waiting for one that hangs.

pub mod budget;
pub mod exec;
pub mod fill;
mod inspect;
mod limits;
pub mod outcome;
pub mod panic;
pub mod record;
mod roce;
pub mod schedule;
pub mod select;
pub mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use exec::Exec;
use outcome::{Failure, ScenarioOutcome, Verdict};
use panic::catch;
use watch::{Limit, Watch, WatchedMachine, Whose};

use crate::report::console::shell_word;
use crate::scenario::{Capability, Scenario};
use crate::target::{MachinePlan, Target};
use crate::transcript::record::Recorder;
use crate::transcript::{Transcript, ladder};

/// How long a scenario may take in wall time unless `--wall-limit` says otherwise.
pub const DEFAULT_WALL_LIMIT: Duration = Duration::from_secs(300);

/// The RoCE command timeout the driver is opened with on a real-clock target unless
/// `--command-timeout` or the scenario says otherwise: a command a faulty firmware never answers
/// then costs two seconds, not the firmware's 40. Far above what a firmware that answers takes
/// (bnxt_re's commands are answered in milliseconds; the model under emulation in a guest, in
/// well under a second).
pub const REAL_CLOCK_COMMAND_TIMEOUT: Duration = Duration::from_secs(2);

/// How scenarios are run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Seed for every scenario, instead of each scenario's own.
    pub seed: Option<u64>,
    /// Fail a scenario when the target was asked for something it does not implement.
    pub strict: bool,
    /// Write each scenario's frames to `DIR/NAME.pcap`.
    pub pcap: Option<PathBuf>,
    /// Write each scenario's transcript to `DIR/NAME.transcript` and its ladder diagram of frames
    /// to `DIR/NAME.svg`.
    pub transcript: Option<PathBuf>,
    /// The most wall time one scenario may take.
    pub wall_limit: Duration,
    /// The RoCE command timeout for scenarios that do not set their own (`--command-timeout`);
    /// `None`: the firmware's on virtual-clock targets, [`REAL_CLOCK_COMMAND_TIMEOUT`] on the
    /// others.
    pub command_timeout: Option<Duration>,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            seed: None,
            strict: false,
            pcap: None,
            transcript: None,
            wall_limit: DEFAULT_WALL_LIMIT,
            command_timeout: None,
        }
    }
}

/// The RoCE command timeout `scenario` runs with on `target` (`None`: the firmware's ceiling):
/// the scenario's own, else `--command-timeout`, else [`REAL_CLOCK_COMMAND_TIMEOUT`] on a
/// real-clock target.
pub fn command_timeout_of(scenario: &Scenario, target: &dyn Target, options: &RunOptions) -> Option<Duration> {
    scenario.command_timeout.or(options.command_timeout).or_else(|| {
        let real_clock = !target.capabilities().virtual_time;
        real_clock.then_some(REAL_CLOCK_COMMAND_TIMEOUT)
    })
}

/// Why `scenario`, which started, does not run on the machine `session` gave: a state it takes
/// for granted ([`Scenario::assumptions`]) that the machine does not have.
fn assumption_broken(scenario: &Scenario, session: &dyn crate::target::Session, target: &dyn Target) -> Option<String> {
    for a in scenario.assumptions() {
        let state = match catch(|| session.config_state(a.nic)) {
            Ok(Ok(state)) => state,
            // Unreadable here: the step itself will say so.
            _ => continue,
        };
        if state.relaxed_ordering != a.relaxed_ordering {
            let is = if state.relaxed_ordering { "on" } else { "off" };
            return Some(format!("assumes {a}; the {} target's NIC {} has it {is}", target.name(), a.nic));
        }
    }
    None
}

/// The seed a scenario runs with.
pub fn seed_of(scenario: &Scenario, options: &RunOptions) -> u64 {
    options.seed.or(scenario.seed).unwrap_or(0)
}

/// Said of a scenario with wire faults where it does not run: they need a switch between the NICs
/// that drops, reorders and corrupts frames, which only the model's segment is.
const WIRE_FAULTS_WHY: &str =
    " (wire faults need the model's segment between the NICs: they run on the model and vfio-user targets only)";

/// Why `scenario` cannot run on `target`, if it cannot (before anything starts; a state of the
/// machine it takes for granted is checked once the machine is built).
pub fn skip_reason(scenario: &Scenario, target: &dyn Target) -> Option<String> {
    if let Some(reason) = &scenario.skip {
        return Some(format!("skipped: {reason}"));
    }
    let needs = scenario.needs();
    let wire = if needs.contains(&Capability::WireFaults) { WIRE_FAULTS_WHY } else { "" };
    if let Some(kinds) = &scenario.targets
        && !kinds.iter().any(|k| k == target.kind())
    {
        return Some(format!("runs only on: {}{wire}", kinds.join(", ")));
    }
    let lacking: Vec<&str> = needs.into_iter().filter(|c| !target.supports(*c)).map(Capability::name).collect();
    if !lacking.is_empty() {
        return Some(format!("needs {}, which the {} target lacks{wire}", lacking.join(", "), target.name()));
    }
    let max = target.capabilities().max_nics;
    if scenario.nics > max {
        return Some(format!("needs {} NICs; the {} target has {max}", scenario.nics, target.name()));
    }
    None
}

/// The command that runs `scenario` again as it ran: its file (with its name, when the file has
/// several scenarios), the target, the seed and the options that change what happens.
pub fn replay_command(scenario: &Scenario, target: &dyn Target, options: &RunOptions) -> String {
    let mut cmd = format!("bnxt-rig run {}", shell_word(&scenario.file.display().to_string()));
    if scenario.variant.is_some() {
        cmd.push_str(&format!(" --filter {} --exact", shell_word(&scenario.name)));
    }
    cmd.push_str(&format!(" --target {} --seed {}", shell_word(&target.name()), seed_of(scenario, options)));
    if options.strict {
        cmd.push_str(" --strict");
    }
    if let Some(t) = options.command_timeout {
        cmd.push_str(&format!(" --command-timeout {}", crate::scenario::values::format_duration(t)));
    }
    cmd
}

/// A file name for `name` in `dir` with `extension` (scenario names are file-safe already).
pub fn artifact(dir: &Path, name: &str, extension: &str) -> PathBuf {
    dir.join(format!("{name}.{extension}"))
}

/// The outcome of `scenario` on `target` before anything ran: a pass with no steps.
pub fn blank_outcome(scenario: &Scenario, target: &dyn Target, options: &RunOptions) -> ScenarioOutcome {
    ScenarioOutcome {
        name: scenario.name.clone(),
        file: scenario.file.clone(),
        target: target.name(),
        seed: seed_of(scenario, options),
        verdict: Verdict::Pass,
        steps: Vec::new(),
        target_time: Default::default(),
        wall_time: Default::default(),
        notes: Vec::new(),
        artifacts: Vec::new(),
        replay: replay_command(scenario, target, options),
        command_timeout: None,
        seam: None,
    }
}

/// Run `scenario` on `target`, on this thread.
pub fn run_scenario(scenario: &Scenario, target: &dyn Target, options: &RunOptions) -> ScenarioOutcome {
    let wall = Instant::now();
    let seed = seed_of(scenario, options);
    let mut outcome = blank_outcome(scenario, target, options);
    if let Some(reason) = skip_reason(scenario, target) {
        outcome.verdict = Verdict::Skip(reason);
        return outcome;
    }

    // A transcript has its pcap beside it where the target can.
    let pcap_dir = options.pcap.as_ref().or(options.transcript.as_ref());
    let pcap = pcap_dir.filter(|_| target.supports(Capability::Pcap)).map(|dir| artifact(dir, &scenario.name, "pcap"));
    if options.pcap.is_some() && pcap.is_none() {
        outcome.notes.push(format!("no pcap: the {} target cannot capture frames", target.name()));
    }
    let live_faults = scenario.live_faults();
    let plan = MachinePlan {
        nics: scenario.nics,
        seed,
        faults: &scenario.faults,
        live_faults: &live_faults,
        firmware: scenario.firmware,
        pcap: pcap.as_deref(),
        events: options.transcript.is_some(),
    };
    let session = match catch(|| target.start(&plan)) {
        Ok(Ok(session)) => session,
        Ok(Err(e)) => return fail_to_start(outcome, e.to_string(), wall),
        Err(panic) => return fail_to_start(outcome, panic, wall),
    };

    if let Some(reason) = assumption_broken(scenario, &*session, target) {
        outcome.verdict = Verdict::Skip(reason);
        outcome.wall_time = wall.elapsed();
        return outcome;
    }
    outcome.command_timeout = command_timeout_of(scenario, target, options);
    let rules = exec::StepRules {
        target: target.name(),
        lacks: Capability::ALL.iter().map(|(c, _)| *c).filter(|c| !target.supports(*c)).collect(),
        open: bnxt::OpenOptions { command_timeout: outcome.command_timeout },
        seam_nics: if target.faults_at_seam() { scenario.firmware_fault_nics() } else { Vec::new() },
    };

    let watch = Watch::new(options.wall_limit);
    let buses = catch(|| session.machine().buses()).ok().and_then(Result::ok).unwrap_or_default();
    let recorder = Recorder::new(buses, session.events(), options.transcript.is_some());
    let machine = WatchedMachine::new(session.machine(), watch.clone(), Some(recorder.clone()));
    let virtual_time = target.capabilities().virtual_time;
    let started = catch(|| session.clock().now()).unwrap_or_default();
    if let Some(timeout) = scenario.timeout {
        watch.push(Limit { whose: Whose::Scenario, length: timeout, until: started + timeout });
    }

    if options.transcript.is_some() {
        crate::transcript::record::install();
        if !crate::transcript::record::layer_installed() {
            outcome.notes.push(
                "the transcript lacks the driver's record: this process's tracing subscriber has no \
                 bnxt_rig::transcript::record::layer()"
                    .into(),
            );
        }
    }
    let ran = crate::transcript::record::recording(recorder.clone(), || {
        let mut exec =
            Exec::new(&*session, &machine, watch.clone(), recorder.clone(), seed, virtual_time).with_rules(rules);
        let ran = exec.run(&scenario.steps, &mut outcome.steps);
        watch.disarm();
        let closed = exec.close_all();
        // Dropping the driver's values runs its code too.
        let dropped = catch(move || drop(exec)).map_err(|panic| {
            Box::new(exec::Stop::Failed(Failure {
                step: None,
                expected: "the closed NICs are dropped".into(),
                got: panic,
            }))
        });
        ran.and(closed).and(dropped)
    });

    let seam = catch(|| session.seam_log()).unwrap_or_default();
    for (at, line) in &seam {
        recorder.note(*at, format!("seam {line}"));
    }
    if target.faults_at_seam() && scenario.has_firmware_faults() {
        outcome.seam = Some(seam.into_iter().map(|(_, line)| line).collect());
    }
    outcome.target_time = catch(|| session.clock().now()).unwrap_or_default().saturating_sub(started);
    let unimplemented = catch(|| session.unimplemented())
        .unwrap_or_else(|panic| vec![format!("the target could not say what it left unimplemented: {panic}")]);
    outcome.notes.extend(unimplemented);
    match catch(|| session.finish_pcap()) {
        Ok(Ok(Some(_))) => outcome.artifacts.extend(pcap),
        Ok(Ok(None)) => {}
        Ok(Err(e)) => outcome.notes.push(format!("the pcap could not be written: {e}")),
        Err(panic) => outcome.notes.push(format!("the pcap could not be written: {panic}")),
    }

    outcome.verdict = match ran {
        Err(stop) => stop.verdict(),
        Ok(()) if options.strict && !outcome.notes.is_empty() => Verdict::Fail(Failure {
            step: None,
            expected: "(--strict) the target implements everything the run asked of it".into(),
            got: outcome.notes.join("; "),
        }),
        Ok(()) => Verdict::Pass,
    };
    if let Some(dir) = &options.transcript {
        let (mut notes, mut artifacts) = (Vec::new(), Vec::new());
        let lines = recorder.take_lines();
        write_transcript(dir, scenario, &outcome, lines, &mut notes, &mut artifacts);
        outcome.notes.extend(notes);
        outcome.artifacts.extend(artifacts);
    }
    drop(machine);
    drop(session);
    outcome.wall_time = wall.elapsed();
    outcome
}

/// Write the transcript (and the ladder diagram, when frames went between NICs) into `dir`.
fn write_transcript(
    dir: &Path,
    scenario: &Scenario,
    outcome: &ScenarioOutcome,
    lines: Vec<crate::transcript::Line>,
    notes: &mut Vec<String>,
    artifacts: &mut Vec<PathBuf>,
) {
    let mut header = vec![
        ("scenario".to_string(), scenario.name.clone()),
        ("file".to_string(), scenario.file.display().to_string()),
        ("target".to_string(), outcome.target.clone()),
        ("seed".to_string(), outcome.seed.to_string()),
    ];
    header.push(("verdict".to_string(), outcome.verdict.label().to_string()));
    let transcript = Transcript { header, lines };
    let path = artifact(dir, &scenario.name, "transcript");
    let written = std::fs::create_dir_all(dir).and_then(|()| bnxt_output::write(&path, transcript.to_text()));
    match written {
        Ok(()) => artifacts.push(path),
        Err(e) => notes.push(format!("the transcript could not be written to {}: {e}", path.display())),
    }
    let title = format!("{} (seed {}, {})", scenario.name, outcome.seed, outcome.target);
    if let Some(svg) = ladder::ladder(&title, scenario.nics, &transcript.lines) {
        let path = artifact(dir, &scenario.name, "svg");
        match bnxt_output::write(&path, svg) {
            Ok(()) => artifacts.push(path),
            Err(e) => notes.push(format!("the ladder diagram could not be written to {}: {e}", path.display())),
        }
    }
}

fn fail_to_start(mut outcome: ScenarioOutcome, why: String, wall: Instant) -> ScenarioOutcome {
    outcome.verdict =
        Verdict::Fail(Failure { step: None, expected: "the target builds the scenario's machine".into(), got: why });
    outcome.wall_time = wall.elapsed();
    outcome
}

/// A target shared by the threads of a run.
pub type SharedTarget = Arc<dyn Target>;
