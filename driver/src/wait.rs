//! Waiting on a [`Clock`] with backoff: a few short sleeps, then longer ones up to a cap, never
//! past a deadline.
//!
//! bnxt_en polls the HWRM response with 5 sleeps of 3-10 µs, then sleeps of 25-40 µs
//! (bnxt_hwrm.h `HWRM_SHORT_MIN_TIMEOUT`, `HWRM_SHORT_TIMEOUT_COUNTER`, `HWRM_MIN_TIMEOUT`). This
//! driver starts the same way but doubles the longer sleep up to 1 ms, so that waiting out a 40 s
//! timeout takes tens of thousands of polls rather than a million and a half; on the model's
//! virtual clock every poll runs the model, so the count is what a timeout costs.

use std::time::Duration;

use bnxt_pci::{Clock, Interrupted};

/// The sleeps a wait makes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    /// Length of each of the first, short sleeps.
    pub short: Duration,
    /// How many short sleeps come first.
    pub short_count: u32,
    /// The first longer sleep; each later one doubles, up to `cap`.
    pub long: Duration,
    /// The longest sleep.
    pub cap: Duration,
}

/// Polling an HWRM response: 5 × 3 µs, then 25 µs doubling to 1 ms.
pub(crate) const HWRM_RESPONSE: Schedule = Schedule {
    short: Duration::from_micros(3),
    short_count: 5,
    long: Duration::from_micros(25),
    cap: Duration::from_millis(1),
};

/// Polling a response's valid byte: 10 × 1 µs, then 20 µs (bnxt_hwrm.c `__hwrm_send`).
pub(crate) const VALID_BYTE: Schedule = Schedule {
    short: Duration::from_micros(1),
    short_count: 10,
    long: Duration::from_micros(20),
    cap: Duration::from_micros(20),
};

/// Polling a RoCE command's completion on the CREQ: as an HWRM response (bnxt_re polls every
/// millisecond, qplib_rcfw.c `__poll_for_resp`; this starts finer and backs off to that).
pub(crate) const RCFW_COMPLETION: Schedule = HWRM_RESPONSE;

/// Polling a queue pair's completion queue: 10 × 1 µs, then 2 µs doubling to 1 ms. A message
/// on a 400 Gb/s link takes microseconds, so the first polls are fine-grained; a wait of
/// seconds (retries, a peer that is gone) backs off to one poll a millisecond.
pub(crate) const CQ_COMPLETION: Schedule = Schedule {
    short: Duration::from_micros(1),
    short_count: 10,
    long: Duration::from_micros(2),
    cap: Duration::from_millis(1),
};

/// A wait in progress.
pub(crate) struct Waiter<'a> {
    clock: &'a dyn Clock,
    deadline: Duration,
    schedule: Schedule,
    sleeps: u32,
    next_long: Duration,
}

impl<'a> Waiter<'a> {
    /// Start waiting now, for at most `timeout`.
    pub(crate) fn new(clock: &'a dyn Clock, timeout: Duration, schedule: Schedule) -> Waiter<'a> {
        let deadline = clock.now().saturating_add(timeout);
        Waiter { clock, deadline, schedule, sleeps: 0, next_long: schedule.long }
    }

    /// Sleep for the next step of the schedule, cut short at the deadline. False, without
    /// sleeping, once the deadline has passed: the caller then checks one last time and gives up.
    ///
    /// # Errors
    ///
    /// [`Interrupted`] when the clock cut the sleep short (a limit of its owner passed): the
    /// caller gives up as at its deadline and says why.
    pub(crate) fn pause(&mut self) -> Result<bool, Interrupted> {
        let now = self.clock.now();
        if now >= self.deadline {
            return Ok(false);
        }
        let step = if self.sleeps < self.schedule.short_count {
            self.schedule.short
        } else {
            let step = self.next_long;
            self.next_long = (self.next_long * 2).min(self.schedule.cap);
            step
        };
        self.sleeps += 1;
        self.clock.sleep(step.min(self.deadline - now))?;
        Ok(true)
    }

    /// How many sleeps the wait has made.
    #[cfg(test)]
    pub(crate) fn sleeps(&self) -> u32 {
        self.sleeps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::VirtualClock;

    #[test]
    fn a_wait_sleeps_short_then_doubles_up_to_the_cap_and_ends_at_the_deadline() {
        let clock = VirtualClock::default();
        let mut w = Waiter::new(&clock, Duration::from_millis(3), HWRM_RESPONSE);
        let mut steps = Vec::new();
        let mut last = clock.now();
        while w.pause().unwrap() {
            steps.push(clock.now() - last);
            last = clock.now();
        }
        assert_eq!(&steps[..5], &[Duration::from_micros(3); 5]);
        assert_eq!(steps[5], Duration::from_micros(25));
        assert_eq!(steps[6], Duration::from_micros(50));
        assert!(steps.iter().all(|s| *s <= Duration::from_millis(1)));
        assert_eq!(clock.now(), Duration::from_millis(3), "the wait ends exactly at its deadline");
    }

    #[test]
    fn a_40_s_wait_takes_few_polls() {
        let clock = VirtualClock::default();
        let mut w = Waiter::new(&clock, Duration::from_secs(40), HWRM_RESPONSE);
        while w.pause().unwrap() {}
        assert_eq!(clock.now(), Duration::from_secs(40));
        assert!(w.sleeps() < 41_000, "{} sleeps", w.sleeps());
    }
}
