//! Checks made before anything runs: NIC indices within `nics`, every alias defined before it
//! is used and not used after its NIC was closed, `expect: {error}` only where a step can fail,
//! and a bound on how many steps a scenario runs.
//!
//! What only running can tell (whether the driver succeeds, what the NIC's state is) is the
//! runner's job.

use std::collections::HashMap;

use super::{Action, Alias, FaultKind, NicRef, Scenario, Step};
use crate::yaml::{DecodeError, Pos, Problem};

/// The most step runs (repeats multiplied out) one scenario may have.
pub const MAX_STEP_RUNS: u64 = 10_000_000;

/// What an alias names at a point of the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AliasState {
    /// Opened by the `open` at `line`, not yet closed.
    Open { nic: usize, line: u64 },
    /// Closed by the `close` at `line`.
    Closed { nic: usize, line: u64 },
    /// Its `open` (at `line`) is expected to fail.
    NeverOpened { nic: usize, line: u64 },
}

impl AliasState {
    fn nic(self) -> usize {
        match self {
            AliasState::Open { nic, .. } | AliasState::Closed { nic, .. } | AliasState::NeverOpened { nic, .. } => nic,
        }
    }
}

/// Every problem the checks find in `scenario` (none when it may run).
pub fn check(scenario: &Scenario) -> Vec<DecodeError> {
    let mut checker = Checker { nics: scenario.nics, errors: Vec::new() };
    for fault in &scenario.faults {
        match &fault.kind {
            FaultKind::Firmware(f) => checker.nic_index(f.nic, f.nic_at, &format!("{}.firmware.nic", fault.path)),
        }
    }
    let runs = step_runs(&scenario.steps);
    if runs > MAX_STEP_RUNS
        && let Some(first) = scenario.steps.first()
    {
        checker.errors.push(DecodeError {
            at: first.at,
            field: "steps".into(),
            problem: Problem::TooManyRuns { runs, max: MAX_STEP_RUNS },
        });
    }
    let mut aliases = HashMap::new();
    checker.steps(&scenario.steps, &mut aliases);
    checker.errors
}

/// How many step runs `steps` makes, repeats multiplied out (saturating).
pub fn step_runs(steps: &[Step]) -> u64 {
    steps.iter().fold(0u64, |n, s| {
        n.saturating_add(match &s.action {
            Action::Repeat { times, steps } => u64::from(*times).saturating_mul(step_runs(steps)).saturating_add(1),
            _ => 1,
        })
    })
}

struct Checker {
    nics: usize,
    errors: Vec<DecodeError>,
}

impl Checker {
    fn push(&mut self, at: Pos, field: &str, problem: Problem) {
        let e = DecodeError { at, field: field.to_string(), problem };
        // A repeat body is walked more than once; say each problem once.
        if !self.errors.contains(&e) {
            self.errors.push(e);
        }
    }

    fn nic_index(&mut self, nic: usize, at: Pos, field: &str) {
        if nic >= self.nics {
            self.push(at, field, Problem::NicOutOfRange { nic: nic as u64, nics: self.nics });
        }
    }

    /// `alias` must name an open NIC here.
    fn open_alias(&mut self, alias: &Alias, aliases: &HashMap<String, AliasState>) {
        match aliases.get(&alias.name) {
            Some(AliasState::Open { .. }) => {}
            state => self.alias_problem(alias, state.copied()),
        }
    }

    /// `alias` must have been given by an `open` (its NIC index is known), whatever became of it.
    fn known_alias(&mut self, alias: &Alias, aliases: &HashMap<String, AliasState>) -> Option<usize> {
        match aliases.get(&alias.name) {
            Some(state) => Some(state.nic()),
            None => {
                self.alias_problem(alias, None);
                None
            }
        }
    }

    fn alias_problem(&mut self, alias: &Alias, state: Option<AliasState>) {
        let problem = match state {
            None => Problem::UndefinedAlias { alias: alias.name.clone() },
            Some(AliasState::Closed { line, .. }) => Problem::AliasClosed { alias: alias.name.clone(), closed_at: line },
            Some(AliasState::NeverOpened { line, .. }) => Problem::AliasNeverOpened { alias: alias.name.clone(), line },
            Some(AliasState::Open { .. }) => return,
        };
        self.push(alias.at, &alias.path, problem);
    }

    fn nic_ref(&mut self, nic: &NicRef, aliases: &HashMap<String, AliasState>) {
        match nic {
            NicRef::Index { nic, at, path } => self.nic_index(*nic, *at, path),
            NicRef::Alias(alias) => {
                self.known_alias(alias, aliases);
            }
        }
    }

    fn steps(&mut self, steps: &[Step], aliases: &mut HashMap<String, AliasState>) {
        for step in steps {
            self.step(step, aliases);
        }
    }

    fn step(&mut self, step: &Step, aliases: &mut HashMap<String, AliasState>) {
        if step.expect.error.is_some() && !step.action.is_fallible() {
            let at = step.expect.at.unwrap_or(step.at);
            self.push(at, &format!("{}.expect.error", step.path), Problem::ExpectErrorOnInfallible {
                step: step.action.keyword().into(),
            });
        }
        match &step.action {
            Action::Open { nic, nic_at, alias } => {
                self.nic_index(*nic, *nic_at, &format!("{}.open.nic", step.path));
                if let Some(AliasState::Open { line, .. }) = aliases.get(&alias.name) {
                    let problem = Problem::AliasInUse { alias: alias.name.clone(), opened_at: *line };
                    self.push(alias.at, &alias.path, problem);
                    return;
                }
                let line = step.at.line;
                let state = if step.expect.error.is_some() {
                    AliasState::NeverOpened { nic: *nic, line }
                } else {
                    AliasState::Open { nic: *nic, line }
                };
                aliases.insert(alias.name.clone(), state);
            }
            Action::Close { alias } => match aliases.get(&alias.name).copied() {
                Some(AliasState::Open { nic, .. }) => {
                    aliases.insert(alias.name.clone(), AliasState::Closed { nic, line: step.at.line });
                }
                // A second close does nothing.
                Some(AliasState::Closed { .. }) => {}
                state => self.alias_problem(alias, state),
            },
            Action::Config { nic, .. } | Action::Inspect { nic, .. } => self.nic_ref(nic, aliases),
            Action::Identity(check) => {
                self.open_alias(&check.nic, aliases);
                for other in &check.differs_from {
                    if other.name == check.nic.name {
                        let problem = Problem::Conflict(format!("`{}` cannot differ from itself", other.name));
                        self.push(other.at, &other.path, problem);
                    }
                    self.open_alias(other, aliases);
                }
            }
            Action::Limits { nic, .. } => self.open_alias(nic, aliases),
            Action::Count(_) | Action::Wait(_) => {}
            Action::Repeat { times, steps } => {
                // Walk the body until what the aliases name stops changing (or as often as it
                // runs): what one pass leaves behind is what the next pass starts from. Without
                // conditionals a body settles within a few passes; eight is a safe bound.
                for _ in 0..(*times).min(8) {
                    let before = aliases.clone();
                    self.steps(steps, aliases);
                    if *aliases == before {
                        break;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::scenario::load::load_str;
    use crate::yaml::Problem;

    /// The problems the checks find in a scenario with these steps and two NICs.
    fn problems(steps: &str) -> Vec<Problem> {
        let text = format!("name: t\nabout: x.\nnics: 2\nsteps:\n{steps}");
        match load_str(Path::new("t.yaml"), &text) {
            Ok(_) => Vec::new(),
            Err(errors) => errors.into_iter().map(|e| e.error.problem).collect(),
        }
    }

    #[test]
    fn an_open_and_close_inside_a_repeat_is_fine_but_an_open_alone_is_not() {
        assert_eq!(problems("  - repeat: {times: 3, steps: [open: {nic: 0, as: a}, close: a]}\n"), vec![]);
        let found = problems("  - repeat: {times: 3, steps: [open: {nic: 0, as: a}]}\n");
        assert!(matches!(&found[..], [Problem::AliasInUse { alias, .. }] if alias == "a"), "{found:?}");
        // Once is fine: the body runs a single time.
        assert_eq!(problems("  - repeat: {times: 1, steps: [open: {nic: 0, as: a}]}\n"), vec![]);
    }

    #[test]
    fn a_close_inside_a_repeat_closes_for_the_next_pass() {
        let found = problems("  - open: {nic: 0, as: a}\n  - repeat: {times: 2, steps: [identity: {nic: a}, close: a]}\n");
        assert!(matches!(&found[..], [Problem::AliasClosed { alias, closed_at: 6 }] if alias == "a"), "{found:?}");
    }

    #[test]
    fn config_and_inspect_may_name_closed_and_never_opened_aliases() {
        let steps = "  - open: {nic: 1, as: a}\n    expect: {error: x}\n  - config: {nic: a, bus_master: off}\n  - inspect: {nic: a, dma_mappings: 0}\n  - open: {nic: 0, as: b}\n  - close: b\n  - config: {nic: b, bus_master: off}\n";
        assert_eq!(problems(steps), vec![]);
        let found = problems("  - config: {nic: c, bus_master: off}\n");
        assert!(matches!(&found[..], [Problem::UndefinedAlias { alias }] if alias == "c"), "{found:?}");
    }

    #[test]
    fn reopening_a_closed_alias_is_fine() {
        assert_eq!(problems("  - open: {nic: 0, as: a}\n  - close: a\n  - open: {nic: 1, as: a}\n  - identity: {nic: a}\n"), vec![]);
    }

    #[test]
    fn every_problem_is_reported_not_only_the_first() {
        let found = problems("  - close: x\n  - limits: {nic: y}\n  - open: {nic: 5, as: z}\n");
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(matches!(found[2], Problem::NicOutOfRange { nic: 5, nics: 2 }));
    }

    #[test]
    fn faults_must_name_existing_nics() {
        let text = "name: t\nabout: x.\nnics: 1\nfaults:\n  - firmware: {nic: 1, request: VER_GET, action: no-response}\nsteps:\n  - count: {equals: 1}\n";
        let errors = load_str(Path::new("t.yaml"), text).unwrap_err();
        assert_eq!(errors[0].error.field, "faults[0].firmware.nic");
        assert_eq!(errors[0].error.at.line, 5);
    }
}
