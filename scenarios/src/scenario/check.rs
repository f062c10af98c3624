//! Checks made before anything runs: NIC indices within `nics`; every name (of a NIC, a region,
//! a queue pair) given before it is used, used for the right kind of thing, and not used after
//! it is gone (closed, deregistered, destroyed); regions and queue pairs of one step on the same
//! NIC; ranges within their regions; sends and reads only on connected queue pairs;
//! `expect: {error}` only where a step can fail; and a bound on how many steps a scenario runs.
//!
//! What only running can tell (whether the driver succeeds, what the NIC's state is) is the
//! runner's job. A step that `expect`s misuse is let through the checks that misuse breaks.

use std::collections::HashMap;

use super::steps::DEFAULT_ITERATION;
use super::{Action, Alias, FaultKind, NicRef, Scenario, Step, Transfer};
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

/// A region or a queue pair, as far as the checks follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Object {
    /// Alias of its NIC.
    nic: String,
    /// Line of the step that made it.
    line: u64,
    /// What it is.
    kind: ObjectKind,
    /// How it went, and at which line, once it is gone.
    gone: Option<(&'static str, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ObjectKind {
    Region { bytes: u64 },
    Qp { peer: Option<String> },
}

impl ObjectKind {
    fn what(&self) -> &'static str {
        match self {
            ObjectKind::Region { .. } => "a region",
            ObjectKind::Qp { .. } => "a queue pair",
        }
    }
}

/// Every name of a scenario at a point of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Names {
    nics: HashMap<String, AliasState>,
    objects: HashMap<String, Object>,
}

/// Every problem the checks find in `scenario` (none when it may run).
pub fn check(scenario: &Scenario) -> Vec<DecodeError> {
    let mut checker = Checker { nics: scenario.nics, errors: Vec::new(), iterations: Vec::new() };
    for fault in &scenario.faults {
        match &fault.kind {
            FaultKind::Firmware(f) => checker.nic_index(f.value.nic.value, f.value.nic.at, &f.value.nic.path),
            FaultKind::Wire(w) => {
                for nic in w.value.rules.iter().filter_map(|r| r.nic.as_ref()) {
                    checker.nic_index(nic.value, nic.at, &nic.path);
                }
            }
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
    let mut names = Names::default();
    checker.steps(&scenario.steps, &mut names);
    checker.errors
}

/// How many step runs `steps` makes, repeats multiplied out (saturating).
pub fn step_runs(steps: &[Step]) -> u64 {
    steps.iter().fold(0u64, |n, s| {
        n.saturating_add(match &s.action {
            Action::Repeat { times, steps, .. } => u64::from(*times).saturating_mul(step_runs(steps)).saturating_add(1),
            _ => 1,
        })
    })
}

/// The most problems the checks report of one scenario (a mistake inside a repeat of a
/// thousand passes would otherwise be said a thousand times, once per name).
const MAX_PROBLEMS: usize = 20;

struct Checker {
    nics: usize,
    errors: Vec<DecodeError>,
    /// The enclosing repeats' iterations (name, number from 0), innermost last.
    iterations: Vec<(String, u32)>,
}

impl Checker {
    fn push(&mut self, at: Pos, field: &str, problem: Problem) {
        let e = DecodeError { at, field: field.to_string(), problem };
        // A repeat body is walked more than once; say each problem once.
        if self.errors.len() < MAX_PROBLEMS && !self.errors.contains(&e) {
            self.errors.push(e);
        }
    }

    fn nic_index(&mut self, nic: usize, at: Pos, field: &str) {
        if nic >= self.nics {
            self.push(at, field, Problem::NicOutOfRange { nic: nic as u64, nics: self.nics });
        }
    }

    /// `alias` must name an open NIC here.
    fn open_alias(&mut self, alias: &Alias, names: &Names) -> bool {
        match names.nics.get(&alias.name) {
            Some(AliasState::Open { .. }) => true,
            state => {
                self.alias_problem(alias, state.copied(), names);
                false
            }
        }
    }

    /// `alias` must have been given by an `open` (its NIC index is known), whatever became of it.
    fn known_alias(&mut self, alias: &Alias, names: &Names) -> Option<usize> {
        match names.nics.get(&alias.name) {
            Some(state) => Some(state.nic()),
            None => {
                self.alias_problem(alias, None, names);
                None
            }
        }
    }

    fn alias_problem(&mut self, alias: &Alias, state: Option<AliasState>, names: &Names) {
        let problem = match state {
            None => match names.objects.get(&alias.name) {
                Some(o) => {
                    Problem::WrongKind { name: alias.name.clone(), expected: "a NIC".into(), is: o.kind.what().into() }
                }
                None => Problem::UndefinedAlias { alias: alias.name.clone() },
            },
            Some(AliasState::Closed { line, .. }) => {
                Problem::AliasClosed { alias: alias.name.clone(), closed_at: line }
            }
            Some(AliasState::NeverOpened { line, .. }) => Problem::AliasNeverOpened { alias: alias.name.clone(), line },
            Some(AliasState::Open { .. }) => return,
        };
        self.push(alias.at, &alias.path, problem);
    }

    fn nic_ref(&mut self, nic: &NicRef, names: &Names) {
        match nic {
            NicRef::Index { nic, at, path } => self.nic_index(*nic, *at, path),
            NicRef::Alias(alias) => {
                self.known_alias(alias, names);
            }
        }
    }

    /// `name` may be given to a new NIC, region or queue pair: it names nothing live.
    fn fresh_name(&mut self, name: &Alias, names: &Names) -> bool {
        let taken = match (names.nics.get(&name.name), names.objects.get(&name.name)) {
            (Some(AliasState::Open { line, .. }), _) => Some(("an open NIC", *line)),
            (_, Some(o)) if o.gone.is_none() => Some((o.kind.what(), o.line)),
            _ => None,
        };
        if let Some((what, line)) = taken {
            self.push(name.at, &name.path, Problem::NameInUse { name: name.name.clone(), what: what.into(), line });
        }
        taken.is_none()
    }

    /// The live object `name` names, if it is of the kind `is_kind` accepts; a problem if not.
    /// With `gone_ok`, an object that is gone is accepted too.
    fn object<'n>(
        &mut self,
        name: &Alias,
        names: &'n Names,
        expected: &str,
        is_kind: fn(&ObjectKind) -> bool,
        gone_ok: bool,
    ) -> Option<&'n Object> {
        let problem = match names.objects.get(&name.name) {
            Some(o) if !is_kind(&o.kind) => {
                Problem::WrongKind { name: name.name.clone(), expected: expected.into(), is: o.kind.what().into() }
            }
            Some(o) => match o.gone {
                Some((how, line)) if !gone_ok => Problem::Gone { name: name.name.clone(), how: how.into(), line },
                _ => return Some(o),
            },
            None if names.nics.contains_key(&name.name) => {
                Problem::WrongKind { name: name.name.clone(), expected: expected.into(), is: "a NIC".into() }
            }
            None => Problem::UndefinedAlias { alias: name.name.clone() },
        };
        self.push(name.at, &name.path, problem);
        None
    }

    fn qp<'n>(&mut self, name: &Alias, names: &'n Names, gone_ok: bool) -> Option<&'n Object> {
        self.object(name, names, "a queue pair", |k| matches!(k, ObjectKind::Qp { .. }), gone_ok)
    }

    fn region<'n>(&mut self, name: &Alias, names: &'n Names, gone_ok: bool) -> Option<&'n Object> {
        self.object(name, names, "a region", |k| matches!(k, ObjectKind::Region { .. }), gone_ok)
    }

    /// Region `region`, of the NIC `nic` names, holds `at..at + bytes`.
    fn range(&mut self, region: &Alias, at: u64, bytes: u64, nic: Option<&str>, names: &Names, step: &Step) {
        let Some(o) = self.region(region, names, false) else { return };
        let ObjectKind::Region { bytes: len } = o.kind else { return };
        if let Some(nic) = nic
            && o.nic != nic
        {
            let problem = Problem::Conflict(format!(
                "`{}` is a region of `{}`, and this step's queue pair is on `{nic}`: a queue pair uses regions of its own NIC",
                region.name, o.nic
            ));
            self.push(region.at, &region.path, problem);
        }
        if at.saturating_add(bytes) > len && step.expect.misuse.is_none() {
            let problem = Problem::Conflict(format!(
                "bytes {at} to {} are past the end of `{}` ({len} bytes)",
                at.saturating_add(bytes),
                region.name
            ));
            self.push(region.at, &region.path, problem);
        }
    }

    /// A post of `t` on its queue pair; `connected` if the post needs a connected queue pair.
    fn post(&mut self, t: &Transfer, names: &Names, step: &Step, connected: bool) -> Option<(String, Option<String>)> {
        let qp = self.qp(&t.qp, names, false)?;
        let ObjectKind::Qp { peer } = &qp.kind else { return None };
        let (nic, peer) = (qp.nic.clone(), peer.clone());
        if connected && peer.is_none() && step.expect.misuse.is_none() {
            let problem = Problem::Conflict(format!("`{}` is not connected: a `connect` must come first", t.qp.name));
            self.push(t.qp.at, &t.qp.path, problem);
        }
        self.range(&t.region, t.at, t.bytes, Some(&nic), names, step);
        Some((nic, peer))
    }

    fn steps(&mut self, steps: &[Step], names: &mut Names) {
        for step in steps {
            self.step(step, names);
        }
    }

    fn step(&mut self, step: &Step, names: &mut Names) {
        let iterations = &self.iterations;
        let value = |name: &str| iterations.iter().rev().find(|(n, _)| n == name).map(|(_, i)| *i);
        let step = match step.resolved(&value) {
            Ok(step) => step,
            Err(name) => {
                // The expansion refuses a reference to no enclosing repeat; this is its backstop.
                let problem = Problem::UnknownName { what: "iteration".into(), name, suggestion: None };
                self.push(step.action_at, &step.path, problem);
                return;
            }
        };
        let step = &*step;
        if step.expect.error.is_some() && !step.action.is_fallible() {
            let at = step.expect.at.unwrap_or(step.at);
            self.push(
                at,
                &format!("{}.expect.error", step.path),
                Problem::ExpectErrorOnInfallible { step: step.action.keyword().into() },
            );
        }
        let line = step.at.line;
        let made = step.expect.error.is_none() && step.expect.misuse.is_none();
        match &step.action {
            Action::Open { nic, alias } => {
                self.nic_index(nic.value, nic.at, &nic.path);
                let nic = &nic.value;
                if let Some(AliasState::Open { line, .. }) = names.nics.get(&alias.name) {
                    let problem = Problem::AliasInUse { alias: alias.name.clone(), opened_at: *line };
                    self.push(alias.at, &alias.path, problem);
                    return;
                }
                if !self.fresh_name(alias, names) {
                    return;
                }
                let state = if step.expect.error.is_some() {
                    AliasState::NeverOpened { nic: *nic, line }
                } else {
                    AliasState::Open { nic: *nic, line }
                };
                names.objects.remove(&alias.name);
                names.nics.insert(alias.name.clone(), state);
            }
            Action::Close(alias) => match names.nics.get(&alias.name).copied() {
                Some(AliasState::Open { nic, .. }) => {
                    names.nics.insert(alias.name.clone(), AliasState::Closed { nic, line });
                    for o in names.objects.values_mut() {
                        if o.nic == alias.name && o.gone.is_none() {
                            o.gone = Some(("its NIC was closed", line));
                        }
                    }
                }
                // A second close does nothing.
                Some(AliasState::Closed { .. }) => {}
                state => {
                    let snapshot = names.clone();
                    self.alias_problem(alias, state, &snapshot)
                }
            },
            Action::Config { nic, .. } | Action::Inspect { nic, .. } => self.nic_ref(nic, names),
            Action::Identity(check) => {
                self.open_alias(&check.nic, names);
                for other in &check.differs_from {
                    if other.name == check.nic.name {
                        let problem = Problem::Conflict(format!("`{}` cannot differ from itself", other.name));
                        self.push(other.at, &other.path, problem);
                    }
                    self.open_alias(other, names);
                }
            }
            Action::Limits { nic, .. } => {
                self.open_alias(nic, names);
            }
            Action::Count(_) | Action::Wait(_) => {}
            Action::Fault(fault) => {
                if let FaultKind::Firmware(f) = &fault.kind {
                    self.nic_index(f.value.nic.value, f.value.nic.at, &f.value.nic.path);
                }
            }
            Action::Repeat { times, index, steps } => {
                let iteration = index.as_deref().unwrap_or(DEFAULT_ITERATION).to_string();
                if steps.iter().any(|s| s.holds(&iteration)) {
                    // Names that hold the iteration differ from pass to pass: every pass is
                    // walked, as it will run (at most MAX_STEP_RUNS steps in all).
                    for i in 0..*times {
                        self.iterations.push((iteration.clone(), i));
                        self.steps(steps, names);
                        self.iterations.pop();
                        if self.errors.len() >= MAX_PROBLEMS {
                            break;
                        }
                    }
                    return;
                }
                // Walk the body until what the names name stops changing (or as often as it
                // runs): what one pass leaves behind is what the next pass starts from. Without
                // conditionals a body settles within a few passes; eight is a safe bound.
                self.iterations.push((iteration, 0));
                for _ in 0..(*times).min(8) {
                    let before = names.clone();
                    self.steps(steps, names);
                    if *names == before {
                        break;
                    }
                }
                self.iterations.pop();
            }
            Action::Region(r) => {
                let open = self.open_alias(&r.nic, names);
                if self.fresh_name(&r.name, names) && open && made {
                    let (nic, name) = (&r.nic, &r.name);
                    let object =
                        Object { nic: nic.name.clone(), line, kind: ObjectKind::Region { bytes: r.bytes }, gone: None };
                    names.objects.insert(name.name.clone(), object);
                }
            }
            Action::Qp { nic, name } => {
                let open = self.open_alias(nic, names);
                if self.fresh_name(name, names) && open && made {
                    let object =
                        Object { nic: nic.name.clone(), line, kind: ObjectKind::Qp { peer: None }, gone: None };
                    names.objects.insert(name.name.clone(), object);
                }
            }
            Action::Deregister(region) => {
                if self.region(region, names, true).is_some_and(|o| o.gone.is_none())
                    && let Some(o) = names.objects.get_mut(&region.name)
                {
                    o.gone = Some(("deregistered", line));
                }
            }
            Action::Destroy(qp) => {
                if self.qp(qp, names, true).is_some_and(|o| o.gone.is_none())
                    && let Some(o) = names.objects.get_mut(&qp.name)
                {
                    o.gone = Some(("destroyed", line));
                }
            }
            Action::Connect { qp, peer } => {
                let a = self.qp(qp, names, false).cloned();
                let b = self.qp(peer, names, false).cloned();
                if qp.name == peer.name {
                    let problem = Problem::Conflict(format!("`{}` cannot be connected to itself", qp.name));
                    self.push(peer.at, &peer.path, problem);
                    return;
                }
                for (o, alias) in [(&a, qp), (&b, peer)] {
                    if let Some(Object { kind: ObjectKind::Qp { peer: Some(other) }, .. }) = o
                        && step.expect.misuse.is_none()
                    {
                        let problem =
                            Problem::Conflict(format!("`{}` is already connected (to `{other}`)", alias.name));
                        self.push(alias.at, &alias.path, problem);
                    }
                }
                if a.is_some() && b.is_some() && made {
                    for (this, other) in [(qp, peer), (peer, qp)] {
                        if let Some(o) = names.objects.get_mut(&this.name) {
                            o.kind = ObjectKind::Qp { peer: Some(other.name.clone()) };
                        }
                    }
                }
            }
            Action::Send(t) => {
                self.post(t, names, step, true);
            }
            Action::Receive(t) => {
                self.post(t, names, step, false);
            }
            Action::Read(read) => {
                let (into, from, from_at) = (&read.into(), &read.from, &read.from_at);
                if let Some((nic, Some(peer))) = self.post(into, names, step, true)
                    && names.objects.get(&peer).is_some_and(|p| p.nic != nic)
                    && step.expect.misuse.is_none()
                {
                    let problem = Problem::Conflict(format!(
                        "`{}` is connected to `{peer}` on another NIC: a read goes between regions of one NIC, over a queue pair connected to another on that NIC",
                        into.qp.name
                    ));
                    self.push(into.qp.at, &into.qp.path, problem);
                }
                let nic = names.objects.get(&into.qp.name).map(|o| o.nic.clone());
                self.range(from, *from_at, into.bytes, nic.as_deref(), names, step);
            }
            Action::Complete(c) => {
                self.qp(&c.qp, names, false);
            }
            Action::Room(r) => {
                self.qp(&r.qp, names, true);
            }
            Action::Compare { region, at, with, with_at, bytes } => {
                self.range(region, *at, *bytes, None, names, step);
                self.range(with, *with_at, *bytes, None, names, step);
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
        let found =
            problems("  - open: {nic: 0, as: a}\n  - repeat: {times: 2, steps: [identity: {nic: a}, close: a]}\n");
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
        assert_eq!(
            problems("  - open: {nic: 0, as: a}\n  - close: a\n  - open: {nic: 1, as: a}\n  - identity: {nic: a}\n"),
            vec![]
        );
    }

    #[test]
    fn every_problem_is_reported_not_only_the_first() {
        let found = problems("  - close: x\n  - limits: {nic: y}\n  - open: {nic: 5, as: z}\n");
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(matches!(found[2], Problem::NicOutOfRange { nic: 5, nics: 2 }));
    }

    #[test]
    fn names_with_iterations_are_checked_pass_by_pass() {
        let make = "  - open: {nic: 0, as: a}\n  - repeat:\n      times: 3\n      steps:\n        - qp: {on: a, as: \"q${i}\"}\n";
        // Each pass gives a name of its own; a later step may use any of them by its number.
        assert_eq!(problems(&format!("{make}  - destroy: q2\n  - destroy: q0\n")), vec![]);
        // One past the last pass was never made.
        let found = problems(&format!("{make}  - destroy: q3\n"));
        assert!(matches!(&found[..], [Problem::UndefinedAlias { alias }] if alias == "q3"), "{found:?}");
        // Destroyed by a second repeat pass by pass, then used: gone.
        let again = "  - repeat:\n      times: 3\n      steps:\n        - destroy: \"q${i}\"\n";
        let found = problems(&format!(
            "{make}{again}  - room: {{qp: q1, side: send, equals: 0}}\n  - connect: {{qp: q1, peer: q2}}\n"
        ));
        assert!(matches!(&found[..], [Problem::Gone { name, .. }, ..] if name == "q1"), "{found:?}");
        // Made again while the first ones live: the names collide at their pass.
        let found = problems(&format!("{make}{}", make.lines().skip(1).collect::<Vec<_>>().join("\n") + "\n"));
        assert!(matches!(&found[..], [Problem::NameInUse { name, .. }, ..] if name == "q0"), "{found:?}");
        // Nested repeats name each pass by both iterations.
        let nested = "  - open: {nic: 0, as: a}\n  - repeat:\n      times: 2\n      index: j\n      steps:\n        - repeat:\n            times: 2\n            steps:\n              - region: {on: a, as: \"r${j}_${i}\", bytes: 4KiB}\n  - deregister: r1_1\n  - deregister: r0_1\n";
        assert_eq!(problems(nested), vec![]);
    }

    #[test]
    fn faults_must_name_existing_nics() {
        let text = "name: t\nabout: x.\nnics: 1\nfaults:\n  - firmware: {nic: 1, request: VER_GET, action: no-response}\nsteps:\n  - count: {equals: 1}\n";
        let errors = load_str(Path::new("t.yaml"), text).unwrap_err();
        assert_eq!(errors[0].error.field, "faults[0].firmware.nic");
        assert_eq!(errors[0].error.at.line, 5);
    }
}
