//! The served NIC's link to a segment outside the process (a `bnxt-model segment` hub): the wire
//! fault stage its frames pass on their way out, and the frames a fault delays or holds back
//! until they are due.
//!
//! On the in-process model every frame a NIC sends passes the segment's one fault stage. Across
//! processes each server applies the run's wire plan to the frames of its own NIC only, as they
//! leave for the hub; frames arriving from the hub have passed their sender's stage already and
//! enter the NIC's segment untouched. So each frame meets the plan once, as on the model; the
//! draws are per sending NIC (each server's generator is seeded from the run's seed and the
//! NIC's index in the run), and on the real clock they are not the same run to run, since
//! retransmissions depend on timing.

use std::time::Duration;

use bnxt_model::faults::{WirePlan, WirePlanError};
use bnxt_model::net::fault::{FaultCounters, FaultEvent, FaultStage, Passed};
use bnxt_model::net::switch::PortId;

/// Mixed into the run's seed for the uplink's fault stage (with the NIC's index), so its draws
/// follow neither the model's other random choices nor another NIC's.
const UPLINK_SEED_SALT: u64 = 0x7570_6c69_6e6b_0000;

/// splitmix64's finaliser (Steele, Lea, Flood 2014): spreads a seed and an index apart.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The seed of the fault stage of the uplink of NIC `nic` of a run seeded with `seed`.
pub fn stage_seed(seed: u64, nic: usize) -> u64 {
    mix(seed ^ UPLINK_SEED_SALT ^ mix(nic as u64))
}

/// A frame a fault delayed, with when it goes and its place among frames due at once.
#[derive(Debug)]
struct Delayed {
    due: Duration,
    seq: u64,
    frame: Vec<u8>,
}

/// The way out of the process for the NIC's frames.
#[derive(Debug)]
pub struct Uplink {
    /// The world's switch port the frames come out of.
    port: PortId,
    stage: FaultStage,
    /// Frames a fault delayed, in the order they go (due time, then arrival).
    delayed: Vec<Delayed>,
    seq: u64,
}

impl Uplink {
    /// The link at the world's external port `port`, its frames passing a stage for `plan`,
    /// seeded with `seed` (see [`stage_seed`]). A rule of the plan may name NIC 0 only: the
    /// server's one NIC.
    pub fn new(port: PortId, plan: &WirePlan, seed: u64) -> Result<Uplink, WirePlanError> {
        Ok(Uplink { port, stage: plan.stage(seed, &[port])?, delayed: Vec::new(), seq: 0 })
    }

    /// The world's port the link takes its frames from.
    pub fn port(&self) -> PortId {
        self.port
    }

    /// Pass `frames` (what the NIC's segment sent out by `now`, in order) through the fault
    /// stage and append to `out` what goes to the hub now, in order: first the frames held or
    /// delayed earlier that are due by `now`, then what passes of `frames`.
    pub fn outgoing(&mut self, now: Duration, frames: Vec<Vec<u8>>, out: &mut Vec<Vec<u8>>) {
        self.release_due(now, out);
        let mut passed: Vec<Passed> = Vec::new();
        for frame in frames {
            self.stage.ingress(now, self.port, frame, &mut passed);
            for p in passed.drain(..) {
                if p.extra_delay.is_zero() {
                    out.push(p.frame);
                } else {
                    self.delay(now.saturating_add(p.extra_delay), p.frame);
                }
            }
        }
    }

    /// Frames held back (reorder) or delayed whose time has come by `now`, in order.
    fn release_due(&mut self, now: Duration, out: &mut Vec<Vec<u8>>) {
        for (due, _, frame) in self.stage.release_due(now) {
            self.delay(due, frame);
        }
        let ready = self.delayed.partition_point(|d| d.due <= now);
        out.extend(self.delayed.drain(..ready).map(|d| d.frame));
    }

    fn delay(&mut self, due: Duration, frame: Vec<u8>) {
        self.seq += 1;
        let at = self.delayed.partition_point(|d| (d.due, d.seq) <= (due, self.seq));
        self.delayed.insert(at, Delayed { due, seq: self.seq, frame });
    }

    /// When a held or delayed frame is next due, if any waits.
    pub fn next_deadline(&self) -> Option<Duration> {
        let delayed = self.delayed.first().map(|d| d.due);
        match (delayed, self.stage.next_release()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// What the fault stage did so far.
    pub fn counters(&self) -> FaultCounters {
        self.stage.counters()
    }

    /// The faults that fired since the last call.
    pub fn take_fault_events(&mut self) -> Vec<FaultEvent> {
        self.stage.drain_events()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bnxt_model::faults::{WireFaultKind, WireRule};

    fn rule(kind: WireFaultKind, nth: u64) -> WireRule {
        WireRule { nic: Some(0), opcode: None, psn: None, dest_qp: None, nth: Some(nth), kind, delay: None }
    }

    fn frame(n: u8) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[59] = n;
        f
    }

    #[test]
    fn without_faults_frames_go_at_once_in_order() {
        let mut up = Uplink::new(PortId(3), &WirePlan::default(), 1).unwrap();
        let mut out = Vec::new();
        up.outgoing(Duration::ZERO, vec![frame(1), frame(2)], &mut out);
        assert_eq!(out, vec![frame(1), frame(2)]);
        assert_eq!(up.next_deadline(), None);
        assert_eq!(up.counters().frames, 2);
    }

    #[test]
    fn rules_drop_duplicate_delay_and_reorder_the_frames_they_name() {
        let mut plan = WirePlan {
            rules: vec![rule(WireFaultKind::Drop, 1), rule(WireFaultKind::Duplicate, 2)],
            ..WirePlan::default()
        };
        plan.rules.push(WireRule { delay: Some(Duration::from_micros(30)), ..rule(WireFaultKind::Delay, 3) });
        plan.rules.push(rule(WireFaultKind::Reorder, 4));
        let mut up = Uplink::new(PortId(0), &plan, 1).unwrap();
        let mut out = Vec::new();
        let t = Duration::from_micros(10);
        up.outgoing(t, vec![frame(1), frame(2), frame(3), frame(4)], &mut out);
        assert_eq!(out, vec![frame(2), frame(2)], "1 dropped, 2 twice, 3 delayed, 4 held");
        assert_eq!(up.next_deadline(), Some(t + Duration::from_micros(30)), "3 is due before 4's hold (50 µs) ends");
        out.clear();
        up.outgoing(t + Duration::from_micros(5), vec![frame(5)], &mut out);
        assert_eq!(out, vec![frame(5), frame(4)], "the held frame goes after the next one");
        out.clear();
        up.outgoing(t + Duration::from_micros(30), Vec::new(), &mut out);
        assert_eq!(out, vec![frame(3)]);
        assert_eq!(up.next_deadline(), None);
        let c = up.counters();
        assert_eq!((c.frames, c.dropped, c.duplicated, c.delayed, c.reordered), (5, 1, 1, 1, 1));
        assert_eq!(up.take_fault_events().len(), 4);
    }

    #[test]
    fn a_held_frame_with_no_next_one_goes_when_its_hold_ends() {
        let plan = WirePlan { rules: vec![rule(WireFaultKind::Reorder, 1)], ..WirePlan::default() };
        let mut up = Uplink::new(PortId(0), &plan, 1).unwrap();
        let mut out = Vec::new();
        up.outgoing(Duration::ZERO, vec![frame(1)], &mut out);
        assert!(out.is_empty());
        let due = up.next_deadline().expect("held until its hold ends");
        up.outgoing(due - Duration::from_nanos(1), Vec::new(), &mut out);
        assert!(out.is_empty(), "not before");
        up.outgoing(due, Vec::new(), &mut out);
        assert_eq!(out, vec![frame(1)]);
    }

    #[test]
    fn a_rule_naming_another_nic_is_refused_and_seeds_differ_by_nic() {
        let plan =
            WirePlan { rules: vec![WireRule { nic: Some(1), ..rule(WireFaultKind::Drop, 1) }], ..WirePlan::default() };
        let err = Uplink::new(PortId(0), &plan, 1).unwrap_err();
        assert!(err.to_string().contains("names NIC 1"), "{err}");
        assert_ne!(stage_seed(5, 0), stage_seed(5, 1));
        assert_eq!(stage_seed(5, 1), stage_seed(5, 1));
    }

    #[test]
    fn chance_faults_follow_the_seed() {
        let plan = WirePlan { drop: 0.5, ..WirePlan::default() };
        let run = |seed| {
            let mut up = Uplink::new(PortId(0), &plan, seed).unwrap();
            let mut out = Vec::new();
            up.outgoing(Duration::ZERO, (0..64).map(frame).collect(), &mut out);
            out
        };
        assert_eq!(run(stage_seed(1, 0)), run(stage_seed(1, 0)));
        assert_ne!(run(stage_seed(1, 0)), run(stage_seed(1, 1)));
        let kept = run(stage_seed(1, 0)).len();
        assert!((10..54).contains(&kept), "about half of 64 kept: {kept}");
    }
}
