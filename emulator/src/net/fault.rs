//! The fault stage between a segment's ports and its switch: drop, duplicate, reorder, corrupt and
//! delay frames, by chance (probabilities drawn from a ChaCha8 generator seeded with the
//! scenario's seed, so the same seed and the same frames give the same decisions) or by rule
//! ("the 3rd frame from port 1", "RDMA READ requests with PSN 7").
//!
//! Each frame gets at most one fault. Rules are looked at first, in order, and the first that
//! fires wins; otherwise one number is drawn per enabled kind, in the order drop, corrupt,
//! duplicate, reorder, delay (so the draws for a frame depend only on its position in the
//! stream), and the first kind whose number falls under its probability applies. Every fault
//! that fires is counted and recorded as a [`FaultEvent`].

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::ethernet;
use super::roce::peek_bth;
use super::switch::PortId;

/// What a fault does to a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// The frame is lost.
    Drop,
    /// The frame goes through twice.
    Duplicate,
    /// The frame is held back and goes after the next frame from its port (or after
    /// [`WireFaults::reorder_hold`] if none comes).
    Reorder,
    /// One bit of the frame, after the Ethernet header, is flipped. (The Ethernet FCS, which
    /// would catch a flip anywhere, is not modelled; past the Ethernet header the IPv4 and UDP
    /// checksums and the ICRC catch every flip except in the BTH's variant byte (F, B, reserved
    /// bits, outside the ICRC by design) and in Ethernet padding, both of which change nothing.)
    Corrupt,
    /// The frame arrives [`WireFaults::delay_by`] (or the rule's delay) later than it would.
    Delay,
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultKind::Drop => "drop",
            FaultKind::Duplicate => "duplicate",
            FaultKind::Reorder => "reorder",
            FaultKind::Corrupt => "corrupt",
            FaultKind::Delay => "delay",
        })
    }
}

/// Probabilities (0.0..=1.0) of each fault per frame, and the times they use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WireFaults {
    /// Chance a frame is dropped.
    pub drop: f64,
    /// Chance a frame is duplicated.
    pub duplicate: f64,
    /// Chance a frame is held back behind the next.
    pub reorder: f64,
    /// Chance a bit of a frame is flipped.
    pub corrupt: f64,
    /// Chance a frame is delayed.
    pub delay: f64,
    /// Extra latency of a delayed frame.
    pub delay_by: Duration,
    /// Longest a reordered frame waits for a next frame before it goes anyway.
    pub reorder_hold: Duration,
}

impl Default for WireFaults {
    fn default() -> Self {
        WireFaults {
            drop: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            corrupt: 0.0,
            delay: 0.0,
            delay_by: Duration::from_micros(100),
            reorder_hold: Duration::from_micros(50),
        }
    }
}

/// Which frames a rule applies to; `None` fields match anything. A rule with a BTH field matches
/// only RoCE v2 frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameMatch {
    /// Port the frame entered by.
    pub port: Option<PortId>,
    /// BTH opcode byte.
    pub opcode: Option<u8>,
    /// BTH PSN.
    pub psn: Option<u32>,
    /// BTH destination QP.
    pub dest_qp: Option<u32>,
}

impl FrameMatch {
    fn matches(&self, port: PortId, frame: &[u8]) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        if self.opcode.is_none() && self.psn.is_none() && self.dest_qp.is_none() {
            return true;
        }
        let Some(bth) = peek_bth(frame) else { return false };
        self.opcode.is_none_or(|o| o == bth.opcode())
            && self.psn.is_none_or(|p| p == bth.psn())
            && self.dest_qp.is_none_or(|q| q == bth.dest_qp())
    }
}

/// A fault applied to chosen frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultRule {
    /// Frames the rule looks at.
    pub matching: FrameMatch,
    /// Fire on the nth matching frame only (1 = the first); on every matching frame if `None`.
    pub nth: Option<u64>,
    /// What to do.
    pub kind: FaultKind,
    /// Extra latency for [`FaultKind::Delay`] (ignored otherwise); [`WireFaults::delay_by`] if
    /// `None`.
    pub delay: Option<Duration>,
}

/// A fault configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultConfigError {
    /// A probability outside 0.0..=1.0 (or not a number).
    #[error("wire fault probability {kind} = {value} is not between 0 and 1")]
    Probability {
        /// Which fault.
        kind: FaultKind,
        /// The value given.
        value: f64,
    },
    /// A rule with `nth: Some(0)` (occurrences count from 1).
    #[error("wire fault rule {index} fires on occurrence 0; occurrences count from 1")]
    NthZero {
        /// Position of the rule.
        index: usize,
    },
    /// A delay or hold longer than [`crate::faults::MAX_DELAY`].
    #[error("wire fault {what}: {source}")]
    Delay {
        /// Which delay (`delay_by`, `reorder_hold`, `rule N`).
        what: String,
        /// Why.
        source: crate::faults::DelayTooLong,
    },
}

/// Why a fault fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultCause {
    /// Rule number (position in the rule list).
    Rule(usize),
    /// The probability of its kind.
    Chance,
}

/// A fault that fired, for transcripts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultEvent {
    /// Virtual time.
    pub at: Duration,
    /// Port the frame entered by.
    pub port: PortId,
    /// Position of the frame in the stream the stage has seen (1 = the first).
    pub frame: u64,
    /// What happened.
    pub kind: FaultKind,
    /// Why.
    pub cause: FaultCause,
    /// BTH opcode, destination QP and PSN, when the frame is RoCE v2.
    pub bth: Option<(u8, u32, u32)>,
    /// For [`FaultKind::Corrupt`], the bit flipped (byte × 8 + bit, from the frame start); for
    /// [`FaultKind::Delay`], the delay in nanoseconds.
    pub detail: u64,
}

impl fmt::Display for FaultEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} {} frame {} from {}: {}",
            self.at,
            self.kind,
            self.frame,
            self.port,
            match self.cause {
                FaultCause::Rule(i) => format!("rule {i}"),
                FaultCause::Chance => "chance".to_string(),
            }
        )?;
        if let Some((op, qp, psn)) = self.bth {
            write!(f, " (opcode {op:#04x} QP {qp:#x} PSN {psn})")?;
        }
        match self.kind {
            FaultKind::Corrupt => write!(f, ", bit {} of byte {}", self.detail % 8, self.detail / 8),
            FaultKind::Delay => write!(f, ", by {:?}", Duration::from_nanos(self.detail)),
            _ => Ok(()),
        }
    }
}

/// How many faults of each kind fired.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FaultCounters {
    /// Frames that entered the stage.
    pub frames: u64,
    /// Dropped.
    pub dropped: u64,
    /// Duplicated.
    pub duplicated: u64,
    /// Held back.
    pub reordered: u64,
    /// Corrupted.
    pub corrupted: u64,
    /// Delayed.
    pub delayed: u64,
    /// Events not kept because [`MAX_EVENTS`] were waiting to be drained.
    pub events_lost: u64,
}

/// Most events kept between two [`FaultStage::drain_events`] calls.
pub const MAX_EVENTS: usize = 1 << 20;

/// A frame the stage lets through, with the extra latency to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passed {
    /// The frame.
    pub frame: Vec<u8>,
    /// Extra latency on top of the switch's.
    pub extra_delay: Duration,
}

/// A frame held back by a reorder fault.
#[derive(Debug, Clone)]
struct Held {
    frame: Vec<u8>,
    due: Duration,
}

/// The fault stage of one segment.
#[derive(Debug, Clone)]
pub struct FaultStage {
    chance: WireFaults,
    rules: Vec<FaultRule>,
    rule_matches: Vec<u64>,
    rng: ChaCha8Rng,
    held: BTreeMap<PortId, Held>,
    counters: FaultCounters,
    events: Vec<FaultEvent>,
}

impl Default for FaultStage {
    fn default() -> Self {
        FaultStage::none()
    }
}

impl FaultStage {
    /// A stage that lets every frame through untouched.
    pub fn none() -> FaultStage {
        FaultStage {
            chance: WireFaults::default(),
            rules: Vec::new(),
            rule_matches: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(0),
            held: BTreeMap::new(),
            counters: FaultCounters::default(),
            events: Vec::new(),
        }
    }

    /// A stage with these probabilities and rules, drawing from a generator seeded with `seed`.
    pub fn new(seed: u64, chance: WireFaults, rules: Vec<FaultRule>) -> Result<FaultStage, FaultConfigError> {
        for (kind, value) in [
            (FaultKind::Drop, chance.drop),
            (FaultKind::Duplicate, chance.duplicate),
            (FaultKind::Reorder, chance.reorder),
            (FaultKind::Corrupt, chance.corrupt),
            (FaultKind::Delay, chance.delay),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(FaultConfigError::Probability { kind, value });
            }
        }
        if let Some(index) = rules.iter().position(|r| r.nth == Some(0)) {
            return Err(FaultConfigError::NthZero { index });
        }
        let delays =
            [("delay_by".to_string(), Some(chance.delay_by)), ("reorder_hold".to_string(), Some(chance.reorder_hold))]
                .into_iter()
                .chain(rules.iter().enumerate().map(|(i, r)| (format!("rule {i}"), r.delay)));
        for (what, delay) in delays {
            if let Some(Err(source)) = delay.map(crate::faults::check_delay) {
                return Err(FaultConfigError::Delay { what, source });
            }
        }
        Ok(FaultStage {
            rule_matches: vec![0; rules.len()],
            chance,
            rules,
            rng: ChaCha8Rng::seed_from_u64(seed),
            ..FaultStage::none()
        })
    }

    /// Whether the stage can never change a frame.
    pub fn is_transparent(&self) -> bool {
        let c = &self.chance;
        self.rules.is_empty()
            && self.held.is_empty()
            && c.drop == 0.0
            && c.duplicate == 0.0
            && c.reorder == 0.0
            && c.corrupt == 0.0
            && c.delay == 0.0
    }

    /// Counters so far.
    pub fn counters(&self) -> FaultCounters {
        self.counters
    }

    /// Take the events recorded since the last call.
    pub fn drain_events(&mut self) -> Vec<FaultEvent> {
        std::mem::take(&mut self.events)
    }

    /// Whether events are waiting for [`FaultStage::drain_events`].
    #[inline]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// When the earliest held frame is due, if any.
    #[inline]
    pub fn next_release(&self) -> Option<Duration> {
        if self.held.is_empty() {
            return None;
        }
        self.held.values().map(|h| h.due).min()
    }

    /// Release held frames due at or before `now`, earliest first (ties by port), as
    /// `(due, port, frame)`.
    pub fn release_due(&mut self, now: Duration) -> Vec<(Duration, PortId, Vec<u8>)> {
        let mut due: Vec<(Duration, PortId)> =
            self.held.iter().filter(|(_, h)| h.due <= now).map(|(p, h)| (h.due, *p)).collect();
        due.sort();
        due.into_iter().filter_map(|(at, port)| self.held.remove(&port).map(|h| (at, port, h.frame))).collect()
    }

    /// Forget a frame held for a port that is gone.
    pub fn forget_port(&mut self, port: PortId) {
        self.held.remove(&port);
    }

    /// If the stage is transparent, count a frame as having passed it untouched (as
    /// [`FaultStage::ingress`] would) and return `true`; otherwise count nothing and return
    /// `false` (the frame must go through [`FaultStage::ingress`]).
    pub fn pass_transparently(&mut self) -> bool {
        if !self.is_transparent() {
            return false;
        }
        self.counters.frames += 1;
        true
    }

    /// Pass `frame`, entering by `port` at `now`, through the stage; what goes on to the switch
    /// is appended to `out` in order.
    pub fn ingress(&mut self, now: Duration, port: PortId, mut frame: Vec<u8>, out: &mut Vec<Passed>) {
        self.counters.frames += 1;
        if self.is_transparent() {
            out.push(Passed { frame, extra_delay: Duration::ZERO });
            return;
        }
        let index = self.counters.frames;
        let (kind, cause, rule_delay) = self.decide(port, &frame);
        let bth = kind.and_then(|_| peek_bth(&frame)).map(|b| (b.opcode(), b.dest_qp(), b.psn()));
        let previously_held = self.held.remove(&port);
        let mut detail = 0;
        let mut applied = true;
        match kind {
            None => out.push(Passed { frame, extra_delay: Duration::ZERO }),
            Some(FaultKind::Drop) => {}
            Some(FaultKind::Duplicate) => {
                out.push(Passed { frame: frame.clone(), extra_delay: Duration::ZERO });
                out.push(Passed { frame, extra_delay: Duration::ZERO });
            }
            Some(FaultKind::Reorder) => {
                self.held.insert(port, Held { frame, due: now.saturating_add(self.chance.reorder_hold) });
            }
            Some(FaultKind::Corrupt) => {
                if frame.len() > ethernet::HEADER_LEN {
                    let bits = (frame.len() - ethernet::HEADER_LEN) as u64 * 8;
                    let bit = ethernet::HEADER_LEN as u64 * 8 + self.rng.random_range(0..bits);
                    frame[(bit / 8) as usize] ^= 1 << (bit % 8);
                    detail = bit;
                } else {
                    applied = false; // nothing past the Ethernet header to flip
                }
                out.push(Passed { frame, extra_delay: Duration::ZERO });
            }
            Some(FaultKind::Delay) => {
                let by = rule_delay.unwrap_or(self.chance.delay_by);
                detail = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
                out.push(Passed { frame, extra_delay: by });
            }
        }
        if let Some(h) = previously_held {
            out.push(Passed { frame: h.frame, extra_delay: Duration::ZERO });
        }
        if let (Some(kind), Some(cause), true) = (kind, cause, applied) {
            self.record(FaultEvent { at: now, port, frame: index, kind, cause, bth, detail });
        }
    }

    /// Which fault, if any, applies to this frame.
    fn decide(&mut self, port: PortId, frame: &[u8]) -> (Option<FaultKind>, Option<FaultCause>, Option<Duration>) {
        let mut fired = None;
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.matching.matches(port, frame) {
                self.rule_matches[i] += 1;
                if fired.is_none() && rule.nth.is_none_or(|n| n == self.rule_matches[i]) {
                    fired = Some((rule.kind, i, rule.delay));
                }
            }
        }
        // Draw for every enabled kind, whatever the rules said, so a frame's draws depend only
        // on its position in the stream.
        let c = self.chance;
        let mut by_chance = None;
        for (kind, p) in [
            (FaultKind::Drop, c.drop),
            (FaultKind::Corrupt, c.corrupt),
            (FaultKind::Duplicate, c.duplicate),
            (FaultKind::Reorder, c.reorder),
            (FaultKind::Delay, c.delay),
        ] {
            if p > 0.0 && self.rng.random::<f64>() < p && by_chance.is_none() {
                by_chance = Some(kind);
            }
        }
        match (fired, by_chance) {
            (Some((kind, i, delay)), _) => (Some(kind), Some(FaultCause::Rule(i)), delay),
            (None, Some(kind)) => (Some(kind), Some(FaultCause::Chance), None),
            (None, None) => (None, None, None),
        }
    }

    fn record(&mut self, event: FaultEvent) {
        let c = &mut self.counters;
        *match event.kind {
            FaultKind::Drop => &mut c.dropped,
            FaultKind::Duplicate => &mut c.duplicated,
            FaultKind::Reorder => &mut c.reordered,
            FaultKind::Corrupt => &mut c.corrupted,
            FaultKind::Delay => &mut c.delayed,
        } += 1;
        if self.events.len() < MAX_EVENTS {
            self.events.push(event);
        } else {
            c.events_lost += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::bth::BthRepr;
    use crate::net::ethernet::MacAddr;
    use crate::net::opcode::Opcode;
    use crate::net::roce::{BTH_OFFSET, IPV4_OFFSET, Path, RoceFrame, Transport, build_frame};

    fn roce(psn: u32, len: usize) -> Vec<u8> {
        let path = Path::between(MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]), 0x10);
        let mut f = Vec::new();
        build_frame(&path, &Transport::bth(BthRepr::new(Opcode::SendOnly, 0x10, psn)), &vec![0x5a; len], &mut f)
            .unwrap();
        f
    }

    const P0: PortId = PortId(0);
    const P1: PortId = PortId(1);

    /// Which of `n` frames the stage lets through unchanged and once, as a bit pattern.
    fn pattern(stage: &mut FaultStage, n: u32) -> Vec<bool> {
        let mut out = Vec::new();
        (0..n)
            .map(|psn| {
                out.clear();
                let f = roce(psn, 16);
                stage.ingress(Duration::from_nanos(u64::from(psn)), P0, f.clone(), &mut out);
                out.len() == 1 && out[0].frame == f
            })
            .collect()
    }

    #[test]
    fn the_same_seed_gives_the_same_decisions_and_another_seed_others() {
        let chance = WireFaults { drop: 0.1, ..WireFaults::default() };
        let a = pattern(&mut FaultStage::new(7, chance, vec![]).unwrap(), 10_000);
        let b = pattern(&mut FaultStage::new(7, chance, vec![]).unwrap(), 10_000);
        let c = pattern(&mut FaultStage::new(8, chance, vec![]).unwrap(), 10_000);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let dropped = a.iter().filter(|ok| !**ok).count();
        // Binomial(10000, 0.1): mean 1000, standard deviation 30.
        assert!((850..1150).contains(&dropped), "{dropped}");
    }

    #[test]
    fn every_kind_fires_at_about_its_rate_and_is_counted() {
        let chance =
            WireFaults { drop: 0.02, duplicate: 0.01, reorder: 0.02, corrupt: 0.01, delay: 0.03, ..Default::default() };
        let mut stage = FaultStage::new(42, chance, vec![]).unwrap();
        let n = 20_000u64;
        let mut out = Vec::new();
        for psn in 0..n {
            stage.ingress(Duration::ZERO, P0, roce(psn as u32, 8), &mut out);
        }
        let c = stage.counters();
        assert_eq!(c.frames, n);
        // Each kind is drawn in turn and the first hit wins, so later kinds fire a little less
        // often than their probability; all within wide bounds of n·p.
        for (got, p) in
            [(c.dropped, 0.02), (c.corrupted, 0.01), (c.duplicated, 0.01), (c.reordered, 0.02), (c.delayed, 0.03)]
        {
            let mean = n as f64 * p;
            assert!((got as f64) > mean * 0.7 && (got as f64) < mean * 1.3, "{got} vs {mean}");
        }
        let events = stage.drain_events();
        assert_eq!(events.len() as u64, c.dropped + c.corrupted + c.duplicated + c.reordered + c.delayed);
        assert!(events.iter().all(|e| e.cause == FaultCause::Chance && e.bth.is_some()));
        // Out = in - dropped + duplicated - (a frame possibly still held).
        let held = stage.release_due(Duration::MAX).len() as u64;
        assert_eq!(out.len() as u64 + held, n - c.dropped + c.duplicated);
    }

    #[test]
    fn corruption_flips_one_bit_past_the_ethernet_header_and_receivers_notice() {
        let chance = WireFaults { corrupt: 1.0, ..Default::default() };
        let mut stage = FaultStage::new(3, chance, vec![]).unwrap();
        let mut out = Vec::new();
        let mut noticed = 0;
        for psn in 0..2_000 {
            let f = roce(psn, 100);
            out.clear();
            stage.ingress(Duration::ZERO, P0, f.clone(), &mut out);
            let g = &out[0].frame;
            let diff: Vec<usize> = (0..f.len()).filter(|&i| f[i] != g[i]).collect();
            assert_eq!(diff.len(), 1);
            let i = diff[0];
            assert!(i >= 14);
            assert_eq!((f[i] ^ g[i]).count_ones(), 1);
            let event = stage.drain_events().pop().unwrap();
            assert_eq!(event.detail / 8, i as u64);
            // Only the BTH's variant byte (F, B, reserved: outside the ICRC) may change unnoticed.
            match RoceFrame::parse(g) {
                Err(_) => noticed += 1,
                Ok(_) => assert_eq!(i, BTH_OFFSET + 4, "undetected flip at byte {i} (IP at {IPV4_OFFSET})"),
            }
        }
        assert!(noticed > 1_900, "{noticed}");
    }

    #[test]
    fn rules_pick_frames_by_position_port_and_bth() {
        let rules = vec![
            FaultRule { matching: FrameMatch::default(), nth: Some(3), kind: FaultKind::Drop, delay: None },
            FaultRule {
                matching: FrameMatch { port: Some(P1), psn: Some(5), ..FrameMatch::default() },
                nth: None,
                kind: FaultKind::Duplicate,
                delay: None,
            },
            FaultRule {
                matching: FrameMatch { opcode: Some(Opcode::SendOnly.code()), psn: Some(7), ..FrameMatch::default() },
                nth: None,
                kind: FaultKind::Delay,
                delay: Some(Duration::from_millis(2)),
            },
        ];
        let mut stage = FaultStage::new(0, WireFaults::default(), rules).unwrap();
        let mut out = Vec::new();
        let mut run = |stage: &mut FaultStage, port, psn| {
            out.clear();
            stage.ingress(Duration::ZERO, port, roce(psn, 4), &mut out);
            out.iter().map(|p| p.extra_delay).collect::<Vec<_>>()
        };
        assert_eq!(run(&mut stage, P0, 1).len(), 1);
        assert_eq!(run(&mut stage, P0, 2).len(), 1);
        assert_eq!(run(&mut stage, P0, 3).len(), 0, "the 3rd frame is dropped");
        assert_eq!(run(&mut stage, P0, 4).len(), 1, "only the 3rd");
        assert_eq!(run(&mut stage, P0, 5).len(), 1, "PSN 5 from port 0: not the rule's port");
        assert_eq!(run(&mut stage, P1, 5).len(), 2, "PSN 5 from port 1: duplicated");
        assert_eq!(run(&mut stage, P1, 5).len(), 2, "every time");
        assert_eq!(run(&mut stage, P0, 7), vec![Duration::from_millis(2)]);
        let mut not_roce = roce(7, 4);
        not_roce[12] = 0x86;
        out.clear();
        stage.ingress(Duration::ZERO, P0, not_roce, &mut out);
        assert_eq!(out[0].extra_delay, Duration::ZERO, "BTH rules match RoCE frames only");
        let causes: Vec<(FaultKind, FaultCause)> = stage.drain_events().iter().map(|e| (e.kind, e.cause)).collect();
        assert_eq!(
            causes,
            vec![
                (FaultKind::Drop, FaultCause::Rule(0)),
                (FaultKind::Duplicate, FaultCause::Rule(1)),
                (FaultKind::Duplicate, FaultCause::Rule(1)),
                (FaultKind::Delay, FaultCause::Rule(2)),
            ]
        );
    }

    #[test]
    fn bad_configurations_are_refused() {
        let bad = WireFaults { drop: 1.5, ..Default::default() };
        assert!(matches!(
            FaultStage::new(0, bad, vec![]),
            Err(FaultConfigError::Probability { kind: FaultKind::Drop, .. })
        ));
        let nan = WireFaults { corrupt: f64::NAN, ..Default::default() };
        assert!(FaultStage::new(0, nan, vec![]).is_err());
        let rule = FaultRule { matching: FrameMatch::default(), nth: Some(0), kind: FaultKind::Drop, delay: None };
        assert_eq!(
            FaultStage::new(0, WireFaults::default(), vec![rule]).unwrap_err(),
            FaultConfigError::NthZero { index: 0 }
        );
    }

    #[test]
    fn events_read_well() {
        let e = FaultEvent {
            at: Duration::from_micros(5),
            port: P1,
            frame: 9,
            kind: FaultKind::Corrupt,
            cause: FaultCause::Chance,
            bth: Some((4, 0x10, 77)),
            detail: 8 * 50 + 3,
        };
        assert_eq!(
            e.to_string(),
            "5µs corrupt frame 9 from port 1: chance (opcode 0x04 QP 0x10 PSN 77), bit 3 of byte 50"
        );
    }
}
