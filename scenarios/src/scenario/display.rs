//! Steps written back the way a scenario file writes them, for reports.

use std::fmt;

use super::kinds::RINGS;
use super::values::{format_duration, format_gid, format_mac, format_size};
use super::{Action, CountCheck, Expect, NicRef, RegionMemory, Transfer};

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

impl fmt::Display for NicRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NicRef::Index { nic, .. } => write!(f, "{nic}"),
            NicRef::Alias(a) => f.write_str(&a.name),
        }
    }
}

/// Writes `{key: value, …}` from the pairs that are present.
struct Flow(Vec<(&'static str, String)>);

impl Flow {
    fn new() -> Flow {
        Flow(Vec::new())
    }
    fn with(mut self, key: &'static str, value: impl fmt::Display) -> Flow {
        self.0.push((key, value.to_string()));
        self
    }
    fn maybe<T>(self, key: &'static str, value: Option<T>, show: impl Fn(T) -> String) -> Flow {
        match value {
            Some(v) => self.with(key, show(v)),
            None => self,
        }
    }
}

impl fmt::Display for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        write!(f, "{{{}}}", parts.join(", "))
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let body = match self {
            Action::Open { nic, alias } => Flow::new().with("nic", nic.value).with("as", &alias.name).to_string(),
            Action::Close(alias) => alias.name.clone(),
            Action::Config { nic, relaxed_ordering, bus_master, memory } => Flow::new()
                .with("nic", nic)
                .maybe("relaxed_ordering", *relaxed_ordering, |b| on_off(b).into())
                .maybe("bus_master", *bus_master, |b| on_off(b).into())
                .maybe("memory", *memory, |b| on_off(b).into())
                .to_string(),
            Action::Identity(c) => {
                let differs: Vec<&str> = c.differs_from.iter().map(|a| a.name.as_str()).collect();
                Flow::new()
                    .with("nic", &c.nic.name)
                    .maybe("name", c.name.as_ref(), |s| format!("{s:?}"))
                    .maybe("bus", c.bus.as_ref(), |s| format!("{s:?}"))
                    .maybe("mac", c.mac.as_ref(), format_mac)
                    .maybe("ipv4", c.ipv4, |a| a.to_string())
                    .maybe("gid", c.gid.as_ref(), format_gid)
                    .maybe("differs_from", (!differs.is_empty()).then(|| differs.join(", ")), |s| format!("[{s}]"))
                    .to_string()
            }
            Action::Limits { nic, qps, regions } => Flow::new()
                .with("nic", &nic.name)
                .maybe("qps", *qps, |n| n.to_string())
                .maybe("regions", *regions, |n| n.to_string())
                .to_string(),
            Action::Count(c) => count(Flow::new(), c.check()).to_string(),
            Action::Wait(d) => format_duration(*d),
            Action::Fault(f) => match &f.kind {
                super::faults::FaultKind::Firmware(e) => {
                    let e = &e.value;
                    let request = match e.request {
                        super::firmware_names::Target::Hwrm { name, .. }
                        | super::firmware_names::Target::Roce { name, .. } => name,
                    };
                    let flow = Flow::new()
                        .with("nic", e.nic.value)
                        .with("request", request)
                        .with("action", super::faults::word(&e.action.value))
                        .maybe("code", e.code.as_ref(), |c| c.value.clone())
                        .maybe("by", e.by.as_ref(), |b| format_duration(b.value))
                        .maybe("nth", e.nth, |n| n.to_string());
                    format!("firmware {flow}")
                }
                super::faults::FaultKind::Wire(_) => "wire".into(),
            },
            Action::Repeat { times, index, steps } => Flow::new()
                .with("times", times)
                .maybe("index", index.as_ref(), String::clone)
                .with("steps", format!("[{} steps]", steps.len()))
                .to_string(),
            Action::Inspect { nic, dma_mappings, driver_registered, firmware_objects, rx_no_l2_filter } => Flow::new()
                .with("nic", nic)
                .maybe("dma_mappings", *dma_mappings, |n| n.to_string())
                .maybe("driver_registered", *driver_registered, |b| b.to_string())
                .maybe("firmware_objects", *firmware_objects, |n| n.to_string())
                .maybe("rx_no_l2_filter", *rx_no_l2_filter, |n| n.to_string())
                .to_string(),
            Action::Region(r) => {
                // The memory is written only when it is not the driver's own (as before it had
                // a choice, so records of host regions read as they always did).
                let (nic, name, bytes, fill) = (&r.nic, &r.name, &r.bytes, &r.fill);
                let (kind, device) = match r.region_memory() {
                    RegionMemory::Host => (None, None),
                    RegionMemory::Pages => (Some("pages"), None),
                    RegionMemory::Device { bus, bar } => (Some("device"), Some((bus, bar))),
                };
                Flow::new()
                    .with("on", &nic.name)
                    .with("as", &name.name)
                    .with("bytes", format_size(*bytes))
                    .with("fill", fill.name())
                    .maybe("memory", kind, str::to_string)
                    .maybe("device", device.as_ref().map(|(b, _)| b.clone()), |b| b)
                    .maybe("bar", device.map(|(_, n)| n), |n| n.to_string())
                    .to_string()
            }
            Action::Deregister(region) => region.name.clone(),
            Action::Qp { nic, name } => Flow::new().with("on", &nic.name).with("as", &name.name).to_string(),
            Action::Connect { qp, peer } => Flow::new().with("qp", &qp.name).with("peer", &peer.name).to_string(),
            Action::Send(t) | Action::Receive(t) => transfer(t).to_string(),
            Action::Read(r) => Flow::new()
                .with("qp", &r.qp.name)
                .with("region", &r.region.name)
                .with("at", format_size(r.at))
                .with("from", &r.from.name)
                .with("from_at", format_size(r.from_at))
                .with("bytes", format_size(r.bytes))
                .to_string(),
            Action::Complete(c) => Flow::new()
                .with("qp", &c.qp.name)
                .with("side", side(c.side))
                .with("status", c.status)
                .maybe("bytes", c.bytes, format_size)
                .with("within", format_duration(c.within))
                .maybe("count", (c.count != 1).then_some(c.count), |n| n.to_string())
                .to_string(),
            Action::Compare { region, at, with, with_at, bytes } => Flow::new()
                .with("region", &region.name)
                .with("at", format_size(*at))
                .with("with", &with.name)
                .with("with_at", format_size(*with_at))
                .with("bytes", format_size(*bytes))
                .to_string(),
            Action::Room(r) => {
                count(Flow::new().with("qp", &r.qp.name).with("side", side(r.side)), r.check()).to_string()
            }
            Action::Destroy(qp) => qp.name.clone(),
        };
        write!(f, "{}: {body}", self.keyword())
    }
}

fn transfer(t: &Transfer) -> Flow {
    Flow::new()
        .with("qp", &t.qp.name)
        .with("region", &t.region.name)
        .with("at", format_size(t.at))
        .with("bytes", format_size(t.bytes))
}

/// `equals: N` or `at_least: N` after `flow`.
fn count(flow: Flow, check: Option<CountCheck>) -> Flow {
    match check {
        Some(CountCheck::Equals(n)) => flow.with("equals", n),
        Some(CountCheck::AtLeast(n)) => flow.with("at_least", n),
        None => flow,
    }
}

/// A ring's name in the language.
pub fn side(side: bnxt::Side) -> &'static str {
    RINGS.iter().find(|(s, _)| *s == side).map(|(_, n)| *n).expect("every ring is named")
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flow = Flow::new()
            .maybe("error", self.error.as_ref(), |e| format!("{:?}", e.text))
            .maybe("misuse", self.misuse.as_ref(), |e| format!("{:?}", e.text))
            .maybe("takes_at_least", self.takes_at_least, format_duration)
            .maybe("takes_at_most", self.takes_at_most, format_duration);
        write!(f, "{flow}")
    }
}
