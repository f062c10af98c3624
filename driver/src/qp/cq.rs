//! A completion queue of one side of a queue pair: made with CREATE_CQ, armed once, read by the
//! valid-bit rule, acknowledged with a CQ doorbell (qplib_fp.c `bnxt_qplib_create_cq`,
//! `bnxt_qplib_poll_cq`; hardware-map §4.5, §5.4, §5.6).

use std::sync::atomic::{Ordering, fence};

use bnxt_hsi::roce::cqe::{CQE_BYTES, CQE_TYPE_TOGGLE_OFFSET, is_new};
use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use bnxt_hsi::roce::layouts::{CmdqCreateCq as C, CmdqDestroyCq};
use zerocopy::FromZeros;

use crate::error::Error;
use crate::roce::Roce;
use crate::roce::db::DbPage;
use crate::roce::queue::{Cursor, Queue};

/// CQ coalescing bnxt_re asks for on P7 (qplib_fp.h `BNXT_QPLIB_CQ_COAL_DEF_*`): at most one
/// buffer-time unit, 8 completions normally and during an interrupt, ring-idle mode on.
const COALESCING: u32 = 1 | (8 << 9) | (8 << 14) | C::ENABLE_RING_IDLE_MODE;

/// CREATE_CQ of `cq`'s memory, notifying NQ `roce.nq_ring_id`, echoing `handle`; then the
/// CQ_ARMENA doorbell bnxt_re rings after creating a CQ. The CQ's id.
pub(crate) fn create(roce: &Roce, cq: &Queue, handle: u64) -> Result<u32, Error> {
    let mut req = C::new_zeroed();
    let mut flags = 0;
    if roce.caps.cq_coalescing() {
        flags |= C::FLAGS_COALESCING_VALID;
        req.coalescing = COALESCING.into();
    }
    if roce.caps.pbl_page_size() {
        flags |= C::FLAGS_PBL_PG_SIZE_VALID;
        req.pbl_pg_size = C::PBL_PG_SIZE_PG_4K;
    }
    req.flags = flags.into();
    req.cq_handle = handle.into();
    req.pg_size_lvl = (C::PG_SIZE_PG_4K | (u32::from(cq.level()) & C::LVL_MASK)).into();
    req.cq_fco_cnq_id = (u32::from(roce.nq_ring_id) & C::CNQ_ID_MASK).into();
    req.dpi = roce.db.dpi().into();
    req.cq_size = cq.shape.depth.into();
    req.pbl = cq.base().into();
    let id = roce.command(req)?.xid.get();
    roce.db.ring(Doorbell::roce(DbType::CqArmEna, id, 0, false, 0));
    Ok(id)
}

/// DESTROY_CQ.
pub(crate) fn destroy(roce: &Roce, id: u32) -> Result<(), Error> {
    roce.teardown_command(CmdqDestroyCq { cq_cid: id.into(), ..FromZeros::new_zeroed() }).map(|_| ())
}

/// The consumer of one CQ.
#[derive(Debug)]
pub(crate) struct CqReader {
    id: u32,
    cons: Cursor,
}

impl CqReader {
    /// The consumer of CQ `id`, at its start.
    pub(crate) fn new(id: u32) -> CqReader {
        CqReader { id, cons: Cursor::default() }
    }

    /// Hand every new CQE of `cq` to `f`, in order, then acknowledge them with one CQ doorbell.
    /// How many there were.
    pub(crate) fn drain(&mut self, cq: &Queue, db: &DbPage, mut f: impl FnMut(&[u8; CQE_BYTES])) -> usize {
        let mut n = 0;
        loop {
            let at = cq.offset(self.cons.index);
            let toggle = cq.data().read_volatile_u8(at + CQE_TYPE_TOGGLE_OFFSET) & 1 != 0;
            if !is_new(toggle, self.cons.epoch) {
                break;
            }
            // Written before its toggle bit; read after it.
            fence(Ordering::Acquire);
            let mut cqe = [0u8; CQE_BYTES];
            cq.data().read(at, &mut cqe);
            self.cons.advance(1, cq.shape.depth);
            n += 1;
            f(&cqe);
        }
        if n > 0 {
            db.ring(Doorbell::roce(DbType::Cq, self.id, self.cons.index, self.cons.epoch, 0));
        }
        n
    }
}
