//! The executors' clock (the server's loop, the segment hub's): the real clock since the
//! executor started, less the time the host did not run it, and run ahead by [`RUN_AHEAD`].

use std::time::{Duration, Instant};

/// How far ahead of the real clock the executors run the work that falls due: work due within
/// this much is done now instead of after a timed wait. The model's deadlines in the data path
/// are a microsecond apart (a frame crosses a switch in 1 µs, a firmware answer is due 10 or
/// 20 µs after its request), and a timed wait for one costs a wake-up of the process, which on a
/// loaded machine takes longer than the wait itself; a frame then waited once in the sending
/// server's switch, once in the hub's and once in the receiving server's. The model's own time
/// never runs more than this ahead of the real clock (the same as the kernel's default timer
/// slack, which timed waits were rounded to before).
pub const RUN_AHEAD: Duration = Duration::from_micros(50);

/// How late after the deadline it waited for a turn of the loop may start before the rest is
/// taken as a stall of the host rather than time the model saw pass. A process the host does not
/// run for a while (a machine loaded by other work: hundreds of milliseconds were seen) could
/// otherwise advance its NIC over the whole gap at once: a queue pair's retransmission timer
/// (67 ms) fired, re-armed and fired again within the one advance, with no frame sent or taken
/// in between, until its retries ran out (RetryExceeded) for frames whose acknowledgements were
/// waiting in its socket. Below the shortest timer that re-arms itself without a frame.
pub const STALL_LIMIT: Duration = Duration::from_millis(1);

/// The clock of one executor.
#[derive(Debug)]
pub struct ExecClock {
    start: Instant,
    /// The host's stalls so far, taken out of the clock.
    stalled: Duration,
}

impl Default for ExecClock {
    fn default() -> ExecClock {
        ExecClock::new()
    }
}

impl ExecClock {
    /// A clock at 0 now.
    pub fn new() -> ExecClock {
        ExecClock { start: Instant::now(), stalled: Duration::ZERO }
    }

    /// Real time since the start (for captures, which record the wall clock's time).
    pub fn wall(&self) -> Duration {
        self.start.elapsed()
    }

    /// The executor's time now: the wall clock's, less the stalls.
    pub fn now(&self) -> Duration {
        self.wall().saturating_sub(self.stalled)
    }

    /// The time the executor runs its work to: [`ExecClock::now`] and [`RUN_AHEAD`].
    pub fn ahead(&self) -> Duration {
        self.now() + RUN_AHEAD
    }

    /// How long to wait for work due at `due` (none: until an input comes).
    pub fn timeout(&self, due: Option<Duration>) -> Option<Duration> {
        due.map(|d| d.saturating_sub(self.ahead()))
    }

    /// The time to take inputs at after a wait for `due`: now, or just before `due` when the turn
    /// starts after it (the inputs may have come in at any time during the wait, and taking them
    /// first keeps the work that fell due from running as though nothing had come: a
    /// retransmission for a frame whose acknowledgement is in the socket).
    pub fn input_time(&self, due: Option<Duration>) -> Duration {
        let now = self.now();
        match due {
            Some(due) => now.min(due.saturating_sub(Duration::from_nanos(1))),
            None => now,
        }
    }

    /// After a wait for `due`: when this turn starts more than [`STALL_LIMIT`] after it, take the
    /// rest out of the clock as a stall of the host; how much was taken.
    pub fn after_wait(&mut self, due: Option<Duration>) -> Duration {
        let Some(due) = due else { return Duration::ZERO };
        let stall = self.ahead().saturating_sub(due.saturating_add(STALL_LIMIT));
        self.stalled += stall;
        stall
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_that_starts_long_after_its_deadline_takes_the_excess_out_of_the_clock() {
        let mut clock = ExecClock::new();
        // A deadline long past: the clock is put back to just after it.
        let due = Duration::ZERO;
        std::thread::sleep(Duration::from_millis(20));
        let stall = clock.after_wait(Some(due));
        assert!(stall >= Duration::from_millis(18), "{stall:?}");
        assert!(clock.ahead() >= due + STALL_LIMIT, "never before the deadline and its allowance");
        assert!(clock.ahead() < due + STALL_LIMIT + Duration::from_millis(2), "{:?}", clock.ahead());
        // A deadline still ahead, or none: nothing is taken out.
        let later = clock.ahead() + Duration::from_secs(1);
        assert_eq!(clock.after_wait(Some(later)), Duration::ZERO);
        assert_eq!(clock.after_wait(None), Duration::ZERO);
        assert!(clock.wall() >= Duration::from_millis(20), "the wall clock keeps the stall");
    }

    #[test]
    fn inputs_are_taken_now_or_just_before_a_deadline_that_passed() {
        let clock = ExecClock::new();
        std::thread::sleep(Duration::from_millis(2));
        let now = clock.now();
        assert!(clock.input_time(None) >= now, "no deadline: now");
        assert!(clock.input_time(Some(now + Duration::from_secs(1))) >= now, "a deadline ahead: now");
        let passed = Duration::from_millis(1);
        assert_eq!(clock.input_time(Some(passed)), passed - Duration::from_nanos(1), "before the deadline's work");
    }
}
