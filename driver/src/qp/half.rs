//! What both sides of a queue pair do alike: keep their ring's ledger and producer, take
//! completions from their CQ in entry order (flushing once the queue pair is in error), and
//! wait for them on the NIC's clock.

use std::sync::Arc;
use std::sync::MutexGuard;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Side;
use super::core::{QpCore, SideMem};
use super::cq::CqReader;
use super::ledger::Ledger;
use super::status::Completion;
use crate::roce::device::RING_SLOTS;
use crate::roce::queue::Cursor;
use crate::wait::{self, Waiter};

/// How a side takes one CQE of its CQ into its ledger.
pub(crate) type OnCqe = fn(&QpCore, &mut Ledger, &[u8; 32]);

/// One side of a queue pair.
pub(crate) struct Half {
    /// The queue pair.
    pub core: Arc<QpCore>,
    /// Its ring's entries.
    pub ledger: Ledger,
    /// Its producer, in slots.
    pub prod: Cursor,
    side: Side,
    cq: CqReader,
    on_cqe: OnCqe,
}

impl Half {
    /// The `side` of `core`, taking CQEs with `on_cqe`.
    pub(crate) fn new(core: Arc<QpCore>, side: Side, on_cqe: OnCqe) -> Half {
        let cq = CqReader::new(match side {
            Side::Send => core.scq,
            Side::Receive => core.rcq,
        });
        Half { core, ledger: Ledger::new(RING_SLOTS), prod: Cursor::default(), side, cq, on_cqe }
    }

    /// Entries outstanding (posted, completion not taken).
    pub(crate) fn outstanding(&self) -> usize {
        RING_SLOTS as usize - 1 - self.ledger.room()
    }

    /// The oldest entry's completion, if it has one (without waiting).
    pub(crate) fn poll(&mut self) -> Option<Completion> {
        self.core.check_usable("poll");
        if let Some(c) = self.ledger.take() {
            return Some(c);
        }
        let core = self.core.clone();
        // The doorbells rung so far reach the device before its completions are looked for.
        core.roce.function().flush_posted();
        {
            let guard = side_mem(&core, self.side);
            if let Some(mem) = guard.as_ref() {
                let (ledger, on_cqe) = (&mut self.ledger, self.on_cqe);
                self.cq.drain(&mem.cq, &core.roce.db, |cqe| on_cqe(&core, ledger, cqe));
            }
        }
        core.roce.service_nq();
        if core.errored.load(Ordering::Acquire) {
            self.ledger.flush();
        }
        self.ledger.take()
    }

    /// The oldest completion, waiting at most `timeout` for it on the NIC's clock (virtual time
    /// on the model), polling with backoff.
    pub(crate) fn wait(&mut self, timeout: Duration) -> Option<Completion> {
        // A completion already there is taken without reading the clock (polling takes no time,
        // so the deadline below is the same either way).
        if let Some(c) = self.poll() {
            return Some(c);
        }
        let function = self.core.roce.function();
        let mut waiter = Waiter::new(function.clock(), timeout, wait::CQ_COMPLETION);
        loop {
            // A wait the clock cut short ends as one that ran out of time: no completion yet
            // (the one who cut it short knows why).
            if !waiter.pause().unwrap_or(false) {
                return self.poll();
            }
            if let Some(c) = self.poll() {
                return Some(c);
            }
        }
    }
}

fn side_mem(core: &QpCore, side: Side) -> MutexGuard<'_, Option<SideMem>> {
    match side {
        Side::Send => core.send_mem(),
        Side::Receive => core.recv_mem(),
    }
}

/// The methods both sides offer alike, on their `half`.
macro_rules! ring_methods {
    ($side:ty) => {
        impl $side {
            /// More entries the ring takes now.
            pub fn room(&self) -> usize {
                self.half.ledger.room()
            }

            /// The oldest entry's completion, if it has one (without waiting).
            ///
            /// # Panics
            ///
            /// On a closed NIC or a destroyed queue pair.
            pub fn poll(&mut self) -> Option<$crate::qp::Completion> {
                self.half.poll()
            }

            /// The oldest entry's completion, waiting at most `timeout` for it on the NIC's
            /// clock (so on the model it costs virtual time).
            ///
            /// # Panics
            ///
            /// On a closed NIC or a destroyed queue pair.
            pub fn wait(&mut self, timeout: std::time::Duration) -> Option<$crate::qp::Completion> {
                self.half.wait(timeout)
            }
        }
    };
}

pub(crate) use ring_methods;
