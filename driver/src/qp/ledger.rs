//! One ring's entries from posting to the taking of their completions: the software side of a
//! send or receive queue (bnxt_re's `swq` list, qplib_fp.c `bnxt_qplib_get_swqe`,
//! `bnxt_qplib_cq_process_req`, `__flush_sq`, `__flush_rq`).
//!
//! Entries complete in the order they were posted. The hardware reports them by ring index
//! (a requester CQE says how far the send queue got, a responder CQE which receive it filled);
//! an entry's slot is free again once its completion has been taken.

use std::collections::VecDeque;

use super::status::{Completion, Status};

/// Why a completion from the hardware was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stale {
    /// It names an entry that is not outstanding.
    NotOutstanding {
        /// The ring index it names.
        index: u32,
        /// The index of the oldest entry without a completion.
        next: u32,
        /// Entries without a completion.
        pending: usize,
    },
}

/// The entries of one ring of `entries` slots.
#[derive(Debug)]
pub(crate) struct Ledger {
    slots: u32,
    posted: VecDeque<(u64, Option<Completion>)>,
    /// Ring index of `posted[0]`.
    head: u32,
    /// `posted[..done]` have completions.
    done: usize,
}

impl Ledger {
    /// A ledger for a ring of `slots` slots, one of which is always left empty.
    pub(crate) fn new(slots: u32) -> Ledger {
        Ledger { slots, posted: VecDeque::new(), head: 0, done: 0 }
    }

    /// Entries the ring takes before it is full.
    pub(crate) fn room(&self) -> usize {
        self.slots as usize - 1 - self.posted.len()
    }

    /// Record a new entry of `bytes`; its ring index.
    ///
    /// # Panics
    ///
    /// If the ring is full (the caller checks [`Ledger::room`]).
    pub(crate) fn post(&mut self, bytes: u64) -> u32 {
        assert!(self.room() > 0, "posting to a full ring");
        let index = self.index_of(self.posted.len());
        self.posted.push_back((bytes, None));
        index
    }

    fn index_of(&self, i: usize) -> u32 {
        ((u64::from(self.head) + i as u64) % u64::from(self.slots)) as u32
    }

    /// Ring index of the oldest entry without a completion.
    pub(crate) fn next_index(&self) -> u32 {
        self.index_of(self.done)
    }

    /// Entries without a completion.
    pub(crate) fn pending(&self) -> usize {
        self.posted.len() - self.done
    }

    /// The hardware finished every entry before ring index `upto` (a requester CQE's
    /// `sq_cons_idx`): all complete `ok`, but the last one with `last` when `last` is not `ok`
    /// (bnxt_qplib_cq_process_req). How many completed.
    pub(crate) fn complete_upto(&mut self, upto: u32, last: Status) -> Result<usize, Stale> {
        let next = self.next_index();
        let n = ((u64::from(upto) + u64::from(self.slots) - u64::from(next)) % u64::from(self.slots)) as usize;
        if n > self.pending() {
            return Err(Stale::NotOutstanding { index: upto, next, pending: self.pending() });
        }
        for k in 0..n {
            let status = if k + 1 == n { last } else { Status::Ok };
            self.finish(status, None);
        }
        Ok(n)
    }

    /// The hardware finished the entry at ring index `index` (a responder CQE's `wr_id`), which
    /// must be the oldest without a completion, with `status` and `bytes`.
    pub(crate) fn complete_one(&mut self, index: u32, status: Status, bytes: u64) -> Result<(), Stale> {
        let next = self.next_index();
        if index != next || self.pending() == 0 {
            return Err(Stale::NotOutstanding { index, next, pending: self.pending() });
        }
        self.finish(status, Some(bytes));
        Ok(())
    }

    fn finish(&mut self, status: Status, bytes: Option<u64>) {
        let entry = &mut self.posted[self.done];
        let bytes = bytes.unwrap_or(if status == Status::Flushed { 0 } else { entry.0 });
        entry.1 = Some(Completion { bytes, status });
        self.done += 1;
    }

    /// Complete every entry still without a completion as `flushed`.
    pub(crate) fn flush(&mut self) {
        while self.pending() > 0 {
            self.finish(Status::Flushed, Some(0));
        }
    }

    /// Take the oldest entry's completion, if it has one; its slot is free from then on.
    pub(crate) fn take(&mut self) -> Option<Completion> {
        let completion = self.posted.front()?.1?;
        self.posted.pop_front();
        self.done -= 1;
        self.head = (self.head + 1) % self.slots;
        Some(completion)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_of_n_slots_takes_n_minus_one_entries_and_frees_a_slot_per_completion_taken() {
        let mut l = Ledger::new(4096);
        for i in 0..4095 {
            assert_eq!(l.post(i), i as u32);
        }
        assert_eq!(l.room(), 0);
        assert_eq!(l.complete_upto(10, Status::Ok), Ok(10));
        assert_eq!(l.room(), 0, "completions not yet taken keep their slots");
        assert_eq!(l.take(), Some(Completion { bytes: 0, status: Status::Ok }));
        assert_eq!(l.room(), 1);
        assert_eq!(l.post(7), 4095, "the next index");
        assert_eq!(l.take().unwrap().bytes, 1);
        assert_eq!(l.post(8), 0, "wraps");
    }

    #[test]
    fn an_aggregated_requester_completion_gives_its_status_to_the_last_entry_only() {
        let mut l = Ledger::new(8);
        for b in [10, 20, 30] {
            l.post(b);
        }
        assert_eq!(l.complete_upto(3, Status::RetryExceeded), Ok(3));
        let got: Vec<_> = std::iter::from_fn(|| l.take()).collect();
        assert_eq!(
            got,
            [
                Completion { bytes: 10, status: Status::Ok },
                Completion { bytes: 20, status: Status::Ok },
                Completion { bytes: 30, status: Status::RetryExceeded },
            ]
        );
    }

    #[test]
    fn completions_for_entries_not_outstanding_are_refused() {
        let mut l = Ledger::new(8);
        l.post(1);
        assert_eq!(l.complete_upto(3, Status::Ok), Err(Stale::NotOutstanding { index: 3, next: 0, pending: 1 }));
        assert_eq!(l.complete_one(1, Status::Ok, 5), Err(Stale::NotOutstanding { index: 1, next: 0, pending: 1 }));
        assert_eq!(l.complete_upto(0, Status::Ok), Ok(0), "nothing new");
        assert_eq!(l.complete_one(0, Status::LocalLength, 9), Ok(()));
        assert_eq!(l.take(), Some(Completion { bytes: 9, status: Status::LocalLength }));
    }

    #[test]
    fn a_flush_completes_the_rest_in_order_after_those_already_done() {
        let mut l = Ledger::new(8);
        for b in [1, 2, 3] {
            l.post(b);
        }
        l.complete_upto(1, Status::Ok).unwrap();
        l.flush();
        let got: Vec<_> = std::iter::from_fn(|| l.take()).map(|c| (c.bytes, c.status)).collect();
        assert_eq!(got, [(1, Status::Ok), (0, Status::Flushed), (0, Status::Flushed)]);
        assert_eq!(l.take(), None);
    }
}
