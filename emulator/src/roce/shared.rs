//! What the engine's two sides, the command channel ([`super::commands`]) and the data path
//! ([`super::datapath`]), both act on: the RoCE objects, the notification queues and the CREQ
//! entries due, and what the engine reports.
//!
//! Commands create, change and destroy the objects; the data path reads their rings and writes
//! their completions. Both post to the host through the same rings: a command's completion and
//! the data path's asynchronous events (QP and CQ errors) go to the one CREQ, in time order
//! ([`CreqQueue`]); a RESIZE_CQ's CUT_OFF CQE and a send's CQE to the same CQ ring
//! ([`super::post`]).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tracing::warn;

use super::counters::RoceCounters;
use super::nq::NqSet;
use super::state::RoceState;

/// The objects, the rings that notify the host, and the report.
#[derive(Debug, Default, Clone)]
pub(super) struct Shared {
    /// The RoCE objects (QPs, CQs, SRQs, keys, GIDs, AHs) and the QPs with work to look at.
    pub(super) st: RoceState,
    /// The NQs (the CREQ among them).
    pub(super) nqs: NqSet,
    /// CREQ entries due at a time.
    pub(super) creq: CreqQueue,
    /// What the engine reports.
    pub(super) report: Report,
}

/// A CREQ entry due at a time.
#[derive(Debug, Clone)]
pub(super) struct CreqEntry {
    /// The entry as the host reads it.
    pub(super) bytes: [u8; 16],
    /// Why a command was refused (empty otherwise), for its event.
    pub(super) reason: String,
}

/// CREQ entries waiting for their time, earliest first, and in the order they were queued
/// among those due at the same time.
#[derive(Debug, Default, Clone)]
pub(super) struct CreqQueue {
    due: BTreeMap<(Duration, u64), CreqEntry>,
    seq: u64,
}

impl CreqQueue {
    /// Queue an entry for `at`.
    pub(super) fn queue(&mut self, at: Duration, bytes: [u8; 16], reason: String) {
        self.seq += 1;
        self.due.insert((at, self.seq), CreqEntry { bytes, reason });
    }

    /// When the next entry is due.
    pub(super) fn next_due(&self) -> Option<Duration> {
        self.due.keys().next().map(|(t, _)| *t)
    }

    /// The next entry due at or before `now`, with its time.
    pub(super) fn pop_due(&mut self, now: Duration) -> Option<(Duration, CreqEntry)> {
        let entry = self.due.first_entry()?;
        if entry.key().0 > now {
            return None;
        }
        let ((at, _), e) = entry.remove_entry();
        Some((at, e))
    }

    /// Forget every entry (function reset).
    pub(super) fn clear(&mut self) {
        self.due.clear();
    }
}

/// What the engine reports: counters, the MSI-X vectors raised and not yet taken, the warnings
/// given (each once), and whether per-doorbell, per-CQE and per-frame events are recorded.
#[derive(Debug, Clone)]
pub(super) struct Report {
    /// Counters.
    pub(super) counters: RoceCounters,
    /// Vectors raised, in order, until the device takes them.
    pub(super) irqs: Vec<u16>,
    /// Warnings given.
    pub(super) warned: BTreeSet<String>,
    /// Whether data-path events are recorded (on by default; a benchmark turns them off).
    pub(super) data_path_events: bool,
}

impl Default for Report {
    fn default() -> Report {
        Report { counters: RoceCounters::default(), irqs: Vec::new(), warned: BTreeSet::new(), data_path_events: true }
    }
}

impl Report {
    /// Warn once per distinct message.
    pub(super) fn warn_once(&mut self, msg: String) {
        if self.warned.insert(msg.clone()) {
            warn!("{msg}");
        }
    }

    /// Whether `key` is new (then it is remembered): for warnings worded apart from their key.
    pub(super) fn first_time(&mut self, key: String) -> bool {
        self.warned.insert(key)
    }
}
