//! The clock a driver times its waits by: the real one on hardware, a virtual one in-process.

use std::time::{Duration, Instant};

/// A clock: the real one on hardware, the model's virtual one in-process.
///
/// On a virtual clock `sleep` advances virtual time (running the model up to it) and returns at
/// once, so a 40-second firmware timeout costs no wall time.
pub trait Clock: Send + Sync {
    /// Time since an arbitrary, fixed origin.
    fn now(&self) -> Duration;
    /// Let `d` pass.
    fn sleep(&self, d: Duration);
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
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}
