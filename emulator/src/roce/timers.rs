//! The QPs' transport deadlines (retransmission, RNR wait), earliest first.
//!
//! A QP's deadline moves with nearly every frame it sends or takes in, so moving it must be
//! cheap: the new deadline is recorded for the QP and pushed onto a binary heap, and the entry
//! of the old one stays in the heap until it comes to the top, where it is recognised as stale
//! (the QP's recorded deadline differs) and dropped. What comes out is what a sorted set of
//! (deadline, QP) kept exact would give: every QP at most once per deadline it holds, in order
//! of deadline, then QP number.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::Duration;

/// Stale entries allowed beyond those of live deadlines before the heap is rebuilt.
const SLACK: usize = 64;

/// Each QP's deadline, and a heap of (deadline, QP) entries some of which may be stale.
#[derive(Debug, Default, Clone)]
pub(super) struct QpTimers {
    /// The deadline each QP holds.
    due: BTreeMap<u32, Duration>,
    /// Entries, earliest first; one is live when `due` holds its deadline for its QP.
    heap: BinaryHeap<Reverse<(Duration, u32)>>,
}

impl QpTimers {
    /// Forget every deadline.
    pub(super) fn clear(&mut self) {
        self.due.clear();
        self.heap.clear();
    }

    /// Set QP `qpn`'s deadline to `at`, or clear it (`None`).
    pub(super) fn set(&mut self, qpn: u32, at: Option<Duration>) {
        // A deadline that does not change leaves the heap as it was, its top live.
        let changed = match at {
            Some(t) => {
                let changed = self.due.insert(qpn, t) != Some(t);
                if changed {
                    self.heap.push(Reverse((t, qpn)));
                }
                changed
            }
            None => self.due.remove(&qpn).is_some(),
        };
        if changed {
            self.settle();
        }
    }

    /// The earliest deadline.
    pub(super) fn next(&self) -> Option<Duration> {
        self.heap.peek().map(|Reverse((t, _))| *t)
    }

    /// The QP whose deadline is earliest, if it is at or before `now`; its deadline is cleared.
    pub(super) fn pop_due(&mut self, now: Duration) -> Option<u32> {
        let &Reverse((t, qpn)) = self.heap.peek()?;
        if t > now {
            return None;
        }
        self.heap.pop();
        self.due.remove(&qpn);
        self.settle();
        Some(qpn)
    }

    /// Drop stale entries from the top (so that the top is live), and rebuild the heap from the
    /// live deadlines when stale ones outnumber them by too much.
    fn settle(&mut self) {
        if self.heap.len() > 2 * self.due.len() + SLACK {
            self.heap = self.due.iter().map(|(&q, &t)| Reverse((t, q))).collect();
            return;
        }
        while let Some(&Reverse((t, qpn))) = self.heap.peek() {
            if self.due.get(&qpn) == Some(&t) {
                break;
            }
            self.heap.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Every QP due at or before `now`, in the order they come out.
    fn drain(t: &mut QpTimers, now: Duration) -> Vec<u32> {
        std::iter::from_fn(|| t.pop_due(now)).collect()
    }

    #[test]
    fn deadlines_come_out_in_order_of_time_then_qp() {
        let mut t = QpTimers::default();
        t.set(5, Some(ms(30)));
        t.set(2, Some(ms(10)));
        t.set(9, Some(ms(10)));
        t.set(1, Some(ms(20)));
        assert_eq!(t.next(), Some(ms(10)));
        assert_eq!(drain(&mut t, ms(20)), [2, 9, 1]);
        assert_eq!(t.next(), Some(ms(30)));
        assert_eq!(drain(&mut t, ms(29)), Vec::<u32>::new());
        assert_eq!(drain(&mut t, ms(30)), [5]);
        assert_eq!(t.next(), None);
    }

    #[test]
    fn a_moved_or_cleared_deadline_does_not_fire_at_its_old_time() {
        let mut t = QpTimers::default();
        t.set(3, Some(ms(10)));
        t.set(3, Some(ms(50)));
        t.set(4, Some(ms(20)));
        t.set(4, None);
        assert_eq!(t.next(), Some(ms(50)));
        assert_eq!(drain(&mut t, ms(40)), Vec::<u32>::new());
        // Back to a time it held before: it fires once, not once per entry.
        t.set(3, Some(ms(10)));
        t.set(3, Some(ms(60)));
        t.set(3, Some(ms(10)));
        assert_eq!(drain(&mut t, ms(100)), [3]);
        assert_eq!(t.next(), None);
    }

    /// The queue against a sorted set kept exact, over a long run of moves, clears and firings.
    #[test]
    fn agrees_with_an_exact_sorted_set() {
        let mut t = QpTimers::default();
        let mut exact: BTreeSet<(Duration, u32)> = BTreeSet::new();
        let mut held: BTreeMap<u32, Duration> = BTreeMap::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut now = Duration::ZERO;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let qpn = (x % 7) as u32;
            match (x >> 8) % 8 {
                0 => {
                    if let Some(old) = held.remove(&qpn) {
                        exact.remove(&(old, qpn));
                    }
                    t.set(qpn, None);
                }
                1 => {
                    now += ms((x >> 16) % 5);
                    let mut want = Vec::new();
                    while let Some(&(at, q)) = exact.first().filter(|(at, _)| *at <= now) {
                        exact.remove(&(at, q));
                        held.remove(&q);
                        want.push(q);
                    }
                    assert_eq!(drain(&mut t, now), want);
                }
                _ => {
                    let at = now + ms((x >> 16) % 20);
                    if let Some(old) = held.insert(qpn, at) {
                        exact.remove(&(old, qpn));
                    }
                    exact.insert((at, qpn));
                    t.set(qpn, Some(at));
                }
            }
            assert_eq!(t.next(), exact.first().map(|(at, _)| *at));
            assert!(t.heap.len() <= 2 * t.due.len() + SLACK + 1);
        }
    }
}
