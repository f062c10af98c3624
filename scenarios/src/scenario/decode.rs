//! From a positioned YAML tree to a [`Scenario`]: every key checked, every value typed.

use std::path::Path;

use super::decode_fault::fault;
use super::decode_step::steps;
use super::language::{self, ScenarioFile, keys};
use super::values::{check_scenario_name, check_word};
use super::{Capability, FaultKind, FirmwareSettings, MAX_NICS, Scenario};
use crate::suggest::closest;
use crate::target;
use crate::yaml::{DecodeError, Field, Node, Problem};

/// Decode the tree of one scenario (a file, or a variant of a matrix file: `matrix:` was expanded
/// before, and is ignored here).
pub fn decode(file: &Path, root: &Node) -> Result<Scenario, DecodeError> {
    let top = Field::root(root, "").map(keys::<ScenarioFile>())?;

    let name_field = top.required("name")?;
    let name = name_field.string("the scenario's name")?;
    check_scenario_name(name).map_err(|r| name_field.invalid("a scenario name", r))?;

    let about_field = top.required("about")?;
    let about = about_field.string("a sentence saying what the scenario shows")?;
    if about.trim().is_empty() {
        return Err(about_field.error(Problem::Empty { what: "`about`".into() }));
    }

    let targets = match top.optional("targets") {
        None => None,
        Some(f) => {
            let mut kinds = Vec::new();
            for item in f.list("a list of target kinds, as [model]")? {
                let kind = item.string("a target kind")?;
                if !target::KINDS.contains(&kind) {
                    return Err(item.error(Problem::UnknownName {
                        what: "target kind".into(),
                        name: kind.into(),
                        suggestion: closest(kind, target::KINDS.iter().copied()).map(str::to_string),
                    }));
                }
                kinds.push(kind.to_string());
            }
            if kinds.is_empty() {
                return Err(f.error(Problem::Empty {
                    what: "the list of targets (leave `targets` out to run everywhere)".into(),
                }));
            }
            Some(kinds)
        }
    };

    let nics = top.required("nics")?.int("the number of NICs", 1, MAX_NICS as u64)? as usize;
    let seed = top.optional("seed").map(|f| f.int("a seed (an integer)", 0, u64::MAX)).transpose()?;

    let mut tags = Vec::new();
    if let Some(f) = top.optional("tags") {
        for item in f.list("a list of tags, as [nic, faults]")? {
            let tag = item.string("a tag")?;
            check_word(tag).map_err(|r| item.invalid("a tag", r))?;
            tags.push(tag.to_string());
        }
    }

    let timeout = top.optional("timeout").map(|t| t.duration()).transpose()?;

    let skip = match top.optional("skip") {
        None => None,
        Some(f) => {
            let m = f.map(keys::<language::Skip>())?;
            let reason_field = m.required("reason")?;
            let reason = reason_field.string("why the scenario is skipped, in a sentence")?;
            if reason.trim().is_empty() {
                return Err(reason_field.error(Problem::Empty { what: "the reason".into() }));
            }
            Some(reason.trim().to_string())
        }
    };

    let mut requires = Vec::new();
    if let Some(f) = top.optional("requires") {
        for item in f.list("a list of capabilities, as [faults, virtual-time]")? {
            let name = item.string("a capability")?;
            let capability = Capability::by_name(name).ok_or_else(|| {
                item.error(Problem::UnknownName {
                    what: "capability".into(),
                    name: name.into(),
                    suggestion: closest(name, Capability::ALL.map(|(_, n)| n)).map(str::to_string),
                })
            })?;
            if !requires.contains(&capability) {
                requires.push(capability);
            }
        }
    }

    let mut faults = Vec::new();
    if let Some(f) = top.optional("faults") {
        for item in f.list("a list of faults")? {
            let fault = fault(&item)?;
            if matches!(fault.kind, FaultKind::Wire(_))
                && faults.iter().any(|f: &super::Fault| matches!(f.kind, FaultKind::Wire(_)))
            {
                return Err(item.error(Problem::Conflict(
                    "one `wire` entry says everything the wire does (put its rules together)".into(),
                )));
            }
            faults.push(fault);
        }
    }

    let firmware = match top.optional("firmware") {
        None => FirmwareSettings::default(),
        Some(f) => {
            let m = f.map(keys::<language::Firmware>())?;
            let resource_limits = m.optional("resource_limits").map(|v| v.switch()).transpose()?.unwrap_or(false);
            let fast_destroy_qps = m
                .optional("fast_destroy_qps")
                .map(|v| v.int("a number of queue pairs", 0, u64::from(u16::MAX)))
                .transpose()?
                .unwrap_or(0) as u32;
            FirmwareSettings { resource_limits, fast_destroy_qps }
        }
    };

    let steps_field = top.required("steps")?;
    let steps = steps(&steps_field)?;

    Ok(Scenario {
        file: file.to_path_buf(),
        name: name.to_string(),
        variant: None,
        about: about.trim().to_string(),
        targets,
        nics,
        seed,
        tags,
        timeout,
        skip,
        requires,
        faults,
        firmware,
        steps,
    })
}
