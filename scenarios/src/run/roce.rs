//! The RoCE steps: regions, queue pairs, posts, completions, comparisons.

use std::collections::BTreeMap;

use bnxt::{DeviceMemory, Qp, Region, Status};
use bnxt_pci::dma::HostPages;

use super::exec::{Checks, Exec, Mismatch};
use super::fill;
use crate::scenario::display::side as side_name;
use crate::scenario::values::{format_duration, format_size};
use crate::scenario::{Action, CompleteCheck, CountCheck, RegionMemory, Step, Transfer};
use bnxt_transcript::Field;

/// The regions and queue pairs of a run, by name (ordered, so that what is left at the end is
/// given back in the same order on every run: queue pairs, then regions, by name).
#[derive(Default)]
pub(super) struct Objects {
    qps: BTreeMap<String, Qp>,
    regions: BTreeMap<String, Region>,
}

impl Exec<'_> {
    /// Run a RoCE step.
    pub(super) fn roce(&mut self, step: &Step) -> Result<Option<String>, Mismatch> {
        let expected_error = step.expect.error.as_ref();
        // A step that may fail: its error must match what `expect` says, if it says.
        let outcome = |what: &str, r: Result<Option<String>, bnxt::Error>| match (r, expected_error) {
            (Ok(note), None) => Ok(note),
            (Ok(_), Some(p)) => {
                Err(Mismatch::new(format!("{what} fails with an error matching /{}/", p.text), "it succeeded"))
            }
            (Err(e), None) => Err(Mismatch::new(format!("{what} succeeds"), format!("error: {e}"))),
            (Err(e), Some(p)) if p.regex.is_match(&e.to_string()) => Ok(Some(format!("failed as expected: {e}"))),
            (Err(e), Some(p)) => {
                Err(Mismatch::new(format!("{what} fails with an error matching /{}/", p.text), format!("error: {e}")))
            }
        };
        match &step.action {
            Action::Region(r) => {
                let (name, how, len) = (&r.name, &r.fill, r.bytes as usize);
                let on = self.open_nic(&r.nic.name)?;
                let made = match r.region_memory() {
                    RegionMemory::Host => Region::host(on, len),
                    RegionMemory::Pages => match HostPages::try_new(len) {
                        Some(pages) => Region::pages(on, pages),
                        None => {
                            let why =
                                format!("the runner cannot have {} of memory for the region", format_size(len as u64));
                            return Err(Mismatch::new("the region", why));
                        }
                    },
                    RegionMemory::Device { bus, bar } => {
                        let device = DeviceMemory { bus, bar, offset: 0, len };
                        Region::device(on, &device)
                    }
                };
                let made = made.map(|region| {
                    if let Some(contents) = fill::contents(*how, self.seed, &name.name, len) {
                        region.write(0, &contents);
                    }
                    self.objects.regions.insert(name.name.clone(), region);
                    None
                });
                outcome("the region", made)
            }
            Action::Deregister(region) => {
                outcome("deregistering", self.region(&region.name)?.deregister().map(|()| None))
            }
            Action::Qp { nic, name } => {
                let made = Qp::make(self.open_nic(&nic.name)?).map(|qp| {
                    let note = format!("queue pair {}", qp.endpoint().qpn);
                    self.objects.qps.insert(name.name.clone(), qp);
                    Some(note)
                });
                outcome("the queue pair", made)
            }
            Action::Connect { qp, peer } => {
                let (a, b) = (self.qp(&qp.name)?.endpoint(), self.qp(&peer.name)?.endpoint());
                let both = match self.qp(&qp.name)?.connect(&b) {
                    Ok(()) => self.qp(&peer.name)?.connect(&a),
                    Err(e) => Err(e),
                };
                outcome("connecting", both.map(|()| Some(format!("{} and {} connected", a.qpn, b.qpn))))
            }
            Action::Send(t) => self.post(t, |qp, region, at, len| qp.send(region, at, len)),
            Action::Receive(t) => self.post(t, |qp, region, at, len| qp.receive(region, at, len)),
            Action::Read(read) => {
                let (into, from) = (&read.into(), &read.from);
                let (at, from_at, len) = (read.at as usize, read.from_at as usize, read.bytes as usize);
                let region =
                    self.objects.regions.get(&into.region.name).ok_or_else(|| gone("region", &into.region.name))?;
                let source = self.objects.regions.get(&from.name).ok_or_else(|| gone("region", &from.name))?;
                let qp = self.objects.qps.get_mut(&into.qp.name).ok_or_else(|| gone("queue pair", &into.qp.name))?;
                qp.read(region, at, source, from_at, len);
                Ok(None)
            }
            Action::Complete(c) => self.complete(c),
            Action::Compare { region, at, with, with_at, bytes } => {
                let a = self.region(&region.name)?.read(*at as usize, *bytes as usize);
                let b = self.region(&with.name)?.read(*with_at as usize, *bytes as usize);
                let expected = format!(
                    "{} of `{}` at {} equal those of `{}` at {}",
                    format_size(*bytes),
                    region.name,
                    format_size(*at),
                    with.name,
                    format_size(*with_at)
                );
                match first_difference(&a, &b) {
                    None => Ok(Some(format!("{} equal", format_size(*bytes)))),
                    Some((offset, differ)) => Err(Mismatch::new(
                        expected,
                        format!(
                            "{differ} of {} bytes differ; the first at +{offset}: 0x{:02x} where `{}` has 0x{:02x}",
                            a.len(),
                            a[offset],
                            with.name,
                            b[offset]
                        ),
                    )),
                }
            }
            Action::Room(r) => {
                let room = self.qp(&r.qp.name)?.room(r.side);
                let mut checks = Checks::default();
                let side = side_name(r.side);
                match r.check().expect("a loaded `room` gives one check") {
                    CountCheck::Equals(n) => {
                        checks.check(room == n, format!("room {n} on the {side} ring"), format!("room {room}"))
                    }
                    CountCheck::AtLeast(n) => {
                        checks.check(room >= n, format!("room at least {n} on the {side} ring"), format!("room {room}"))
                    }
                }
                checks.done().map(|_| Some(format!("room {room}")))
            }
            Action::Destroy(qp) => outcome("destroying", self.qp(&qp.name)?.destroy().map(|()| None)),
            other => unreachable!("`{}` is not a RoCE step", other.keyword()),
        }
    }

    fn region(&self, name: &str) -> Result<&Region, Mismatch> {
        self.objects.regions.get(name).ok_or_else(|| gone("region", name))
    }

    fn qp(&mut self, name: &str) -> Result<&mut Qp, Mismatch> {
        self.objects.qps.get_mut(name).ok_or_else(|| gone("queue pair", name))
    }

    fn post(
        &mut self,
        t: &Transfer,
        post: impl FnOnce(&mut Qp, &Region, usize, usize),
    ) -> Result<Option<String>, Mismatch> {
        let region = self.objects.regions.get(&t.region.name).ok_or_else(|| gone("region", &t.region.name))?;
        let qp = self.objects.qps.get_mut(&t.qp.name).ok_or_else(|| gone("queue pair", &t.qp.name))?;
        post(qp, region, t.at as usize, t.bytes as usize);
        Ok(None)
    }

    fn complete(&mut self, c: &CompleteCheck) -> Result<Option<String>, Mismatch> {
        let side = side_name(c.side);
        let mut last = None;
        for i in 0..c.count {
            let which = if c.count > 1 { format!(" ({} of {})", i + 1, c.count) } else { String::new() };
            let qp = self.qp(&c.qp.name)?;
            let qpn = qp.endpoint().qpn;
            let Some(done) = qp.wait(c.side, c.within) else {
                return Err(Mismatch::new(
                    format!(
                        "a completion on `{}`'s {side} ring within {}{which}",
                        c.qp.name,
                        format_duration(c.within)
                    ),
                    "none came",
                ));
            };
            let now = self.now();
            self.recorder.note_with(now, || {
                format!("completion {} {side} {} {}", Field::Qp.is(qpn), done.status, Field::Bytes.is(done.bytes))
            });
            let mut checks = Checks::default();
            checks.check(
                done.status == c.status,
                format!("status {}{which}", c.status),
                format!("status {}", done.status),
            );
            if let Some(bytes) = c.bytes
                && done.status == Status::Ok
            {
                checks.check(
                    done.bytes == bytes,
                    format!("{} bytes{which}", format_size(bytes)),
                    format!("{} bytes", done.bytes),
                );
            }
            checks.done()?;
            last = Some(done);
        }
        Ok(last.map(|d| match c.count {
            1 => format!("{} {}", d.status, format_size(d.bytes)),
            n => format!("{n} × {}", d.status),
        }))
    }
}

/// A name the checks let through that the run does not hold (its step failed as expected).
fn gone(what: &str, name: &str) -> Mismatch {
    Mismatch::new(format!("`{name}` names a {what}"), "it names none (the step that made it failed)")
}

/// The first offset where `a` and `b` differ and how many bytes differ, if any do.
fn first_difference(a: &[u8], b: &[u8]) -> Option<(usize, usize)> {
    let first = a.iter().zip(b).position(|(x, y)| x != y)?;
    let differ = a[first..].iter().zip(&b[first..]).filter(|(x, y)| x != y).count();
    Some((first, differ))
}

#[cfg(test)]
mod tests {
    use super::first_difference;

    #[test]
    fn differences_are_found_and_counted() {
        assert_eq!(first_difference(b"abcd", b"abcd"), None);
        assert_eq!(first_difference(b"abcd", b"abXY"), Some((2, 2)));
        assert_eq!(first_difference(b"abcd", b"Xbcd"), Some((0, 1)));
    }
}
