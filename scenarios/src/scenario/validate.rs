//! What one entry of a scenario must say to hold together, beyond what its type says: a step
//! that checks something, one of two keys that exclude each other, a key that goes only with
//! another's value, one `wire` entry. Each problem is said at the field at fault.
//!
//! Checks across steps (aliases, regions, queue pairs) are [`super::check`]'s.

use super::faults::{FaultKind, firmware_fault, word};
use super::steps::{Action, MemoryKind, RegionStep, Step};
use super::{Scenario, visit_steps};
use crate::yaml::{DecodeError, Pos, Problem};

/// Every problem of the entries of `scenario` (none when each holds together).
pub fn validate(scenario: &Scenario) -> Vec<DecodeError> {
    let mut problems = Vec::new();
    let mut wire_seen = false;
    for fault in &scenario.faults {
        match &fault.kind {
            FaultKind::Firmware(f) => problems.extend(firmware_fault(f).err()),
            FaultKind::Wire(w) => {
                if wire_seen {
                    problems.push(conflict(
                        fault.at,
                        &fault.path,
                        "one `wire` entry says everything the wire does (put its rules together)",
                    ));
                }
                wire_seen = true;
                if !w.value.does_something() {
                    problems.push(conflict(
                        w.at,
                        &w.path,
                        "`wire` does nothing: give a chance (drop, duplicate, reorder, corrupt, delay) or rules",
                    ));
                }
                for rule in &w.value.rules {
                    if let Some(delay) = &rule.delay
                        && rule.kind != bnxt_model::faults::WireFaultKind::Delay
                    {
                        let kind = word(&rule.kind);
                        let message = format!("`delay` goes only with `kind: delay` (this rule's kind is `{kind}`)");
                        problems.push(conflict(delay.at, &delay.path, &message));
                    }
                }
            }
        }
    }
    visit_steps(&scenario.steps, &mut |step| problems.extend(step_problems(step)));
    problems
}

fn conflict(at: Pos, field: &str, message: &str) -> DecodeError {
    DecodeError { at, field: field.to_string(), problem: Problem::Conflict(message.to_string()) }
}

/// The problems of one step (not of the steps inside a repeat).
fn step_problems(step: &Step) -> Vec<DecodeError> {
    let field = format!("{}.{}", step.path, step.action.keyword());
    let at = step.action_at;
    let mut problems = Vec::new();
    let mut say = |message: &str| problems.push(conflict(at, &field, message));
    match &step.action {
        Action::Config { relaxed_ordering: None, bus_master: None, memory: None, .. } => {
            say("`config` checks nothing: give relaxed_ordering, bus_master or memory")
        }
        Action::Inspect { dma_mappings: None, driver_registered: None, .. } => {
            say("`inspect` checks nothing: give dma_mappings or driver_registered")
        }
        Action::Count(c) => problems.extend(one_of_two(c.equals.is_some(), c.at_least.is_some(), at, &field)),
        Action::Room(r) => problems.extend(one_of_two(r.equals.is_some(), r.at_least.is_some(), at, &field)),
        Action::Region(r) => problems.extend(region_memory(r, at, &field)),
        _ => {}
    }
    problems.extend(expect_problems(step));
    problems
}

/// `equals` or `at_least`, exactly one.
fn one_of_two(equals: bool, at_least: bool, at: Pos, field: &str) -> Option<DecodeError> {
    match (equals, at_least) {
        (true, true) => Some(conflict(at, field, "give `equals` or `at_least`, not both")),
        (false, false) => {
            Some(DecodeError { at, field: field.to_string(), problem: Problem::MissingKey { key: "equals".into() } })
        }
        _ => None,
    }
}

/// `memory: device` needs `device`; `device` and `bar` need `memory: device`.
fn region_memory(r: &RegionStep, at: Pos, field: &str) -> Option<DecodeError> {
    match r.memory {
        MemoryKind::Device if r.device.is_none() => {
            Some(conflict(at, field, "`memory: device` needs `device`, the device's bus address"))
        }
        MemoryKind::Device => None,
        _ => {
            let extra = r.device.as_ref().map(|d| (d.at, &d.path)).or(r.bar.as_ref().map(|b| (b.at, &b.path)))?;
            Some(conflict(
                extra.0,
                extra.1,
                "`device` and `bar` name another device's memory: they go with `memory: device`",
            ))
        }
    }
}

/// `expect` says something, fails one way at most, and its times are in order.
fn expect_problems(step: &Step) -> Option<DecodeError> {
    let e = &step.expect;
    let at = e.at?;
    let field = format!("{}.expect", step.path);
    let message = if e.error.is_some() && e.misuse.is_some() {
        "a step fails one way: give `error` or `misuse`, not both"
    } else if e.error.is_none() && e.misuse.is_none() && e.takes_at_least.is_none() && e.takes_at_most.is_none() {
        "`expect` says nothing: give error, misuse, takes_at_least or takes_at_most"
    } else if let (Some(lo), Some(hi)) = (e.takes_at_least, e.takes_at_most)
        && lo > hi
    {
        "takes_at_least is more than takes_at_most"
    } else {
        return None;
    };
    Some(conflict(at, &field, message))
}
