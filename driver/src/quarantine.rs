//! Memory a firmware may still write after it stopped answering.
//!
//! A request that times out may still be acted on, so the memory it named stays allocated: for
//! an open NIC until `close` (the NIC holds it), and for an open that failed, until the next open
//! of the same function has reset it (after a function-level reset the firmware no longer acts
//! on requests made before it) or the process exits. This module keeps the latter, keyed by
//! machine and bus address.

use std::sync::Mutex;

use crate::ctx_mem::TypeMemory;
use crate::roce::Memory;
use bnxt_pci::Machine;
use bnxt_pci::dma::DmaBuffer;

/// Memory named by a request that got no answer.
pub(crate) enum Retained {
    /// The HWRM channel's buffer (the firmware may still write the response).
    Hwrm(DmaBuffer),
    /// One context type's memory (a FUNC_BACKING_STORE_CFG_V2 pointed the firmware at it).
    Context(TypeMemory),
    /// The RoCE engine's memory: its channel, rings and objects.
    Roce(Vec<Memory>),
}

impl Retained {
    /// Bytes of DMA memory held.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Retained::Hwrm(buf) => buf.len(),
            Retained::Context(memory) => memory.bytes(),
            Retained::Roce(memory) => memory.iter().map(Memory::bytes).sum(),
        }
    }
}

struct Kept {
    machine: usize,
    bus: String,
    memory: Vec<Retained>,
}

static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

fn machine_id(machine: &dyn Machine) -> usize {
    machine as *const dyn Machine as *const () as usize
}

fn kept() -> std::sync::MutexGuard<'static, Vec<Kept>> {
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keep `memory` of the function at `bus` of `machine` until it is reset by a later open.
pub(crate) fn keep(machine: &dyn Machine, bus: &str, memory: Vec<Retained>) {
    if memory.is_empty() {
        return;
    }
    let bytes: usize = memory.iter().map(Retained::bytes).sum();
    tracing::warn!(bus, bytes, "keeping memory an unanswered request named until the NIC is next reset");
    kept().push(Kept { machine: machine_id(machine), bus: bus.to_string(), memory });
}

/// Free what was kept for the function at `bus` of `machine` (it has just been reset). How many
/// pieces were freed.
pub(crate) fn release(machine: &dyn Machine, bus: &str) -> usize {
    let id = machine_id(machine);
    let freed: Vec<Kept> = {
        let mut all = kept();
        let (mine, rest): (Vec<Kept>, Vec<Kept>) = all.drain(..).partition(|k| k.machine == id && k.bus == bus);
        *all = rest;
        mine
    };
    // Dropped outside the lock: freeing DMA memory calls into the backend.
    freed.iter().map(|k| k.memory.len()).sum()
}

/// How many pieces are kept for the function at `bus` of `machine`.
#[cfg(test)]
pub(crate) fn kept_for(machine: &dyn Machine, bus: &str) -> usize {
    let id = machine_id(machine);
    kept().iter().filter(|k| k.machine == id && k.bus == bus).map(|k| k.memory.len()).sum()
}
