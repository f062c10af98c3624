//! The NIC's RoCE engine as the driver holds it: the firmware channel and what the bring-up gave
//! the firmware ([`device`]), the objects made on it (regions, queue pairs), their limits, and
//! the one doorbell page they share.
//!
//! [`Roce`] is shared (by `Arc`) between the [`crate::Nic`] and every region and queue pair made
//! on it, so that closing the NIC can take their firmware objects and memory back while their
//! values still exist; a call on such a value then panics, as a call on a closed NIC does.

pub(crate) mod caps;
pub(crate) mod db;
pub(crate) mod device;
pub(crate) mod nq;
pub(crate) mod pbl;
pub(crate) mod queue;
pub(crate) mod rcfw;

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use bnxt_hsi::roce::command::Command;

use crate::error::Error;
use crate::nic::{Identity, Limits};
use bnxt_pci::PciFunction;
use caps::DevCaps;
use db::DbPage;
use device::Parts;
use nq::NqService;
use rcfw::Rcfw;

/// Memory the firmware was pointed at, held until it may be freed (after the firmware let go of
/// it, or after bus mastering is off).
pub(crate) struct Memory {
    bytes: usize,
    _held: Box<dyn Any + Send + Sync>,
}

impl Memory {
    /// Hold `value`, which owns `bytes` bytes of DMA memory.
    pub(crate) fn new(value: impl Any + Send + Sync, bytes: usize) -> Memory {
        Memory { bytes, _held: Box::new(value) }
    }

    /// Bytes of DMA memory held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// A firmware object made on the NIC (a region, a queue pair) that closing the NIC tears down.
pub(crate) trait Object: Send + Sync {
    /// Destroy it in the firmware (unless the NIC is wedged) and give back its memory, which the
    /// caller frees once the NIC can no longer reach it. Called at most once per object.
    fn teardown(&self, roce: &Roce) -> Vec<Memory>;
}

/// What a live NIC's RoCE engine is: what its bring-up learnt ([`Info`], which it derefs to),
/// the firmware channel, and the objects made on it.
pub(crate) struct Roce {
    info: Info,
    parts: Mutex<Parts>,
    /// The NQ, serviced on every poll of a CQ; taken at close.
    nq: Mutex<Option<NqService>>,
    wedged: Arc<OnceLock<String>>,
    closed: AtomicBool,
    qps: AtomicU32,
    regions: AtomicU32,
    objects: Mutex<BTreeMap<u64, Arc<dyn Object>>>,
    qp_errors: Mutex<HashMap<u32, Weak<AtomicBool>>>,
    orphans: Mutex<Vec<Memory>>,
    next_id: AtomicU64,
}

impl std::ops::Deref for Roce {
    type Target = Info;
    fn deref(&self) -> &Info {
        &self.info
    }
}

/// What a count is of, for [`Roce::acquire`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counted {
    /// Queue pairs.
    Qp,
    /// Regions.
    Region,
}

/// What the bring-up learnt.
pub(crate) struct Info {
    /// The NIC's name.
    pub name: String,
    /// Its PCI function, not kept held: regions and queue pairs of a closed NIC must not keep
    /// its function from being opened again.
    pub function: Weak<dyn PciFunction>,
    /// Its RoCE doorbell page.
    pub db: DbPage,
    /// What QUERY_FUNC said after INITIALIZE_FW.
    pub caps: DevCaps,
    /// Its identity on the fabric.
    pub identity: Identity,
    /// The hardware index ADD_GID gave its GID.
    pub gid_index: u16,
    /// The NQ its CQs notify.
    pub nq_ring_id: u16,
    /// The protection domain of every object (the first bnxt_re hands out, `bnxt_qplib_alloc_pd`).
    pub pd_id: u32,
    /// Queue pairs and regions it holds at once.
    pub limits: Limits,
    /// How long a command is waited for.
    pub command_timeout: std::time::Duration,
}

impl Roce {
    /// The engine the bring-up started, holding what it gave the firmware; `wedged` is the
    /// NIC's wedge state.
    pub(crate) fn new(info: Info, parts: Parts, nq: NqService, wedged: Arc<OnceLock<String>>) -> Roce {
        Roce {
            info,
            parts: Mutex::new(parts),
            nq: Mutex::new(Some(nq)),
            wedged,
            closed: AtomicBool::new(false),
            qps: AtomicU32::new(0),
            regions: AtomicU32::new(0),
            objects: Mutex::new(BTreeMap::new()),
            qp_errors: Mutex::new(HashMap::new()),
            orphans: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
        }
    }

    /// Panic with the contract's message if the NIC was closed.
    pub(crate) fn check_open(&self) {
        if self.closed.load(Ordering::Acquire) {
            panic!("{}: used after close (a closed NIC answers only name, bus and identity)", self.name);
        }
    }

    /// The NIC's function.
    ///
    /// # Panics
    ///
    /// On a closed NIC.
    pub(crate) fn function(&self) -> Arc<dyn PciFunction> {
        self.check_open();
        self.info.function.upgrade().expect("an open NIC holds its function")
    }

    /// How long a command is waited for before the NIC is called wedged.
    pub(crate) fn command_timeout(&self) -> std::time::Duration {
        self.info.command_timeout
    }

    /// Whether the NIC was closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn parts(&self) -> MutexGuard<'_, Parts> {
        // A panic mid-command leaves the channel as a wedged firmware would; carry on.
        self.parts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Send one command to the RoCE firmware and wait for its answer (commands run one at a time).
    pub(crate) fn command<C: Command>(&self, cmd: C) -> Result<C::Response, Error> {
        self.on_channel(|rcfw| rcfw.send(cmd))
    }

    fn on_channel<T>(&self, f: impl FnOnce(&mut Rcfw) -> Result<T, Error>) -> Result<T, Error> {
        self.check_open();
        let mut parts = self.parts();
        let rcfw = parts.rcfw.as_mut().expect("a live NIC has its RoCE channel");
        let r = f(rcfw);
        let errors = rcfw.take_qp_errors();
        drop(parts);
        self.note_qp_errors(errors);
        r
    }

    /// Whether a request or command went unanswered.
    pub(crate) fn is_wedged(&self) -> bool {
        self.wedged.get().is_some()
    }

    /// A new id for an object or a handle the firmware echoes (never 0).
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Count one more queue pair or region, or fail with the limit set at open.
    pub(crate) fn acquire(&self, what: Counted) -> Result<(), Error> {
        let (count, limit, name) = match what {
            Counted::Qp => (&self.qps, self.limits.qps, "queue pairs"),
            Counted::Region => (&self.regions, self.limits.regions, "regions"),
        };
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < limit).then_some(n + 1))
            .map(|_| ())
            .map_err(|_| Error::Limit { nic: self.name.clone(), what: name.into(), limit: u64::from(limit) })
    }

    /// Count one queue pair or region less.
    pub(crate) fn release(&self, what: Counted) {
        let count = match what {
            Counted::Qp => &self.qps,
            Counted::Region => &self.regions,
        };
        let _ = count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// Keep `object` to tear down at close, under `id`.
    pub(crate) fn register(&self, id: u64, object: Arc<dyn Object>) {
        self.objects.lock().unwrap_or_else(|e| e.into_inner()).insert(id, object);
    }

    /// Forget object `id` (it was torn down by its owner).
    pub(crate) fn unregister(&self, id: u64) {
        self.objects.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }

    /// Keep `memory` until close: a command that named it went unanswered or was refused, so
    /// the firmware may still use it.
    pub(crate) fn keep(&self, memory: Vec<Memory>) {
        self.orphans.lock().unwrap_or_else(|e| e.into_inner()).extend(memory);
    }

    /// Have `flag` set when the firmware reports queue pair `qpn` in error.
    pub(crate) fn watch_qp(&self, qpn: u32, flag: &Arc<AtomicBool>) {
        self.qp_errors.lock().unwrap_or_else(|e| e.into_inner()).insert(qpn, Arc::downgrade(flag));
    }

    /// Stop watching queue pair `qpn`.
    pub(crate) fn unwatch_qp(&self, qpn: u32) {
        self.qp_errors.lock().unwrap_or_else(|e| e.into_inner()).remove(&qpn);
    }

    fn note_qp_errors(&self, qpns: Vec<u32>) {
        if qpns.is_empty() {
            return;
        }
        let watched = self.qp_errors.lock().unwrap_or_else(|e| e.into_inner());
        for qpn in qpns {
            if let Some(flag) = watched.get(&qpn).and_then(Weak::upgrade) {
                flag.store(true, Ordering::Release);
            }
        }
    }

    /// Close: mark the engine closed (every later call on it or its objects panics), tear down
    /// every object still registered, then what the bring-up gave the firmware, in bnxt_re's
    /// order, over `hwrm` for the rings and the statistics context. The memory to free once the
    /// NIC can no longer reach it.
    pub(crate) fn shut_down(&self, hwrm: &mut crate::hwrm::Channel) -> Vec<Memory> {
        let mut memory = Vec::new();
        let objects: Vec<Arc<dyn Object>> = {
            let mut all = self.objects.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::take(&mut *all).into_values().rev().collect()
        };
        // Objects are torn down while commands may still be sent; then the engine is closed.
        for object in objects {
            memory.extend(object.teardown(self));
        }
        self.closed.store(true, Ordering::Release);
        memory.append(&mut self.orphans.lock().unwrap_or_else(|e| e.into_inner()));
        if let Some(nq) = self.nq.lock().unwrap_or_else(|e| e.into_inner()).take() {
            if !self.is_wedged() {
                nq.stop();
            }
            memory.push(nq.into_memory());
        }
        let parts = std::mem::take(&mut *self.parts());
        memory.extend(parts.undo(&self.name, hwrm));
        memory
    }

    /// Service the NQ, unless another thread is servicing it now (qplib_fp.c
    /// `bnxt_qplib_service_nq` runs under the NQ's lock; a poll never waits for another).
    pub(crate) fn service_nq(&self) {
        if let Ok(mut nq) = self.nq.try_lock()
            && let Some(nq) = nq.as_mut()
        {
            nq.service();
        }
    }

    /// What the NQ has taken so far (none once closed).
    #[cfg(test)]
    pub(crate) fn nq_counts(&self) -> Option<nq::NqCounts> {
        self.nq.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(NqService::counts)
    }

    /// Send a command during teardown (the engine may already be marked closed).
    pub(crate) fn teardown_command<C: Command>(&self, cmd: C) -> Result<C::Response, Error> {
        let mut parts = self.parts();
        match parts.rcfw.as_mut() {
            Some(rcfw) => rcfw.send(cmd),
            None => Err(Error::Wedged {
                nic: self.name.clone(),
                request: C::NAME.into(),
                wedged_by: "the RoCE channel's teardown".into(),
            }),
        }
    }
}
#[cfg(test)]
mod tests;
