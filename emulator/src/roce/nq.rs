//! Notification queues as the RoCE engine writes them: the CREQ (the command channel's
//! completion ring, an NQ-type ring) and the NQs CQ notifications go to (hardware-map §4.3,
//! §5.5; bnxt_re qplib_rcfw.c `bnxt_qplib_service_creq`, qplib_fp.c `bnxt_qplib_service_nq`).
//!
//! The rings themselves are HWRM rings of type NQ (RING_ALLOC): `length` 16-byte entries in the
//! pages the firmware walked, `logical_id` the MSI-X vector. The engine keeps, per ring, its
//! producer index and epoch, the consumer index and epoch the driver last rang (NQ or NQ_ARM
//! doorbell), and whether it is armed.
//!
//! * An entry's valid bit (bit 0 of byte 8, `v` of `creq_base` and of `nq_base`) is 1 on the
//!   producer's first pass and flips at every wrap; the entry is written with the previous
//!   pass's valid bit first and the new one last, so a consumer never sees half an entry.
//! * Flow control: at most `length` entries are outstanding (written and not yet released by a
//!   doorbell). Further entries wait in a backlog, in order, until the driver frees room.
//! * Arming: an NQ_ARM doorbell arms the ring; the next entry written raises the ring's MSI-X
//!   vector and disarms it. If entries are already waiting when the ring is armed, the vector
//!   is raised at once (an armed ring with unconsumed entries interrupts).

use std::collections::{BTreeMap, VecDeque};

use crate::firmware::state::{FwState, RingType};
use crate::host_memory::HostMemory;

use super::pages::{PageList, PagesError};

/// Bytes of one entry.
pub(crate) const ENTRY_BYTES: usize = 16;
/// Offset of the byte holding the valid bit.
pub(crate) const VALID_BYTE: usize = 8;
/// Most entries a ring keeps waiting for room; beyond that entries are dropped (and counted).
pub(crate) const MAX_BACKLOG: usize = 1 << 16;

/// One NQ-type ring's producer state.
#[derive(Debug, Clone)]
pub struct NqRing {
    serial: u64,
    mem: PageList,
    length: u32,
    vector: u16,
    prod: u32,
    prod_epoch: bool,
    cons: u32,
    cons_epoch: bool,
    armed: bool,
    backlog: VecDeque<[u8; ENTRY_BYTES]>,
}

/// What happened to an entry handed to [`NqSet::post`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posted {
    /// Written now.
    Written,
    /// The ring is full: the entry waits for room.
    Queued,
    /// The ring does not exist (any more): the entry is lost.
    NoRing,
    /// The backlog is full: the entry is lost.
    Overflow,
    /// The write failed (DMA refused): the entry is lost.
    DmaFailed,
}

/// Why an NQ doorbell was ignored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NqDoorbellError {
    /// No NQ ring has this id.
    #[error("no NQ ring {0}")]
    NoRing(u32),
    /// The index is not below the ring's length.
    #[error("consumer index {index} is not below the ring length {length}")]
    IndexTooLarge {
        /// Index rung.
        index: u32,
        /// Ring length.
        length: u32,
    },
    /// The consumer would be ahead of the producer.
    #[error("consumer {index} (epoch {epoch}) is ahead of the producer {prod} (epoch {prod_epoch})")]
    AheadOfProducer {
        /// Index rung.
        index: u32,
        /// Epoch rung.
        epoch: bool,
        /// Producer index.
        prod: u32,
        /// Producer epoch.
        prod_epoch: bool,
    },
}

impl NqRing {
    /// Entries written and not released.
    fn outstanding(&self) -> u32 {
        let l = u64::from(self.length);
        let p = u64::from(self.prod) + if self.prod_epoch { l } else { 0 };
        let c = u64::from(self.cons) + if self.cons_epoch { l } else { 0 };
        ((p + 2 * l - c) % (2 * l)) as u32
    }

    /// Write one entry at the producer; false when the DMA failed.
    fn write(&mut self, mem: &dyn HostMemory, mut entry: [u8; ENTRY_BYTES]) -> Result<(), PagesError> {
        let valid = u8::from(!self.prod_epoch);
        let off = u64::from(self.prod) * ENTRY_BYTES as u64;
        entry[VALID_BYTE] = (entry[VALID_BYTE] & !1) | (valid ^ 1);
        let result = self.mem.write(mem, off, &entry).and_then(|()| {
            let last = (entry[VALID_BYTE] & !1) | valid;
            self.mem.write(mem, off + VALID_BYTE as u64, &[last])
        });
        self.prod += 1;
        if self.prod == self.length {
            self.prod = 0;
            self.prod_epoch = !self.prod_epoch;
        }
        result
    }

    /// The MSI-X vector.
    pub fn vector(&self) -> u16 {
        self.vector
    }

    /// Whether armed.
    pub fn armed(&self) -> bool {
        self.armed
    }

    /// Entries waiting for room.
    pub fn backlog(&self) -> usize {
        self.backlog.len()
    }
}

/// Counters of the NQ machinery.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NqCounters {
    /// Entries written.
    pub written: u64,
    /// Entries that had to wait for room.
    pub queued: u64,
    /// Entries lost (ring gone, backlog full, DMA refused).
    pub lost: u64,
    /// Interrupts raised.
    pub interrupts: u64,
}

/// Every NQ-type ring the engine has written to, by ring id.
#[derive(Debug, Default, Clone)]
pub struct NqSet {
    rings: BTreeMap<u16, NqRing>,
    irqs: Vec<u16>,
    counters: NqCounters,
}

impl NqSet {
    /// Forget every ring.
    pub fn clear(&mut self) {
        self.rings.clear();
        self.irqs.clear();
    }

    /// The ring `id`, fresh if the firmware (re)allocated it since the engine last saw it, or
    /// `None` if the firmware has no NQ ring `id`.
    fn ring(&mut self, id: u16, fw: &FwState) -> Option<&mut NqRing> {
        let Some(r) = fw.rings.get(&id).filter(|r| r.ty == RingType::Nq) else {
            self.rings.remove(&id);
            return None;
        };
        let stale = self.rings.get(&id).is_none_or(|n| n.serial != r.serial);
        if stale {
            let len = u64::from(r.length) * ENTRY_BYTES as u64;
            let mem = PageList::from_pages(r.pages.clone(), r.page_size, len)?;
            let ring = NqRing {
                serial: r.serial,
                mem,
                length: r.length,
                vector: r.logical_id,
                prod: 0,
                prod_epoch: false,
                cons: 0,
                cons_epoch: false,
                armed: false,
                backlog: VecDeque::new(),
            };
            self.rings.insert(id, ring);
        }
        self.rings.get_mut(&id)
    }

    /// The engine's view of ring `id`, if it has written to it or been rung for it.
    pub fn get(&self, id: u16) -> Option<&NqRing> {
        self.rings.get(&id)
    }

    /// Hand `entry` to ring `id`: written now if there is room, else kept in order until there
    /// is.
    pub fn post(&mut self, id: u16, entry: [u8; ENTRY_BYTES], fw: &FwState, mem: &dyn HostMemory) -> Posted {
        let Some(ring) = self.ring(id, fw) else {
            self.counters.lost += 1;
            return Posted::NoRing;
        };
        if !ring.backlog.is_empty() || ring.outstanding() >= ring.length {
            if ring.backlog.len() >= MAX_BACKLOG {
                self.counters.lost += 1;
                return Posted::Overflow;
            }
            ring.backlog.push_back(entry);
            self.counters.queued += 1;
            return Posted::Queued;
        }
        let ok = ring.write(mem, entry).is_ok();
        let fire = ring.armed;
        if fire {
            ring.armed = false;
        }
        let vector = ring.vector;
        if fire {
            self.raise(vector);
        }
        if ok {
            self.counters.written += 1;
            Posted::Written
        } else {
            self.counters.lost += 1;
            Posted::DmaFailed
        }
    }

    fn raise(&mut self, vector: u16) {
        self.counters.interrupts += 1;
        self.irqs.push(vector);
    }

    /// An NQ or NQ_ARM doorbell for ring `id`: the driver consumed up to `index` (with `epoch`)
    /// and, with `arm`, wants an interrupt for the next entry. Entries waiting for room are
    /// written. Returns how many waiting entries were written.
    pub fn doorbell(
        &mut self,
        id: u32,
        index: u32,
        epoch: bool,
        arm: bool,
        fw: &FwState,
        mem: &dyn HostMemory,
    ) -> Result<usize, NqDoorbellError> {
        let ring = u16::try_from(id).ok().and_then(|id16| self.ring(id16, fw)).ok_or(NqDoorbellError::NoRing(id))?;
        if index >= ring.length {
            return Err(NqDoorbellError::IndexTooLarge { index, length: ring.length });
        }
        let (old_cons, old_epoch) = (ring.cons, ring.cons_epoch);
        ring.cons = index;
        ring.cons_epoch = epoch;
        let consumed_before = {
            // Outstanding counted from the old consumer must not shrink below zero: the new
            // consumer must lie between the old one and the producer.
            let l = u64::from(ring.length);
            let pos = |i: u32, e: bool| u64::from(i) + if e { l } else { 0 };
            let from_old = (pos(index, epoch) + 2 * l - pos(old_cons, old_epoch)) % (2 * l);
            let to_prod = (pos(ring.prod, ring.prod_epoch) + 2 * l - pos(old_cons, old_epoch)) % (2 * l);
            from_old <= to_prod
        };
        if !consumed_before {
            let err = NqDoorbellError::AheadOfProducer { index, epoch, prod: ring.prod, prod_epoch: ring.prod_epoch };
            ring.cons = old_cons;
            ring.cons_epoch = old_epoch;
            return Err(err);
        }
        let mut drained = 0;
        let mut failed = 0;
        while ring.outstanding() < ring.length {
            let Some(entry) = ring.backlog.pop_front() else { break };
            if ring.write(mem, entry).is_err() {
                failed += 1;
            }
            drained += 1;
        }
        let mut fire = false;
        if arm {
            ring.armed = true;
        }
        if ring.armed && ring.outstanding() > 0 {
            ring.armed = false;
            fire = true;
        }
        let vector = ring.vector;
        self.counters.written += (drained - failed) as u64;
        self.counters.lost += failed as u64;
        if fire {
            self.raise(vector);
        }
        Ok(drained)
    }

    /// Vectors raised since the last call.
    pub fn take_irqs(&mut self) -> Vec<u16> {
        std::mem::take(&mut self.irqs)
    }

    /// Whether vectors are waiting for [`NqSet::take_irqs`].
    #[inline]
    pub fn has_irqs(&self) -> bool {
        !self.irqs.is_empty()
    }

    /// Counters.
    pub fn counters(&self) -> NqCounters {
        self.counters
    }
}
