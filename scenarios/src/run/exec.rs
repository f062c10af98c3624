//! Running a scenario's steps against one target session, in order, stopping at the first step
//! that does not do what it should.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use bnxt::{Clock, Nic, OpenOptions};

use super::outcome::{FailedStep, Failure, StepRecord, TimedOut, TimeoutClock, Verdict};
use super::panic::{Panic, catch, catch_panic};
use super::roce::Objects;
use super::watch::{Expiry, Limit, Watch, WatchedClock, WatchedMachine, Whose};
use crate::scenario::steps::DEFAULT_ITERATION;
use crate::scenario::values::{format_duration, format_gid, format_mac};
use crate::scenario::{Action, Capability, CountCheck, IdentityCheck, NicRef, Step};
use crate::target::Session;
use crate::transcript::record::Recorder;
use bnxt_transcript::Field;

/// A step that did not do what it should: what should have happened, and what did.
#[derive(Debug)]
pub(super) struct Mismatch {
    expected: String,
    got: String,
}

impl Mismatch {
    pub(super) fn new(expected: impl Into<String>, got: impl Into<String>) -> Mismatch {
        Mismatch { expected: expected.into(), got: got.into() }
    }
}

/// Why the steps stopped before their end.
#[derive(Debug)]
pub enum Stop {
    /// A step did not do what it should.
    Failed(Failure),
    /// A timeout passed.
    TimedOut(TimedOut),
}

impl Stop {
    /// The verdict this stop gives the scenario.
    pub fn verdict(self) -> Verdict {
        match self {
            Stop::Failed(f) => Verdict::Fail(f),
            Stop::TimedOut(t) => Verdict::Timeout(t),
        }
    }
}

/// A NIC a step opened, by alias.
pub(super) struct Held {
    pub(super) nic: Nic,
    pub(super) open: bool,
}

/// What the target decides of how steps run: the model-only steps it skips, and how the driver
/// opens NICs on it.
#[derive(Debug, Clone, Default)]
pub struct StepRules {
    /// The target, as `--target` names it (said in a skipped step's reason).
    pub target: String,
    /// What the target cannot do: a step that needs one of these is skipped
    /// ([`Action::step_needs`]).
    pub lacks: Vec<Capability>,
    /// How the driver opens NICs (the RoCE command timeout).
    pub open: OpenOptions,
    /// The NICs whose firmware faults the layer at the driver's seam injects (its memory counts
    /// among theirs).
    pub seam_nics: Vec<usize>,
}

/// The state of one scenario run: the NICs, regions and queue pairs its steps made.
pub struct Exec<'s> {
    session: &'s dyn Session,
    /// The machine the driver works on (its clocks watched).
    pub(super) machine: &'s WatchedMachine<'s>,
    clock: WatchedClock<&'s dyn Clock>,
    watch: Arc<Watch>,
    pub(super) recorder: Arc<Recorder>,
    /// The seed of the run (data fills).
    pub(super) seed: u64,
    virtual_time: bool,
    /// Regions and queue pairs, by name; dropped before the NICs.
    pub(super) objects: Objects,
    pub(super) held: HashMap<String, Held>,
    /// The NIC index each alias's `open` named (also for opens that failed).
    indices: HashMap<String, usize>,
    /// NICs opened by an `open` that was expected to fail; closed at the end.
    stray: Vec<Nic>,
    /// Iteration of each enclosing repeat (from 1) and its count.
    iterations: Vec<(u32, u32)>,
    /// The name of each enclosing repeat's iteration (`i`), as `iterations` holds them.
    iteration_names: Vec<String>,
    /// Numbers of the enclosing steps (`5` for the steps of repeat 5).
    numbers: Vec<usize>,
    rules: StepRules,
}

impl<'s> Exec<'s> {
    /// A run on `session` through `machine`, with nothing open yet.
    pub fn new(
        session: &'s dyn Session,
        machine: &'s WatchedMachine<'s>,
        watch: Arc<Watch>,
        recorder: Arc<Recorder>,
        seed: u64,
        virtual_time: bool,
    ) -> Exec<'s> {
        Exec {
            session,
            machine,
            clock: WatchedClock::new(session.clock(), watch.clone()),
            watch,
            recorder,
            seed,
            virtual_time,
            objects: Objects::default(),
            held: HashMap::new(),
            indices: HashMap::new(),
            stray: Vec::new(),
            iterations: Vec::new(),
            iteration_names: Vec::new(),
            numbers: Vec::new(),
            rules: StepRules::default(),
        }
    }

    /// The run under `rules` (by default: every step runs, NICs open as the firmware decides).
    pub fn with_rules(mut self, rules: StepRules) -> Exec<'s> {
        self.rules = rules;
        self
    }

    /// Why the target skips `step`, if it does.
    fn skips(&self, step: &Step) -> Option<String> {
        let needs = step.action.step_needs().filter(|c| self.rules.lacks.contains(c))?;
        Some(format!(
            "`{}` needs {}, which the {} target lacks",
            step.action.keyword(),
            needs.name(),
            self.rules.target
        ))
    }

    /// Run `steps` in order, recording each in `records`; the first failure stops the run.
    pub fn run(&mut self, steps: &[Step], records: &mut Vec<StepRecord>) -> Result<(), Box<Stop>> {
        self.run_steps(steps, Some(records))
    }

    /// [`Exec::run`], keeping no records when `records` is `None` (a repeat's inner steps: they
    /// report their own failures, and their records would be made only to be dropped).
    fn run_steps(&mut self, steps: &[Step], mut records: Option<&mut Vec<StepRecord>>) -> Result<(), Box<Stop>> {
        for (i, step) in steps.iter().enumerate() {
            self.numbers.push(i + 1);
            // Names that hold iterations (`q${i}`) with this pass's numbers put in.
            let step = &*self.resolved(step);
            let started = self.now();
            if let Some(reason) = self.skips(step) {
                self.recorder.note_with(started, || {
                    format!("{} line {}: {} SKIPPED: {reason}", self.place(), step.at.line, step.action)
                });
                let number = records.is_some().then(|| self.number());
                self.numbers.pop();
                let (Some(records), Some(number)) = (records.as_deref_mut(), number) else { continue };
                records.push(StepRecord {
                    number,
                    line: step.at.line,
                    text: step.action.to_string(),
                    started,
                    took: Duration::ZERO,
                    ok: true,
                    note: None,
                    skipped: Some(reason),
                });
                continue;
            }
            let result = self.step(step);
            let Some(records) = records.as_deref_mut() else {
                self.numbers.pop();
                result?;
                continue;
            };
            let took = self.now().saturating_sub(started);
            let number = self.number();
            self.numbers.pop();
            let (ok, note) = match &result {
                Ok(note) => (true, note.clone()),
                Err(_) => (false, None),
            };
            records.push(StepRecord {
                number,
                line: step.at.line,
                text: step.action.to_string(),
                started,
                took,
                ok,
                note,
                skipped: None,
            });
            result?;
        }
        Ok(())
    }

    /// `step` with the enclosing repeats' iterations put in its names (the checks before
    /// running make sure each it holds is one of theirs).
    fn resolved<'a>(&self, step: &'a Step) -> std::borrow::Cow<'a, Step> {
        let value = |name: &str| {
            let at = self.iteration_names.iter().rposition(|n| n == name)?;
            Some(self.iterations[at].0 - 1)
        };
        step.resolved(&value).expect("the checks before running make sure every iteration a name holds is a repeat's")
    }

    /// Close every NIC still open (steps that failed, or scenarios that end without `close`),
    /// after giving up the regions and queue pairs.
    pub fn close_all(&mut self) -> Result<(), Box<Stop>> {
        let mut problems = Vec::new();
        if let Err(p) = catch(|| std::mem::take(&mut self.objects)) {
            problems.push(format!("dropping regions and queue pairs: {p}"));
        }
        let mut to_close: Vec<(String, &mut Nic)> = Vec::new();
        for (alias, held) in self.held.iter_mut() {
            if held.open {
                to_close.push((alias.clone(), &mut held.nic));
            }
        }
        to_close.sort_by(|a, b| a.0.cmp(&b.0));
        for (alias, nic) in to_close {
            if let Err(p) = catch(|| nic.close()) {
                problems.push(format!("closing {alias}: {p}"));
            }
        }
        for nic in &mut self.stray {
            if let Err(p) = catch(|| nic.close()) {
                problems.push(format!("closing a NIC whose open should have failed: {p}"));
            }
        }
        for held in self.held.values_mut() {
            held.open = false;
        }
        if problems.is_empty() {
            Ok(())
        } else {
            let got = problems.join("; ");
            Err(Box::new(Stop::Failed(Failure { step: None, expected: "NICs left open close at the end".into(), got })))
        }
    }

    /// The target's time (not watched: the runner's own reading).
    pub(super) fn now(&self) -> Duration {
        catch(|| self.session.clock().now()).unwrap_or_default()
    }

    fn number(&self) -> String {
        self.numbers.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(".")
    }

    /// The step being run, as a failure report names it.
    fn failed_step(&self, step: &Step) -> FailedStep {
        FailedStep {
            number: self.number(),
            line: step.at.line,
            text: step.action.to_string(),
            iterations: self.iterations.clone(),
        }
    }

    /// What a passed limit means for the verdict.
    fn timed_out(&self, step: &Step, expiry: Expiry) -> TimedOut {
        let target_clock = if self.virtual_time { TimeoutClock::Virtual } else { TimeoutClock::Target };
        let (whose, limit, clock) = match expiry {
            Expiry::Target(Limit { whose: Whose::Scenario, length, .. }) => {
                ("scenario".to_string(), length, target_clock)
            }
            Expiry::Target(Limit { whose: Whose::Step(n), length, .. }) => (format!("step {n}"), length, target_clock),
            Expiry::Wall(length) => ("wall-limit".to_string(), length, TimeoutClock::Wall),
        };
        TimedOut { whose, limit, clock, step: Some(self.failed_step(step)) }
    }

    /// Where the step stands, for its transcript lines: `20.1 (7/1000)`.
    fn place(&self) -> String {
        let mut place = self.number();
        if let Some((i, n)) = self.iterations.last() {
            place.push_str(&format!(" ({i}/{n})"));
        }
        place
    }

    /// Run one step (its action, then its timing expectations).
    fn step(&mut self, step: &Step) -> Result<Option<String>, Box<Stop>> {
        let started = self.now();
        self.recorder.note_with(started, || format!("{} line {}: {}", self.place(), step.at.line, step.action));
        if let Some(timeout) = step.timeout {
            self.watch.push(Limit { whose: Whose::Step(self.number()), length: timeout, until: started + timeout });
        }
        let result = self.step_within(step, started);
        if step.timeout.is_some() {
            self.watch.pop();
        }
        let end = self.now();
        let took = end.saturating_sub(started);
        self.recorder.note_with(end, || {
            let took = Field::Took.is(format_duration(took));
            let verdict = match &result {
                Ok(Some(note)) => format!("ok {took} {note}"),
                Ok(None) => format!("ok {took}"),
                Err(stop) => match &**stop {
                    Stop::Failed(f) => format!("FAIL expected {}; got {}", f.expected, f.got),
                    Stop::TimedOut(t) => format!("TIMEOUT {}", t.describe()),
                },
            };
            format!("{} {verdict}", self.place())
        });
        result
    }

    fn step_within(&mut self, step: &Step, started: Duration) -> Result<Option<String>, Box<Stop>> {
        let fail = |this: &Self, m: Mismatch| {
            Box::new(Stop::Failed(Failure { step: Some(this.failed_step(step)), expected: m.expected, got: m.got }))
        };
        let note = if let Action::Repeat { times, index, steps } = &step.action {
            // Inner steps report their own failures; their records are not kept.
            self.iteration_names.push(index.clone().unwrap_or_else(|| DEFAULT_ITERATION.to_string()));
            for i in 0..*times {
                self.iterations.push((i + 1, *times));
                let result = self.run_steps(steps, None);
                self.iterations.pop();
                if result.is_err() {
                    self.iteration_names.pop();
                }
                result?;
            }
            self.iteration_names.pop();
            Some(format!("{times} iterations"))
        } else {
            let acted = catch_panic(|| self.act(step));
            // A limit that passed during the step cut its waits short: whatever the step then
            // saw follows from that.
            if let Some(expiry) = self.watch.expired() {
                return Err(Box::new(Stop::TimedOut(self.timed_out(step, expiry))));
            }
            match acted {
                Ok(Ok(note)) => match &step.expect.misuse {
                    Some(pattern) => {
                        let m = Mismatch::new(
                            format!("the driver refuses it as misuse (a panic matching /{}/)", pattern.text),
                            "it ran",
                        );
                        return Err(fail(self, m));
                    }
                    None => note,
                },
                Ok(Err(m)) => return Err(fail(self, m)),
                Err(Panic { at, message }) => match &step.expect.misuse {
                    Some(pattern) if pattern.regex.is_match(&message) => Some(format!("refused as misuse: {message}")),
                    Some(pattern) => {
                        let m = Mismatch::new(
                            format!("a panic matching /{}/", pattern.text),
                            format!("a panic: {message}"),
                        );
                        return Err(fail(self, m));
                    }
                    None => {
                        let got = Panic { at, message }.to_string();
                        return Err(fail(self, Mismatch::new(format!("`{}` runs", step.action.keyword()), got)));
                    }
                },
            }
        };
        let took = self.now().saturating_sub(started);
        if let Some(least) = step.expect.takes_at_least
            && took < least
        {
            let m = Mismatch::new(
                format!("takes at least {}", format_duration(least)),
                format!("took {}", format_duration(took)),
            );
            return Err(fail(self, m));
        }
        let mut note = note;
        if let Some(most) = step.expect.takes_at_most
            && !self.virtual_time
        {
            // An upper bound on a real clock is a claim about the machine's speed (a guest under
            // emulation, a loaded host), not about the driver: only a virtual clock makes it exact.
            let said = format!("takes_at_most {} not checked on a real clock", format_duration(most));
            note = Some(match note {
                Some(n) => format!("{n}; {said}"),
                None => said,
            });
        } else if let Some(most) = step.expect.takes_at_most
            && took > most
        {
            let m = Mismatch::new(
                format!("takes at most {}", format_duration(most)),
                format!("took {}", format_duration(took)),
            );
            return Err(fail(self, m));
        }
        Ok(note)
    }

    fn act(&mut self, step: &Step) -> Result<Option<String>, Mismatch> {
        if step.action.is_roce() {
            return self.roce(step);
        }
        match &step.action {
            Action::Open { nic, alias } => self.open(nic.value, &alias.name, step),
            Action::Close(alias) => self.close(&alias.name),
            Action::Config { nic, relaxed_ordering, bus_master, memory } => {
                let index = self.index(nic)?;
                let state = self
                    .session
                    .config_state(index)
                    .map_err(|e| Mismatch::new("the config space can be read", e.to_string()))?;
                let mut checks = Checks::default();
                checks.switch("relaxed_ordering", *relaxed_ordering, state.relaxed_ordering);
                checks.switch("bus_master", *bus_master, state.bus_master);
                checks.switch("memory", *memory, state.memory);
                checks.done()
            }
            Action::Identity(check) => self.identity(check),
            Action::Limits { nic, qps, regions } => super::limits::check(self.open_nic(&nic.name)?, *qps, *regions),
            Action::Count(check) => {
                let n = bnxt::count(self.machine)
                    .map_err(|e| Mismatch::new("the machine's NICs can be listed", e.to_string()))?;
                let (ok, expected) = match check.check().expect("a loaded `count` gives one check") {
                    CountCheck::Equals(want) => (n == want, format!("{want} NICs")),
                    CountCheck::AtLeast(want) => (n >= want, format!("at least {want} NICs")),
                };
                if ok { Ok(Some(format!("{n} NICs"))) } else { Err(Mismatch::new(expected, format!("{n} NICs"))) }
            }
            Action::Wait(d) => {
                // Cut short only by a limit, which the caller reports.
                let _ = self.clock.sleep(*d);
                Ok(None)
            }
            Action::Fault(fault) => {
                let crate::scenario::faults::FaultKind::Firmware(entry) = &fault.kind else {
                    unreachable!("a loaded `fault` step arms a firmware fault")
                };
                let model =
                    crate::scenario::faults::firmware_fault(entry).expect("a loaded `fault` step holds together");
                self.session.arm_fault(&model).map_err(|e| Mismatch::new("the fault is armed", e.to_string()))?;
                Ok(Some("armed".into()))
            }
            Action::Inspect { nic, .. } => {
                let index = self.index(nic)?;
                let state = self
                    .session
                    .internals(index)
                    .map_err(|e| Mismatch::new("the NIC's inner state can be seen", e.to_string()))?;
                super::inspect::check(&state, &step.action, self.rules.seam_nics.contains(&index))
            }
            Action::Repeat { .. } => unreachable!("repeat is run by step()"),
            other => unreachable!("`{}` is a RoCE step, run by roce()", other.keyword()),
        }
    }

    fn open(&mut self, index: usize, alias: &str, step: &Step) -> Result<Option<String>, Mismatch> {
        self.indices.insert(alias.to_string(), index);
        let result = Nic::open_with(self.machine, index, &self.rules.open);
        match (result, &step.expect.error) {
            (Ok(nic), None) => {
                let note = format!("opened {}", nic.name());
                self.held.insert(alias.to_string(), Held { nic, open: true });
                Ok(Some(note))
            }
            (Ok(nic), Some(pattern)) => {
                self.stray.push(nic);
                Err(Mismatch::new(format!("open fails with an error matching /{}/", pattern.text), "it succeeded"))
            }
            (Err(e), None) => Err(Mismatch::new("open succeeds", format!("error: {e}"))),
            (Err(e), Some(pattern)) => {
                let message = e.to_string();
                if pattern.regex.is_match(&message) {
                    Ok(Some(format!("failed as expected: {message}")))
                } else {
                    Err(Mismatch::new(
                        format!("open fails with an error matching /{}/", pattern.text),
                        format!("error: {message}"),
                    ))
                }
            }
        }
    }

    fn close(&mut self, alias: &str) -> Result<Option<String>, Mismatch> {
        let held =
            self.held.get_mut(alias).ok_or_else(|| Mismatch::new(format!("`{alias}` names a NIC"), "it names none"))?;
        let second = !held.open;
        held.nic.close();
        held.open = false;
        if held.nic.is_open() {
            return Err(Mismatch::new("the NIC is closed", "is_open() is still true"));
        }
        Ok(second.then(|| "second close".to_string()))
    }

    /// The NIC an alias names, which must be open.
    pub(super) fn open_nic(&self, alias: &str) -> Result<&Nic, Mismatch> {
        match self.held.get(alias) {
            Some(h) if h.open => Ok(&h.nic),
            _ => Err(Mismatch::new(format!("`{alias}` names an open NIC"), "it names none")),
        }
    }

    fn index(&self, nic: &NicRef) -> Result<usize, Mismatch> {
        match nic {
            NicRef::Index { nic, .. } => Ok(*nic),
            NicRef::Alias(a) => self
                .indices
                .get(&a.name)
                .copied()
                .ok_or_else(|| Mismatch::new(format!("`{}` names a NIC", a.name), "it names none")),
        }
    }

    fn identity(&self, check: &IdentityCheck) -> Result<Option<String>, Mismatch> {
        let nic = self.open_nic(&check.nic.name)?;
        let index = self.indices.get(&check.nic.name).copied().unwrap_or_default();
        let buses =
            bnxt::buses(self.machine).map_err(|e| Mismatch::new("the machine's NICs can be listed", e.to_string()))?;
        let (name, bus, id) = (nic.name().to_string(), nic.bus().to_string(), nic.identity());
        let mut checks = Checks::default();

        // What the contract says of every NIC.
        let contract_name = bnxt::name_of(index);
        checks.check(name == contract_name, format!("name {contract_name} (NIC {index})"), format!("name {name}"));
        match buses.get(index) {
            Some(listed) => {
                checks.check(&bus == listed, format!("bus {listed} (NIC {index} of buses())"), format!("bus {bus}"))
            }
            None => checks.check(false, format!("NIC {index} in buses()"), format!("{} buses", buses.len())),
        }
        let from_mac = Ipv4Addr::new(10, id.mac[3], id.mac[4], id.mac[5]);
        checks.check(
            id.ipv4 == from_mac,
            format!("ipv4 {from_mac} (10. and the MAC's last three bytes)"),
            format!("ipv4 {}", id.ipv4),
        );
        let mapped = from_mac.to_ipv6_mapped().octets();
        checks.check(id.gid == mapped, format!("gid {}", format_gid(&mapped)), format!("gid {}", format_gid(&id.gid)));
        let unicast = id.mac != [0; 6] && id.mac[0] & 1 == 0;
        checks.check(unicast, "a unicast, non-zero MAC", format!("mac {}", format_mac(&id.mac)));

        // What the scenario says of this one.
        if let Some(want) = &check.name {
            checks.check(&name == want, format!("name {want}"), format!("name {name}"));
        }
        if let Some(want) = &check.bus {
            checks.check(&bus == want, format!("bus {want}"), format!("bus {bus}"));
        }
        if let Some(want) = &check.mac {
            checks.check(&id.mac == want, format!("mac {}", format_mac(want)), format!("mac {}", format_mac(&id.mac)));
        }
        if let Some(want) = check.ipv4 {
            checks.check(id.ipv4 == want, format!("ipv4 {want}"), format!("ipv4 {}", id.ipv4));
        }
        if let Some(want) = &check.gid {
            checks.check(&id.gid == want, format!("gid {}", format_gid(want)), format!("gid {}", format_gid(&id.gid)));
        }
        for other in &check.differs_from {
            let theirs = self.open_nic(&other.name)?.identity();
            checks.check(
                theirs.mac != id.mac,
                format!("a MAC other than {}'s", other.name),
                format!("mac {}", format_mac(&id.mac)),
            );
            checks.check(
                theirs.ipv4 != id.ipv4,
                format!("an IPv4 other than {}'s", other.name),
                format!("ipv4 {}", id.ipv4),
            );
        }
        checks.done().map(|_| Some(format!("{name} {bus} mac {} ipv4 {}", format_mac(&id.mac), id.ipv4)))
    }
}

/// Several checks of one step, all made, reported together.
#[derive(Default)]
pub(super) struct Checks {
    expected: Vec<String>,
    got: Vec<String>,
}

impl Checks {
    pub(super) fn check(&mut self, ok: bool, expected: impl Into<String>, got: impl Into<String>) {
        if !ok {
            self.expected.push(expected.into());
            self.got.push(got.into());
        }
    }

    fn switch(&mut self, what: &str, want: Option<bool>, is: bool) {
        let on_off = |b: bool| if b { "on" } else { "off" };
        if let Some(want) = want {
            self.check(want == is, format!("{what} {}", on_off(want)), format!("{what} {}", on_off(is)));
        }
    }

    pub(super) fn done(self) -> Result<Option<String>, Mismatch> {
        if self.expected.is_empty() {
            Ok(None)
        } else {
            Err(Mismatch::new(self.expected.join(", "), self.got.join(", ")))
        }
    }
}
