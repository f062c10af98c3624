//! A priority queue for items due at a time, taken in order of their key (time, then a sequence
//! number), that is cheap when items arrive in key order.
//!
//! The switch's frames mostly do: frames to one port leave it in the order they entered, and a
//! burst from one sender is queued back to back. Items whose key is not below the last one in
//! the in-order list go on its end (O(1), nothing moved); the others go into a binary heap. The
//! smaller of the two heads comes out first, so the order is exactly that of one binary heap
//! over every item (keys are distinct: the sequence number never repeats).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

/// What orders an item: due time, then sequence number (distinct between items).
pub trait Keyed {
    /// The item's key.
    fn key(&self) -> (Duration, u64);
}

/// Wraps an item for the heap, ordered by key alone.
#[derive(Debug, Clone)]
struct ByKey<T>(T);

impl<T: Keyed> PartialEq for ByKey<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0.key() == other.0.key()
    }
}

impl<T: Keyed> Eq for ByKey<T> {}

impl<T: Keyed> PartialOrd for ByKey<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: Keyed> Ord for ByKey<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.key().cmp(&other.0.key())
    }
}

/// Items taken smallest key first.
#[derive(Debug, Clone)]
pub struct TimeQueue<T> {
    /// Items in increasing key order.
    in_order: VecDeque<T>,
    /// Items that came out of order.
    heap: BinaryHeap<Reverse<ByKey<T>>>,
}

impl<T> Default for TimeQueue<T> {
    fn default() -> Self {
        TimeQueue { in_order: VecDeque::new(), heap: BinaryHeap::new() }
    }
}

impl<T: Keyed> TimeQueue<T> {
    /// An empty queue.
    pub fn new() -> TimeQueue<T> {
        TimeQueue::default()
    }

    /// Queue `item`.
    pub fn push(&mut self, item: T) {
        if self.in_order.back().is_none_or(|last| last.key() < item.key()) {
            self.in_order.push_back(item);
        } else {
            self.heap.push(Reverse(ByKey(item)));
        }
    }

    /// Whether the smallest item comes from the heap rather than the in-order list.
    fn heap_first(&self) -> bool {
        match (self.in_order.front(), self.heap.peek()) {
            (Some(a), Some(Reverse(ByKey(b)))) => b.key() < a.key(),
            (None, Some(_)) => true,
            _ => false,
        }
    }

    /// The item with the smallest key.
    pub fn peek(&self) -> Option<&T> {
        if self.heap_first() { self.heap.peek().map(|Reverse(ByKey(b))| b) } else { self.in_order.front() }
    }

    /// Take the item with the smallest key.
    pub fn pop(&mut self) -> Option<T> {
        if self.heap_first() { self.heap.pop().map(|Reverse(ByKey(b))| b) } else { self.in_order.pop_front() }
    }

    /// Number of items queued.
    pub fn len(&self) -> usize {
        self.in_order.len() + self.heap.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.in_order.is_empty() && self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    struct Item(Duration, u64);

    impl Keyed for Item {
        fn key(&self) -> (Duration, u64) {
            (self.0, self.1)
        }
    }

    #[test]
    fn items_come_out_as_from_one_binary_heap_whatever_order_they_went_in() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for round in 0..200 {
            let mut q = TimeQueue::new();
            let mut heap = BinaryHeap::new();
            let mut seq = 0;
            let mut base = 0u64;
            for _ in 0..300 {
                // Mostly in order (bursts), sometimes earlier, sometimes equal times; pops
                // interleaved with pushes.
                if rng.random_range(0..4) == 0 {
                    assert_eq!(q.pop(), heap.pop().map(|Reverse(i)| i), "round {round}");
                    assert_eq!(q.len(), heap.len());
                    continue;
                }
                base += rng.random_range(0..3);
                let at = if rng.random_range(0..5) == 0 { base.saturating_sub(rng.random_range(0..10)) } else { base };
                seq += 1;
                let item = Item(Duration::from_nanos(at), seq);
                q.push(item);
                heap.push(Reverse(item));
                assert_eq!(q.peek().copied(), heap.peek().map(|Reverse(i)| *i));
            }
            while let Some(Reverse(i)) = heap.pop() {
                assert_eq!(q.pop(), Some(i), "round {round}");
            }
            assert!(q.is_empty() && q.pop().is_none() && q.peek().is_none());
        }
    }
}
