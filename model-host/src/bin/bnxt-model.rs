//! `bnxt-model`: the BCM57608 model as a process.
//!
//! `bnxt-model serve --socket PATH --mac MAC [--hwrm-log PATH] [--faults FILE] [--firmware JSON] [--control PATH]
//! [--seed N] [--segment PATH [--pcap FILE]] [--log-level LEVEL] [--persist]` serves one model
//! NIC over vfio-user (QEMU's `vfio-user-pci`, or the driver's vfio-user backend).
//! `bnxt-model segment --socket PATH [--pcap FILE] [--control PATH]` runs a virtual Ethernet
//! segment in QEMU's stream-netdev framing. `bnxt-model ctl SOCKET …` speaks to a server's
//! control socket (faults, state, link, surprise removal) or a hub's (wire faults, a port's
//! cable, state; docs/faults.md). Exit status: 0 when the client disconnected
//! or on SIGTERM/SIGINT (for `ctl`: the request was carried out); 1 when the server could not
//! start or failed (`ctl`: the request was refused or got no reply); 2 for a bad command line.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use std::time::Duration;

use bnxt_model::faults::WirePlan;
use bnxt_model::faults::{ActionKind, FaultPlan};
use bnxt_model::firmware::options::FirmwareOptions;
use bnxt_model_host::serve::ctl::client;
use bnxt_model_host::serve::ctl::hub::HubRequest;
use bnxt_model_host::serve::ctl::protocol::{FaultFile, FaultSpec, Request, schema};
use bnxt_model_host::serve::log_limit::RateLimit;
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
    /// Speak to the control socket of a running `serve --control` or `segment --control` (prints
    /// the reply as JSON).
    Ctl(CtlArgs),
}

#[derive(Debug, Args)]
struct CtlArgs {
    /// Print the JSON Schema of the control channel's requests and replies, and exit.
    #[arg(long, exclusive = true)]
    schema: bool,
    /// The control socket.
    #[arg(required_unless_present = "schema")]
    socket: Option<PathBuf>,
    /// How long to wait for the reply, in seconds.
    #[arg(long, default_value_t = 10)]
    timeout: u64,
    #[command(subcommand)]
    what: Option<CtlCommand>,
}

#[derive(Debug, Subcommand)]
enum CtlCommand {
    /// Faults on firmware requests.
    #[command(subcommand)]
    Fault(FaultCommand),
    /// What the model holds (registration, rings, DMA mappings, RoCE counters, link, faults), or
    /// what the hub does (ports, counters, wire plan).
    State,
    /// Take the NIC's peer away (`down`, the cable pulled) or give it back (`up`); on a hub,
    /// `link PORT down|up` pulls or plugs back the cable of the hub's port PORT.
    Link {
        /// `up` or `down`; on a hub `PORT up` or `PORT down`.
        #[arg(num_args = 1..=2, required = true)]
        words: Vec<String>,
    },
    /// Wire faults on a hub (`segment --control`).
    #[command(subcommand)]
    Wire(WireCommand),
    /// Reset the firmware (`reset`: solicited; `fatal`: a firmware exception).
    Fw {
        /// `reset` or `fatal`.
        #[arg(value_parser = ["reset", "fatal"])]
        how: String,
    },
    /// PCIe events.
    #[command(subcommand)]
    Pcie(PcieCommand),
    /// Send one request written as JSON (see `--schema`).
    Raw {
        /// The request.
        json: String,
    },
}

#[derive(Debug, Subcommand)]
enum WireCommand {
    /// Pass every frame entering the hub through this wire plan from now on (replacing the one
    /// before), written as a `--faults` file's `wire`: `'{"drop": 0.1, "rules": [{"nic": 1,
    /// "nth": 3, "kind": "corrupt"}]}'` (a rule's `nic` is a port of the hub).
    Set {
        /// The plan, as JSON.
        plan: String,
        /// Seed of the plan's draws.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Take the wire plan away.
    Clear,
}

#[derive(Debug, Subcommand)]
enum PcieCommand {
    /// Yank the card: every read returns all-ones, writes are dropped, DMA and interrupts stop.
    SurpriseRemoval,
}

#[derive(Debug, Subcommand)]
enum FaultCommand {
    /// Arm a fault from now on; prints its id.
    Add {
        /// The HWRM request (`FUNC_QCFG`) or RoCE command (`CREATE_QP`), by name.
        request: String,
        /// no-response, acts-no-response, error, delay, wrong-resp-len, wrong-seq-id or
        /// no-valid-byte.
        #[arg(value_parser = parse_action)]
        action: ActionKind,
        /// For `error`: the HWRM error code or CREQ status by name; for `delay`: milliseconds.
        value: Option<String>,
        /// Start at the nth request of that type from now (1 = the next).
        #[arg(long)]
        nth: Option<u32>,
        /// Fire on this many requests (once with --nth, always without, by default).
        #[arg(long)]
        count: Option<u32>,
    },
    /// Clear one fault by id, or every fault.
    Clear {
        /// The fault's id (every fault when absent).
        id: Option<u64>,
    },
    /// List the armed faults and how often each fired.
    List,
}

fn parse_action(s: &str) -> Result<ActionKind, String> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|e| e.to_string())
}

#[derive(Debug, Args)]
struct SegmentArgs {
    /// The UNIX socket peers connect to (mode 0600).
    #[arg(long)]
    socket: PathBuf,
    /// Record every frame that enters the segment in this pcap file.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Listen for control requests (`bnxt-model ctl`: wire faults, a port's cable, state) on
    /// this UNIX socket (mode 0600).
    #[arg(long)]
    control: Option<PathBuf>,
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
    /// Faults to inject from the start, JSON (docs/faults.md): `{"firmware": [{"request":
    /// "FUNC_QCFG", "action": "no-response", "nth": 3}], "wire": {...}}`; the `wire` plan applies
    /// to the frames the NIC sends to the segment.
    #[arg(long)]
    faults: Option<PathBuf>,
    /// What the firmware advertises beyond its defaults, JSON (the `firmware` object of a
    /// `BNXT_RIG_RESTART` plan, docs/faults.md): `{"error_recovery": true}` offers the error
    /// recovery capability bnxt_en's health watchdog uses.
    #[arg(long, value_parser = parse_firmware)]
    firmware: Option<FirmwareOptions>,
    /// Listen for control requests (`bnxt-model ctl`) on this UNIX socket (mode 0600).
    #[arg(long)]
    control: Option<PathBuf>,
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

fn parse_firmware(s: &str) -> Result<FirmwareOptions, String> {
    serde_json::from_str(s).map_err(|e| format!("not firmware options ({{\"error_recovery\": true}}, ...): {e}"))
}

fn read_faults(path: &Path) -> Result<FaultFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read fault plan {}: {e}", path.display()))?;
    let file: FaultFile = serde_json::from_str(&text).map_err(|e| format!("fault plan {}: {e}", path.display()))?;
    check_wire_plan(&file.wire).map_err(|e| format!("fault plan {}: wire: {e}", path.display()))?;
    for (i, spec) in file.firmware.iter().enumerate() {
        spec.resolve().map_err(|e| format!("fault plan {}: firmware[{i}]: {e}", path.display()))?;
    }
    Ok(file)
}

/// `up` or `down`, as a link's state.
fn link_up(word: &str) -> Result<bool, String> {
    match word {
        "up" => Ok(true),
        "down" => Ok(false),
        other => Err(format!("`{other}`: a link is `up` or `down`")),
    }
}

/// The request a `ctl` command line asks for, as the JSON line to send (serve's channel's or a
/// hub's: the socket decides which understands it).
fn ctl_request(what: CtlCommand) -> Result<serde_json::Value, String> {
    Ok(match what {
        CtlCommand::Link { words } => match &words[..] {
            [state] => json(&Request::Link { up: link_up(state)? }),
            [port, state] => {
                let port = port.parse::<u32>().map_err(|_| format!("`{port}` is not a hub port number"))?;
                json(&HubRequest::Link { port, up: link_up(state)? })
            }
            _ => return Err("link takes `up`/`down`, or a hub port and `up`/`down`".into()),
        },
        CtlCommand::Wire(WireCommand::Set { plan, seed }) => {
            let plan: WirePlan = serde_json::from_str(&plan).map_err(|e| format!("not a wire plan: {e}"))?;
            json(&HubRequest::Wire { plan, seed })
        }
        CtlCommand::Wire(WireCommand::Clear) => json(&HubRequest::WireClear {}),
        CtlCommand::Raw { json } => {
            let value: serde_json::Value = serde_json::from_str(&json).map_err(|e| format!("not JSON: {e}"))?;
            if !value.is_object() {
                return Err("a request is a JSON object (`{\"cmd\": …}`)".into());
            }
            value
        }
        other => json(&serve_request(other)?),
    })
}

/// A request as the JSON value sent.
fn json(request: &impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(request).expect("a request is JSON")
}

/// The request of serve's channel a `ctl` command line asks for.
fn serve_request(what: CtlCommand) -> Result<Request, String> {
    Ok(match what {
        CtlCommand::Fault(FaultCommand::Add { request, action, value, nth, count }) => {
            let (code, delay_ms) = match (action, value) {
                (ActionKind::Error, v) => (v, None),
                (ActionKind::Delay, Some(ms)) => {
                    (None, Some(ms.parse::<u64>().map_err(|_| format!("`{ms}` is not a delay in milliseconds"))?))
                }
                (ActionKind::Delay, None) => (None, None),
                (other, Some(v)) => {
                    return Err(format!("`{v}`: action `{}` takes no value", bnxt_model::armed::action_name(other)));
                }
                (_, None) => (None, None),
            };
            Request::FaultAdd { fault: FaultSpec { request, action, code, delay_ms, nth, count } }
        }
        CtlCommand::Fault(FaultCommand::Clear { id }) => Request::FaultClear { id },
        CtlCommand::Fault(FaultCommand::List) => Request::FaultList {},
        CtlCommand::State => Request::State {},
        CtlCommand::Fw { how } => Request::FwReset { fatal: how == "fatal" },
        CtlCommand::Pcie(PcieCommand::SurpriseRemoval) => Request::PcieSurpriseRemoval {},
        CtlCommand::Link { .. } | CtlCommand::Wire(_) | CtlCommand::Raw { .. } => {
            unreachable!("written by ctl_request")
        }
    })
}

fn ctl(args: CtlArgs) -> ExitCode {
    if args.schema {
        println!("{}", serde_json::to_string_pretty(&schema()).expect("a schema is JSON"));
        return ExitCode::SUCCESS;
    }
    let (Some(socket), Some(what)) = (args.socket, args.what) else {
        eprintln!(
            "error: name the control socket and what to do (bnxt-model ctl SOCKET fault|state|link|fw|pcie|wire|raw)"
        );
        return ExitCode::from(2);
    };
    let request = match ctl_request(what) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match client::call::<_, serde_json::Value>(&socket, &request, Duration::from_secs(args.timeout)) {
        Ok(reply) => {
            println!("{reply}");
            match reply.get("error").and_then(|e| e.as_str()) {
                None if reply.get("ok") == Some(&serde_json::Value::Bool(true)) => ExitCode::SUCCESS,
                why => {
                    eprintln!("error: {}", why.unwrap_or("refused"));
                    ExitCode::from(1)
                }
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn init_tracing(level: &str) {
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = std::env::var("RUST_LOG").map(EnvFilter::new).unwrap_or_else(|_| EnvFilter::new(level));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(ansi).with_target(false);
    let _ = tracing_subscriber::registry().with(filter).with(RateLimit).with(fmt).try_init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(&cli.log_level);
    match cli.command {
        Command::Serve(args) => {
            let file = match args.faults.as_deref().map(read_faults).transpose() {
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
                faults: FaultPlan { wire: file.wire, ..FaultPlan::default() },
                firmware: args.firmware.unwrap_or_default(),
                armed: file.firmware,
                control: args.control,
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
        Command::Ctl(args) => ctl(args),
        Command::Segment(args) => {
            let options =
                SegmentOptions { socket: args.socket, pcap: args.pcap, control: args.control, catch_signals: true };
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
