//! The L2 rings: an NQ, an RX ring and its completion ring, each one page allocated and named
//! as bnxt_en does on P7 (bnxt.c `bnxt_hwrm_ring_alloc` order: NQs first, then per RX ring the
//! RX ring and its completion ring; `hwrm_ring_alloc_send_msg`, `bnxt_set_rx_ring_params_p5`,
//! `bnxt_hwrm_cp_ring_alloc_p5`, `bnxt_hwrm_one_cpr_alloc`; freeing: `hwrm_ring_free_send_msg`).
//!
//! - A ring of one page is named by its own address (`page_tbl_depth` 0, `page_size` 0).
//! - NQ: `int_mode` MSIX, `logical_id` its MSI-X vector. The driver polls and never takes an
//!   interrupt, yet asks for MSIX as bnxt_en does and as DPDK's polling bnxt PMD does for its NQs
//!   and completion rings (DPDK drivers/net/bnxt/bnxt_hwrm.c `bnxt_hwrm_ring_alloc`; before its
//!   Thor support, commit f8168ca0e6, it carried the note "Some HWRM versions crash with
//!   HWRM_RING_ALLOC_INPUT_INT_MODE_POLL"): the vector only ties the ring to an MSI-X entry,
//!   which stays disabled. Right after RING_ALLOC the NQ's consumer is written with the
//!   interrupt masked (P7 `bnxt_db_nq`: `DBR_TYPE_NQ_MASK`).
//! - RX ring: `rx_buf_size` and the NQ (`RX_BUF_SIZE_VALID | NQ_RING_ID_VALID`), its statistics
//!   context named without an enable, as bnxt_en names it; then its producer (0: no buffers) is
//!   written (`bnxt_db_write`, SRQ-type on P7).
//! - Completion ring: the NQ it reports to and the handle NQ entries echo; then its consumer
//!   (`bnxt_db_cq`).
//! - RING_FREE names no completion ring for the answer (`cmpl_ring` 0xffff), as bnxt_en does
//!   outside its close path; this driver polls every response.

use bnxt_hsi::hwrm::layouts::{HwrmRingAllocInput as R, HwrmRingFreeInput};
use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use zerocopy::FromZeros;

use super::L2_NQS;
use crate::error::Error;
use crate::hwrm::Channel;
use crate::roce::Memory;
use crate::roce::db::DbPage;
use bnxt_pci::dma::{DmaBuffer, PAGE_SIZE};
use bnxt_pci::{PciError, PciFunction};

/// Bytes of one entry of each L2 ring: RX BDs, completions and NQ entries are 16 bytes.
const ENTRY_BYTES: usize = 16;
/// Entries in a one-page ring.
const ENTRIES: u32 = (PAGE_SIZE / ENTRY_BYTES) as u32;
/// The NQ's MSI-X vector: bnxt_en's first.
const NQ_VECTOR: u16 = 0;
/// The RX ring's and its completion ring's `logical_id` (bnxt_en's ring index 0).
const RING_INDEX: u16 = 0;
/// `cq_handle` of the completion ring, echoed in NQ entries (the driver takes none).
pub(crate) const CMPL_HANDLE: u64 = 0x4c32;
/// `rx_buf_size`: a buffer holds a frame of the VNIC's MRU.
const RX_BUF_SIZE: u16 = super::vnic::ROCE_MRU;

const _: () = assert!(L2_NQS == 1 && NQ_VECTOR == 0, "the L2 side's one NQ is on vector 0");

/// Which ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The NQ.
    Nq,
    /// The RX ring.
    Rx,
    /// The RX ring's completion ring.
    Cmpl,
}

impl Kind {
    fn ring_type(self) -> u8 {
        match self {
            Kind::Nq => R::RING_TYPE_NQ,
            Kind::Rx => R::RING_TYPE_RX,
            Kind::Cmpl => R::RING_TYPE_L2_CMPL,
        }
    }
}

/// One ring's page and, once allocated, its ring id.
pub(crate) struct Ring {
    /// Which ring.
    pub kind: Kind,
    page: DmaBuffer,
    id: Option<u16>,
}

impl Ring {
    /// A zeroed page for ring `kind`.
    pub(crate) fn alloc(function: &dyn PciFunction, kind: Kind) -> Result<Ring, PciError> {
        Ok(Ring { kind, page: function.alloc_dma(PAGE_SIZE)?, id: None })
    }

    /// Its ring id, once allocated.
    pub(crate) fn id(&self) -> Option<u16> {
        self.id
    }

    /// Its ring id, forgotten (to free it).
    pub(crate) fn take_id(&mut self) -> Option<u16> {
        self.id.take()
    }

    /// The page, to free once the NIC can no longer reach it.
    pub(crate) fn into_memory(self) -> Memory {
        let bytes = self.page.len();
        Memory::new(self.page, bytes)
    }

    fn request(&self) -> R {
        R {
            ring_type: self.kind.ring_type(),
            page_tbl_addr: self.page.iova().into(),
            length: ENTRIES.into(),
            ..FromZeros::new_zeroed()
        }
    }

    fn send(&mut self, hwrm: &mut Channel, req: R) -> Result<u16, Error> {
        let id = hwrm.send(req)?.ring_id.get();
        self.id = Some(id);
        Ok(id)
    }
}

/// RING_ALLOC of the NQ, then its consumer written with the interrupt masked.
pub(crate) fn alloc_nq(hwrm: &mut Channel, nq: &mut Ring, db: &DbPage) -> Result<u16, Error> {
    let req = R { logical_id: NQ_VECTOR.into(), int_mode: R::INT_MODE_MSIX, ..nq.request() };
    let id = nq.send(hwrm, req)?;
    db.ring(Doorbell::l2(DbType::NqMask, u32::from(id), 0, false, 0));
    Ok(id)
}

/// RING_ALLOC of the RX ring on NQ `nq`, counted in statistics context `stat_ctx`, then its
/// producer written.
pub(crate) fn alloc_rx(hwrm: &mut Channel, rx: &mut Ring, nq: u16, stat_ctx: u32, db: &DbPage) -> Result<u16, Error> {
    let req = R {
        enables: (R::ENABLES_RX_BUF_SIZE_VALID | R::ENABLES_NQ_RING_ID_VALID).into(),
        logical_id: RING_INDEX.into(),
        rx_buf_size: RX_BUF_SIZE.into(),
        nq_ring_id: nq.into(),
        stat_ctx_id: stat_ctx.into(),
        ..rx.request()
    };
    let id = rx.send(hwrm, req)?;
    db.ring(Doorbell::l2(DbType::Srq, u32::from(id), 0, false, 0));
    Ok(id)
}

/// RING_ALLOC of the RX ring's completion ring on NQ `nq`, then its consumer written.
pub(crate) fn alloc_cmpl(hwrm: &mut Channel, cmpl: &mut Ring, nq: u16, db: &DbPage) -> Result<u16, Error> {
    let req = R {
        enables: R::ENABLES_NQ_RING_ID_VALID.into(),
        logical_id: RING_INDEX.into(),
        nq_ring_id: nq.into(),
        cq_handle: CMPL_HANDLE.into(),
        ..cmpl.request()
    };
    let id = cmpl.send(hwrm, req)?;
    db.ring(Doorbell::l2(DbType::Cq, u32::from(id), 0, false, 0));
    Ok(id)
}

/// RING_FREE of ring `id` of `kind`.
pub(crate) fn free(hwrm: &mut Channel, kind: Kind, id: u16) -> Result<(), Error> {
    let req = HwrmRingFreeInput { ring_type: kind.ring_type(), ring_id: id.into(), ..FromZeros::new_zeroed() };
    hwrm.send(req).map(|_| ())
}
