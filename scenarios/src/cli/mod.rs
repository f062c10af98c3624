//! The `bnxt-rig` command line: `run`, `list`, `check`, `replay`, `diff`, `schema`, `nics`,
//! `detach`, `attach` and `doctor`.
//!
//! Exit status: 0 when every scenario run passed (skipped ones do not count against it), the
//! files checked are valid, or two transcripts agree; 1 when a scenario failed or timed out, or
//! two transcripts differ; 2 when the command line or a scenario file is wrong (nothing runs
//! then); 3 ([`EXIT_NOTHING_RAN`]) when a run ran no scenario at all (every one chosen was
//! skipped on the target, or none was chosen): a lab run that tested nothing is not a pass.

mod diff;
mod doctor;
pub mod list;
mod nics;
mod run;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::run::select::Selection;
use crate::scenario::{Scenario, Suite, load_paths};

/// Runs YAML scenarios against the BCM57608 model, NICs behind vfio-user sockets, or this
/// machine's BCM57608 functions through vfio-pci.
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
    /// List scenarios: name, targets, tags, NIC count, file.
    List(ListArgs),
    /// Run a recorded run again: the same files, target, seed and options.
    Replay(ReplayArgs),
    /// Compare two transcripts event by event (times, ids and addresses aside).
    Diff(DiffArgs),
    /// Write the JSON Schema of scenario files (docs/scenario.schema.json).
    Schema(SchemaArgs),
    /// List this machine's BCM57608 functions (from sysfs): NIC names, bus addresses, drivers.
    Nics(NicsArgs),
    /// Take NICs N… of this machine from their kernel drivers and bind them to vfio-pci (the `vfio`
    /// target opens NICs bound so), together; refused while another function of the same device
    /// or IOMMU group stays on a kernel driver. Needs root; persists until `attach` or a reboot.
    Detach(BindArgs),
    /// Give NICs N… of this machine back to their kernel drivers (clears the vfio-pci override).
    Attach(BindArgs),
    /// Check this machine for a lab run: IOMMU, vfio-pci, the NICs' drivers and groups, locked
    /// memory, permissions; each finding with the command that fixes it. Exit 1 when any blocks
    /// a run.
    Doctor(DoctorArgs),
}

/// Paths to scenario files or folders.
#[derive(Debug, Args)]
pub struct PathArgs {
    /// Scenario files, or folders to search (recursively) for *.yaml and *.yml.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
}

/// Which scenarios to take.
#[derive(Debug, Args, Default)]
pub struct SelectArgs {
    /// Only scenarios whose name contains this.
    #[arg(long, value_name = "SUBSTR")]
    pub filter: Option<String>,
    /// With --filter: only the scenario with exactly that name.
    #[arg(long, requires = "filter")]
    pub exact: bool,
    /// Only scenarios with this tag (repeatable: any of them).
    #[arg(long, value_name = "TAG")]
    pub tag: Vec<String>,
    /// No scenario with this tag (repeatable).
    #[arg(long, value_name = "TAG")]
    pub skip_tag: Vec<String>,
}

impl SelectArgs {
    fn selection(&self) -> Selection {
        Selection {
            filter: self.filter.clone(),
            exact: self.exact,
            tags: self.tag.clone(),
            skip_tags: self.skip_tag.clone(),
        }
    }
}

/// What a run writes besides the console report, and how it runs (none of it changes what a
/// scenario does).
#[derive(Debug, Args, Clone, Default)]
pub struct OutputArgs {
    /// Write each scenario's frames between NICs to DIR/NAME.pcap (model only).
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,
    /// Write each scenario's transcript to DIR/NAME.transcript and its ladder diagram of frames
    /// to DIR/NAME.svg.
    #[arg(long, value_name = "DIR")]
    pub transcript: Option<PathBuf>,
    /// Write a JUnit XML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write a JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Run up to N scenarios at once (on the model, each has its own machine).
    #[arg(long, short = 'j', value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: u16,
    /// With --jobs: the most memory the regions of the scenarios running at once may ask for
    /// (a size: 8GiB, 512MiB); a scenario that alone asks for more runs by itself. Default: half
    /// the memory the kernel says is available (MemAvailable).
    #[arg(long, value_name = "SIZE", value_parser = crate::scenario::values::parse_size)]
    pub memory_budget: Option<u64>,
    /// Write the run record (for `replay`) to FILE instead of target/bnxt-rig/runs/ (or
    /// $BNXT_RIG_RUNS).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
}

/// `run`'s arguments.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario files and folders.
    #[command(flatten)]
    pub paths: PathArgs,
    /// What to run against: `model` (the in-process model, on a virtual clock),
    /// `vfio-user:SOCK[,SOCK…]` (model processes, `bnxt-model serve`, one NIC per socket), or
    /// `vfio` (this machine's BCM57608 functions bound to vfio-pci: `bnxt-rig detach N` first).
    /// `bnxt-rig list --target T` shows what runs on T.
    #[arg(long, default_value = "model", value_name = "TARGET")]
    pub target: String,
    /// How long the driver waits for a RoCE firmware command before it calls the NIC wedged, for
    /// scenarios that do not set their own `command_timeout:` (`2s`). Default: the firmware's
    /// ceiling on the model, 2 s on the real-clock targets (`vfio-user`, `vfio`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub command_timeout: Option<std::time::Duration>,
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
    /// The most wall time one scenario may take (`300s`, `10m`); past it, TIMEOUT. Timeouts in
    /// the scenario files are on the target's clock (virtual on the model).
    #[arg(long, value_name = "DURATION", default_value = "300s", value_parser = parse_duration_arg)]
    pub wall_limit: std::time::Duration,
    /// Reports, captures and parallelism.
    #[command(flatten)]
    pub output: OutputArgs,
}

fn parse_duration_arg(text: &str) -> Result<std::time::Duration, String> {
    crate::scenario::values::parse_duration(text)
}

/// `list`'s arguments.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Scenario files and folders.
    #[command(flatten)]
    pub paths: PathArgs,
    /// Say for each scenario whether it runs on this target (`model`, `vfio-user:SOCK,…`,
    /// `vfio`) and why not, and which of its steps the target skips and why. A state of the
    /// machine a scenario takes for granted is named too; whether the target has it is known
    /// only when the scenario runs.
    #[arg(long, value_name = "TARGET")]
    pub target: Option<String>,
    /// Which scenarios.
    #[command(flatten)]
    pub select: SelectArgs,
}

/// `replay`'s arguments.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The run record `run` wrote (its path, or `latest`).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Only the scenarios that failed or timed out in that run.
    #[arg(long)]
    pub failed: bool,
    /// Reports, captures and parallelism for this replay.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `diff`'s arguments.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first transcript.
    pub a: PathBuf,
    /// The second transcript.
    pub b: PathBuf,
    /// Compare the model's own lines (`nicN`) even when only one transcript has them.
    #[arg(long)]
    pub all: bool,
    /// Compare every field as written (ids, PSNs and addresses too; never times).
    #[arg(long)]
    pub exact: bool,
    /// Lines of context around each difference.
    #[arg(long, default_value_t = 3)]
    pub context: usize,
    /// Compare each source's lines (drv0, drv1, nic0, ...) on their own rather than the whole
    /// interleaved sequence (always so for two guest traces, header `target: guest`).
    #[arg(long)]
    pub by_source: bool,
}

/// `schema`'s arguments.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Write the schema to FILE instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `nics`' arguments.
#[derive(Debug, Args)]
pub struct NicsArgs {
    /// A folder laid out as /sys/bus/pci/devices to read instead of the running machine's.
    #[arg(long, value_name = "DIR")]
    pub sysfs: Option<PathBuf>,
}

/// `detach`'s and `attach`'s arguments.
#[derive(Debug, Args)]
pub struct BindArgs {
    /// The NICs: their indices in bus order (`bnxt-rig nics` lists them), moved together.
    #[arg(required = true, value_name = "NIC")]
    pub nics: Vec<usize>,
    /// With each NIC, every other BCM57608 function of its device or IOMMU group (a dual-port
    /// card's other port).
    #[arg(long)]
    pub device: bool,
    /// A folder laid out as /sys/bus/pci/devices to change instead of the running machine's.
    #[arg(long, value_name = "DIR")]
    pub sysfs: Option<PathBuf>,
}

/// `doctor`'s arguments.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A folder laid out as /sys to read instead of the running machine's.
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub sys: PathBuf,
    /// A folder laid out as /proc to read instead of the running machine's.
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    pub proc: PathBuf,
    /// A folder laid out as /dev/vfio to look in instead of the running machine's.
    #[arg(long, value_name = "DIR", default_value = "/dev/vfio")]
    pub dev_vfio: PathBuf,
    /// Also open each NIC bound to vfio-pci (and held by no process) to measure what its open
    /// pins with this card's firmware; without it the model's NIC is measured.
    #[arg(long)]
    pub open: bool,
}

/// Exit status when a scenario failed, or transcripts differ.
pub const EXIT_FAILED: u8 = 1;
/// Exit status when the command line or a scenario file is wrong.
pub const EXIT_INVALID: u8 = 2;
/// Exit status of a run that ran no scenario (each was skipped on the target, or none was
/// chosen).
pub const EXIT_NOTHING_RAN: u8 = 3;

/// Parse the command line and do what it says.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    match &cli.command {
        Command::Run(args) => run::run(args, cli.verbose > 0),
        Command::Check(args) => check(args),
        Command::List(args) => list::list(args),
        Command::Replay(args) => run::replay(args, cli.verbose > 0),
        Command::Diff(args) => diff::diff(args),
        Command::Schema(args) => schema(args),
        Command::Nics(args) => nics::nics(args),
        Command::Detach(args) => nics::detach(args),
        Command::Attach(args) => nics::attach(args),
        Command::Doctor(args) => doctor::doctor(args),
    }
}

/// The process's `tracing` subscriber: the transcripts' recorder of the driver's record, and a log
/// on stderr when `RUST_LOG` or `-v` asks for one.
fn init_tracing(verbose: u8) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let filter = match (std::env::var("RUST_LOG"), verbose) {
        (Ok(spec), _) => Some(EnvFilter::new(spec)),
        (Err(_), 0) => None,
        (Err(_), 1) => Some(EnvFilter::new("info")),
        (Err(_), 2) => Some(EnvFilter::new("debug")),
        (Err(_), _) => Some(EnvFilter::new("trace")),
    };
    let registry = tracing_subscriber::registry().with(crate::transcript::record::layer());
    // Without a log, no layer of one: an absent layer counts as interested in every call site,
    // which would have the driver's events dispatched (and filtered) when nothing records them.
    let _ = match filter {
        Some(f) => tracing::subscriber::set_global_default(
            registry.with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_filter(f)),
        ),
        None => tracing::subscriber::set_global_default(registry),
    };
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

fn schema(args: &SchemaArgs) -> ExitCode {
    let text = crate::scenario::schema::schema_text();
    match &args.output {
        None => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Some(path) => match bnxt_output::write(path, text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                say_error(&format!("{}: {e}", path.display()));
                ExitCode::from(EXIT_INVALID)
            }
        },
    }
}
