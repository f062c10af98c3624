//! Timeouts: the limits a scenario and its steps put on time, enforced where time passes.
//!
//! The driver only ever waits through its function's [`Clock`]. The runner hands the driver a
//! [`WatchedMachine`] whose functions' clocks are watched: a `sleep` that would pass the nearest
//! limit on the target's clock (virtual time on the model) sleeps up to it and then unwinds with
//! an [`Expired`] payload, which the runner turns into the verdict TIMEOUT. A limit on wall time
//! is checked at every clock call too, against a run that is slow rather than waiting (a model
//! busy for minutes). A run that never reaches the clock at all is the scheduler's to stop
//! ([`super::schedule`]).
//!
//! A limit fires once: the code the unwinding passes through (drops that talk to the NIC) may
//! use the clock again without a second panic, and the runner cleans up with the watch disarmed.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bnxt::{Clock, Machine, PciError, PciFunction};
use bnxt_pci::dma::{DmaBuffer, HostPages};

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

/// The payload a watched clock unwinds with when a limit passes.
#[derive(Debug, Clone)]
pub struct Expired(pub Expiry);

#[derive(Debug)]
struct State {
    limits: Vec<Limit>,
    armed: bool,
    fired: bool,
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
            state: Mutex::new(State { limits: Vec::new(), armed: true, fired: false }),
            wall_limit,
            wall_until: now.checked_add(wall_limit).unwrap_or(now + Duration::from_secs(86_400 * 365)),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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

    /// The nearest limit in force, if the watch may still fire.
    fn nearest(&self) -> Option<Limit> {
        let s = self.state();
        if !s.armed || s.fired {
            return None;
        }
        s.limits.iter().min_by_key(|l| l.until).cloned()
    }

    /// Unwind with `expiry`, unless the watch fired already, is disarmed, or the thread is
    /// unwinding already.
    fn fire(&self, expiry: Expiry) {
        {
            let mut s = self.state();
            if !s.armed || s.fired || std::thread::panicking() {
                return;
            }
            s.fired = true;
        }
        std::panic::panic_any(Expired(expiry));
    }

    fn check_wall(&self) {
        if Instant::now() >= self.wall_until {
            self.fire(Expiry::Wall(self.wall_limit));
        }
    }

    /// `clock`'s time, unwinding if a limit has passed.
    pub fn now(&self, clock: &dyn Clock) -> Duration {
        let now = clock.now();
        if let Some(limit) = self.nearest()
            && now > limit.until
        {
            self.fire(Expiry::Target(limit));
        }
        self.check_wall();
        now
    }

    /// Sleep `d` on `clock`; a sleep that would pass the nearest limit sleeps up to it and unwinds.
    pub fn sleep(&self, clock: &dyn Clock, d: Duration) {
        if let Some(limit) = self.nearest() {
            let now = clock.now();
            if now.saturating_add(d) > limit.until {
                clock.sleep(limit.until.saturating_sub(now));
                self.fire(Expiry::Target(limit));
                return;
            }
        }
        clock.sleep(d);
        self.check_wall();
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
        self.watch.now(self.inner.clock())
    }
    fn sleep(&self, d: Duration) {
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

impl PciFunction for WatchedFunction {
    fn bus(&self) -> &str {
        self.inner.bus()
    }
    fn config_read(&self, offset: u16, data: &mut [u8]) -> Result<(), PciError> {
        self.inner.config_read(offset, data)
    }
    fn config_write(&self, offset: u16, data: &[u8]) -> Result<(), PciError> {
        self.inner.config_write(offset, data)
    }
    fn bar_read32(&self, bar: u8, offset: u64) -> u32 {
        self.inner.bar_read32(bar, offset)
    }
    fn bar_write32(&self, bar: u8, offset: u64, value: u32) {
        self.inner.bar_write32(bar, offset, value)
    }
    fn bar_write64(&self, bar: u8, offset: u64, value: u64) {
        self.inner.bar_write64(bar, offset, value)
    }
    fn alloc_dma(&self, len: usize) -> Result<DmaBuffer, PciError> {
        self.inner.alloc_dma(len)
    }
    fn map_dma(&self, memory: HostPages) -> Result<DmaBuffer, PciError> {
        self.inner.map_dma(memory)
    }
    fn reset(&self) -> Result<(), PciError> {
        self.inner.reset()
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
        fn sleep(&self, d: Duration) {
            self.0.fetch_add(d.as_nanos() as u64, Ordering::SeqCst);
        }
    }

    fn expiry(f: impl FnOnce()) -> Option<Expiry> {
        match crate::run::panic::catch_interrupt(f) {
            Err(crate::run::panic::Interrupt::Expired(e)) => Some(e),
            _ => None,
        }
    }

    #[test]
    fn a_sleep_past_the_nearest_limit_stops_at_it_and_unwinds_once() {
        let inner = Virtual::default();
        let watch = Watch::new(Duration::from_secs(60));
        let clock = WatchedClock::new(&inner as &dyn Clock, watch.clone());
        let scenario = Limit { whose: Whose::Scenario, length: Duration::from_secs(5), until: Duration::from_secs(5) };
        let step =
            Limit { whose: Whose::Step("2".into()), length: Duration::from_secs(1), until: Duration::from_secs(2) };
        watch.push(scenario);
        watch.push(step.clone());
        clock.sleep(Duration::from_millis(1500));
        assert_eq!(clock.now(), Duration::from_millis(1500));
        let fired = expiry(|| clock.sleep(Duration::from_secs(10)));
        assert_eq!(fired, Some(Expiry::Target(step)));
        assert_eq!(inner.now(), Duration::from_secs(2), "slept up to the limit, no further");
        // Fired once: the clock works on (cleanup may use it).
        clock.sleep(Duration::from_secs(10));
        assert_eq!(clock.now(), Duration::from_secs(12));
    }

    #[test]
    fn a_sleep_that_ends_at_the_limit_is_within_it() {
        let inner = Virtual::default();
        let watch = Watch::new(Duration::from_secs(60));
        let clock = WatchedClock::new(&inner as &dyn Clock, watch.clone());
        watch.push(Limit { whose: Whose::Scenario, length: Duration::from_secs(1), until: Duration::from_secs(1) });
        clock.sleep(Duration::from_secs(1));
        assert_eq!(clock.now(), Duration::from_secs(1));
        watch.pop();
        clock.sleep(Duration::from_secs(1));
    }

    #[test]
    fn the_wall_limit_fires_at_the_next_clock_call_and_disarming_stops_everything() {
        let inner = Virtual::default();
        let watch = Watch::new(Duration::ZERO);
        let clock = WatchedClock::new(&inner as &dyn Clock, watch.clone());
        let fired = expiry(|| {
            clock.now();
        });
        assert_eq!(fired, Some(Expiry::Wall(Duration::ZERO)));
        let watch = Watch::new(Duration::ZERO);
        watch.disarm();
        WatchedClock::new(&inner as &dyn Clock, watch).sleep(Duration::from_secs(1));
    }
}
