//! `bnxt-model serve`: the real-time executor. One model NIC behind a vfio-user socket, advanced
//! by the real clock; socket messages, the NIC's deadlines and stop signals handled in one
//! `poll(2)` loop on one thread, so the model sees every input in the order it arrived and needs
//! no locks.
//!
//! The loop waits for the first of: a message from the client, a new client, the NIC's next
//! deadline (firmware responses fall due `HWRM_LATENCY` after a request), SIGTERM/SIGINT. Before
//! each input the NIC is advanced to the time since the server started.
//!
//! Lifetime: the server serves one client at a time (a second one waits in the listen backlog
//! until the first is gone). When the client disconnects (QEMU exits) or breaks the protocol beyond repair, its
//! memory and eventfds are released; then the server exits with status 0, or with `persist` waits
//! for the next client with the NIC as it was. SIGTERM or SIGINT: exit 0 at once.

pub mod ctl;
pub mod hwrm_log;
pub mod log_limit;
pub mod segment;
pub mod signals;
pub mod socket;

mod event_loop;

use std::path::PathBuf;
use std::time::Duration;

pub use event_loop::{ServeError, ServeSummary, StopReason, serve};

use bnxt_model::faults::FaultPlan;

/// How far ahead of the real clock the executors (the server's loop, the segment hub's) run
/// the work that falls due: work due within this much is done now instead of after a timed wait.
/// The model's deadlines in the data path are a microsecond apart (a frame crosses a switch in
/// 1 µs, a firmware answer is due 10 or 20 µs after its request), and a timed wait for one costs
/// a wake-up of the process, which on a loaded machine takes longer than the wait itself; a
/// frame then waited once in the sending server's switch, once in the hub's and once in the
/// receiving server's. The model's own time never runs more than this ahead of the real clock
/// (the same as the kernel's default timer slack, which timed waits were rounded to before).
pub const RUN_AHEAD: Duration = Duration::from_micros(50);

/// What to serve and how.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen.
    pub socket: PathBuf,
    /// The NIC's MAC address.
    pub mac: [u8; 6],
    /// Seed of the model's random choices.
    pub seed: u64,
    /// Faults to inject from the start (the wire plan, and firmware faults by number).
    pub faults: FaultPlan,
    /// Firmware faults, by name, armed when the server starts (`--faults`).
    pub armed: Vec<ctl::protocol::FaultSpec>,
    /// The control socket to listen on (`--control`), if any.
    pub control: Option<PathBuf>,
    /// Where to write one line per HWRM request, if anywhere.
    pub hwrm_log: Option<PathBuf>,
    /// Keep serving after the client disconnects (wait for the next one).
    pub persist: bool,
    /// The segment hub (`bnxt-model segment`) to join, if any.
    pub segment: Option<PathBuf>,
    /// Where to record the frames the NIC exchanges on the segment, if anywhere.
    pub pcap: Option<PathBuf>,
    /// Stop on SIGTERM/SIGINT (the process's handlers; off when serving from a thread of a
    /// program that handles signals itself, such as a test).
    pub catch_signals: bool,
}
