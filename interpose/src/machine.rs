//! The machine whose functions carry the layer: faults by NIC index, counts of each request and
//! command kept per NIC across opens (as the model counts since it was made), and the memory a
//! layer gave the device kept until the NIC is next reset.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bnxt_model::faults::FaultPlan;
use bnxt_pci::{DmaBuffer, Machine, PciError, PciFunction};

use crate::function::SeamFunction;

/// One thing the layer did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeamLine {
    /// When, on the function's clock.
    pub at: Duration,
    /// The NIC's index.
    pub nic: usize,
    /// What it did, in words (`VER_GET #1: no-response: not passed on`).
    pub text: String,
}

/// What lasts for one NIC across the functions the machine hands out for it.
#[derive(Default)]
pub(crate) struct NicShared {
    hwrm_seen: HashMap<u16, u32>,
    roce_seen: HashMap<u8, u32>,
    /// Memory an earlier function of this NIC gave the device, kept until the NIC is reset.
    retired: Vec<DmaBuffer>,
}

impl NicShared {
    /// Count one more request of `req_type`; its occurrence (from 1).
    pub(crate) fn count_hwrm(&mut self, req_type: u16) -> u32 {
        let n = self.hwrm_seen.entry(req_type).or_insert(0);
        *n = n.saturating_add(1);
        *n
    }

    /// Count one more command with `opcode`; its occurrence (from 1).
    pub(crate) fn count_roce(&mut self, opcode: u8) -> u32 {
        let n = self.roce_seen.entry(opcode).or_insert(0);
        *n = n.saturating_add(1);
        *n
    }

    /// Keep `memory` until the NIC is reset.
    pub(crate) fn retire(&mut self, memory: Vec<DmaBuffer>) {
        self.retired.extend(memory);
    }

    /// The NIC was reset: what was kept may go.
    pub(crate) fn reset(&mut self) -> Vec<DmaBuffer> {
        std::mem::take(&mut self.retired)
    }
}

/// The layer's log, shared by the functions of one machine.
#[derive(Default)]
pub(crate) struct Log {
    lines: Mutex<Vec<SeamLine>>,
}

impl Log {
    pub(crate) fn say(&self, at: Duration, nic: usize, text: String) {
        tracing::info!(target: crate::TARGET, nic, "{text}");
        lock(&self.lines).push(SeamLine { at, nic, text });
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The layer's state is whole between calls; a panic elsewhere leaves it usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A machine whose functions inject a fault plan's firmware faults (HWRM requests and RoCE
/// commands; wire faults are not the seam's to inject).
pub struct Interposed<M> {
    inner: M,
    plan: Arc<FaultPlan>,
    nics: Mutex<HashMap<usize, Arc<Mutex<NicShared>>>>,
    log: Arc<Log>,
}

impl<M: Machine> Interposed<M> {
    /// `inner`, its NIC *i* injecting the faults of `plan` that name NIC *i*.
    pub fn new(inner: M, plan: FaultPlan) -> Interposed<M> {
        Interposed { inner, plan: Arc::new(plan), nics: Mutex::new(HashMap::new()), log: Arc::default() }
    }

    /// The machine underneath.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// What the layer did since the last call, in order.
    pub fn take_log(&self) -> Vec<SeamLine> {
        std::mem::take(&mut *lock(&self.log.lines))
    }

    fn faulty(&self, nic: usize) -> bool {
        self.plan.firmware.iter().any(|f| f.nic == nic) || self.plan.roce_commands.iter().any(|f| f.nic == nic)
    }
}

impl<M: Machine> Machine for Interposed<M> {
    fn buses(&self) -> Result<Vec<String>, PciError> {
        self.inner.buses()
    }

    fn take(&self, bus: &str) -> Result<Arc<dyn PciFunction>, PciError> {
        let function = self.inner.take(bus)?;
        let Some(nic) = self.inner.buses()?.iter().position(|b| b == bus) else { return Ok(function) };
        if !self.faulty(nic) {
            return Ok(function);
        }
        let shared = lock(&self.nics).entry(nic).or_default().clone();
        Ok(Arc::new(SeamFunction::new(function, nic, self.plan.clone(), shared, self.log.clone())))
    }
}
