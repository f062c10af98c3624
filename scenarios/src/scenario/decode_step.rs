//! Decoding `steps:`.

use std::time::Duration;

use regex::RegexBuilder;

use super::language::{self, keys, steps as lang};
use super::values::{MAX_SIZE, check_word, parse_bus, parse_gid, parse_ipv4, parse_mac};
use super::{
    Action, Alias, CompleteCheck, CountCheck, ErrorPattern, Expect, Fill, IdentityCheck, InspectChecks, MAX_NICS,
    NicRef, RegionMemory, Step, Transfer,
};
use crate::suggest::closest;
use crate::yaml::{DecodeError, Field, MapReader, Problem, Value};

/// The largest message: 2^31 bytes (the contract).
pub const MAX_MESSAGE: u64 = 1 << 31;
/// How long `complete` waits for each completion when it does not say.
pub const DEFAULT_WITHIN: Duration = Duration::from_secs(10);
/// The most completions one `complete` step takes.
pub const MAX_COMPLETE_COUNT: u64 = 1 << 20;
/// The most times `repeat` may repeat.
pub const MAX_REPEAT: u64 = 1_000_000;
/// The largest compiled size of an `expect: {error: ...}` expression.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Decode a list of steps (at least one).
pub(super) fn steps(f: &Field<'_>) -> Result<Vec<Step>, DecodeError> {
    let items = f.list("a list of steps")?;
    if items.is_empty() {
        return Err(f.error(Problem::Empty { what: "the list of steps".into() }));
    }
    items.iter().map(step).collect()
}

fn step(item: &Field<'_>) -> Result<Step, DecodeError> {
    let m = item.map(language::step_keys())?;
    let mut keywords = m.keys().filter(|k| !language::STEP_EXTRAS.contains(k));
    let Some(keyword) = keywords.next() else {
        return Err(
            m.error(Problem::NoStep { valid: language::step_keywords().iter().map(|s| s.to_string()).collect() })
        );
    };
    if let Some(second) = keywords.next() {
        return Err(m.error(Problem::Conflict(format!(
            "a step does one thing: found both `{keyword}` and `{second}` (make them two steps)"
        ))));
    }
    let f = m.required(keyword)?;
    let action = match keyword {
        "open" => open(&f)?,
        "close" => Action::Close { alias: alias(&f)? },
        "config" => config(&f)?,
        "identity" => identity(&f)?,
        "limits" => limits(&f)?,
        "count" => count(&f)?,
        "wait" => Action::Wait(f.duration()?),
        "repeat" => repeat(&f)?,
        "inspect" => inspect(&f)?,
        "region" => region(&f)?,
        "deregister" => Action::Deregister { region: alias(&f)? },
        "qp" => {
            let m = f.map(keys::<lang::Qp>())?;
            Action::Qp { nic: alias(&m.required("on")?)?, name: alias(&m.required("as")?)? }
        }
        "connect" => {
            let m = f.map(keys::<lang::Connect>())?;
            Action::Connect { qp: alias(&m.required("qp")?)?, peer: alias(&m.required("peer")?)? }
        }
        "send" => Action::Send(transfer(&f)?),
        "receive" => Action::Receive(transfer(&f)?),
        "read" => read(&f)?,
        "complete" => complete(&f)?,
        "compare" => compare(&f)?,
        "room" => room(&f)?,
        "destroy" => Action::Destroy { qp: alias(&f)? },
        other => unreachable!("step keyword {other} was checked against the language's keywords"),
    };
    let expect = m.optional("expect").map(|e| expect(&e)).transpose()?.unwrap_or_default();
    let timeout = m.optional("timeout").map(|t| t.duration()).transpose()?;
    Ok(Step { at: item.node.at, path: item.path().to_string(), action, expect, timeout })
}

fn open(f: &Field<'_>) -> Result<Action, DecodeError> {
    let m = f.map(keys::<lang::Open>())?;
    let nic_field = m.required("nic")?;
    let nic = nic_field.int("a NIC index", 0, MAX_NICS as u64 - 1)? as usize;
    let alias = alias(&m.required("as")?)?;
    Ok(Action::Open { nic, nic_at: nic_field.node.at, alias })
}

fn config(f: &Field<'_>) -> Result<Action, DecodeError> {
    let m = f.map(keys::<lang::Config>())?;
    let nic = nic_ref(&m.required("nic")?)?;
    let switch = |key: &str| m.optional(key).map(|v| v.switch()).transpose();
    let (relaxed_ordering, bus_master, memory) =
        (switch("relaxed_ordering")?, switch("bus_master")?, switch("memory")?);
    if relaxed_ordering.is_none() && bus_master.is_none() && memory.is_none() {
        return Err(
            m.error(Problem::Conflict("`config` checks nothing: give relaxed_ordering, bus_master or memory".into()))
        );
    }
    Ok(Action::Config { nic, relaxed_ordering, bus_master, memory })
}

fn identity(f: &Field<'_>) -> Result<Action, DecodeError> {
    let m = f.map(keys::<lang::Identity>())?;
    let nic = alias(&m.required("nic")?)?;
    let text =
        |key: &str, expected: &str| m.optional(key).map(|v| v.string(expected).map(|s| (v.clone(), s))).transpose();
    let name = text("name", "a NIC name, as BNXT:1")?.map(|(_, s)| s.to_string());
    let bus = text("bus", "a bus address, as 0000:01:00.0")?.map(|(_, s)| s.to_string());
    let mac = match text("mac", "a MAC address, as 02:00:00:00:00:01")? {
        Some((v, s)) => Some(parse_mac(s).map_err(|r| v.invalid("a MAC address", r))?),
        None => None,
    };
    let ipv4 = match text("ipv4", "an IPv4 address, as 10.0.0.1")? {
        Some((v, s)) => Some(parse_ipv4(s).map_err(|r| v.invalid("an IPv4 address", r))?),
        None => None,
    };
    let gid = match text("gid", "a GID, as ::ffff:10.0.0.1")? {
        Some((v, s)) => Some(parse_gid(s).map_err(|r| v.invalid("a GID", r))?),
        None => None,
    };
    let differs_from = match m.optional("differs_from") {
        None => Vec::new(),
        Some(d) => match &d.node.value {
            Value::Seq(_) => d.list("a list of aliases")?.iter().map(alias).collect::<Result<_, _>>()?,
            _ => vec![alias(&d)?],
        },
    };
    Ok(Action::Identity(IdentityCheck { nic, name, bus, mac, ipv4, gid, differs_from }))
}

fn limits(f: &Field<'_>) -> Result<Action, DecodeError> {
    let m = f.map(keys::<lang::Limits>())?;
    let nic = alias(&m.required("nic")?)?;
    let count =
        |key: &str| m.optional(key).map(|v| v.int("a count", 0, u64::from(u32::MAX)).map(|n| n as u32)).transpose();
    Ok(Action::Limits { nic, qps: count("qps")?, regions: count("regions")? })
}

fn count(f: &Field<'_>) -> Result<Action, DecodeError> {
    let m = f.map(keys::<lang::Count>())?;
    count_check(&m, "a number of NICs", MAX_NICS as u64).map(Action::Count)
}

/// `equals: N` or `at_least: N`, one of the two, each at most `max`.
fn count_check(m: &MapReader<'_>, what: &str, max: u64) -> Result<CountCheck, DecodeError> {
    let n = |v: Field<'_>| v.int(what, 0, max).map(|n| n as usize);
    match (m.optional("equals"), m.optional("at_least")) {
        (Some(e), None) => Ok(CountCheck::Equals(n(e)?)),
        (None, Some(a)) => Ok(CountCheck::AtLeast(n(a)?)),
        (Some(_), Some(_)) => Err(m.error(Problem::Conflict("give `equals` or `at_least`, not both".into()))),
        (None, None) => Err(m.error(Problem::MissingKey { key: "equals".into() })),
    }
}

fn repeat(f: &Field<'_>) -> Result<Action, DecodeError> {
    let m = f.map(keys::<lang::Repeat>())?;
    let times = m.required("times")?.int("a repeat count", 1, MAX_REPEAT)? as u32;
    let steps = steps(&m.required("steps")?)?;
    Ok(Action::Repeat { times, steps })
}

fn inspect(f: &Field<'_>) -> Result<Action, DecodeError> {
    let m = f.map(keys::<lang::Inspect>())?;
    let nic = nic_ref(&m.required("nic")?)?;
    let dma_mappings = m
        .optional("dma_mappings")
        .map(|v| v.int("a number of DMA mappings", 0, u64::from(u32::MAX)).map(|n| n as usize))
        .transpose()?;
    let driver_registered = m.optional("driver_registered").map(|v| v.switch()).transpose()?;
    let firmware_objects = m
        .optional("firmware_objects")
        .map(|v| v.int("a number of firmware objects", 0, u64::from(u32::MAX)).map(|n| n as usize))
        .transpose()?;
    let rx_no_l2_filter =
        m.optional("rx_no_l2_filter").map(|v| v.int("a number of frames", 0, u64::from(u32::MAX))).transpose()?;
    let checks = InspectChecks { dma_mappings, driver_registered, firmware_objects, rx_no_l2_filter };
    if checks == InspectChecks::default() {
        return Err(m.error(Problem::Conflict(
            "`inspect` checks nothing: give dma_mappings, driver_registered, firmware_objects or rx_no_l2_filter"
                .into(),
        )));
    }
    Ok(Action::Inspect { nic, checks })
}

fn region(f: &Field<'_>) -> Result<Action, DecodeError> {
    let m = f.map(keys::<lang::Region>())?;
    let nic = alias(&m.required("on")?)?;
    let name = alias(&m.required("as")?)?;
    let bytes = m.required("bytes")?.size(1, MAX_SIZE)?;
    let fill = match m.optional("fill") {
        None => Fill::Zero,
        Some(v) => {
            let written = v.string("zero, random or pattern")?;
            Fill::ALL.iter().find(|(_, n)| *n == written).map(|(fill, _)| *fill).ok_or_else(|| {
                v.error(Problem::UnknownName {
                    what: "fill".into(),
                    name: written.into(),
                    suggestion: closest(written, Fill::ALL.map(|(_, n)| n)).map(str::to_string),
                })
            })?
        }
    };
    let memory = region_memory(&m)?;
    Ok(Action::Region { nic, name, bytes, fill, memory })
}

/// `memory` (with `device` and `bar` for another device's memory) of a `region` step.
fn region_memory(m: &MapReader<'_>) -> Result<RegionMemory, DecodeError> {
    let memory = match m.optional("memory") {
        None => None,
        Some(v) => {
            let written = v.string("host, pages or device")?;
            if !RegionMemory::NAMES.contains(&written) {
                return Err(v.error(Problem::UnknownName {
                    what: "memory".into(),
                    name: written.into(),
                    suggestion: closest(written, RegionMemory::NAMES).map(str::to_string),
                }));
            }
            Some(written)
        }
    };
    let device = m.optional("device");
    let bar = m.optional("bar");
    match memory {
        Some("device") => {
            let Some(d) = device else {
                return Err(
                    m.error(Problem::Conflict("`memory: device` needs `device`, the device's bus address".into()))
                );
            };
            let bus = d.string("a bus address, as 0000:81:00.0")?;
            parse_bus(bus).map_err(|r| d.invalid("a bus address", r))?;
            let bar = bar.map(|b| b.int("a BAR number", 0, 5)).transpose()?.unwrap_or(0) as u8;
            Ok(RegionMemory::Device { bus: bus.to_string(), bar })
        }
        other => {
            if let Some(extra) = device.or(bar) {
                return Err(extra.error(Problem::Conflict(
                    "`device` and `bar` name another device's memory: they go with `memory: device`".into(),
                )));
            }
            Ok(if other == Some("pages") { RegionMemory::Pages } else { RegionMemory::Host })
        }
    }
}

/// `at` (0 when absent), an offset into a region.
fn offset(m: &MapReader<'_>, key: &str) -> Result<u64, DecodeError> {
    m.optional(key).map(|v| v.size(0, MAX_SIZE)).transpose().map(Option::unwrap_or_default)
}

fn transfer(f: &Field<'_>) -> Result<Transfer, DecodeError> {
    let m = f.map(keys::<lang::Transfer>())?;
    Ok(Transfer {
        qp: alias(&m.required("qp")?)?,
        region: alias(&m.required("region")?)?,
        at: offset(&m, "at")?,
        bytes: m.required("bytes")?.size(0, MAX_MESSAGE)?,
    })
}

fn read(f: &Field<'_>) -> Result<Action, DecodeError> {
    let m = f.map(keys::<lang::Read>())?;
    let into = Transfer {
        qp: alias(&m.required("qp")?)?,
        region: alias(&m.required("region")?)?,
        at: offset(&m, "at")?,
        bytes: m.required("bytes")?.size(0, MAX_MESSAGE)?,
    };
    Ok(Action::Read { into, from: alias(&m.required("from")?)?, from_at: offset(&m, "from_at")? })
}

fn side(f: &Field<'_>) -> Result<bnxt::Side, DecodeError> {
    match f.string("send or receive")? {
        "send" => Ok(bnxt::Side::Send),
        "receive" => Ok(bnxt::Side::Receive),
        other => Err(f.error(Problem::UnknownName {
            what: "ring".into(),
            name: other.into(),
            suggestion: closest(other, ["send", "receive"]).map(str::to_string),
        })),
    }
}

fn complete(f: &Field<'_>) -> Result<Action, DecodeError> {
    let m = f.map(keys::<lang::Complete>())?;
    let qp = alias(&m.required("qp")?)?;
    let side = side(&m.required("side")?)?;
    let status = match m.optional("status") {
        None => bnxt::Status::Ok,
        Some(v) => {
            let name = v.string("a completion status, as ok or retry-exceeded")?;
            bnxt::Status::by_name(name).ok_or_else(|| {
                v.error(Problem::UnknownName {
                    what: "completion status".into(),
                    name: name.into(),
                    suggestion: closest(name, bnxt::Status::ALL.map(|(_, n)| n)).map(str::to_string),
                })
            })?
        }
    };
    let bytes = m.optional("bytes").map(|v| v.size(0, MAX_MESSAGE)).transpose()?;
    let within = m.optional("within").map(|v| v.duration()).transpose()?.unwrap_or(DEFAULT_WITHIN);
    let count =
        m.optional("count").map(|v| v.int("how many completions", 1, MAX_COMPLETE_COUNT)).transpose()?.unwrap_or(1)
            as u32;
    Ok(Action::Complete(CompleteCheck { qp, side, status, bytes, within, count }))
}

fn compare(f: &Field<'_>) -> Result<Action, DecodeError> {
    let m = f.map(keys::<lang::Compare>())?;
    Ok(Action::Compare {
        region: alias(&m.required("region")?)?,
        at: offset(&m, "at")?,
        with: alias(&m.required("with")?)?,
        with_at: offset(&m, "with_at")?,
        bytes: m.required("bytes")?.size(1, MAX_SIZE)?,
    })
}

fn room(f: &Field<'_>) -> Result<Action, DecodeError> {
    let m = f.map(keys::<lang::Room>())?;
    let qp = alias(&m.required("qp")?)?;
    let side = side(&m.required("side")?)?;
    let check = count_check(&m, "a number of ring entries", u64::from(u32::MAX))?;
    Ok(Action::Room { qp, side, check })
}

fn pattern(e: &Field<'_>, expected: &str) -> Result<ErrorPattern, DecodeError> {
    let text = e.string(expected)?;
    let regex = RegexBuilder::new(text)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|err| e.invalid("a regular expression", first_line(&err.to_string())))?;
    Ok(ErrorPattern { text: text.to_string(), regex })
}

fn expect(f: &Field<'_>) -> Result<Expect, DecodeError> {
    let m = f.map(keys::<lang::Expect>())?;
    let error =
        m.optional("error").map(|e| pattern(&e, "a regular expression the error message must match")).transpose()?;
    let misuse =
        m.optional("misuse").map(|e| pattern(&e, "a regular expression the panic's message must match")).transpose()?;
    if let (Some(_), Some(_)) = (&error, &misuse) {
        return Err(m.error(Problem::Conflict("a step fails one way: give `error` or `misuse`, not both".into())));
    }
    let takes_at_least = m.optional("takes_at_least").map(|v| v.duration()).transpose()?;
    let takes_at_most = m.optional("takes_at_most").map(|v| v.duration()).transpose()?;
    if error.is_none() && misuse.is_none() && takes_at_least.is_none() && takes_at_most.is_none() {
        return Err(m.error(Problem::Conflict(
            "`expect` says nothing: give error, misuse, takes_at_least or takes_at_most".into(),
        )));
    }
    if let (Some(lo), Some(hi)) = (takes_at_least, takes_at_most)
        && lo > hi
    {
        return Err(m.error(Problem::Conflict("takes_at_least is more than takes_at_most".into())));
    }
    Ok(Expect { error, misuse, takes_at_least, takes_at_most, at: Some(f.node.at) })
}

/// regex's messages span several lines (the pattern, a caret, the reason); keep the reason.
fn first_line(message: &str) -> String {
    let last = message.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or(message).trim();
    last.strip_prefix("error: ").unwrap_or(last).to_string()
}

fn alias(f: &Field<'_>) -> Result<Alias, DecodeError> {
    let name = f.string("an alias (a name an `open` gave with `as:`)")?;
    check_word(name).map_err(|r| f.invalid("an alias", r))?;
    Ok(Alias { name: name.to_string(), at: f.node.at, path: f.path().to_string() })
}

fn nic_ref(f: &Field<'_>) -> Result<NicRef, DecodeError> {
    match &f.node.value {
        Value::Int(_) => Ok(NicRef::Index {
            nic: f.int("a NIC index", 0, MAX_NICS as u64 - 1)? as usize,
            at: f.node.at,
            path: f.path().to_string(),
        }),
        Value::Str(_) => Ok(NicRef::Alias(alias(f)?)),
        _ => Err(f.wrong_type("a NIC index or an alias")),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use crate::scenario::load::load_str;
    use crate::scenario::{Action, CountCheck, NicRef, RegionMemory, Step};

    fn steps(text: &str) -> Result<Vec<Step>, String> {
        let file = format!("name: t\nabout: x.\nnics: 2\nsteps:\n{text}");
        load_str(Path::new("t.yaml"), &file).map(|mut s| s.remove(0).steps).map_err(|e| e[0].to_string())
    }

    #[test]
    fn every_step_keyword_decodes() {
        let all = steps(
            "  - count: {at_least: 1}\n  - open: {nic: 1, as: b}\n  - identity: {nic: b, name: \"BNXT:1\", mac: 02:00:00:00:00:01, ipv4: 10.0.0.1, gid: \"::ffff:10.0.0.1\"}\n  - limits: {nic: b, qps: 8}\n  - config: {nic: b, memory: on}\n  - inspect: {nic: 1, driver_registered: yes}\n  - wait: 250us\n  - repeat: {times: 2, steps: [wait: 1s]}\n  - close: b\n",
        )
        .unwrap();
        let keywords: Vec<&str> = all.iter().map(|s| s.action.keyword()).collect();
        assert_eq!(keywords, ["count", "open", "identity", "limits", "config", "inspect", "wait", "repeat", "close"]);
        assert!(matches!(all[0].action, Action::Count(CountCheck::AtLeast(1))));
        let Action::Identity(id) = &all[2].action else { panic!() };
        assert_eq!((id.mac, id.ipv4.map(|a| a.octets())), (Some([2, 0, 0, 0, 0, 1]), Some([10, 0, 0, 1])));
        assert!(matches!(
            &all[5].action,
            Action::Inspect {
                nic: NicRef::Index { nic: 1, .. },
                checks: crate::scenario::InspectChecks { driver_registered: Some(true), .. }
            }
        ));
        assert!(matches!(all[6].action, Action::Wait(d) if d == Duration::from_micros(250)));
        assert_eq!(all[7].path, "steps[7]");
        let Action::Repeat { steps: inner, .. } = &all[7].action else { panic!() };
        assert_eq!(inner[0].path, "steps[7].repeat.steps[0]");
    }

    #[test]
    fn steps_that_check_nothing_or_contradict_themselves_are_refused() {
        assert!(steps("  - config: {nic: 0}\n").unwrap_err().contains("`config` checks nothing"));
        assert!(steps("  - inspect: {nic: 0}\n").unwrap_err().contains("`inspect` checks nothing"));
        assert!(steps("  - count: {equals: 1, at_least: 1}\n").unwrap_err().contains("not both"));
        assert!(steps("  - count: {}\n").unwrap_err().contains("missing key `equals`"));
        assert!(steps("  - wait: 1s\n    expect: {}\n").unwrap_err().contains("`expect` says nothing"));
        assert!(
            steps("  - wait: 1s\n    expect: {takes_at_least: 2s, takes_at_most: 1s}\n")
                .unwrap_err()
                .contains("more than")
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
        let ok = steps(with_open!("  - region: {on: a, as: r, bytes: 4096, memory: pages}\n")).unwrap();
        assert!(matches!(&ok[1].action, Action::Region { memory: RegionMemory::Pages, .. }));
        let ok = steps(with_open!(
            "  - region: {on: a, as: r, bytes: 4096, memory: device, device: 0000:81:00.0, bar: 2}\n"
        ))
        .unwrap();
        let want = RegionMemory::Device { bus: "0000:81:00.0".into(), bar: 2 };
        assert!(matches!(&ok[1].action, Action::Region { memory, .. } if *memory == want));
        let ok = steps(with_open!("  - region: {on: a, as: r, bytes: 4096}\n")).unwrap();
        assert!(matches!(&ok[1].action, Action::Region { memory: RegionMemory::Host, .. }));
        let e = steps(with_open!("  - region: {on: a, as: r, bytes: 4096, memory: page}\n")).unwrap_err();
        assert!(e.contains("page") && e.contains("pages"), "{e}");
        let e = steps(with_open!("  - region: {on: a, as: r, bytes: 4096, memory: device}\n")).unwrap_err();
        assert!(e.contains("needs `device`"), "{e}");
        let e = steps(with_open!("  - region: {on: a, as: r, bytes: 4096, bar: 1}\n")).unwrap_err();
        assert!(e.contains("go with `memory: device`") && e.contains(":6:"), "{e}");
        let e = steps(with_open!("  - region: {on: a, as: r, bytes: 4096, memory: device, device: 81:00.0}\n"))
            .unwrap_err();
        assert!(e.contains("DDDD:BB:DD.F"), "{e}");
        let e = steps(with_open!(
            "  - region: {on: a, as: r, bytes: 4096, memory: device, device: 0000:81:00.0, bar: 6}\n"
        ))
        .unwrap_err();
        assert!(e.contains("bar"), "{e}");
    }
}
