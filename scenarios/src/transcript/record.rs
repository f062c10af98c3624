//! Collecting a transcript while a scenario runs: the runner's lines, the driver's trace events
//! (this is the thread's [`TraceSink`]) and the target's own events, in the order they happened.
//!
//! The driver records an action just before the store that hands it to the NIC, and the model
//! records its events as it acts; so before each driver event and each runner line the recorder
//! first takes the target's events so far. A model event that a driver store caused then comes
//! after the driver's line, and one that happened while the driver waited comes before what the
//! driver did next.

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use bnxt::PciFunction;
use bnxt::trace::{Outcome, TraceEvent, TraceSink};

use super::{Line, Source};

/// What a target can tell of itself while a scenario runs (the model: its event log).
pub trait EventSource: Send + Sync {
    /// The time on the target's clock.
    fn now(&self) -> Duration;
    /// The target's events since the last call, in order, as transcript lines.
    fn take(&self) -> Vec<Line>;
}

/// A scenario run's transcript as it is being made.
pub struct Recorder {
    buses: Vec<String>,
    source: Option<Arc<dyn EventSource>>,
    /// Functions the driver took, for the time when the target has no event source (weak: the
    /// driver's release of a function must release it).
    functions: Mutex<Vec<Weak<dyn PciFunction>>>,
    lines: Mutex<Vec<Line>>,
    keep: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Recorder {
    /// A recorder for a machine whose NICs are at `buses` (in index order), taking the target's
    /// own events from `source`. With `keep` false, lines are made and dropped (the target's
    /// events are still taken, so that they do not pile up).
    pub fn new(buses: Vec<String>, source: Option<Arc<dyn EventSource>>, keep: bool) -> Arc<Recorder> {
        Arc::new(Recorder { buses, source, functions: Mutex::new(Vec::new()), lines: Mutex::new(Vec::new()), keep })
    }

    /// A function the driver took (its clock gives the time of driver events on targets
    /// without an event source).
    pub fn know(&self, function: &Arc<dyn PciFunction>) {
        let mut functions = lock(&self.functions);
        functions.retain(|f| f.strong_count() > 0);
        functions.push(Arc::downgrade(function));
    }

    fn now(&self) -> Duration {
        if let Some(s) = &self.source {
            return s.now();
        }
        let function = lock(&self.functions).iter().find_map(Weak::upgrade);
        function.map(|f| f.clock().now()).unwrap_or_default()
    }

    /// Take the target's events so far.
    pub fn drain(&self) {
        if let Some(s) = &self.source {
            let events = s.take();
            if self.keep {
                lock(&self.lines).extend(events);
            }
        }
    }

    /// A line of the runner's at `at`, after the target's events so far.
    pub fn note(&self, at: Duration, text: impl Into<String>) {
        self.drain();
        if self.keep {
            lock(&self.lines).push(Line::new(at, Source::Step, text));
        }
    }

    /// Every line so far (the target's events included), leaving none.
    pub fn take_lines(&self) -> Vec<Line> {
        self.drain();
        std::mem::take(&mut *lock(&self.lines))
    }

    fn nic(&self, bus: &str) -> usize {
        self.buses.iter().position(|b| b == bus).unwrap_or(self.buses.len())
    }
}

/// How a request or command ended, as a transcript writes it.
fn outcome(o: &Outcome) -> String {
    match o {
        Outcome::Ok => "ok".into(),
        Outcome::Refused(code) => format!("refused {code}"),
        Outcome::NoAnswer => "no-answer".into(),
        Outcome::Failed(why) => format!("failed: {why}"),
    }
}

/// A driver event as a transcript line's source and text.
pub fn driver_line(event: &TraceEvent) -> (&str, String) {
    match event {
        TraceEvent::HwrmRequest { bus, request, seq_id } => (bus, format!("hwrm-request {request} seq={seq_id}")),
        TraceEvent::HwrmAnswer { bus, request, seq_id, outcome: o } => {
            (bus, format!("hwrm-answer {request} seq={seq_id} {}", outcome(o)))
        }
        TraceEvent::RoceCommand { bus, command, cookie } => (bus, format!("roce-command {command} cookie={cookie}")),
        TraceEvent::RoceAnswer { bus, command, cookie, outcome: o } => {
            (bus, format!("roce-answer {command} cookie={cookie} {}", outcome(o)))
        }
        TraceEvent::Doorbell { bus, ty, xid, index } => (bus, format!("doorbell {ty} xid={xid} index={index}")),
    }
}

impl TraceSink for Recorder {
    fn record(&self, event: TraceEvent) {
        self.drain();
        if !self.keep {
            return;
        }
        let (bus, text) = driver_line(&event);
        let line = Line::new(self.now(), Source::Driver(self.nic(bus)), text);
        lock(&self.lines).push(line);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// A target that made one event per call of `take`, at its time.
    struct Ticking(AtomicU64);

    impl EventSource for Ticking {
        fn now(&self) -> Duration {
            Duration::from_nanos(self.0.load(Ordering::SeqCst))
        }
        fn take(&self) -> Vec<Line> {
            let t = self.0.fetch_add(10, Ordering::SeqCst);
            vec![Line::new(Duration::from_nanos(t), Source::Nic(0), "tick")]
        }
    }

    #[test]
    fn target_events_come_before_the_driver_event_or_runner_line_that_follows_them() {
        let r = Recorder::new(vec!["0000:01:00.0".into()], Some(Arc::new(Ticking(AtomicU64::new(0)))), true);
        r.note(Duration::ZERO, "1 line 5: open: {nic: 0, as: a}");
        r.record(TraceEvent::HwrmRequest { bus: "0000:01:00.0".into(), request: "VER_GET", seq_id: 0 });
        let lines: Vec<String> = r.take_lines().iter().map(|l| format!("{} {}", l.source, l.text)).collect();
        assert_eq!(
            lines,
            [
                "nic0 tick",
                "step 1 line 5: open: {nic: 0, as: a}",
                "nic0 tick",
                "drv0 hwrm-request VER_GET seq=0",
                "nic0 tick",
            ]
        );
        let quiet = Recorder::new(vec![], Some(Arc::new(Ticking(AtomicU64::new(0)))), false);
        quiet.note(Duration::ZERO, "x");
        assert!(quiet.take_lines().is_empty());
    }
}
