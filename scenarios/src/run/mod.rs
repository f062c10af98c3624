//! The runner: each scenario on a fresh machine of the target, its steps in order, the first
//! step that does not do what it should ending it. A panic in the driver or the model fails the
//! scenario with its message; it never takes the runner down.

pub mod exec;
pub mod outcome;
pub mod panic;
pub mod select;

use std::time::Instant;

use exec::Exec;
use outcome::{Failure, ScenarioOutcome, Verdict};
use panic::catch;

use crate::scenario::{Action, Scenario, Step};
use crate::target::{MachinePlan, Target};

/// How scenarios are run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Seed for every scenario, instead of each scenario's own.
    pub seed: Option<u64>,
    /// Fail a scenario when the target was asked for something it does not implement.
    pub strict: bool,
}

/// The seed a scenario runs with.
pub fn seed_of(scenario: &Scenario, options: &RunOptions) -> u64 {
    options.seed.or(scenario.seed).unwrap_or(0)
}

/// Why `scenario` cannot run on `target`, if it cannot.
pub fn skip_reason(scenario: &Scenario, target: &dyn Target) -> Option<String> {
    let caps = target.capabilities();
    if let Some(kinds) = &scenario.targets
        && !kinds.iter().any(|k| k == target.kind())
    {
        return Some(format!("runs only on: {}", kinds.join(", ")));
    }
    if !scenario.faults.is_empty() && !caps.faults {
        return Some(format!("injects faults, which the {} target cannot", target.name()));
    }
    if uses_inspect(&scenario.steps) && !caps.inspect {
        return Some(format!("has `inspect` steps, which the {} target cannot answer", target.name()));
    }
    if scenario.nics > caps.max_nics {
        return Some(format!("needs {} NICs; the {} target has {}", scenario.nics, target.name(), caps.max_nics));
    }
    None
}

fn uses_inspect(steps: &[Step]) -> bool {
    steps.iter().any(|s| match &s.action {
        Action::Inspect { .. } => true,
        Action::Repeat { steps, .. } => uses_inspect(steps),
        _ => false,
    })
}

/// Run `scenario` on `target`.
pub fn run_scenario(scenario: &Scenario, target: &dyn Target, options: &RunOptions) -> ScenarioOutcome {
    let wall = Instant::now();
    let seed = seed_of(scenario, options);
    let mut outcome = ScenarioOutcome {
        name: scenario.name.clone(),
        file: scenario.file.clone(),
        target: target.name(),
        seed,
        verdict: Verdict::Pass,
        steps: Vec::new(),
        target_time: Default::default(),
        wall_time: Default::default(),
        notes: Vec::new(),
    };
    if let Some(reason) = skip_reason(scenario, target) {
        outcome.verdict = Verdict::Skip(reason);
        return outcome;
    }

    let plan = MachinePlan { nics: scenario.nics, seed, faults: &scenario.faults };
    let session = match catch(|| target.start(&plan)) {
        Ok(Ok(session)) => session,
        Ok(Err(e)) => return fail_to_start(outcome, e.to_string(), wall),
        Err(panic) => return fail_to_start(outcome, panic, wall),
    };

    let mut exec = Exec::new(&*session);
    let ran = exec.run(&scenario.steps, &mut outcome.steps);
    let closed = exec.close_all();
    // Dropping the driver's values runs its code too.
    let dropped = catch(move || drop(exec)).map_err(|panic| {
        Box::new(Failure { step: None, expected: "the closed NICs are dropped".into(), got: panic })
    });
    outcome.target_time = catch(|| session.clock().now()).unwrap_or_default();
    let unimplemented = catch(|| session.unimplemented())
        .unwrap_or_else(|panic| vec![format!("the target could not say what it left unimplemented: {panic}")]);
    outcome.notes.extend(unimplemented);

    outcome.verdict = match (ran, closed.and(dropped)) {
        (Err(failure), _) | (Ok(()), Err(failure)) => Verdict::Fail(*failure),
        (Ok(()), Ok(())) if options.strict && !outcome.notes.is_empty() => Verdict::Fail(Failure {
            step: None,
            expected: "(--strict) the target implements everything the run asked of it".into(),
            got: outcome.notes.join("; "),
        }),
        (Ok(()), Ok(())) => Verdict::Pass,
    };
    drop(session);
    outcome.wall_time = wall.elapsed();
    outcome
}

fn fail_to_start(mut outcome: ScenarioOutcome, why: String, wall: Instant) -> ScenarioOutcome {
    outcome.verdict = Verdict::Fail(Failure { step: None, expected: "the target builds the scenario's machine".into(), got: why });
    outcome.wall_time = wall.elapsed();
    outcome
}
