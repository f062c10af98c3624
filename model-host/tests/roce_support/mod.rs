//! A small RoCE driver for the model's tests, written from the public interface (bnxt_re's
//! qplib_rcfw.c / qplib_fp.c protocol, roce_hsi.h layouts), not from the model: it configures
//! context memory over HWRM, brings up the command channel (CREQ as an NQ ring, CMDQ, cmdq_init,
//! the first producer write with bit 31), sends commands and reads their completions by the
//! CREQ's valid bit, creates objects, writes WQEs and MSN entries, rings doorbells and polls CQs
//! by their toggle bit.

#![allow(dead_code)]

mod channel;
mod objects;
mod queues;
mod rings;

// Each test binary uses a different part of the driver, so an unused re-export is expected.
#[allow(unused_imports)]
pub use channel::*;
#[allow(unused_imports)]
pub use objects::*;
#[allow(unused_imports)]
pub use queues::*;
#[allow(unused_imports)]
pub use rings::*;

use crate::common::Rig;

/// BAR2 offset of the kernel doorbell page (FUNC_QCFG legacy_l2_db_size_kb × 1024).
pub const DB: u64 = 0x10000;
/// Context memory the tests configure: QP entries (16 L2 + 4 QP1 + 6 RoCE), CQs (8 L2 + 8 RoCE),
/// MRAV (8 AVs + 24 regions).
pub const QP_ENTRIES: u32 = 26;
/// RoCE QPs the context memory above holds.
pub const ROCE_QPS: u32 = 6;
/// CQ entries.
pub const CQ_ENTRIES: u32 = 16;
/// MRAV entries.
pub const MRAV_ENTRIES: u32 = 32;
/// Regions the context memory above holds.
pub const REGIONS: u32 = 24;

/// CREQ statuses the tests expect (roce_hsi.h `CREQ_QP_EVENT_STATUS_*`).
pub const FAIL: u8 = 1;
/// RESOURCES.
pub const RESOURCES: u8 = 2;
/// NOT_IMPLEMENTED.
pub const NOT_IMPLEMENTED: u8 = 4;
/// INVALID_PARAMETER.
pub const INVALID_PARAMETER: u8 = 5;

/// One NIC with its RoCE function brought up (CREQ of 1024 entries, CMDQ of 256 slots) and
/// initialized.
pub fn up() -> (Rig, Func) {
    let mut rig = Rig::new(1);
    let mut f = Func::bring_up(&mut rig, 0, 1024, 256);
    f.initialize(&mut rig);
    (rig, f)
}
