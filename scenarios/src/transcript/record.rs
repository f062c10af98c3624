//! Collecting a transcript while a scenario runs: the runner's lines, the driver's record (its
//! `tracing` events of target [`bnxt::trace::TARGET`], which [`layer`] hands to the recorder of
//! the thread they happen on) and the target's own events, in the order they happened.
//!
//! The driver records an action just before the store that hands it to the NIC, and the model
//! records its events as it acts; so before each driver event and each runner line the recorder
//! first takes the target's events so far. A model event that a driver store caused then comes
//! after the driver's line, and one that happened while the driver waited comes before what the
//! driver did next.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use bnxt::PciFunction;
use bnxt::trace::{TARGET, TraceEvent};
use bnxt_transcript::Field;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use super::{Line, Source};

/// What a target can tell of itself while a scenario runs (the model: its event log).
pub trait EventSource: Send + Sync {
    /// The time on the target's clock.
    fn now(&self) -> Duration;
    /// The target's events since the last call, in order, as transcript lines.
    fn take(&self) -> Vec<Line>;
    /// Forget the target's events so far (a recorder that keeps nothing: they are not made
    /// into lines).
    fn discard(&self) {
        drop(self.take());
    }
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
            if self.keep {
                lock(&self.lines).extend(s.take());
            } else {
                s.discard();
            }
        }
    }

    /// A line of the runner's at `at`, after the target's events so far.
    pub fn note(&self, at: Duration, text: impl Into<String>) {
        self.note_with(at, || text.into());
    }

    /// [`Recorder::note`] with the text made only if the recorder keeps lines.
    pub fn note_with(&self, at: Duration, text: impl FnOnce() -> String) {
        self.drain();
        if self.keep {
            lock(&self.lines).push(Line::new(at, Source::Step, text()));
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

/// A driver event as a transcript line's source and text.
pub fn driver_line(event: &TraceEvent) -> (&str, String) {
    match event {
        TraceEvent::HwrmRequest { bus, request, seq_id } => {
            (bus, format!("hwrm-request {request} {}", Field::Seq.is(seq_id)))
        }
        TraceEvent::HwrmAnswer { bus, request, seq_id, outcome } => {
            (bus, format!("hwrm-answer {request} {} {outcome}", Field::Seq.is(seq_id)))
        }
        TraceEvent::RoceCommand { bus, command, cookie } => {
            (bus, format!("roce-command {command} {}", Field::Cookie.is(cookie)))
        }
        TraceEvent::RoceAnswer { bus, command, cookie, outcome } => {
            (bus, format!("roce-answer {command} {} {outcome}", Field::Cookie.is(cookie)))
        }
        TraceEvent::Doorbell { bus, ty, xid, index } => {
            (bus, format!("doorbell {ty} {} {}", Field::Xid.is(xid), Field::Index.is(index)))
        }
    }
}

impl Recorder {
    /// Take one event of the driver's record, after the target's events so far.
    pub fn record(&self, event: TraceEvent) {
        self.drain();
        if !self.keep {
            return;
        }
        let (bus, text) = driver_line(&event);
        let line = Line::new(self.now(), Source::Driver(self.nic(bus)), text);
        lock(&self.lines).push(line);
    }
}

thread_local! {
    /// The recorder of the scenario running on this thread, if it keeps the driver's record.
    static CURRENT: RefCell<Option<Arc<Recorder>>> = const { RefCell::new(None) };
}

/// Whether a [`layer`] is part of the process's `tracing` subscriber.
static LAYER_INSTALLED: AtomicBool = AtomicBool::new(false);

/// How many scenarios, on any thread, are running with a recorder that keeps the driver's
/// record. While none is, the driver's events are of no interest to the [`layer`] at their
/// call sites (`tracing` then skips them for the cost of one load), not merely filtered out
/// one by one.
static KEEPING: AtomicUsize = AtomicUsize::new(0);

/// One more (`up`) or one fewer scenario keeping the driver's record; when that starts or ends
/// the call sites' interest, `tracing` asks [`layer`] again.
fn keeping(up: bool) {
    let before = if up { KEEPING.fetch_add(1, Ordering::AcqRel) } else { KEEPING.fetch_sub(1, Ordering::AcqRel) };
    if before == usize::from(!up) {
        tracing::callsite::rebuild_interest_cache();
    }
}

/// Run `f` with `recorder` taking the driver's record of this thread; the recorder before it
/// (if any) is back afterwards, also when `f` panics.
pub fn recording<R>(recorder: Arc<Recorder>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Recorder>>, bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
            if self.1 {
                keeping(false);
            }
        }
    }
    let keeps = recorder.keep;
    if keeps {
        keeping(true);
    }
    let previous = CURRENT.with(|c| c.borrow_mut().replace(recorder));
    let _restore = Restore(previous, keeps);
    f()
}

/// Hands the driver's record to the recorder of the thread it happens on.
pub struct DriverRecord;

impl<S: Subscriber> Layer<S> for DriverRecord {
    fn on_register_dispatch(&self, _: &tracing::Dispatch) {
        LAYER_INSTALLED.store(true, Ordering::Relaxed);
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let Some(recorder) = CURRENT.with(|c| c.borrow().clone()) else { return };
        if let Some(e) = TraceEvent::from_event(event) {
            recorder.record(e);
        }
    }
}

/// The driver's events, on a thread whose scenario keeps them (one that keeps nothing does not
/// have them read back and made into lines only to drop them).
fn wanted<S>(meta: &tracing::Metadata<'_>, _: &Context<'_, S>) -> bool {
    meta.target() == TARGET && CURRENT.with(|c| c.borrow().as_ref().is_some_and(|r| r.keep))
}

/// The layer a process's `tracing` subscriber needs for transcripts to hold the driver's record
/// (the `bnxt-rig` command installs it; so does [`install`]). Filtered on its own: it sees the
/// driver's events whatever the log's level, and costs a thread-local check where no scenario
/// records.
pub fn layer<S>() -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let interest = |meta: &'static tracing::Metadata<'static>| {
        if meta.target() != TARGET || KEEPING.load(Ordering::Acquire) == 0 {
            tracing::subscriber::Interest::never()
        } else {
            tracing::subscriber::Interest::sometimes()
        }
    };
    DriverRecord.with_filter(tracing_subscriber::filter::dynamic_filter_fn(wanted::<S>).with_callsite_filter(interest))
}

/// Make [`layer`] the process's `tracing` subscriber, unless the process has one already.
pub fn install() {
    use tracing_subscriber::layer::SubscriberExt;
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer()));
}

/// Whether the process's subscriber hands the driver's record to recorders.
pub fn layer_installed() -> bool {
    LAYER_INSTALLED.load(Ordering::Relaxed)
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
        r.record(TraceEvent::HwrmRequest { bus: "0000:01:00.0".into(), request: "VER_GET".into(), seq_id: 0 });
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
