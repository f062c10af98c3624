//! Memory, NQ-type rings, doorbells and the loop that lets the model's time pass.

use super::*;
use crate::common::{Pages, Rig, req};
use bnxt_hsi::hwrm::layouts::*;
use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use std::time::Duration;

/// An NQ-type ring the test consumes.
#[derive(Debug, Clone, Copy)]
pub struct NqRing {
    /// HWRM ring id.
    pub id: u16,
    /// First data byte (the data pages are contiguous).
    pub base: u64,
    /// Entries.
    pub len: u32,
    /// Consumer.
    pub cons: u32,
    /// Consumer epoch.
    pub epoch: bool,
}

/// Contiguous pages holding `bytes` and a level-1 page table naming them: (table, first data
/// byte).
pub fn pbl(rig: &Rig, nic: usize, pages: &mut Pages, bytes: u64) -> (u64, u64) {
    let n = bytes.div_ceil(4096).max(1);
    let base = pages.take(n);
    let table = pages.take(n.div_ceil(512));
    let ptes: Vec<u64> = (0..n).map(|i| (base + i * 4096) | 1).collect();
    rig.poke_u64s(nic, table, &ptes);
    (table, base)
}

/// Store a 64-bit doorbell on the kernel page.
pub fn ring(rig: &mut Rig, nic: usize, db: Doorbell) {
    rig.world.bar_write(nic, 2, DB, &db.encode().to_le_bytes());
}

/// Let time pass until `done` holds, stepping to the next piece of work; panics after `limit`.
pub fn run_until(rig: &mut Rig, limit: Duration, mut done: impl FnMut(&mut Rig) -> bool) {
    let end = rig.world.now() + limit;
    loop {
        if done(rig) {
            return;
        }
        let now = rig.world.now();
        assert!(now < end, "condition not reached within {limit:?}");
        let step = match rig.world.next_deadline() {
            Some(t) if t > now && t <= end => t - now,
            Some(t) if t <= now => Duration::from_nanos(1),
            _ => end - now,
        };
        rig.world.advance(step);
    }
}

/// Configure context memory (QP, SRQ, CQ, MRAV, the last with ALL_DONE) and a statistics
/// context on `nic`; the statistics context id.
pub fn context_memory(rig: &mut Rig, nic: usize, pages: &mut Pages) -> u32 {
    let types: [(u16, u32, u16, u8, [u32; 2]); 4] = [
        (0, QP_ENTRIES, 448, 2, [16, 4]),
        (1, 4, 64, 1, [2, 0]),
        (2, CQ_ENTRIES, 64, 1, [8, 0]),
        (0xe, MRAV_ENTRIES, 128, 1, [8, 0]),
    ];
    for (i, (ty, entries, size, cnt, splits)) in types.iter().enumerate() {
        let (root, _) = pbl(rig, nic, pages, u64::from(*entries) * u64::from(*size));
        let mut r: HwrmFuncBackingStoreCfgV2Input = req();
        r.type_ = (*ty).into();
        r.num_entries = (*entries).into();
        r.entry_size = (*size).into();
        r.page_size_pbl_level = 1;
        r.page_dir = root.into();
        r.subtype_valid_cnt = *cnt;
        r.split_entry_0 = splits[0].into();
        r.split_entry_1 = splits[1].into();
        if i == types.len() - 1 {
            r.flags = HwrmFuncBackingStoreCfgV2Input::FLAGS_BS_CFG_ALL_DONE.into();
        }
        rig.ok(nic, r);
    }
    let stats = pages.take(1);
    let mut s: HwrmStatCtxAllocInput = req();
    s.stats_dma_addr = stats.into();
    s.stats_dma_length = 256.into();
    s.stat_ctx_flags = 1;
    rig.ok(nic, s).stat_ctx_id.get()
}

/// Allocate an NQ-type ring of `len` entries on MSI-X vector `vector`.
pub fn nq_ring(rig: &mut Rig, nic: usize, pages: &mut Pages, len: u32, vector: u16) -> NqRing {
    let (table, base) = pbl(rig, nic, pages, u64::from(len) * 16);
    let mut r: HwrmRingAllocInput = req();
    r.ring_type = HwrmRingAllocInput::RING_TYPE_NQ;
    r.page_tbl_addr = table.into();
    r.page_size = 12;
    r.page_tbl_depth = 1;
    r.length = len.into();
    r.logical_id = vector.into();
    r.int_mode = HwrmRingAllocInput::INT_MODE_MSIX;
    let id = rig.ok(nic, r).ring_id.get();
    NqRing { id, base, len, cons: 0, epoch: false }
}

impl NqRing {
    /// The next entry if the producer has written it (valid bit differs from the epoch).
    pub fn peek(&self, rig: &Rig, nic: usize) -> Option<[u8; 16]> {
        let b: [u8; 16] = rig.peek(nic, self.base + u64::from(self.cons) * 16, 16).try_into().unwrap();
        (((b[8] & 1) == 1) != self.epoch).then_some(b)
    }

    /// Consume one entry.
    pub fn pop(&mut self) {
        self.cons += 1;
        if self.cons == self.len {
            self.cons = 0;
            self.epoch = !self.epoch;
        }
    }

    /// The doorbell returning entries up to the consumer (arming when `arm`).
    pub fn doorbell(&self, arm: bool) -> Doorbell {
        Doorbell::roce(if arm { DbType::NqArm } else { DbType::Nq }, self.id.into(), self.cons, self.epoch, 0)
    }
}
