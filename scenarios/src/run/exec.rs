//! Running a scenario's steps against one target session, in order, stopping at the first step
//! that does not do what it should.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::Duration;

use bnxt::Nic;

use super::outcome::{FailedStep, Failure, StepRecord};
use super::panic::catch;
use crate::scenario::values::{format_duration, format_gid, format_mac};
use crate::scenario::{Action, CountCheck, IdentityCheck, NicRef, Step};
use crate::target::Session;

/// Most queue pairs a NIC holds at once (the contract: the firmware's limit, at most 65,536).
const MAX_QPS: u32 = 65_536;
/// Most regions a NIC holds at once (the contract: at most 262,144).
const MAX_REGIONS: u32 = 262_144;

/// A step that did not do what it should: what should have happened, and what did.
#[derive(Debug)]
struct Mismatch {
    expected: String,
    got: String,
}

impl Mismatch {
    fn new(expected: impl Into<String>, got: impl Into<String>) -> Mismatch {
        Mismatch { expected: expected.into(), got: got.into() }
    }
}

/// A NIC a step opened, by alias.
struct Held {
    nic: Nic,
    open: bool,
}

/// The state of one scenario run: the NICs its steps opened.
pub struct Exec<'s> {
    session: &'s dyn Session,
    held: HashMap<String, Held>,
    /// The NIC index each alias's `open` named (also for opens that failed).
    indices: HashMap<String, usize>,
    /// NICs opened by an `open` that was expected to fail; closed at the end.
    stray: Vec<Nic>,
    /// Iteration of each enclosing repeat (from 1) and its count.
    iterations: Vec<(u32, u32)>,
    /// Numbers of the enclosing steps (`5` for the steps of repeat 5).
    numbers: Vec<usize>,
}

impl<'s> Exec<'s> {
    /// A run on `session` with nothing open yet.
    pub fn new(session: &'s dyn Session) -> Exec<'s> {
        Exec {
            session,
            held: HashMap::new(),
            indices: HashMap::new(),
            stray: Vec::new(),
            iterations: Vec::new(),
            numbers: Vec::new(),
        }
    }

    /// Run `steps` in order, recording each in `records`; the first failure stops the run.
    pub fn run(&mut self, steps: &[Step], records: &mut Vec<StepRecord>) -> Result<(), Box<Failure>> {
        for (i, step) in steps.iter().enumerate() {
            self.numbers.push(i + 1);
            let started = self.now();
            let result = self.step(step);
            let took = self.now().saturating_sub(started);
            let number = self.number();
            self.numbers.pop();
            let (ok, note) = match &result {
                Ok(note) => (true, note.clone()),
                Err(_) => (false, None),
            };
            records.push(StepRecord { number, line: step.at.line, text: step.action.to_string(), started, took, ok, note });
            result?;
        }
        Ok(())
    }

    /// Close every NIC still open (steps that failed, or scenarios that end without `close`).
    pub fn close_all(&mut self) -> Result<(), Box<Failure>> {
        let mut problems = Vec::new();
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
            Err(Box::new(Failure { step: None, expected: "NICs left open close at the end".into(), got: problems.join("; ") }))
        }
    }

    fn now(&self) -> Duration {
        catch(|| self.session.clock().now()).unwrap_or_default()
    }

    fn number(&self) -> String {
        self.numbers.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(".")
    }

    /// Run one step (its action, then its timing expectations).
    fn step(&mut self, step: &Step) -> Result<Option<String>, Box<Failure>> {
        let fail = |this: &Self, m: Mismatch| Box::new(Failure {
            step: Some(FailedStep {
                number: this.number(),
                line: step.at.line,
                text: step.action.to_string(),
                iterations: this.iterations.clone(),
            }),
            expected: m.expected,
            got: m.got,
        });
        let started = self.now();
        let note = if let Action::Repeat { times, steps } = &step.action {
            // Inner steps report their own failures; their records are not kept.
            for i in 0..*times {
                self.iterations.push((i + 1, *times));
                let mut inner = Vec::new();
                let result = self.run(steps, &mut inner);
                self.iterations.pop();
                result?;
            }
            Some(format!("{times} iterations"))
        } else {
            match catch(|| self.act(step)) {
                Ok(Ok(note)) => note,
                Ok(Err(m)) => return Err(fail(self, m)),
                Err(panic) => return Err(fail(self, Mismatch::new(format!("`{}` runs", step.action.keyword()), panic))),
            }
        };
        let took = self.now().saturating_sub(started);
        if let Some(least) = step.expect.takes_at_least
            && took < least
        {
            let m = Mismatch::new(format!("takes at least {}", format_duration(least)), format!("took {}", format_duration(took)));
            return Err(fail(self, m));
        }
        if let Some(most) = step.expect.takes_at_most
            && took > most
        {
            let m = Mismatch::new(format!("takes at most {}", format_duration(most)), format!("took {}", format_duration(took)));
            return Err(fail(self, m));
        }
        Ok(note)
    }

    fn act(&mut self, step: &Step) -> Result<Option<String>, Mismatch> {
        match &step.action {
            Action::Open { nic, alias, .. } => self.open(*nic, &alias.name, step),
            Action::Close { alias } => self.close(&alias.name),
            Action::Config { nic, relaxed_ordering, bus_master, memory } => {
                let index = self.index(nic)?;
                let state = self.session.config_state(index).map_err(|e| Mismatch::new("the config space can be read", e.to_string()))?;
                let mut checks = Checks::default();
                checks.switch("relaxed_ordering", *relaxed_ordering, state.relaxed_ordering);
                checks.switch("bus_master", *bus_master, state.bus_master);
                checks.switch("memory", *memory, state.memory);
                checks.done()
            }
            Action::Identity(check) => self.identity(check),
            Action::Limits { nic, qps, regions } => {
                let limits = self.open_nic(&nic.name)?.limits();
                let mut checks = Checks::default();
                checks.check((1..=MAX_QPS).contains(&limits.qps), format!("from 1 to {MAX_QPS} queue pairs"), format!("qps {}", limits.qps));
                checks.check(
                    (1..=MAX_REGIONS).contains(&limits.regions),
                    format!("from 1 to {MAX_REGIONS} regions"),
                    format!("regions {}", limits.regions),
                );
                if let Some(q) = qps {
                    checks.check(limits.qps == *q, format!("qps {q}"), format!("qps {}", limits.qps));
                }
                if let Some(r) = regions {
                    checks.check(limits.regions == *r, format!("regions {r}"), format!("regions {}", limits.regions));
                }
                checks.done().map(|_| Some(format!("{} queue pairs, {} regions", limits.qps, limits.regions)))
            }
            Action::Count(check) => {
                let n = bnxt::count(self.session.machine()).map_err(|e| Mismatch::new("the machine's NICs can be listed", e.to_string()))?;
                let (ok, expected) = match check {
                    CountCheck::Equals(want) => (n == *want, format!("{want} NICs")),
                    CountCheck::AtLeast(want) => (n >= *want, format!("at least {want} NICs")),
                };
                if ok { Ok(Some(format!("{n} NICs"))) } else { Err(Mismatch::new(expected, format!("{n} NICs"))) }
            }
            Action::Wait(d) => {
                self.session.clock().sleep(*d);
                Ok(None)
            }
            Action::Inspect { nic, dma_mappings, driver_registered } => {
                let index = self.index(nic)?;
                let state = self.session.internals(index).map_err(|e| Mismatch::new("the NIC's inner state can be seen", e.to_string()))?;
                let mut checks = Checks::default();
                if let Some(n) = dma_mappings {
                    checks.check(state.dma_mappings == *n, format!("dma_mappings {n}"), format!("dma_mappings {}", state.dma_mappings));
                }
                if let Some(r) = driver_registered {
                    checks.check(
                        state.driver_registered == *r,
                        format!("driver_registered {r}"),
                        format!("driver_registered {}", state.driver_registered),
                    );
                }
                checks.done()
            }
            Action::Repeat { .. } => unreachable!("repeat is run by step()"),
        }
    }

    fn open(&mut self, index: usize, alias: &str, step: &Step) -> Result<Option<String>, Mismatch> {
        self.indices.insert(alias.to_string(), index);
        let result = Nic::open(self.session.machine(), index);
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
                    Err(Mismatch::new(format!("open fails with an error matching /{}/", pattern.text), format!("error: {message}")))
                }
            }
        }
    }

    fn close(&mut self, alias: &str) -> Result<Option<String>, Mismatch> {
        let held = self.held.get_mut(alias).ok_or_else(|| Mismatch::new(format!("`{alias}` names a NIC"), "it names none"))?;
        let second = !held.open;
        held.nic.close();
        held.open = false;
        if held.nic.is_open() {
            return Err(Mismatch::new("the NIC is closed", "is_open() is still true"));
        }
        Ok(second.then(|| "second close".to_string()))
    }

    /// The NIC an alias names, which must be open.
    fn open_nic(&self, alias: &str) -> Result<&Nic, Mismatch> {
        match self.held.get(alias) {
            Some(h) if h.open => Ok(&h.nic),
            _ => Err(Mismatch::new(format!("`{alias}` names an open NIC"), "it names none")),
        }
    }

    fn index(&self, nic: &NicRef) -> Result<usize, Mismatch> {
        match nic {
            NicRef::Index { nic, .. } => Ok(*nic),
            NicRef::Alias(a) => {
                self.indices.get(&a.name).copied().ok_or_else(|| Mismatch::new(format!("`{}` names a NIC", a.name), "it names none"))
            }
        }
    }

    fn identity(&self, check: &IdentityCheck) -> Result<Option<String>, Mismatch> {
        let nic = self.open_nic(&check.nic.name)?;
        let index = self.indices.get(&check.nic.name).copied().unwrap_or_default();
        let buses = bnxt::buses(self.session.machine()).map_err(|e| Mismatch::new("the machine's NICs can be listed", e.to_string()))?;
        let (name, bus, id) = (nic.name().to_string(), nic.bus().to_string(), nic.identity());
        let mut checks = Checks::default();

        // What the contract says of every NIC.
        let contract_name = bnxt::name_of(index);
        checks.check(name == contract_name, format!("name {contract_name} (NIC {index})"), format!("name {name}"));
        match buses.get(index) {
            Some(listed) => checks.check(&bus == listed, format!("bus {listed} (NIC {index} of buses())"), format!("bus {bus}")),
            None => checks.check(false, format!("NIC {index} in buses()"), format!("{} buses", buses.len())),
        }
        let from_mac = Ipv4Addr::new(10, id.mac[3], id.mac[4], id.mac[5]);
        checks.check(id.ipv4 == from_mac, format!("ipv4 {from_mac} (10. and the MAC's last three bytes)"), format!("ipv4 {}", id.ipv4));
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
            checks.check(theirs.mac != id.mac, format!("a MAC other than {}'s", other.name), format!("mac {}", format_mac(&id.mac)));
            checks.check(theirs.ipv4 != id.ipv4, format!("an IPv4 other than {}'s", other.name), format!("ipv4 {}", id.ipv4));
        }
        checks.done().map(|_| Some(format!("{name} {bus} mac {} ipv4 {}", format_mac(&id.mac), id.ipv4)))
    }
}

/// Several checks of one step, all made, reported together.
#[derive(Default)]
struct Checks {
    expected: Vec<String>,
    got: Vec<String>,
}

impl Checks {
    fn check(&mut self, ok: bool, expected: impl Into<String>, got: impl Into<String>) {
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

    fn done(self) -> Result<Option<String>, Mismatch> {
        if self.expected.is_empty() {
            Ok(None)
        } else {
            Err(Mismatch::new(self.expected.join(", "), self.got.join(", ")))
        }
    }
}
