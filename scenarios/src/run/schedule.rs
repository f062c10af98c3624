//! Running the scenarios of a suite: each on a thread of its own (so that one that hangs where
//! no clock is watched can be given up), up to `jobs` at once where the target allows it (on the
//! model each scenario has its own world) and as the memory budget allows (`super::budget`),
//! their outcomes handed on in suite order.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::budget::admits;
use super::outcome::{ScenarioOutcome, TimedOut, TimeoutClock, Verdict};
use super::panic::catch;
use super::{RunOptions, SharedTarget, blank_outcome, run_scenario};
use crate::scenario::Scenario;

/// How long past its wall-time limit a scenario's thread is waited for before it is given up:
/// the watched clocks stop a scenario at the limit itself; this is for code that never reaches
/// a clock.
pub const GRACE: Duration = Duration::from_secs(30);

/// The stack of a scenario's thread.
const STACK: usize = 16 << 20;

struct Running {
    started: Instant,
    thread: JoinHandle<()>,
}

/// Run `scenarios` on `target`, `jobs` at a time (one at a time on a target that cannot run
/// scenarios side by side) while the regions of those running ask for at most `budget` bytes,
/// calling `done` with each outcome in the order of `scenarios`.
pub fn run_all(
    scenarios: &[Scenario],
    target: &SharedTarget,
    options: &RunOptions,
    jobs: usize,
    budget: u64,
    mut done: impl FnMut(usize, ScenarioOutcome),
) {
    let jobs = if target.parallel() { jobs.max(1) } else { 1 };
    let hard_limit = options.wall_limit.saturating_add(GRACE);
    let (tx, rx) = mpsc::channel::<(usize, ScenarioOutcome)>();
    let mut running: BTreeMap<usize, Running> = BTreeMap::new();
    let need: Vec<u64> = scenarios.iter().map(Scenario::region_bytes).collect();
    let in_flight = |running: &BTreeMap<usize, Running>| running.keys().map(|&i| need[i]).fold(0, u64::saturating_add);
    let mut finished: BTreeMap<usize, ScenarioOutcome> = BTreeMap::new();
    let (mut next, mut reported) = (0, 0);
    while reported < scenarios.len() {
        while next < scenarios.len()
            && running.len() < jobs
            && admits(in_flight(&running), need[next], budget, running.len())
        {
            let (scenario, shared, opts, tx) = (scenarios[next].clone(), target.clone(), options.clone(), tx.clone());
            let i = next;
            let spawned = std::thread::Builder::new()
                .name(format!("scenario {}", scenario.name))
                .stack_size(STACK)
                .spawn(move || {
                    let outcome = match catch(|| run_scenario(&scenario, &*shared, &opts)) {
                        Ok(outcome) => outcome,
                        Err(panic) => {
                            let mut o = blank_outcome(&scenario, &*shared, &opts);
                            o.verdict = Verdict::Fail(super::outcome::Failure {
                                step: None,
                                expected: "the runner runs the scenario".into(),
                                got: panic,
                            });
                            o
                        }
                    };
                    let _ = tx.send((i, outcome));
                });
            match spawned {
                Ok(thread) => {
                    running.insert(i, Running { started: Instant::now(), thread });
                }
                Err(e) => {
                    let mut o = blank_outcome(&scenarios[i], &**target, options);
                    o.verdict = Verdict::Fail(super::outcome::Failure {
                        step: None,
                        expected: "a thread for the scenario".into(),
                        got: e.to_string(),
                    });
                    finished.insert(i, o);
                }
            }
            next += 1;
        }
        let wait =
            running.values().map(|r| hard_limit.saturating_sub(r.started.elapsed())).min().unwrap_or(Duration::ZERO);
        match rx.recv_timeout(wait.max(Duration::from_millis(1))) {
            Ok((i, outcome)) => {
                if running.remove(&i).is_some() {
                    finished.insert(i, outcome);
                }
            }
            Err(_) => {
                while let Ok((i, outcome)) = rx.try_recv() {
                    if running.remove(&i).is_some() {
                        finished.insert(i, outcome);
                    }
                }
                // Give up on scenarios past the hard limit, and on threads that ended without a word.
                let stuck: Vec<usize> = running
                    .iter()
                    .filter(|(_, r)| r.started.elapsed() >= hard_limit || r.thread.is_finished())
                    .map(|(i, _)| *i)
                    .collect();
                // A thread that finished sent its word before it did: take what came meanwhile.
                while let Ok((i, outcome)) = rx.try_recv() {
                    if running.remove(&i).is_some() {
                        finished.insert(i, outcome);
                    }
                }
                for i in stuck {
                    let Some(r) = running.remove(&i) else { continue };
                    let mut o = blank_outcome(&scenarios[i], &**target, options);
                    o.wall_time = r.started.elapsed();
                    o.verdict = if r.thread.is_finished() {
                        Verdict::Fail(super::outcome::Failure {
                            step: None,
                            expected: "the scenario's thread reports its outcome".into(),
                            got: "the thread ended without one".into(),
                        })
                    } else {
                        o.notes.push(format!(
                            "the scenario reached no clock for {} past its wall-time limit; its thread was left running",
                            crate::scenario::values::format_duration(GRACE)
                        ));
                        Verdict::Timeout(TimedOut {
                            whose: "wall-limit".into(),
                            limit: options.wall_limit,
                            clock: TimeoutClock::Wall,
                            step: None,
                        })
                    };
                    finished.insert(i, o);
                }
            }
        }
        while let Some(outcome) = finished.remove(&reported) {
            done(reported, outcome);
            reported += 1;
        }
    }
}
