//! Timeouts: the limits a scenario and its steps put on time, enforced where time passes.
//!
//! The driver only ever waits through its function's [`Clock`]. The runner hands the driver a
//! [`WatchedMachine`] whose functions' clocks are watched: a `sleep` that would pass the nearest
//! limit on the target's clock (virtual time on the model) sleeps up to it and returns
//! [`Interrupted`]; the driver gives up what it waited for (a firmware request's wait ends as its
//! timeout would, wedging the NIC; a completion's wait ends without one) and returns, and the
//! runner, finding the watch [`Watch::expired`], gives the verdict TIMEOUT. The limit on wall time
//! is checked at every sleep too, against a run that is slow rather than waiting (a model busy for
//! minutes). A run that never reaches the clock at all is the scheduler's to stop
//! ([`super::schedule`]).
//!
//! A limit fires once: the driver's error paths and the runner's cleanup may use the clock again
//! afterwards, and the runner cleans up with the watch disarmed.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bnxt_pci::{Clock, Interrupted, Layer, Machine, PciError, PciFunction};

use crate::scenario::values::format_duration;

use crate::transcript::record::Recorder;

/// Whose limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whose {
    /// The scenario's `timeout`.
    Scenario,
    /// The `timeout` of the step with this number (`4`, `5.2`).
    Step(String),
}

/// A limit on the target's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// Whose it is.
    pub whose: Whose,
    /// How long it allows.
    pub length: Duration,
    /// The time on the target's clock it ends at.
    pub until: Duration,
}

/// What expired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expiry {
    /// A limit on the target's clock.
    Target(Limit),
    /// The limit on wall time (`--wall-limit`).
    Wall(Duration),
}

impl Expiry {
    /// What passed, in words (the reason an interrupted wait gives).
    pub fn describe(&self) -> String {
        match self {
            Expiry::Target(Limit { whose: Whose::Scenario, length, .. }) => {
                format!("the scenario's timeout of {} passed", format_duration(*length))
            }
            Expiry::Target(Limit { whose: Whose::Step(n), length, .. }) => {
                format!("the timeout of step {n} ({}) passed", format_duration(*length))
            }
            Expiry::Wall(limit) => format!("the wall-time limit of {} passed", format_duration(*limit)),
        }
    }
}

#[derive(Debug)]
struct State {
    limits: Vec<Limit>,
    armed: bool,
    fired: Option<Expiry>,
}

/// The limits in force for one scenario run.
#[derive(Debug)]
pub struct Watch {
    state: Mutex<State>,
    wall_limit: Duration,
    wall_until: Instant,
}

impl Watch {
    /// A watch allowing `wall_limit` of wall time from now, with no limit on the target's clock
    /// yet; armed.
    pub fn new(wall_limit: Duration) -> Arc<Watch> {
        let now = Instant::now();
        Arc::new(Watch {
            state: Mutex::new(State { limits: Vec::new(), armed: true, fired: None }),
            wall_limit,
            wall_until: now.checked_add(wall_limit).unwrap_or(now + Duration::from_secs(86_400 * 365)),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing that can panic runs while the lock is held.
        self.state.lock().expect("the watch's lock is never held across a panic")
    }

    /// Add a limit (the nearest of all in force applies).
    pub fn push(&self, limit: Limit) {
        self.state().limits.push(limit);
    }

    /// Remove the limit added last.
    pub fn pop(&self) {
        self.state().limits.pop();
    }

    /// Stop enforcing anything (for cleaning up after the steps).
    pub fn disarm(&self) {
        self.state().armed = false;
    }

    /// What passed, once a limit has (until the end of the run).
    pub fn expired(&self) -> Option<Expiry> {
        self.state().fired.clone()
    }

    /// The nearest limit in force, if the watch may still fire.
    fn nearest(&self) -> Option<Limit> {
        let s = self.state();
        if !s.armed || s.fired.is_some() {
            return None;
        }
        s.limits.iter().min_by_key(|l| l.until).cloned()
    }

    /// Record that `expiry` passed: the interruption to return, unless the watch fired already
    /// or is disarmed (then the sleep it cut short counts as done).
    fn fire(&self, expiry: Expiry) -> Result<(), Interrupted> {
        let mut s = self.state();
        if !s.armed || s.fired.is_some() {
            return Ok(());
        }
        let reason = expiry.describe();
        s.fired = Some(expiry);
        Err(Interrupted { reason })
    }

    fn check_wall(&self) -> Result<(), Interrupted> {
        if Instant::now() >= self.wall_until {
            return self.fire(Expiry::Wall(self.wall_limit));
        }
        Ok(())
    }

    /// Sleep `d` on `clock`; a sleep that would pass the nearest limit sleeps up to it and is
    /// interrupted there.
    pub fn sleep(&self, clock: &dyn Clock, d: Duration) -> Result<(), Interrupted> {
        if let Some(limit) = self.nearest() {
            let now = clock.now();
            if now.saturating_add(d) > limit.until {
                clock.sleep(limit.until.saturating_sub(now))?;
                return self.fire(Expiry::Target(limit));
            }
        }
        clock.sleep(d)?;
        self.check_wall()
    }
}

/// A clock whose calls the watch sees.
pub struct WatchedClock<C> {
    inner: C,
    watch: Arc<Watch>,
}

impl<C> WatchedClock<C> {
    /// `inner`, watched by `watch`.
    pub fn new(inner: C, watch: Arc<Watch>) -> WatchedClock<C> {
        WatchedClock { inner, watch }
    }
}

/// Where a watched clock's time comes from.
pub trait ClockSource: Send + Sync {
    /// The clock.
    fn clock(&self) -> &dyn Clock;
}

impl ClockSource for &dyn Clock {
    fn clock(&self) -> &dyn Clock {
        *self
    }
}

impl ClockSource for Arc<dyn PciFunction> {
    fn clock(&self) -> &dyn Clock {
        (**self).clock()
    }
}

impl<C: ClockSource> Clock for WatchedClock<C> {
    fn now(&self) -> Duration {
        self.inner.clock().now()
    }
    fn sleep(&self, d: Duration) -> Result<(), Interrupted> {
        self.watch.sleep(self.inner.clock(), d)
    }
}

/// A target's machine whose functions have watched clocks (and whose driver trace events are
/// stamped with their function's time, when a recorder is given).
pub struct WatchedMachine<'s> {
    inner: &'s dyn Machine,
    watch: Arc<Watch>,
    recorder: Option<Arc<Recorder>>,
}

impl<'s> WatchedMachine<'s> {
    /// `inner`, its functions watched by `watch` and known to `recorder`.
    pub fn new(inner: &'s dyn Machine, watch: Arc<Watch>, recorder: Option<Arc<Recorder>>) -> WatchedMachine<'s> {
        WatchedMachine { inner, watch, recorder }
    }
}

impl Machine for WatchedMachine<'_> {
    fn buses(&self) -> Result<Vec<String>, PciError> {
        self.inner.buses()
    }

    fn take(&self, bus: &str) -> Result<Arc<dyn PciFunction>, PciError> {
        let inner = self.inner.take(bus)?;
        if let Some(r) = &self.recorder {
            r.know(&inner);
        }
        Ok(Arc::new(WatchedFunction { clock: WatchedClock::new(inner.clone(), self.watch.clone()), inner }))
    }
}

/// A function whose clock is watched; everything else goes to the target's function.
struct WatchedFunction {
    inner: Arc<dyn PciFunction>,
    clock: WatchedClock<Arc<dyn PciFunction>>,
}

impl Layer for WatchedFunction {
    fn inner(&self) -> &dyn PciFunction {
        &*self.inner
    }
    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// A virtual clock.
    #[derive(Default)]
    struct Virtual(AtomicU64);

    impl Clock for Virtual {
        fn now(&self) -> Duration {
            Duration::from_nanos(self.0.load(Ordering::SeqCst))
        }
        fn sleep(&self, d: Duration) -> Result<(), Interrupted> {
            self.0.fetch_add(d.as_nanos() as u64, Ordering::SeqCst);
            Ok(())
        }
    }

    #[test]
    fn a_sleep_past_the_nearest_limit_stops_at_it_and_is_interrupted_once() {
        let inner = Virtual::default();
        let watch = Watch::new(Duration::from_secs(60));
        let clock = WatchedClock::new(&inner as &dyn Clock, watch.clone());
        let scenario = Limit { whose: Whose::Scenario, length: Duration::from_secs(5), until: Duration::from_secs(5) };
        let step =
            Limit { whose: Whose::Step("2".into()), length: Duration::from_secs(1), until: Duration::from_secs(2) };
        watch.push(scenario);
        watch.push(step.clone());
        clock.sleep(Duration::from_millis(1500)).unwrap();
        assert_eq!(clock.now(), Duration::from_millis(1500));
        assert_eq!(watch.expired(), None);
        let cut = clock.sleep(Duration::from_secs(10)).unwrap_err();
        assert_eq!(cut.reason, "the timeout of step 2 (1s) passed");
        assert_eq!(watch.expired(), Some(Expiry::Target(step)));
        assert_eq!(inner.now(), Duration::from_secs(2), "slept up to the limit, no further");
        // Fired once: the clock works on (cleanup may use it).
        clock.sleep(Duration::from_secs(10)).unwrap();
        assert_eq!(clock.now(), Duration::from_secs(12));
    }

    #[test]
    fn a_sleep_that_ends_at_the_limit_is_within_it() {
        let inner = Virtual::default();
        let watch = Watch::new(Duration::from_secs(60));
        let clock = WatchedClock::new(&inner as &dyn Clock, watch.clone());
        watch.push(Limit { whose: Whose::Scenario, length: Duration::from_secs(1), until: Duration::from_secs(1) });
        clock.sleep(Duration::from_secs(1)).unwrap();
        assert_eq!(clock.now(), Duration::from_secs(1));
        watch.pop();
        clock.sleep(Duration::from_secs(1)).unwrap();
        assert_eq!(watch.expired(), None);
    }

    #[test]
    fn the_wall_limit_fires_at_the_next_sleep_and_disarming_stops_everything() {
        let inner = Virtual::default();
        let watch = Watch::new(Duration::ZERO);
        let clock = WatchedClock::new(&inner as &dyn Clock, watch.clone());
        assert_eq!(clock.now(), Duration::ZERO, "reading the clock never fires");
        let cut = clock.sleep(Duration::from_millis(1)).unwrap_err();
        assert!(cut.reason.contains("wall-time limit"), "{cut}");
        assert_eq!(watch.expired(), Some(Expiry::Wall(Duration::ZERO)));
        let watch = Watch::new(Duration::ZERO);
        watch.disarm();
        WatchedClock::new(&inner as &dyn Clock, watch.clone()).sleep(Duration::from_secs(1)).unwrap();
        assert_eq!(watch.expired(), None);
    }
}
