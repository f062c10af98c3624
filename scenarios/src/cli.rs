//! The `bnxt-rig` command line: `run`, `check` and `list`.
//!
//! Exit status: 0 when every scenario run passed (skipped ones do not count against it), or the
//! files checked are valid; 1 when a scenario failed; 2 when the command line or a scenario
//! file is wrong (nothing runs then).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use crate::report::console::{Console, Tally};
use crate::run::select::Selection;
use crate::run::{RunOptions, run_scenario};
use crate::scenario::{Scenario, Suite, load_paths};
use crate::target;

/// Runs YAML scenarios against the BCM57608 model (or, later, real cards).
#[derive(Debug, Parser)]
#[command(name = "bnxt-rig", version, about)]
pub struct Cli {
    /// Log what the driver and the model do (-v info, -vv debug, -vvv trace; RUST_LOG overrides),
    /// and list every step of every scenario.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenarios (files, or folders searched for *.yaml and *.yml).
    Run(RunArgs),
    /// Check scenario files without running anything.
    Check(PathArgs),
    /// List scenarios: name, targets, tags, NIC count.
    List(ListArgs),
}

/// Paths to scenario files or folders.
#[derive(Debug, Args)]
pub struct PathArgs {
    /// Scenario files, or folders to search (recursively) for *.yaml and *.yml.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

/// Which scenarios to take.
#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Only scenarios whose name contains this.
    #[arg(long, value_name = "SUBSTR")]
    pub filter: Option<String>,
    /// Only scenarios with this tag (repeatable: any of them).
    #[arg(long, value_name = "TAG")]
    pub tag: Vec<String>,
    /// No scenario with this tag (repeatable).
    #[arg(long, value_name = "TAG")]
    pub skip_tag: Vec<String>,
}

impl SelectArgs {
    fn selection(&self) -> Selection {
        Selection { filter: self.filter.clone(), tags: self.tag.clone(), skip_tags: self.skip_tag.clone() }
    }
}

/// `run`'s arguments.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario files and folders.
    #[command(flatten)]
    pub paths: PathArgs,
    /// What to run against: `model` (the in-process model).
    #[arg(long, default_value = "model")]
    pub target: String,
    /// Seed for every scenario, instead of each one's own `seed:`.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Which scenarios.
    #[command(flatten)]
    pub select: SelectArgs,
    /// Fail a scenario when the target was asked for something it does not implement (the
    /// model: HWRM requests it answered CMD_NOT_SUPPORTED).
    #[arg(long)]
    pub strict: bool,
}

/// `list`'s arguments.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Scenario files and folders.
    #[command(flatten)]
    pub paths: PathArgs,
    /// Which scenarios.
    #[command(flatten)]
    pub select: SelectArgs,
}

/// Exit status when a scenario failed.
const EXIT_FAILED: u8 = 1;
/// Exit status when the command line or a scenario file is wrong.
const EXIT_INVALID: u8 = 2;

/// Parse the command line and do what it says.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    match &cli.command {
        Command::Run(args) => run(args, cli.verbose > 0),
        Command::Check(args) => check(args),
        Command::List(args) => list(args),
    }
}

fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let filter = match (std::env::var("RUST_LOG"), verbose) {
        (Ok(spec), _) => EnvFilter::new(spec),
        (Err(_), 0) => return,
        (Err(_), 1) => EnvFilter::new("info"),
        (Err(_), 2) => EnvFilter::new("debug"),
        (Err(_), _) => EnvFilter::new("trace"),
    };
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

/// Load the suite; print its errors to stderr. `None` when any file was wrong.
fn load(paths: &[PathBuf]) -> Option<Vec<Scenario>> {
    let Suite { scenarios, errors } = load_paths(paths);
    if errors.is_empty() {
        return Some(scenarios);
    }
    let mut err = std::io::stderr().lock();
    for e in &errors {
        let _ = writeln!(err, "error: {e}");
    }
    let _ = writeln!(err, "{} problem(s) in scenario files; nothing was run", errors.len());
    None
}

fn run(args: &RunArgs, verbose: bool) -> ExitCode {
    let target = match target::from_spec(&args.target) {
        Ok(t) => t,
        Err(e) => {
            say_error(&e.to_string());
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let Some(scenarios) = load(&args.paths.paths) else { return ExitCode::from(EXIT_INVALID) };
    let selection = args.select.selection();
    let (chosen, deselected): (Vec<&Scenario>, Vec<&Scenario>) = scenarios.iter().partition(|s| selection.chooses(s));
    let options = RunOptions { seed: args.seed, strict: args.strict };
    let replay_options = if args.strict { " --strict".to_string() } else { String::new() };
    let mut console = Console::new(std::io::stdout().lock(), verbose, target.capabilities().virtual_time, replay_options);
    let progress = progress_bar(chosen.len(), verbose);
    let started = Instant::now();
    let mut tally = Tally::default();
    for scenario in chosen {
        progress.set_message(scenario.name.clone());
        let outcome = run_scenario(scenario, &*target, &options);
        tally.add(&outcome.verdict);
        if let Err(e) = progress.suspend(|| console.scenario(&outcome)) {
            progress.finish_and_clear();
            say_error(&format!("cannot write the report: {e}"));
            return ExitCode::from(EXIT_INVALID);
        }
        progress.inc(1);
    }
    progress.finish_and_clear();
    let _ = console.summary(tally, deselected.len(), started.elapsed());
    if tally.failed > 0 { ExitCode::from(EXIT_FAILED) } else { ExitCode::SUCCESS }
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

/// Say an error on stderr (a closed stderr is no reason to panic).
fn say_error(message: &str) {
    let _ = writeln!(std::io::stderr(), "error: {message}");
}

fn check(args: &PathArgs) -> ExitCode {
    match load(&args.paths) {
        Some(scenarios) => {
            let _ = writeln!(std::io::stdout(), "ok: {} scenario(s), no problems", scenarios.len());
            ExitCode::SUCCESS
        }
        None => ExitCode::from(EXIT_INVALID),
    }
}

fn list(args: &ListArgs) -> ExitCode {
    let Some(scenarios) = load(&args.paths.paths) else { return ExitCode::from(EXIT_INVALID) };
    let selection = args.select.selection();
    let rows: Vec<[String; 5]> = scenarios
        .iter()
        .filter(|s| selection.chooses(s))
        .map(|s| {
            [
                s.name.clone(),
                s.targets.as_ref().map(|t| t.join(",")).unwrap_or_else(|| "all".into()),
                if s.tags.is_empty() { "-".into() } else { s.tags.join(",") },
                s.nics.to_string(),
                s.file.display().to_string(),
            ]
        })
        .collect();
    let header = ["NAME", "TARGETS", "TAGS", "NICS", "FILE"].map(String::from);
    let mut widths = [0usize; 5];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = std::io::stdout().lock();
    for row in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = row.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    ExitCode::SUCCESS
}
