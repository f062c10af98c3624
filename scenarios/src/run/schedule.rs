//! Running the scenarios of a suite: each on a thread of its own (so that one that hangs where
//! no clock is watched can be given up), up to `jobs` at once where the target allows it (on the
//! model each scenario has its own world) and as the memory budget allows (`super::budget`),
//! their outcomes handed on in suite order. On a target whose scenarios run one at a time (a
//! shared machine: vfio-user, a real card), a scenario given up with its thread still running
//! still holds that machine, so the scenarios after it are not started: each fails, naming it.

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
    done: impl FnMut(usize, ScenarioOutcome),
) {
    run_with_grace(scenarios, target, options, jobs, budget, GRACE, done);
}

/// [`run_all`], a scenario's thread waited for `grace` past its wall-time limit.
fn run_with_grace(
    scenarios: &[Scenario],
    target: &SharedTarget,
    options: &RunOptions,
    jobs: usize,
    budget: u64,
    grace: Duration,
    mut done: impl FnMut(usize, ScenarioOutcome),
) {
    let jobs = if target.parallel() { jobs.max(1) } else { 1 };
    let hard_limit = options.wall_limit.saturating_add(grace);
    // The scenario given up whose thread still runs on the shared machine, if any.
    let mut held: Option<String> = None;
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
            if let Some(by) = &held {
                finished.insert(next, not_run(&scenarios[next], target, options, by));
                next += 1;
                continue;
            }
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
                // Whether each had ended is read once, here: a thread that ended had sent its word
                // before, so the look below finds it; one that ends after this look is a thread
                // given up (its word, if it comes, is too late).
                let stuck: Vec<(usize, bool)> = running
                    .iter()
                    .filter_map(|(i, r)| {
                        let ended = r.thread.is_finished();
                        (ended || r.started.elapsed() >= hard_limit).then_some((*i, ended))
                    })
                    .collect();
                // A thread that finished sent its word before it did: take what came meanwhile.
                while let Ok((i, outcome)) = rx.try_recv() {
                    if running.remove(&i).is_some() {
                        finished.insert(i, outcome);
                    }
                }
                for (i, ended) in stuck {
                    let Some(r) = running.remove(&i) else { continue };
                    let mut o = blank_outcome(&scenarios[i], &**target, options);
                    o.wall_time = r.started.elapsed();
                    o.verdict = if ended {
                        Verdict::Fail(super::outcome::Failure {
                            step: None,
                            expected: "the scenario's thread reports its outcome".into(),
                            got: "the thread ended without one".into(),
                        })
                    } else {
                        o.notes.push(format!(
                            "the scenario reached no clock for {} past its wall-time limit; its thread was left running",
                            crate::scenario::values::format_duration(grace)
                        ));
                        // A thread that has ended since holds nothing.
                        if !target.parallel() && !r.thread.is_finished() {
                            held = Some(scenarios[i].name.clone());
                        }
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

/// The outcome of a scenario not started because `by`, given up, still holds the shared target:
/// SKIP where the scenario would have been skipped anyway (it never touches the machine), FAIL
/// otherwise.
fn not_run(scenario: &Scenario, target: &SharedTarget, options: &RunOptions, by: &str) -> ScenarioOutcome {
    let mut o = blank_outcome(scenario, &**target, options);
    if let Some(reason) = super::skip_reason(scenario, &**target) {
        o.verdict = Verdict::Skip(reason);
        return o;
    }
    o.verdict = Verdict::Fail(super::outcome::Failure {
        step: None,
        expected: "the target to itself (scenarios run on it one at a time)".into(),
        got: format!(
            "not run: scenario `{by}` was given up past its wall-time limit and its thread still holds the target"
        ),
    });
    o
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use rstest::rstest;

    use super::*;
    use crate::scenario::load::load_str;
    use crate::target::{Capabilities, MachinePlan, Session, Target, TargetError};

    /// A target whose first machine never comes (its `start` blocks, reaching no clock, until
    /// the test lets it go) and whose later ones cannot be built.
    struct Stuck {
        parallel: bool,
        starts: AtomicUsize,
        release: Mutex<mpsc::Receiver<()>>,
    }

    impl Target for Stuck {
        fn name(&self) -> String {
            "stuck".into()
        }
        fn kind(&self) -> &'static str {
            "model"
        }
        fn capabilities(&self) -> Capabilities {
            Capabilities { faults: false, inspect: false, max_nics: 2, virtual_time: false }
        }
        fn start(&self, _: &MachinePlan<'_>) -> Result<Box<dyn Session>, TargetError> {
            if self.starts.fetch_add(1, Ordering::SeqCst) == 0 {
                let _ = self.release.lock().unwrap().recv();
            }
            Err(TargetError::Cannot { target: "stuck".into(), what: "build a machine".into() })
        }
        fn parallel(&self) -> bool {
            self.parallel
        }
    }

    fn scenario(name: &str, nics: usize) -> Scenario {
        let text = format!("name: {name}\nabout: t\nnics: {nics}\nsteps:\n  - open: {{nic: 0, as: a}}\n  - close: a\n");
        load_str(Path::new("t.yaml"), &text).unwrap().remove(0)
    }

    #[rstest]
    #[case::one_at_a_time(false)]
    #[case::side_by_side(true)]
    fn a_scenario_given_up_on_a_shared_target_holds_it_from_those_after(#[case] parallel: bool) {
        let (let_go, release) = mpsc::channel();
        let stuck = Arc::new(Stuck { parallel, starts: AtomicUsize::new(0), release: Mutex::new(release) });
        let target: SharedTarget = stuck.clone();
        // "wide" asks for more NICs than the target has: skipped wherever it comes.
        let scenarios = [scenario("hangs", 1), scenario("second", 1), scenario("wide", 3), scenario("third", 1)];
        let options = RunOptions { wall_limit: Duration::from_millis(100), ..RunOptions::default() };
        let mut outcomes = Vec::new();
        // One job: on the target that runs scenarios side by side too, the second waits its turn.
        // The limits leave a scenario that ends at once (the others) 0.4 s on a loaded machine.
        run_with_grace(&scenarios, &target, &options, 1, u64::MAX, Duration::from_millis(300), |i, o| {
            outcomes.push((i, o))
        });
        let _ = let_go.send(());

        assert_eq!(outcomes.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 1, 2, 3], "every one, in order");
        let Verdict::Timeout(t) = &outcomes[0].1.verdict else { panic!("{:?}", outcomes[0].1.verdict) };
        assert_eq!(t.clock, TimeoutClock::Wall);
        assert!(outcomes[0].1.notes.iter().any(|n| n.contains("its thread was left running")));
        assert_eq!(outcomes[2].1.verdict, Verdict::Skip("needs 3 NICs; the stuck target has 2".into()));
        for (_, o) in [&outcomes[1], &outcomes[3]] {
            let Verdict::Fail(f) = &o.verdict else { panic!("{}: {:?}", o.name, o.verdict) };
            if parallel {
                assert!(f.got.contains("cannot build a machine"), "started on a machine of its own: {}", f.got);
            } else {
                assert_eq!(
                    f.got,
                    "not run: scenario `hangs` was given up past its wall-time limit and its thread still holds the target"
                );
            }
        }
        let started = stuck.starts.load(Ordering::SeqCst);
        assert_eq!(started, if parallel { 3 } else { 1 }, "machines asked for");
    }
}
