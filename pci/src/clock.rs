//! The clock a driver times its waits by: the real one on hardware, a virtual one in-process.

use std::cell::Cell;
use std::num::NonZeroU64;
use std::time::{Duration, Instant};

/// A wait that the clock cut short: a limit set by whoever drives the clock (a scenario's
/// timeout, a run's wall-time limit) passed during it. The waiter gives up what it waited for,
/// as on a timeout of its own, and says so in its error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the wait was cut short: {reason}")]
pub struct Interrupted {
    /// Whose limit passed, as its owner words it (`the scenario's timeout of 2 s`).
    pub reason: String,
}

/// A clock: the real one on hardware, the model's virtual one in-process.
///
/// On a virtual clock `sleep` advances virtual time (running the model up to it) and returns at
/// once, so a 40-second firmware timeout costs no wall time.
pub trait Clock: Send + Sync {
    /// Time since an arbitrary, fixed origin.
    fn now(&self) -> Duration;
    /// Let `d` pass.
    ///
    /// # Errors
    ///
    /// [`Interrupted`] when a limit of the clock's owner passed first; the clock then stands at
    /// that limit, not at `now + d`.
    fn sleep(&self, d: Duration) -> Result<(), Interrupted>;
}

/// The wall clock: time since the machine was made; `sleep` sleeps.
#[derive(Debug, Clone, Copy)]
pub struct RealClock {
    origin: Instant,
}

impl RealClock {
    /// A clock starting now.
    pub fn new() -> RealClock {
        RealClock { origin: Instant::now() }
    }
}

impl Default for RealClock {
    fn default() -> RealClock {
        RealClock::new()
    }
}

impl Clock for RealClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
    fn sleep(&self, d: Duration) -> Result<(), Interrupted> {
        precise_timers();
        std::thread::sleep(d);
        Ok(())
    }
}

/// Let the calling thread's timed waits (sleeps, `poll` timeouts) end when asked rather than up
/// to 50 µs later: Linux lets a normal thread's timers fire that late (the default timer slack,
/// prctl(2) `PR_SET_TIMERSLACK`) to group wake-ups, which made a sleep of 1 µs take about 88 µs
/// on a loaded machine and capped a driver polling a completion, or a model server waiting for a
/// frame due in a microsecond, at about ten thousand waits a second. Set once per thread; a
/// failure (a kernel without the prctl) leaves the default and is not an error.
pub fn precise_timers() {
    thread_local! {
        static SET: Cell<bool> = const { Cell::new(false) };
    }
    if !SET.get() {
        SET.set(true);
        let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1));
    }
}
