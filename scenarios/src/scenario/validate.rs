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
    if let Action::Fault(fault) = &step.action {
        return match &fault.kind {
            FaultKind::Firmware(f) => firmware_fault(f).err().into_iter().collect(),
            FaultKind::Wire(w) => vec![conflict(
                w.at,
                &w.path,
                "a `fault` step arms a firmware fault mid-run; what the wire does is the `faults:` header's `wire`, for the whole run",
            )],
        };
    }
    let mut problems = Vec::new();
    let mut say = |message: &str| problems.push(conflict(at, &field, message));
    match &step.action {
        Action::Config { relaxed_ordering: None, bus_master: None, memory: None, .. } => {
            say("`config` checks nothing: give relaxed_ordering, bus_master or memory")
        }
        Action::Inspect {
            dma_mappings: None,
            driver_registered: None,
            firmware_objects: None,
            rx_no_l2_filter: None,
            ..
        } => say("`inspect` checks nothing: give dma_mappings, driver_registered, firmware_objects or rx_no_l2_filter"),
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::scenario::load::load_str;
    use crate::scenario::{Action, RegionMemory, Step};

    fn steps(text: &str) -> Result<Vec<Step>, String> {
        let file = format!("name: t\nabout: x.\nnics: 2\nsteps:\n{text}");
        load_str(Path::new("t.yaml"), &file).map(|mut s| s.remove(0).steps).map_err(|e| e[0].to_string())
    }

    #[test]
    fn steps_that_check_nothing_or_contradict_themselves_are_refused() {
        assert!(
            steps("  - config: {nic: 0}\n").unwrap_err().contains("5:13: steps[0].config: `config` checks nothing")
        );
        assert!(steps("  - inspect: {nic: 0}\n").unwrap_err().contains("`inspect` checks nothing"));
        assert!(steps("  - count: {equals: 1, at_least: 1}\n").unwrap_err().contains("not both"));
        assert!(steps("  - count: {}\n").unwrap_err().contains("missing key `equals`"));
        assert!(steps("  - wait: 1s\n    expect: {}\n").unwrap_err().contains("`expect` says nothing"));
        assert!(
            steps("  - wait: 1s\n    expect: {takes_at_least: 2s, takes_at_most: 1s}\n")
                .unwrap_err()
                .contains("more than")
        );
        assert!(
            steps("  - open: {nic: 0, as: a}\n    expect: {error: x, misuse: y}\n").unwrap_err().contains("one way")
        );
        assert!(steps("  - expect: {takes_at_least: 1s}\n").unwrap_err().contains("a step needs one of: open, close"));
        assert!(steps("  []\n").unwrap_err().ends_with("steps: the list of steps is empty"));
        assert!(
            steps("  open: {nic: 0, as: a}\n")
                .unwrap_err()
                .contains("steps: expected a list of steps, found a mapping")
        );
        assert!(steps("  - open: {nic: 0, as: 7}\n").unwrap_err().contains("expected an alias"));
        assert!(steps("  - open: {nic: 0, as: \"a b\"}\n").unwrap_err().contains("is not an alias"));
        assert!(
            steps("  - config: {nic: [0], bus_master: on}\n").unwrap_err().contains("expected a NIC index or an alias")
        );
        assert!(steps("  - identity: {nic: a, mac: 02:00}\n").unwrap_err().contains("six bytes"));
    }

    /// An `open` of NIC 0 as `a`, then the steps written.
    macro_rules! with_open {
        ($steps:literal) => {
            concat!("  - open: {nic: 0, as: a}\n", $steps)
        };
    }

    #[test]
    fn region_memory_kinds_and_their_mistakes() {
        let memory = |steps: &[Step]| match &steps[1].action {
            Action::Region(r) => r.region_memory(),
            other => panic!("{other:?}"),
        };
        let ok = steps(with_open!("  - region: {on: a, as: r, bytes: 4096, memory: pages}\n")).unwrap();
        assert_eq!(memory(&ok), RegionMemory::Pages);
        let ok = steps(with_open!(
            "  - region: {on: a, as: r, bytes: 4096, memory: device, device: 0000:81:00.0, bar: 2}\n"
        ))
        .unwrap();
        assert_eq!(memory(&ok), RegionMemory::Device { bus: "0000:81:00.0".into(), bar: 2 });
        let ok = steps(with_open!("  - region: {on: a, as: r, bytes: 4096}\n")).unwrap();
        assert_eq!(memory(&ok), RegionMemory::Host);
        let e = steps(with_open!("  - region: {on: a, as: r, bytes: 4096, memory: page}\n")).unwrap_err();
        assert!(e.contains("unknown memory `page` (did you mean `pages`?)"), "{e}");
        let e = steps(with_open!("  - region: {on: a, as: r, bytes: 4096, memory: device}\n")).unwrap_err();
        assert!(e.contains("needs `device`"), "{e}");
        let e = steps(with_open!("  - region: {on: a, as: r, bytes: 4096, bar: 1}\n")).unwrap_err();
        assert!(e.contains("6:46: steps[1].region.bar: `device` and `bar` name another device's memory"), "{e}");
        let e = steps(with_open!("  - region: {on: a, as: r, bytes: 4096, memory: device, device: 81:00.0}\n"))
            .unwrap_err();
        assert!(e.contains("DDDD:BB:DD.F"), "{e}");
        let e = steps(with_open!(
            "  - region: {on: a, as: r, bytes: 4096, memory: device, device: 0000:81:00.0, bar: 6}\n"
        ))
        .unwrap_err();
        assert!(e.contains("steps[1].region.bar: 6 is not a BAR number"), "{e}");
    }

    #[test]
    fn faults_that_do_not_hold_together_are_refused_where_written() {
        let with = |faults: &str| {
            let text = format!("name: t\nabout: x.\nnics: 1\nfaults:\n{faults}steps:\n  - count: {{at_least: 1}}\n");
            load_str(Path::new("t.yaml"), &text).unwrap_err()[0].to_string()
        };
        let e = with("  - wire: {}\n");
        assert!(e.contains("5:11: faults[0].wire: `wire` does nothing"), "{e}");
        let e = with("  - wire: {rules: [{kind: drop, delay: 1ms}]}\n");
        assert!(
            e.contains(
                "faults[0].wire.rules[0].delay: `delay` goes only with `kind: delay` (this rule's kind is `drop`)"
            ),
            "{e}"
        );
        let e = with("  - firmware: {nic: 0, request: VER_GET, action: delay}\n");
        assert!(e.contains("5:15: faults[0].firmware: missing key `by`"), "{e}");
        let e = with("  - wire: {drop: 0.1}\n    firmware: {nic: 0, request: VER_GET, action: delay}\n");
        assert!(e.contains("faults[0]: one entry does one thing: found both `wire` and `firmware`"), "{e}");
        let e = with("  - wire: {drop: 0.1}\n    firmwar: {nic: 0, request: VER_GET, action: delay}\n");
        assert!(e.contains("faults[0].firmwar: unknown key `firmwar` (did you mean `firmware`?)"), "{e}");
        let e = with("  - firmware\n");
        assert!(e.contains("faults[0]: expected a mapping with keys firmware, wire, found a string"), "{e}");
    }

    #[test]
    fn a_fault_step_is_checked_as_a_faults_entry_and_arms_no_wire() {
        let step = |fault: &str| {
            let text = format!("name: t\nabout: x.\nnics: 1\nsteps:\n  - fault: {fault}\n");
            load_str(Path::new("t.yaml"), &text).map_err(|e| e[0].to_string())
        };
        assert!(step("{firmware: {nic: 0, request: CREATE_QP, action: no-response, nth: 1}}").is_ok());
        let e = step("{firmware: {nic: 0, request: VER_GET, action: delay}}").unwrap_err();
        assert!(e.contains("steps[0].fault.firmware: missing key `by`"), "{e}");
        let e = step("{firmware: {nic: 1, request: VER_GET, action: no-response}}").unwrap_err();
        assert!(e.contains("steps[0].fault.firmware.nic"), "{e}");
        let e = step("{firmware: {nic: 0, request: VER_GETT, action: no-response}}").unwrap_err();
        assert!(e.contains("did you mean `VER_GET`"), "{e}");
        let e = step("{wire: {drop: 0.1}}").unwrap_err();
        assert!(e.contains("steps[0].fault.wire: a `fault` step arms a firmware fault mid-run"), "{e}");
    }
}
