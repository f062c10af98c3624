//! The machine whose functions carry the layer: faults by NIC index, counts of each request and
//! command kept per NIC across opens (as the model counts since it was made), the faults armed
//! while the run goes on, and the memory a layer gave the device kept until the NIC is next reset.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bnxt_model::armed::{Action, ArmError, ArmedFault, ArmedFaults, Target};
use bnxt_model::faults::{CommandAction, FaultPlan, FirmwareAction};
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
    /// Faults armed while the run goes on ([`Interposed::arm`]), looked at before the plan's.
    armed: ArmedFaults,
    /// The id the next armed fault gets.
    next_id: u64,
    /// Memory an earlier function of this NIC gave the device, kept until the NIC is reset.
    retired: Vec<DmaBuffer>,
}

impl NicShared {
    /// Count one more request of `req_type`: its occurrence (from 1), and the armed fault it
    /// sets off, if one does (its id and action).
    pub(crate) fn count_hwrm(&mut self, req_type: u16) -> (u32, Option<(u64, FirmwareAction)>) {
        let n = self.hwrm_seen.entry(req_type).or_insert(0);
        *n = n.saturating_add(1);
        let nth = *n;
        match self.armed.fire(Target::Hwrm(req_type), nth) {
            Some((id, Action::Hwrm(action))) => (nth, Some((id, action))),
            // `ArmedFault::new` pairs HWRM targets with HWRM actions only.
            _ => (nth, None),
        }
    }

    /// Count one more command with `opcode`: its occurrence (from 1), and the armed fault it
    /// sets off, if one does.
    pub(crate) fn count_roce(&mut self, opcode: u8) -> (u32, Option<(u64, CommandAction)>) {
        let n = self.roce_seen.entry(opcode).or_insert(0);
        *n = n.saturating_add(1);
        let nth = *n;
        match self.armed.fire(Target::Roce(opcode), nth) {
            Some((id, Action::Roce(action))) => (nth, Some((id, action))),
            _ => (nth, None),
        }
    }

    /// Arm a fault on `target` from now on: `nth` and `count` count from the requests seen so
    /// far, as the model's armed faults do ([`bnxt_model::armed`]). Its id (from 1).
    fn arm(&mut self, target: Target, nth: Option<u32>, count: Option<u32>, action: Action) -> Result<u64, ArmError> {
        let seen = match target {
            Target::Hwrm(req_type) => self.hwrm_seen.get(&req_type),
            Target::Roce(opcode) => self.roce_seen.get(&opcode),
        };
        let id = self.next_id.saturating_add(1);
        self.armed.arm(ArmedFault::new(id, target, seen.copied().unwrap_or(0), nth, count, action)?);
        self.next_id = id;
        Ok(id)
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

/// Why a fault cannot be armed at the seam while the run goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    /// The NIC's functions are handed out without the layer.
    #[error("NIC {nic} is handed out without the layer in front of it: name it with `Interposed::live` before the run")]
    NotLive {
        /// The NIC.
        nic: usize,
    },
    /// A RoCE command fault on a NIC whose CMDQ and CREQ are not the layer's.
    #[error(
        "a RoCE command fault on NIC {nic} needs the layer's CMDQ and CREQ from the NIC's first open; the NIC was \
         made ready for HWRM faults only"
    )]
    NoCommandQueue {
        /// The NIC.
        nic: usize,
    },
    /// A malformed answer: the seam holds answers back, it does not forge them.
    #[error(
        "`{action}` is a malformed answer, which only the device's firmware writes; the seam withholds, delays and \
         refuses"
    )]
    Malformed {
        /// The action's name.
        action: &'static str,
    },
    /// The fault does not hold together (an action of the other channel, `nth` or `count` 0).
    #[error(transparent)]
    Arm(#[from] ArmError),
}

/// A machine whose functions inject a fault plan's firmware faults (HWRM requests and RoCE
/// commands; wire faults are not the seam's to inject), and faults armed while the run goes on
/// ([`Interposed::arm`]) on the NICs named for them ([`Interposed::live`]).
pub struct Interposed<M> {
    inner: M,
    plan: Arc<FaultPlan>,
    /// NICs that may have faults armed mid-run, and whether RoCE command faults among them.
    live: HashMap<usize, bool>,
    nics: Mutex<HashMap<usize, Arc<Mutex<NicShared>>>>,
    log: Arc<Log>,
}

impl<M: Machine> Interposed<M> {
    /// `inner`, its NIC *i* injecting the faults of `plan` that name NIC *i*.
    pub fn new(inner: M, plan: FaultPlan) -> Interposed<M> {
        Interposed {
            inner,
            plan: Arc::new(plan),
            live: HashMap::new(),
            nics: Mutex::new(HashMap::new()),
            log: Arc::default(),
        }
    }

    /// The same, with NIC `nic` ready for faults armed while the run goes on: its functions
    /// carry the layer even where the plan names nothing of it, and with `roce` the layer
    /// stands in for its CMDQ and CREQ from its first open (which it can only do from the
    /// CREQ's making on), so that RoCE command faults can be armed on it too.
    pub fn live(mut self, nic: usize, roce: bool) -> Interposed<M> {
        *self.live.entry(nic).or_default() |= roce;
        self
    }

    /// Arm a fault on NIC `nic` from now on, as the model arms one ([`bnxt_model::armed`]):
    /// `nth` counts from the requests of that type the layer has seen (1 = the next), and the
    /// fault fires `count` times (once with `nth`, always without, by default). Armed faults
    /// are looked at before the plan's, oldest first. Its id, unique on the NIC. The NIC must
    /// carry the layer ([`Interposed::live`], or faults of the plan on it), and for a RoCE
    /// command the layer must hold its CMDQ (`live` with `roce`, or RoCE faults of the plan).
    pub fn arm(
        &self,
        nic: usize,
        target: Target,
        nth: Option<u32>,
        count: Option<u32>,
        action: Action,
    ) -> Result<u64, LiveError> {
        let kind = action.kind();
        if !kind.applies_to_roce() {
            return Err(LiveError::Malformed { action: bnxt_model::armed::action_name(kind) });
        }
        if !self.faulty(nic) {
            return Err(LiveError::NotLive { nic });
        }
        if matches!(target, Target::Roce(_)) && !self.roce(nic) {
            return Err(LiveError::NoCommandQueue { nic });
        }
        let shared = lock(&self.nics).entry(nic).or_default().clone();
        let id = lock(&shared).arm(target, nth, count, action)?;
        Ok(id)
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
        self.live.contains_key(&nic) || self.plan.firmware.iter().any(|f| f.nic == nic) || self.roce(nic)
    }

    /// Whether the layer stands in for NIC `nic`'s CMDQ and CREQ.
    fn roce(&self, nic: usize) -> bool {
        self.live.get(&nic).copied().unwrap_or(false) || self.plan.roce_commands.iter().any(|f| f.nic == nic)
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
        let roce = self.roce(nic);
        Ok(Arc::new(SeamFunction::new(function, nic, self.plan.clone(), roce, shared, self.log.clone())))
    }
}
