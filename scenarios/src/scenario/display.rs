//! Steps written back the way a scenario file writes them, for reports.

use std::fmt;

use super::values::{format_duration, format_gid, format_mac};
use super::{Action, CountCheck, Expect, NicRef};

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
            Action::Open { nic, alias, .. } => Flow::new().with("nic", nic).with("as", &alias.name).to_string(),
            Action::Close { alias } => alias.name.clone(),
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
            Action::Count(CountCheck::Equals(n)) => Flow::new().with("equals", n).to_string(),
            Action::Count(CountCheck::AtLeast(n)) => Flow::new().with("at_least", n).to_string(),
            Action::Wait(d) => format_duration(*d),
            Action::Repeat { times, steps } => Flow::new().with("times", times).with("steps", format!("[{} steps]", steps.len())).to_string(),
            Action::Inspect { nic, dma_mappings, driver_registered } => Flow::new()
                .with("nic", nic)
                .maybe("dma_mappings", *dma_mappings, |n| n.to_string())
                .maybe("driver_registered", *driver_registered, |b| b.to_string())
                .to_string(),
        };
        write!(f, "{}: {body}", self.keyword())
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flow = Flow::new()
            .maybe("error", self.error.as_ref(), |e| format!("{:?}", e.text))
            .maybe("takes_at_least", self.takes_at_least, format_duration)
            .maybe("takes_at_most", self.takes_at_most, format_duration);
        write!(f, "{flow}")
    }
}
