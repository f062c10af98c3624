//! The doorbell page the driver's RoCE rings share, and the stores to it.
//!
//! A privileged (kernel-style) consumer rings every RoCE doorbell, SQ/RQ/CQ/NQ/CREQ alike, at
//! BAR2 + `db_offset`, where P7's `db_offset` is FUNC_QCFG `legacy_l2_db_size_kb` × 1024; its DPI,
//! which CREATE_QP and CREATE_CQ name, is that offset in 4-KB pages (bnxt_re main.c
//! `bnxt_re_set_db_offset`, qplib_res.c `bnxt_qplib_alloc_kernel_dpi`, qplib_rcfw.c
//! `bnxt_qplib_map_creq_db`; hardware-map §5.6). Each doorbell is one 64-bit store, made after
//! every memory store it announces (`wmb()` in `bnxt_qplib_write_db`).

use std::sync::atomic::{Ordering, fence};
use std::sync::{Arc, Weak};

use bnxt_hsi::pci::BAR_DOORBELLS;
use bnxt_hsi::roce::doorbell::Doorbell;

use crate::trace;
use bnxt_pci::PciFunction;
use bnxt_pci::dma::PAGE_SIZE;

/// The doorbell page. It does not keep the function held: once the NIC is closed (and the
/// function released) nothing may ring.
#[derive(Clone)]
pub(crate) struct DbPage {
    function: Weak<dyn PciFunction>,
    offset: u64,
}

impl DbPage {
    /// The page at `offset` in BAR2.
    pub(crate) fn new(function: &Arc<dyn PciFunction>, offset: u64) -> DbPage {
        DbPage { function: Arc::downgrade(function), offset }
    }

    /// The DPI CREATE_QP/CREATE_CQ name for this page.
    pub(crate) fn dpi(&self) -> u32 {
        (self.offset / PAGE_SIZE as u64) as u32
    }

    /// Ring `db`: one 64-bit store, after the memory stores before it.
    ///
    /// # Panics
    ///
    /// Once the function is released (the NIC closed).
    pub(crate) fn ring(&self, db: Doorbell) {
        let function = self.function.upgrade().expect("a doorbell rung after its NIC was closed");
        trace::doorbell(|| function.bus(), db.ty.name(), db.xid, db.index);
        fence(Ordering::SeqCst);
        function.bar_write64(BAR_DOORBELLS, self.offset, db.encode());
    }
}
