//! The RoCE engine's NQ, serviced as bnxt_re services it (qplib_fp.c `bnxt_qplib_service_nq`,
//! `bnxt_qplib_nq_start_irq`, `bnxt_qplib_nq_stop_irq`; qplib_res.h `bnxt_qplib_ring_nq_db`).
//!
//! The firmware writes 16-byte entries (`nq_base`) whose valid bit (bit 0 of byte 8) differs
//! from the consumer's epoch while new (`NQE_CMP_VALID`). Servicing takes every new entry,
//! advances the consumer past it, then rings the NQ: NQ_ARM at the new consumer when no entry
//! is left (bnxt_re re-arms once it has emptied the ring), NQ (the consumer alone) when more
//! have come meanwhile. The NQ is armed at consumer 0 when it starts and, when it stops, the
//! consumer is written without arming (the interrupt masked) before RING_FREE.
//!
//! The driver polls its CQs and never arms one, so the firmware has no CQ notification to post
//! here and no SRQ event (it has no SRQs); an NQ is still serviced on every poll of a CQ, so
//! that whatever the firmware does post (a CQ notification it sends regardless, a doorbell
//! pacing event) is taken and the ring never fills. Each entry is counted by type and logged;
//! none needs an action from a driver that polls (bnxt_re's re-enabling of a notified CQ's
//! arming, `CQ_ARMENA`, serves the interrupt-driven path this driver does not take).

use std::sync::atomic::{Ordering, fence};

use bnxt_hsi::roce::cqe::is_new;
use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use bnxt_hsi::roce::layouts::NqBase;

use super::Memory;
use super::db::DbPage;
use super::queue::{Cursor, Queue};

/// Offset of the byte holding the valid bit.
const NQE_V: usize = 8;

/// What a serviced NQ has taken, by entry type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct NqCounts {
    /// CQ notifications (`NQ_BASE_TYPE_CQ_NOTIFICATION`).
    pub cq_notifications: u64,
    /// SRQ events.
    pub srq_events: u64,
    /// Doorbell pacing events (`NQ_BASE_TYPE_DBQ_EVENT`).
    pub dbq_events: u64,
    /// Any other type (bnxt_re warns "nqe with opcode ... not handled").
    pub other: u64,
}

/// One NQ, its consumer, and what it took.
pub(crate) struct NqService {
    nic: String,
    queue: Queue,
    ring_id: u16,
    cons: Cursor,
    db: DbPage,
    counts: NqCounts,
}

impl NqService {
    /// The NQ in `queue`, ring `ring_id`, rung through `db`.
    pub(crate) fn new(nic: &str, queue: Queue, ring_id: u16, db: DbPage) -> NqService {
        NqService { nic: nic.to_string(), queue, ring_id, cons: Cursor::default(), db, counts: NqCounts::default() }
    }

    /// Arm it at its consumer (0 when new): `bnxt_qplib_nq_start_irq`.
    pub(crate) fn start(&self) {
        self.ring(DbType::NqArm);
    }

    /// Write the consumer without arming, the interrupt masked: `bnxt_qplib_nq_stop_irq`.
    pub(crate) fn stop(&self) {
        self.ring(DbType::Nq);
    }

    /// Take every new entry, then ring the NQ as bnxt_re does; how many were taken.
    pub(crate) fn service(&mut self) -> usize {
        let mut taken = 0;
        while let Some(entry) = self.next() {
            taken += 1;
            let ty = u16::from_le_bytes([entry[0], entry[1]]) & NqBase::TYPE_MASK;
            match ty {
                NqBase::TYPE_CQ_NOTIFICATION => self.counts.cq_notifications += 1,
                NqBase::TYPE_SRQ_EVENT => self.counts.srq_events += 1,
                NqBase::TYPE_DBQ_EVENT => self.counts.dbq_events += 1,
                _ => {
                    self.counts.other += 1;
                    tracing::warn!(nic = %self.nic, ty = format_args!("0x{ty:x}"), "NQ entry of a type not handled");
                }
            }
            tracing::debug!(nic = %self.nic, ty = format_args!("0x{ty:x}"), "NQ entry taken");
        }
        if taken > 0 {
            let more = self.peek_new();
            self.ring(if more { DbType::Nq } else { DbType::NqArm });
        }
        taken
    }

    /// What it has taken.
    #[cfg(test)]
    pub(crate) fn counts(&self) -> NqCounts {
        self.counts
    }

    /// Its memory, to free once the NIC can no longer reach it.
    pub(crate) fn into_memory(self) -> Memory {
        let bytes = self.queue.bytes();
        Memory::new(self.queue, bytes)
    }

    fn peek_new(&self) -> bool {
        let at = self.queue.offset(self.cons.index);
        is_new(self.queue.data().read_volatile_u8(at + NQE_V) & 1 != 0, self.cons.epoch)
    }

    fn next(&mut self) -> Option<[u8; 16]> {
        if !self.peek_new() {
            return None;
        }
        // Written before its valid bit; read after it (`dma_rmb()`).
        fence(Ordering::Acquire);
        let mut entry = [0u8; 16];
        self.queue.data().read(self.queue.offset(self.cons.index), &mut entry);
        self.cons.advance(1, self.queue.shape.depth);
        Some(entry)
    }

    fn ring(&self, ty: DbType) {
        self.db.ring(Doorbell::roce(ty, u32::from(self.ring_id), self.cons.index, self.cons.epoch, 0));
    }
}
