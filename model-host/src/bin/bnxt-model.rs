//! `bnxt-model`: the BCM57608 model as a process.
//!
//! `bnxt-model serve --socket PATH --mac MAC [--hwrm-log PATH] [--faults FILE] [--seed N]
//! [--segment PATH [--pcap FILE]] [--log-level LEVEL] [--persist]` serves one model NIC over vfio-user (QEMU's
//! `vfio-user-pci`, or the driver's vfio-user backend). `bnxt-model segment --socket PATH
//! [--pcap FILE]` runs a virtual Ethernet segment in QEMU's stream-netdev framing. Exit status:
//! 0 when the client disconnected or on SIGTERM/SIGINT; 1 when the server could not start or
//! failed; 2 for a bad command line.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bnxt_model::faults::FaultPlan;
use bnxt_model_host::serve::segment::{SegmentOptions, segment};
use bnxt_model_host::serve::{ServeOptions, serve};
use bnxt_model_host::vfio_user::nic::check_wire_plan;
use clap::{Args, Parser, Subcommand};

/// The BCM57608 model as a process.
#[derive(Debug, Parser)]
#[command(name = "bnxt-model", version, about)]
struct Cli {
    /// Log level of the model's own log on stderr (error, warn, info, debug, trace; RUST_LOG
    /// overrides).
    #[arg(long, global = true, default_value = "info")]
    log_level: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve one model NIC as a vfio-user device on a UNIX socket.
    Serve(ServeArgs),
    /// Run a virtual Ethernet segment that `serve --segment` processes and QEMU guests'
    /// `-netdev stream` NICs join (frames with a 4-byte big-endian length prefix).
    Segment(SegmentArgs),
}

#[derive(Debug, Args)]
struct SegmentArgs {
    /// The UNIX socket peers connect to (mode 0600).
    #[arg(long)]
    socket: PathBuf,
    /// Record every frame that enters the segment in this pcap file.
    #[arg(long)]
    pcap: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The UNIX socket to listen on (created with mode 0600; a stale socket is replaced, any
    /// other file is refused).
    #[arg(long)]
    socket: PathBuf,
    /// The NIC's permanent MAC address, xx:xx:xx:xx:xx:xx.
    #[arg(long, value_parser = parse_mac)]
    mac: [u8; 6],
    /// Write one line per HWRM request served (request name and number, error code) here.
    #[arg(long)]
    hwrm_log: Option<PathBuf>,
    /// Faults to inject from the start: a FaultPlan as JSON (`{"firmware": [{"nic": 0,
    /// "req_type": 29, "nth": null, "action": "no-response"}]}`); its `wire` plan applies to the
    /// frames the NIC sends to the segment.
    #[arg(long)]
    faults: Option<PathBuf>,
    /// Seed of the model's random choices.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Keep serving after the client disconnects (the next client finds the NIC as it was).
    #[arg(long)]
    persist: bool,
    /// Join the virtual Ethernet segment whose hub (`bnxt-model segment`) listens here.
    #[arg(long)]
    segment: Option<PathBuf>,
    /// Record the frames the NIC exchanges on the segment in this pcap file.
    #[arg(long, requires = "segment")]
    pcap: Option<PathBuf>,
}

fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return Err(format!("`{s}` is not a MAC address (six hex bytes separated by colons)"));
    }
    let mut mac = [0u8; 6];
    for (b, p) in mac.iter_mut().zip(&parts) {
        *b = u8::from_str_radix(p, 16).map_err(|_| format!("`{p}` in `{s}` is not a hex byte"))?;
    }
    if mac[0] & 1 != 0 || mac == [0; 6] {
        return Err(format!("{s} is a multicast or zero address; a NIC needs a unicast one"));
    }
    Ok(mac)
}

fn read_faults(path: &Path) -> Result<FaultPlan, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read fault plan {}: {e}", path.display()))?;
    let plan: FaultPlan = serde_json::from_str(&text).map_err(|e| format!("fault plan {}: {e}", path.display()))?;
    check_wire_plan(&plan.wire).map_err(|e| format!("fault plan {}: wire: {e}", path.display()))?;
    Ok(plan)
}

fn init_tracing(level: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = std::env::var("RUST_LOG").map(EnvFilter::new).unwrap_or_else(|_| EnvFilter::new(level));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false)
        .try_init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(&cli.log_level);
    match cli.command {
        Command::Serve(args) => {
            let faults = match args.faults.as_deref().map(read_faults).transpose() {
                Ok(f) => f.unwrap_or_default(),
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let options = ServeOptions {
                socket: args.socket,
                mac: args.mac,
                seed: args.seed,
                faults,
                hwrm_log: args.hwrm_log,
                persist: args.persist,
                segment: args.segment,
                pcap: args.pcap,
                catch_signals: true,
            };
            match serve(&options) {
                Ok(summary) => {
                    // ci/guest-test.sh --trace reads `doorbell_stores=N` off this line.
                    tracing::info!(doorbell_stores = summary.doorbell_stores, ?summary, "stopped");
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
        Command::Segment(args) => {
            let options = SegmentOptions { socket: args.socket, pcap: args.pcap, catch_signals: true };
            match segment(&options) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => fail(&e),
            }
        }
    }
}

fn fail(e: &dyn std::fmt::Display) -> ExitCode {
    tracing::error!("{e}");
    eprintln!("error: {e}");
    ExitCode::from(1)
}
