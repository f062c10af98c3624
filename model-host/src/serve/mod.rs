//! `bnxt-model serve`: the real-time executor. One model NIC behind a vfio-user socket, advanced
//! by the real clock ([`clock::ExecClock`]); socket messages, the NIC's deadlines and stop
//! signals handled in one `poll(2)` loop on one thread, so the model sees every input in the
//! order it arrived and needs no locks.
//!
//! The loop waits for the first of: a message from the client, a new client, the NIC's next
//! deadline (firmware responses fall due `HWRM_LATENCY` after a request), SIGTERM/SIGINT. Each
//! turn first runs the NIC's work due by the real clock's time and [`clock::RUN_AHEAD`], then
//! waits, then takes what came in, at the time the NIC was left at (before work that fell due
//! during the wait): the client's messages first, then the segment's frames (a store the client
//! made before a frame was sent, such as a receive posted before the send its peer answers, is
//! taken before the frame, as on a machine where the store reaches the device first). A turn that
//! starts long after the deadline it waited for takes the excess as a stall of the host
//! ([`clock::STALL_LIMIT`]).
//!
//! Lifetime: the server serves one client at a time (a second one waits in the listen backlog
//! until the first is gone). When the client disconnects (QEMU exits) or breaks the protocol beyond repair, its
//! memory and eventfds are released; then the server exits with status 0, or with `persist` waits
//! for the next client with the NIC as it was. SIGTERM or SIGINT: exit 0 at once.

pub mod clock;
pub mod ctl;
pub mod hwrm_log;
pub mod log_limit;
pub mod segment;
pub mod signals;
pub mod socket;

mod event_loop;

use std::path::PathBuf;

pub use event_loop::{ServeError, ServeSummary, StopReason, serve};

use bnxt_model::faults::FaultPlan;
use bnxt_model::firmware::options::FirmwareOptions;

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
    /// What the firmware advertises beyond its defaults (`--firmware`: the error recovery
    /// capability, firmware resource limits, ...).
    pub firmware: FirmwareOptions,
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
