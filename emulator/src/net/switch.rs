//! The in-process Ethernet switch of a segment: ports (one per NIC, later also sockets), source
//! MAC learning, unicast forwarding to the learned port, flooding of broadcast, multicast and
//! unknown destinations to every other port, and delivery after a latency from a time-ordered
//! queue that the executor drains.
//!
//! A segment is a switch, not a cable (it joins any number of stations): as IEEE 802.1Q's
//! forwarding process (8.6.1) it never sends a frame back out of the port it came in on, so a
//! frame to an address learned on its own sending port is filtered ([`SwitchStats::filtered`]),
//! as two NICs cabled to one real switch would see it.
//!
//! Timing: a frame entering at `t` leaves on each output port when that port is free and
//! [`LinkTiming::latency`] has passed, then takes its serialisation time at
//! [`LinkTiming::bits_per_second`] (counting the 24 bytes a frame costs on the wire beyond what
//! a capture holds: preamble and start delimiter 8, FCS 4, inter-frame gap 12; IEEE 802.3). So
//! frames to one port arrive in the order they entered, unless the fault stage changes that.
//!
//! Frames pass the [`FaultStage`] before the switch sees them; the capture, when on, records
//! what leaves the fault stage (the wire as the switch sees it) at the time it enters the switch.
//!
//! A [`SealedFrame`] sent with [`Switch::send_sealed`] stays sealed to the receiver
//! ([`Switch::poll_wire_into`]) only while the fault stage is transparent; see
//! [`sealed`](super::sealed).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use super::MacAddr;
use super::capture::Captured;
use super::ethernet::{self, EthernetFrame};
use super::fault::{FaultCounters, FaultEvent, FaultStage, Passed};
use super::sealed::{SealedFrame, WireFrame};
use super::time_queue::{Keyed, TimeQueue};

/// A port of a switch. Ids are never reused within a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortId(pub u32);

impl fmt::Display for PortId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "port {}", self.0)
    }
}

/// Bytes a frame occupies on the wire beyond its captured bytes: preamble + SFD (8), FCS (4) and
/// the minimum inter-frame gap (12) (IEEE 802.3).
pub const WIRE_OVERHEAD: usize = 24;

/// Latency and link rate of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkTiming {
    /// Fixed time from entering the switch to leaving it.
    pub latency: Duration,
    /// Link rate; 0 means frames take no time to serialise.
    pub bits_per_second: u64,
}

impl Default for LinkTiming {
    /// 1 µs and 400 Gb/s (the BCM57608's port speed).
    fn default() -> Self {
        LinkTiming { latency: Duration::from_micros(1), bits_per_second: 400_000_000_000 }
    }
}

impl LinkTiming {
    /// Time to serialise a frame of `len` captured bytes.
    pub fn serialisation(&self, len: usize) -> Duration {
        if self.bits_per_second == 0 {
            return Duration::ZERO;
        }
        // In 64 bits whenever the product fits (any frame shorter than about 2 GB), which is
        // the same quotient as in 128 bits and cheaper.
        let product = ((len + WIRE_OVERHEAD) as u64).checked_mul(8 * 1_000_000_000);
        if let Some(product) = product {
            return Duration::from_nanos(product.div_ceil(self.bits_per_second));
        }
        let bits = (len + WIRE_OVERHEAD) as u128 * 8;
        let nanos = (bits * 1_000_000_000).div_ceil(u128::from(self.bits_per_second));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// A frame arriving at a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The port it arrives at.
    pub port: PortId,
    /// When it arrives (its last bit).
    pub at: Duration,
    /// The frame.
    pub frame: Vec<u8>,
}

/// A frame arriving at a port, sealed or plain (see [`Switch::poll_wire_into`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireDelivery {
    /// The port it arrives at.
    pub port: PortId,
    /// When it arrives (its last bit).
    pub at: Duration,
    /// The frame.
    pub frame: WireFrame,
}

/// Why the switch refused a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwitchError {
    /// The port does not exist (never added, or removed).
    #[error("{0} is not a port of this switch")]
    NoSuchPort(PortId),
    /// Shorter than an Ethernet header.
    #[error("frame of {len} bytes from {port} is shorter than an Ethernet header")]
    Runt {
        /// Port it came from.
        port: PortId,
        /// Its length.
        len: usize,
    },
}

/// Counters of a switch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SwitchStats {
    /// Frames accepted from ports (before the fault stage).
    pub received: u64,
    /// Frames sent to one learned port.
    pub unicast: u64,
    /// Frames flooded to every other port.
    pub flooded: u64,
    /// Frames whose destination was learned on the port they came from (not sent back).
    pub filtered: u64,
    /// Copies delivered to ports.
    pub delivered: u64,
    /// Copies whose port was removed before they arrived.
    pub undeliverable: u64,
}

/// A frame on its way to a port, in the delivery queue by arrival time, then queueing order.
#[derive(Debug, Clone)]
struct Pending {
    at: Duration,
    seq: u64,
    port: PortId,
    frame: WireFrame,
}

impl Keyed for Pending {
    fn key(&self) -> (Duration, u64) {
        (self.at, self.seq)
    }
}

#[derive(Debug, Default, Clone)]
struct Port {
    /// When the output side of the port has finished sending everything queued on it.
    free_at: Duration,
    /// The source address last learned from this port, with the version of the address table
    /// it was learned at: while the table is at that version, learning it again changes nothing.
    src_seen: Option<(MacAddr, u64)>,
    /// The destination last looked up for a frame from this port, where the table had it, and
    /// the table's version then: while the table is at that version, the answer stands.
    dst_seen: Option<(MacAddr, Option<PortId>, u64)>,
}

/// The switch of one segment.
#[derive(Debug, Clone)]
pub struct Switch {
    timing: LinkTiming,
    /// Indexed by port id; `None` once removed (ids are not reused).
    ports: Vec<Option<Port>>,
    macs: BTreeMap<MacAddr, PortId>,
    /// Counts changes to `macs` (what the ports' lookup caches are checked against).
    macs_version: u64,
    queue: TimeQueue<Pending>,
    seq: u64,
    faults: FaultStage,
    passed: Vec<Passed>,
    capture: Option<Vec<Captured>>,
    stats: SwitchStats,
}

impl Switch {
    /// A switch with no ports, no faults and no capture.
    pub fn new(timing: LinkTiming) -> Switch {
        Switch {
            timing,
            ports: Vec::new(),
            macs: BTreeMap::new(),
            macs_version: 0,
            queue: TimeQueue::new(),
            seq: 0,
            faults: FaultStage::none(),
            passed: Vec::new(),
            capture: None,
            stats: SwitchStats::default(),
        }
    }

    /// Put a fault stage between the ports and the switch (replacing any before). Frames the
    /// stage before held back (reordered) go on at the time they were due, so that replacing a
    /// stage loses no frame of its own accord.
    pub fn set_faults(&mut self, faults: FaultStage) {
        let mut before = std::mem::replace(&mut self.faults, faults);
        for (at, port, frame) in before.release_due(Duration::MAX) {
            if self.has_port(port) {
                self.forward(at, port, WireFrame::Plain(frame), Duration::ZERO);
            }
        }
    }

    /// Record every frame the switch sees (until [`Switch::stop_capture`]), for
    /// [`Switch::drain_captured`].
    pub fn start_capture(&mut self) {
        self.capture.get_or_insert_with(Vec::new);
    }

    /// Stop recording; what was recorded and not drained is returned.
    pub fn stop_capture(&mut self) -> Vec<Captured> {
        self.capture.take().unwrap_or_default()
    }

    /// Move the frames recorded since the last call into `out`, oldest first.
    pub fn drain_captured(&mut self, out: &mut Vec<Captured>) {
        if let Some(c) = &mut self.capture {
            out.append(c);
        }
    }

    /// Add a port.
    pub fn add_port(&mut self) -> PortId {
        let id = PortId(u32::try_from(self.ports.len()).expect("fewer than 2^32 ports"));
        self.ports.push(Some(Port::default()));
        id
    }

    fn port_mut(&mut self, port: PortId) -> Option<&mut Port> {
        self.ports.get_mut(port.0 as usize).and_then(Option::as_mut)
    }

    fn has_port(&self, port: PortId) -> bool {
        self.ports.get(port.0 as usize).is_some_and(Option::is_some)
    }

    /// Remove a port (a peer that is gone): addresses learned on it are forgotten, frames on
    /// their way to it are lost (counted as undeliverable), a frame the fault stage held for it
    /// is dropped. Returns whether it existed.
    pub fn remove_port(&mut self, port: PortId) -> bool {
        let existed = self.ports.get_mut(port.0 as usize).and_then(Option::take).is_some();
        self.macs.retain(|_, p| *p != port);
        self.macs_version += 1;
        self.faults.forget_port(port);
        existed
    }

    /// The ports, in order.
    pub fn ports(&self) -> impl Iterator<Item = PortId> + '_ {
        self.ports.iter().enumerate().filter(|(_, p)| p.is_some()).map(|(i, _)| PortId(i as u32))
    }

    /// The port `mac` was learned on, if any.
    pub fn learned(&self, mac: MacAddr) -> Option<PortId> {
        self.macs.get(&mac).copied()
    }

    /// Counters.
    pub fn stats(&self) -> SwitchStats {
        self.stats
    }

    /// Counters of the fault stage.
    pub fn fault_counters(&self) -> FaultCounters {
        self.faults.counters()
    }

    /// Take the fault events recorded since the last call.
    pub fn drain_fault_events(&mut self) -> Vec<FaultEvent> {
        self.faults.drain_events()
    }

    /// Whether the fault stage has events [`Switch::drain_fault_events`] would return.
    #[inline]
    pub fn has_fault_events(&self) -> bool {
        self.faults.has_events()
    }

    /// A frame enters from `port` at `now`. Times given to [`Switch::send`] and [`Switch::poll`]
    /// should not go backwards.
    pub fn send(&mut self, now: Duration, port: PortId, frame: Vec<u8>) -> Result<(), SwitchError> {
        self.accept(port, frame.len())?;
        self.enter(now, port, WireFrame::Plain(frame));
        Ok(())
    }

    /// As [`Switch::send`], for a frame sealed when it was built. While the fault stage is
    /// transparent (no fault of any kind configured, nothing held) the frame passes it untouched
    /// and stays sealed on its way to the receiver; otherwise it goes as a plain frame, exactly
    /// as [`Switch::send`] would send it, and the receiver checks it for real. Counters, the tap
    /// and timing are the same either way.
    #[inline]
    pub fn send_sealed(&mut self, now: Duration, port: PortId, frame: SealedFrame) -> Result<(), SwitchError> {
        self.accept(port, frame.bytes().len())?;
        self.enter(now, port, WireFrame::Sealed(frame));
        Ok(())
    }

    /// Refuse a frame from a port that does not exist, or shorter than an Ethernet header.
    fn accept(&self, port: PortId, len: usize) -> Result<(), SwitchError> {
        if !self.has_port(port) {
            return Err(SwitchError::NoSuchPort(port));
        }
        if len < ethernet::HEADER_LEN {
            return Err(SwitchError::Runt { port, len });
        }
        Ok(())
    }

    /// An accepted frame through the fault stage and on to the switch. Through a transparent
    /// stage (which holds nothing, so there is nothing to release first) it goes on as it is,
    /// sealed or not; any other stage may change, hold, copy or drop it, so it goes in as plain
    /// bytes and what comes out is plain.
    fn enter(&mut self, now: Duration, port: PortId, frame: WireFrame) {
        self.stats.received += 1;
        if self.faults.pass_transparently() {
            self.forward(now, port, frame, Duration::ZERO);
            return;
        }
        self.release_held(now);
        let mut passed = std::mem::take(&mut self.passed);
        self.faults.ingress(now, port, frame.into_vec(), &mut passed);
        for p in passed.drain(..) {
            self.forward(now, port, WireFrame::Plain(p.frame), p.extra_delay);
        }
        self.passed = passed;
    }

    /// When the next frame arrives (or a held frame is released), if anything is in flight.
    #[inline]
    pub fn next_deadline(&self) -> Option<Duration> {
        let queued = self.queue.peek().map(|p| p.at);
        match (queued, self.faults.next_release()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Every frame that has arrived by `now`, in arrival order (ties in the order they were
    /// queued).
    pub fn poll(&mut self, now: Duration) -> Vec<Delivery> {
        let mut out = Vec::new();
        self.poll_into(now, &mut out);
        out
    }

    /// As [`Switch::poll`], appending the frames to `out` (whose capacity the caller can reuse
    /// from one call to the next).
    pub fn poll_into(&mut self, now: Duration, out: &mut Vec<Delivery>) {
        self.drain_due(now, |p| out.push(Delivery { port: p.port, at: p.at, frame: p.frame.into_vec() }));
    }

    /// As [`Switch::poll_into`], with each frame sealed or plain as it arrives: sealed only if it
    /// was sent with [`Switch::send_sealed`] through a transparent fault stage. Parse them with
    /// [`RoceFrame::parse_wire`](super::RoceFrame::parse_wire).
    #[inline]
    pub fn poll_wire_into(&mut self, now: Duration, out: &mut Vec<WireDelivery>) {
        self.drain_due(now, |p| out.push(WireDelivery { port: p.port, at: p.at, frame: p.frame }));
    }

    /// Hand every frame due by `now` whose port still exists to `deliver`, in arrival order.
    fn drain_due(&mut self, now: Duration, mut deliver: impl FnMut(Pending)) {
        self.release_held(now);
        while self.queue.peek().is_some_and(|p| p.at <= now) {
            let Some(p) = self.queue.pop() else { break };
            if self.has_port(p.port) {
                self.stats.delivered += 1;
                deliver(p);
            } else {
                self.stats.undeliverable += 1;
            }
        }
    }

    /// Forward frames the fault stage held and whose time has come, each at its due time.
    fn release_held(&mut self, now: Duration) {
        if self.faults.next_release().is_none_or(|due| due > now) {
            return;
        }
        for (at, port, frame) in self.faults.release_due(now) {
            if self.has_port(port) {
                self.forward(at, port, WireFrame::Plain(frame), Duration::ZERO);
            }
        }
    }

    /// Learn that `src` is reached through `from`. Learning what the port's cache says was
    /// learned there, with the table unchanged since, is skipped (it would change nothing).
    fn learn(&mut self, from: PortId, src: MacAddr) {
        let version = self.macs_version;
        let Some(port) = self.port_mut(from) else { return };
        if port.src_seen == Some((src, version)) {
            return;
        }
        if self.macs.insert(src, from) != Some(from) {
            self.macs_version += 1;
        }
        let version = self.macs_version;
        if let Some(port) = self.port_mut(from) {
            port.src_seen = Some((src, version));
        }
    }

    /// Where `dst` was learned, for a frame from `from`: the port's cache while the table has not
    /// changed, the table otherwise.
    fn lookup(&mut self, from: PortId, dst: MacAddr) -> Option<PortId> {
        let version = self.macs_version;
        if let Some(port) = self.port_mut(from)
            && let Some((mac, to, seen)) = port.dst_seen
            && mac == dst
            && seen == version
        {
            return to;
        }
        let to = self.macs.get(&dst).copied();
        if let Some(port) = self.port_mut(from) {
            port.dst_seen = Some((dst, to, version));
        }
        to
    }

    /// Learn, record and queue a frame that passed the fault stage.
    fn forward(&mut self, at: Duration, from: PortId, frame: WireFrame, extra_delay: Duration) {
        let eth = EthernetFrame::new_unchecked(frame.bytes());
        let (src, dst) = (eth.src(), eth.dst());
        if src.is_unicast() {
            self.learn(from, src);
        }
        if let Some(c) = &mut self.capture {
            c.push(Captured { at, frame: frame.bytes().to_vec() });
        }
        let learned = if dst.is_unicast() { self.lookup(from, dst) } else { None };
        match learned {
            Some(to) if to == from => self.stats.filtered += 1,
            Some(to) => {
                self.stats.unicast += 1;
                self.enqueue(at, to, frame, extra_delay);
            }
            None => {
                self.stats.flooded += 1;
                let others: Vec<PortId> = self.ports().filter(|p| *p != from).collect();
                if let Some((last, rest)) = others.split_last() {
                    for to in rest {
                        self.enqueue(at, *to, frame.clone(), extra_delay);
                    }
                    self.enqueue(at, *last, frame, extra_delay);
                }
            }
        }
    }

    fn enqueue(&mut self, at: Duration, to: PortId, frame: WireFrame, extra_delay: Duration) {
        let ser = self.timing.serialisation(frame.bytes().len());
        let latency = self.timing.latency;
        let Some(port) = self.port_mut(to) else { return };
        let done = (at + latency).max(port.free_at) + ser;
        port.free_at = done;
        self.seq += 1;
        self.queue.push(Pending { at: done.saturating_add(extra_delay), seq: self.seq, port: to, frame });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::fault::{FaultKind, FaultRule, FrameMatch, WireFaults};

    fn mac(n: u8) -> MacAddr {
        MacAddr([0x02, 0, 0, 0, 0, n])
    }

    fn frame(src: MacAddr, dst: MacAddr, tag: u8) -> Vec<u8> {
        let mut f = vec![tag; 76];
        f[..6].copy_from_slice(&dst.0);
        f[6..12].copy_from_slice(&src.0);
        f[12..14].copy_from_slice(&[0x88, 0xb5]); // IEEE local experimental EtherType
        f
    }

    #[test]
    fn serialisation_is_the_exact_quotient_rounded_up_at_every_rate() {
        for bits_per_second in [1, 7, 1_000_000_007, 25_000_000_000, 400_000_000_000, u64::MAX] {
            let timing = LinkTiming { latency: Duration::ZERO, bits_per_second };
            for len in [0, 1, 60, 64, 76, 1500, 4138, 9000, 1 << 20, 3 << 30] {
                let bits = (len + WIRE_OVERHEAD) as u128 * 8;
                let nanos = (bits * 1_000_000_000).div_ceil(u128::from(bits_per_second));
                let want = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
                assert_eq!(timing.serialisation(len), want, "{len} bytes at {bits_per_second} b/s");
            }
        }
    }

    fn untimed() -> LinkTiming {
        LinkTiming { latency: Duration::from_micros(1), bits_per_second: 0 }
    }

    /// A switch with ports A and B that has learned B's address (mac 2).
    fn two_ports_b_learned() -> (Switch, PortId, PortId) {
        let mut sw = Switch::new(untimed());
        let (a, b) = (sw.add_port(), sw.add_port());
        sw.send(Duration::ZERO, b, frame(mac(2), mac(1), 0)).unwrap();
        sw.poll(Duration::from_micros(1));
        (sw, a, b)
    }

    fn ports_of(ds: &[Delivery]) -> Vec<u32> {
        ds.iter().map(|d| d.port.0).collect()
    }

    #[test]
    fn learns_sources_floods_unknowns_and_forwards_unicast() {
        let mut sw = Switch::new(untimed());
        let (a, b, c) = (sw.add_port(), sw.add_port(), sw.add_port());
        let t = Duration::ZERO;
        sw.send(t, a, frame(mac(1), mac(2), 1)).unwrap();
        let d = sw.poll(Duration::from_micros(1));
        assert_eq!(ports_of(&d), vec![1, 2], "unknown destination: flooded to every other port");
        assert_eq!(sw.learned(mac(1)), Some(a));

        sw.send(Duration::from_micros(2), b, frame(mac(2), mac(1), 2)).unwrap();
        assert_eq!(ports_of(&sw.poll(Duration::from_micros(3))), vec![0], "learned: only to A");
        sw.send(Duration::from_micros(4), a, frame(mac(1), mac(2), 3)).unwrap();
        assert_eq!(ports_of(&sw.poll(Duration::from_micros(5))), vec![1], "now B is learned too");

        sw.send(Duration::from_micros(6), c, frame(mac(3), MacAddr::BROADCAST, 4)).unwrap();
        assert_eq!(ports_of(&sw.poll(Duration::from_micros(7))), vec![0, 1], "broadcast floods");
        // A frame to an address learned on the port it came from is not sent back.
        sw.send(Duration::from_micros(8), a, frame(mac(9), mac(1), 5)).unwrap();
        assert!(sw.poll(Duration::from_micros(9)).is_empty());
        let s = sw.stats();
        assert_eq!((s.received, s.unicast, s.flooded, s.filtered, s.delivered), (5, 2, 2, 1, 6));
    }

    #[test]
    fn an_address_that_moves_is_followed_by_every_port() {
        let mut sw = Switch::new(untimed());
        let (a, b, c) = (sw.add_port(), sw.add_port(), sw.add_port());
        let mut t = Duration::ZERO;
        let mut step = |sw: &mut Switch, from, src, dst| {
            t += Duration::from_micros(2);
            sw.send(t, from, frame(src, dst, 0)).unwrap();
            let mut got = Vec::new();
            sw.poll_into(t + Duration::from_micros(1), &mut got);
            ports_of(&got)
        };
        assert_eq!(step(&mut sw, a, mac(1), mac(2)), vec![1, 2]);
        assert_eq!(step(&mut sw, b, mac(2), mac(1)), vec![0]);
        assert_eq!(step(&mut sw, b, mac(2), mac(1)), vec![0], "again, from the caches");
        assert_eq!(step(&mut sw, a, mac(1), mac(2)), vec![1]);
        // mac(1) moves to C: B's next frame to it must follow.
        assert_eq!(step(&mut sw, c, mac(1), mac(2)), vec![1]);
        assert_eq!(sw.learned(mac(1)), Some(c));
        assert_eq!(step(&mut sw, b, mac(2), mac(1)), vec![2]);
        // And back to A, whose own cache said it had learned mac(1) before.
        assert_eq!(step(&mut sw, a, mac(1), mac(2)), vec![1]);
        assert_eq!(sw.learned(mac(1)), Some(a));
        assert_eq!(step(&mut sw, b, mac(2), mac(1)), vec![0]);
        // C goes: what was learned on it is forgotten, and B's cached answer with it.
        assert_eq!(step(&mut sw, c, mac(3), mac(2)), vec![1]);
        assert_eq!(step(&mut sw, b, mac(2), mac(3)), vec![2]);
        assert!(sw.remove_port(c));
        assert_eq!(step(&mut sw, b, mac(2), mac(3)), vec![0], "unknown again: flooded to the ports left");
    }

    #[test]
    fn poll_into_appends_what_poll_returns() {
        let (mut sw, a, _b) = two_ports_b_learned();
        let t = Duration::from_micros(5);
        sw.send(t, a, frame(mac(1), mac(2), 7)).unwrap();
        sw.send(t, a, frame(mac(1), mac(2), 8)).unwrap();
        let mut out = vec![Delivery { port: PortId(9), at: Duration::ZERO, frame: vec![1] }];
        sw.poll_into(t + Duration::from_micros(1), &mut out);
        let tags: Vec<u8> = out[1..].iter().map(|d| d.frame[20]).collect();
        assert_eq!((out.len(), out[0].port, tags), (3, PortId(9), vec![7, 8]));
        sw.poll_into(t + Duration::from_micros(2), &mut out);
        assert_eq!(out.len(), 3);
    }

    /// A RoCE frame from mac(1) to mac(2), sealed as the transport seals what it builds.
    fn sealed(psn: u32) -> SealedFrame {
        use crate::net::{Opcode, Path, Transport, bth::BthRepr, build_frame};
        let path = Path::between(mac(1), mac(2), 0x10);
        let mut f = Vec::new();
        build_frame(&path, &Transport::bth(BthRepr::new(Opcode::SendOnly, 0x10, psn)), &[psn as u8; 40], &mut f)
            .unwrap();
        SealedFrame::of_built(f)
    }

    #[test]
    fn a_sealed_frame_stays_sealed_only_through_a_transparent_stage() {
        let (mut sw, a, b) = two_ports_b_learned();
        let (mut plain, _, _) = two_ports_b_learned();
        sw.start_capture();
        let t = Duration::from_micros(5);
        sw.send_sealed(t, a, sealed(1)).unwrap();
        plain.send(t, a, sealed(1).into_vec()).unwrap();
        let mut got = Vec::new();
        sw.poll_wire_into(t + Duration::from_micros(1), &mut got);
        assert_eq!(got.len(), 1);
        assert!(got[0].frame.is_sealed());
        assert_eq!((got[0].port, got[0].frame.bytes()), (b, sealed(1).bytes()));
        let d = plain.poll(t + Duration::from_micros(1));
        assert_eq!((d[0].port, d[0].at, &d[0].frame[..]), (got[0].port, got[0].at, got[0].frame.bytes()));
        assert_eq!((sw.stats(), sw.fault_counters()), (plain.stats(), plain.fault_counters()));

        // Any fault configured, even one that never fires: every frame goes plain.
        let never = FaultRule { matching: FrameMatch::default(), nth: Some(1000), kind: FaultKind::Drop, delay: None };
        sw.set_faults(FaultStage::new(0, WireFaults::default(), vec![never]).unwrap());
        sw.send_sealed(t, a, sealed(2)).unwrap();
        got.clear();
        sw.poll_wire_into(t + Duration::from_micros(2), &mut got);
        assert_eq!(got.len(), 1);
        assert!(!got[0].frame.is_sealed());
        assert_eq!(got[0].frame.bytes(), sealed(2).bytes());
        assert_eq!(sw.fault_counters().frames, 1);
        // A corrupting stage: the frame arrives plain with a bit flipped.
        let corrupt = FaultRule { matching: FrameMatch::default(), nth: None, kind: FaultKind::Corrupt, delay: None };
        sw.set_faults(FaultStage::new(0, WireFaults::default(), vec![corrupt]).unwrap());
        sw.send_sealed(t, a, sealed(3)).unwrap();
        got.clear();
        sw.poll_wire_into(t + Duration::from_micros(3), &mut got);
        assert!(!got[0].frame.is_sealed());
        assert!(crate::net::RoceFrame::parse_wire(&got[0].frame).is_err());
        // Refusals are those of `send`.
        assert_eq!(sw.send_sealed(t, PortId(7), sealed(4)), Err(SwitchError::NoSuchPort(PortId(7))));
        assert_eq!(sw.stop_capture().len(), 3, "the capture saw all three");
    }

    #[test]
    fn frames_arrive_after_latency_and_serialisation_in_order() {
        let timing = LinkTiming { latency: Duration::from_micros(1), bits_per_second: 1_000_000_000 };
        // (76 + 24) bytes at 1 Gb/s: 800 ns.
        assert_eq!(timing.serialisation(76), Duration::from_nanos(800));
        let mut sw = Switch::new(timing);
        let (a, b) = (sw.add_port(), sw.add_port());
        sw.send(Duration::ZERO, b, frame(mac(2), mac(1), 0)).unwrap(); // learn B
        sw.poll(Duration::from_secs(1));
        let t0 = Duration::from_secs(1);
        for tag in 1..=3 {
            sw.send(t0, a, frame(mac(1), mac(2), tag)).unwrap();
        }
        let first = t0 + Duration::from_nanos(1_800);
        assert_eq!(sw.next_deadline(), Some(first));
        assert!(sw.poll(first - Duration::from_nanos(1)).is_empty());
        let d = sw.poll(first + Duration::from_nanos(1_600));
        let times: Vec<Duration> = d.iter().map(|d| d.at).collect();
        assert_eq!(times, vec![first, first + Duration::from_nanos(800), first + Duration::from_nanos(1_600)]);
        let tags: Vec<u8> = d.iter().map(|d| d.frame[20]).collect();
        assert_eq!(tags, vec![1, 2, 3]);
        assert_eq!(sw.next_deadline(), None);
    }

    #[test]
    fn a_removed_port_gets_nothing_and_is_forgotten() {
        let (mut sw, a, b) = two_ports_b_learned();
        sw.send(Duration::from_micros(2), a, frame(mac(1), mac(2), 1)).unwrap();
        assert!(sw.remove_port(b));
        assert!(!sw.remove_port(b));
        assert!(sw.poll(Duration::from_micros(10)).is_empty());
        assert_eq!(sw.stats().undeliverable, 1);
        assert_eq!(sw.learned(mac(2)), None);
        assert_eq!(sw.send(Duration::from_micros(11), b, frame(mac(2), mac(1), 2)), Err(SwitchError::NoSuchPort(b)));
        assert_eq!(sw.ports().collect::<Vec<_>>(), vec![a]);
        let c = sw.add_port();
        assert_ne!(c, b, "ids are not reused");
        assert!(matches!(sw.send(Duration::from_micros(12), a, vec![0; 13]), Err(SwitchError::Runt { len: 13, .. })));
    }

    #[test]
    fn a_reordered_frame_goes_after_the_next_or_after_its_hold() {
        let (mut sw, a, _b) = two_ports_b_learned();
        let hold = WireFaults::default().reorder_hold;
        let rule = |nth| FaultRule {
            matching: FrameMatch { port: Some(a), ..FrameMatch::default() },
            nth: Some(nth),
            kind: FaultKind::Reorder,
            delay: None,
        };
        sw.set_faults(FaultStage::new(1, WireFaults::default(), vec![rule(1), rule(3)]).unwrap());
        let t = Duration::from_micros(10);
        sw.send(t, a, frame(mac(1), mac(2), 1)).unwrap();
        assert_eq!(sw.next_deadline(), Some(t + hold), "held, waiting for a next frame");
        sw.send(t, a, frame(mac(1), mac(2), 2)).unwrap();
        let tags: Vec<u8> = sw.poll(t + Duration::from_micros(1)).iter().map(|d| d.frame[20]).collect();
        assert_eq!(tags, vec![2, 1]);
        // The third frame is held and no frame follows: it goes when its hold ends.
        sw.send(t, a, frame(mac(1), mac(2), 3)).unwrap();
        assert!(sw.poll(t + hold).is_empty(), "released at t+hold, arrives a latency later");
        let d = sw.poll(t + hold + Duration::from_micros(1));
        assert_eq!((d.len(), d[0].frame[20], d[0].at), (1, 3, t + hold + Duration::from_micros(1)));
        assert_eq!(sw.fault_counters().reordered, 2);
        assert_eq!(sw.drain_fault_events().len(), 2);
    }

    #[test]
    fn a_delayed_frame_arrives_later_and_lets_the_next_pass() {
        let (mut sw, a, _b) = two_ports_b_learned();
        let by = Duration::from_micros(30);
        let rule = FaultRule { matching: FrameMatch::default(), nth: Some(1), kind: FaultKind::Delay, delay: Some(by) };
        sw.set_faults(FaultStage::new(0, WireFaults::default(), vec![rule]).unwrap());
        let t = Duration::from_micros(10);
        sw.send(t, a, frame(mac(1), mac(2), 1)).unwrap();
        sw.send(t, a, frame(mac(1), mac(2), 2)).unwrap();
        let d = sw.poll(t + by + Duration::from_micros(1));
        let got: Vec<(u8, Duration)> = d.iter().map(|d| (d.frame[20], d.at)).collect();
        assert_eq!(got, vec![(2, t + Duration::from_micros(1)), (1, t + Duration::from_micros(1) + by)]);
        assert_eq!(sw.fault_counters().delayed, 1);
    }

    #[test]
    fn a_stage_replaced_while_it_holds_a_frame_lets_it_go_when_it_was_due() {
        let (mut sw, a, _b) = two_ports_b_learned();
        let rule = FaultRule { matching: FrameMatch::default(), nth: Some(1), kind: FaultKind::Reorder, delay: None };
        sw.set_faults(FaultStage::new(0, WireFaults::default(), vec![rule]).unwrap());
        let t = Duration::from_micros(10);
        sw.send(t, a, frame(mac(1), mac(2), 1)).unwrap();
        let due = sw.next_deadline().expect("held");
        sw.set_faults(FaultStage::none());
        let d = sw.poll(due + Duration::from_micros(1));
        assert_eq!(
            d.iter().map(|d| (d.frame[20], d.at)).collect::<Vec<_>>(),
            vec![(1, due + Duration::from_micros(1))]
        );
        assert_eq!(sw.fault_counters(), FaultCounters::default(), "the new stage has counted nothing");
    }

    #[test]
    fn the_capture_records_what_leaves_the_fault_stage() {
        let mut sw = Switch::new(untimed());
        let (a, _b) = (sw.add_port(), sw.add_port());
        let rules = vec![
            FaultRule { matching: FrameMatch::default(), nth: Some(1), kind: FaultKind::Drop, delay: None },
            FaultRule { matching: FrameMatch::default(), nth: Some(2), kind: FaultKind::Duplicate, delay: None },
        ];
        sw.set_faults(FaultStage::new(0, WireFaults::default(), rules).unwrap());
        sw.start_capture();
        for tag in 1..=3 {
            sw.send(Duration::from_micros(u64::from(tag)), a, frame(mac(1), mac(2), tag)).unwrap();
        }
        let mut seen = Vec::new();
        sw.drain_captured(&mut seen);
        let tags: Vec<(u8, Duration)> = seen.iter().map(|c| (c.frame[14], c.at)).collect();
        let us = Duration::from_micros;
        assert_eq!(tags, vec![(2, us(2)), (2, us(2)), (3, us(3))], "frame 1 dropped, frame 2 twice, frame 3");
        assert!(sw.stop_capture().is_empty(), "drained");
    }
}
