//! `bnxt-rig run` and `bnxt-rig replay`: run scenarios, report them, record the run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::{EXIT_FAILED, EXIT_INVALID, EXIT_NOTHING_RAN, OutputArgs, ReplayArgs, RunArgs, load, say_error};
use crate::report::console::{Console, Tally};
use crate::report::{json, junit};
use crate::run::outcome::ScenarioOutcome;
use crate::run::record::{self, FileSum, RecordedScenario, RunRecord};
use crate::run::schedule::run_all;
use crate::run::select::Selection;
use crate::run::{RunOptions, SharedTarget};
use crate::scenario::Scenario;
use crate::scenario::load::scenario_files;
use crate::target;

/// What to run, however it was asked for.
struct Plan {
    paths: Vec<PathBuf>,
    target: String,
    seed: Option<u64>,
    selection: Selection,
    strict: bool,
    wall_limit: Duration,
    command_timeout: Option<Duration>,
    output: OutputArgs,
    /// Only the scenarios with these names (a replay of the failed ones).
    only: Option<Vec<String>>,
}

/// `bnxt-rig run`.
pub(crate) fn run(args: &RunArgs, verbose: bool) -> ExitCode {
    let plan = Plan {
        paths: args.paths.paths.clone(),
        target: args.target.clone(),
        seed: args.seed,
        selection: args.select.selection(),
        strict: args.strict,
        wall_limit: args.wall_limit,
        command_timeout: args.command_timeout,
        output: args.output.clone(),
        only: None,
    };
    execute(&plan, verbose)
}

/// `bnxt-rig replay`.
pub(crate) fn replay(args: &ReplayArgs, verbose: bool) -> ExitCode {
    let record = match RunRecord::read(&args.run) {
        Ok(r) => r,
        Err(e) => {
            say_error(&e.to_string());
            return ExitCode::from(EXIT_INVALID);
        }
    };
    // Files this replay writes are named from here; the recorded paths from where the run was.
    let here = std::env::current_dir().unwrap_or_default();
    let absolute = |p: &Option<PathBuf>| p.as_ref().map(|p| here.join(p));
    let output = OutputArgs {
        pcap: absolute(&args.output.pcap),
        transcript: absolute(&args.output.transcript),
        junit: absolute(&args.output.junit),
        json: absolute(&args.output.json),
        jobs: args.output.jobs,
        memory_budget: args.output.memory_budget,
        record: absolute(&args.output.record),
    };
    if let Err(e) = std::env::set_current_dir(&record.cwd) {
        say_error(&format!("the run was in {}: {e}", record.cwd.display()));
        return ExitCode::from(EXIT_INVALID);
    }
    let mut err = std::io::stderr().lock();
    for changed in record.changed_files() {
        let _ = writeln!(err, "note: {} changed since the run; it runs as it is now", changed.display());
    }
    drop(err);
    let only = args.failed.then(|| {
        record
            .scenarios
            .iter()
            .filter(|s| s.verdict == "FAIL" || s.verdict == "TIMEOUT")
            .map(|s| s.name.clone())
            .collect()
    });
    let plan = Plan {
        paths: record.paths.clone(),
        target: record.target.clone(),
        seed: record.seed,
        selection: Selection {
            filter: record.filter.clone(),
            exact: record.exact,
            tags: record.tags.clone(),
            skip_tags: record.skip_tags.clone(),
        },
        strict: record.strict,
        wall_limit: Duration::from_millis(record.wall_limit_ms),
        command_timeout: record.command_timeout_ms.map(Duration::from_millis),
        output,
        only,
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "replaying {} scenario(s) of the run in {} on {}",
        plan.only.as_ref().map_or(record.scenarios.len(), Vec::len),
        record.cwd.display(),
        record.target
    );
    drop(out);
    execute(&plan, verbose)
}

fn execute(plan: &Plan, verbose: bool) -> ExitCode {
    let target: SharedTarget = match target::from_spec(&plan.target) {
        Ok(t) => Arc::from(t),
        Err(e) => {
            say_error(&e.to_string());
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let Some(scenarios) = load(&plan.paths) else { return ExitCode::from(EXIT_INVALID) };
    let (chosen, deselected): (Vec<Scenario>, Vec<Scenario>) = scenarios
        .into_iter()
        .partition(|s| plan.selection.chooses(s) && plan.only.as_ref().is_none_or(|names| names.contains(&s.name)));
    let options = RunOptions {
        seed: plan.seed,
        strict: plan.strict,
        pcap: plan.output.pcap.clone(),
        transcript: plan.output.transcript.clone(),
        wall_limit: plan.wall_limit,
        command_timeout: plan.command_timeout,
    };
    let jobs = usize::from(plan.output.jobs);
    let mut console = Console::new(std::io::stdout().lock(), verbose, target.capabilities().virtual_time);
    let progress = progress_bar(chosen.len(), verbose);
    let started = Instant::now();
    let mut tally = Tally::default();
    let mut outcomes: Vec<ScenarioOutcome> = Vec::with_capacity(chosen.len());
    let mut broken_console = None;
    let budget = plan.output.memory_budget.unwrap_or_else(crate::run::budget::default_budget);
    run_all(&chosen, &target, &options, jobs, budget, |_, outcome| {
        tally.add(&outcome);
        if broken_console.is_none()
            && let Err(e) = progress.suspend(|| console.scenario(&outcome))
        {
            broken_console = Some(e);
        }
        progress.inc(1);
        if let Some(next) = chosen.get(outcomes.len() + 1) {
            progress.set_message(next.name.clone());
        }
        outcomes.push(outcome);
    });
    progress.finish_and_clear();
    let total = started.elapsed();
    if let Some(e) = broken_console {
        say_error(&format!("cannot write the report: {e}"));
        return ExitCode::from(EXIT_INVALID);
    }
    let _ = console.summary(tally, deselected.len(), total, if target.parallel() { jobs } else { 1 });
    drop(console);

    let mut wrote_ok = true;
    let target_name = target.name();
    if let Some(path) = &plan.output.junit {
        wrote_ok &= report_written(path, junit::write(path, &target_name, total, &outcomes));
    }
    if let Some(path) = &plan.output.json {
        wrote_ok &= report_written(path, json::write(path, &target_name, tally, total, &outcomes));
    }
    write_record(plan, &outcomes);
    if tally.is_bad() {
        ExitCode::from(EXIT_FAILED)
    } else if tally.passed == 0 {
        say_error(&format!(
            "no scenario ran on the {target_name} target ({} skipped); `bnxt-rig list --target {}` says why",
            tally.skipped,
            crate::report::console::shell_word(&plan.target)
        ));
        ExitCode::from(EXIT_NOTHING_RAN)
    } else if !wrote_ok {
        ExitCode::from(EXIT_INVALID)
    } else {
        ExitCode::SUCCESS
    }
}

fn report_written(path: &Path, result: std::io::Result<()>) -> bool {
    match result {
        Ok(()) => true,
        Err(e) => {
            say_error(&format!("cannot write {}: {e}", path.display()));
            false
        }
    }
}

/// Record the run for `replay`, and say where (a record that cannot be written is said, and
/// does not fail the run).
fn write_record(plan: &Plan, outcomes: &[ScenarioOutcome]) {
    let mut files: Vec<FileSum> = Vec::new();
    for path in &plan.paths {
        for file in scenario_files(path).unwrap_or_default() {
            if let Some(crc32) = record::checksum(&file)
                && !files.iter().any(|f| f.path == file)
            {
                files.push(FileSum { path: file, crc32 });
            }
        }
    }
    let record = RunRecord {
        version: record::VERSION,
        cwd: std::env::current_dir().unwrap_or_default(),
        paths: plan.paths.clone(),
        target: plan.target.clone(),
        seed: plan.seed,
        filter: plan.selection.filter.clone(),
        exact: plan.selection.exact,
        tags: plan.selection.tags.clone(),
        skip_tags: plan.selection.skip_tags.clone(),
        strict: plan.strict,
        wall_limit_ms: plan.wall_limit.as_millis() as u64,
        command_timeout_ms: plan.command_timeout.map(|t| t.as_millis() as u64),
        files,
        scenarios: outcomes
            .iter()
            .map(|o| RecordedScenario { name: o.name.clone(), seed: o.seed, verdict: o.verdict.label().to_string() })
            .collect(),
    };
    let written = match &plan.output.record {
        Some(path) => record.write(path).map(|()| path.clone()),
        None => record.write_into(&record::default_dir()),
    };
    match written {
        Ok(path) => {
            let _ = writeln!(std::io::stdout(), "run record: {} (bnxt-rig replay {0})", path.display());
        }
        Err(e) => say_error(&format!("the run record was not written: {e}")),
    }
}

/// A progress bar on stderr when both stdout and stderr are terminals (and the run is not
/// verbose, whose log lines would tear it); hidden otherwise, so piped output stays plain lines.
fn progress_bar(len: usize, verbose: bool) -> ProgressBar {
    use std::io::IsTerminal;
    if verbose || !std::io::stdout().is_terminal() || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {wide_msg}") {
        bar.set_style(style);
    }
    bar
}
