//! The 64-bit doorbell of P5/P7 chips (`dbc_dbc64` in bnxt_hsi.h; bnxt_re qplib_res.h
//! `BNXT_QPLIB_INIT_DBHDR`, `bnxt_qplib_ring_db`, `bnxt_qplib_ring_prod_db`,
//! `bnxt_qplib_armen_db`; rdma-core providers/bnxt_re db.c; hardware-map §5.6).
//!
//! | bits | field |
//! |---|---|
//! | 23:0 | index: producer (SQ/RQ/SRQ) or consumer (CQ/NQ) |
//! | 24 | epoch: flips each time the index wraps |
//! | 26:25 | toggle (CQ/SRQ arming, from the latest NQ entry on P7) |
//! | 51:32 | xid: QP, CQ, SRQ or ring id |
//! | 57:56 | path: 0 RoCE, 1 L2, 2 engine |
//! | 58 | valid (required on P7) |
//! | 59 | debug trace |
//! | 63:60 | type |
//!
//! A doorbell is written as one 64-bit store to BAR2 at the doorbell page.

use crate::hwrm::layouts::DbcDbc64 as D;

/// Shift of the toggle field (`DBC_DBC64_TOGGLE_SFT`).
pub const TOGGLE_SHIFT: u32 = 25;
/// Shift of the xid field (`DBC_DBC64_XID_SFT`).
pub const XID_SHIFT: u32 = 32;
/// Shift of the path field (`DBC_DBC64_PATH_SFT`).
pub const PATH_SHIFT: u32 = 56;
/// Shift of the type field (`DBC_DBC64_TYPE_SFT`).
pub const TYPE_SHIFT: u32 = 60;
/// Largest index the doorbell carries.
pub const INDEX_MASK: u32 = D::INDEX_MASK as u32;
/// Largest xid the doorbell carries.
pub const XID_MASK: u32 = (D::XID_MASK >> XID_SHIFT) as u32;

/// What a doorbell rings (`DBC_DBC64_TYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DbType {
    /// Send queue producer.
    Sq,
    /// Receive queue producer.
    Rq,
    /// Shared receive queue producer.
    Srq,
    /// Arm an SRQ limit event.
    SrqArm,
    /// Completion queue consumer (no arming).
    Cq,
    /// Arm a CQ for the next solicited completion.
    CqArmSe,
    /// Arm a CQ for the next completion.
    CqArmAll,
    /// Enable arming of a CQ (after a notification).
    CqArmEna,
    /// Enable arming of an SRQ.
    SrqArmEna,
    /// Acknowledge a CQ cut-off (resize).
    CqCutoffAck,
    /// Notification queue consumer, interrupt left masked.
    Nq,
    /// Notification queue consumer, re-arm the interrupt.
    NqArm,
    /// Notification queue consumer, interrupt masked (`DBC_DBC64_TYPE_NQ_MASK`, 0xe; bnxt_en
    /// rings its NQs with it on P7, bnxt.c `bnxt_db_nq`).
    NqMask,
    /// Push WQE start (`DBC_DBC_TYPE_PUSH_START`, 0xc).
    PushStart,
    /// Push WQE end (`DBC_DBC_TYPE_PUSH_END`, 0xd).
    PushEnd,
    /// No operation.
    Null,
}

impl DbType {
    /// The type for the 4-bit field value (every value from 0x0 to 0xf is defined).
    pub fn from_field(v: u8) -> Option<DbType> {
        Some(match v {
            0x0 => DbType::Sq,
            0x1 => DbType::Rq,
            0x2 => DbType::Srq,
            0x3 => DbType::SrqArm,
            0x4 => DbType::Cq,
            0x5 => DbType::CqArmSe,
            0x6 => DbType::CqArmAll,
            0x7 => DbType::CqArmEna,
            0x8 => DbType::SrqArmEna,
            0x9 => DbType::CqCutoffAck,
            0xa => DbType::Nq,
            0xb => DbType::NqArm,
            0xc => DbType::PushStart,
            0xd => DbType::PushEnd,
            0xe => DbType::NqMask,
            0xf => DbType::Null,
            _ => return None,
        })
    }

    /// The 4-bit field value.
    pub fn field(self) -> u8 {
        match self {
            DbType::Sq => 0x0,
            DbType::Rq => 0x1,
            DbType::Srq => 0x2,
            DbType::SrqArm => 0x3,
            DbType::Cq => 0x4,
            DbType::CqArmSe => 0x5,
            DbType::CqArmAll => 0x6,
            DbType::CqArmEna => 0x7,
            DbType::SrqArmEna => 0x8,
            DbType::CqCutoffAck => 0x9,
            DbType::Nq => 0xa,
            DbType::NqArm => 0xb,
            DbType::PushStart => 0xc,
            DbType::PushEnd => 0xd,
            DbType::NqMask => 0xe,
            DbType::Null => 0xf,
        }
    }

    /// The header's name (`SQ`, `CQ_ARMALL`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DbType::Sq => "SQ",
            DbType::Rq => "RQ",
            DbType::Srq => "SRQ",
            DbType::SrqArm => "SRQ_ARM",
            DbType::Cq => "CQ",
            DbType::CqArmSe => "CQ_ARMSE",
            DbType::CqArmAll => "CQ_ARMALL",
            DbType::CqArmEna => "CQ_ARMENA",
            DbType::SrqArmEna => "SRQ_ARMENA",
            DbType::CqCutoffAck => "CQ_CUTOFF_ACK",
            DbType::Nq => "NQ",
            DbType::NqArm => "NQ_ARM",
            DbType::PushStart => "PUSH_START",
            DbType::PushEnd => "PUSH_END",
            DbType::NqMask => "NQ_MASK",
            DbType::Null => "NULL",
        }
    }
}

/// Which engine a doorbell is for (`DBC_DBC64_PATH_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DbPath {
    /// The RoCE engine (0).
    Roce,
    /// The L2 engine (1).
    L2,
    /// The offload engine (2).
    Engine,
}

impl DbPath {
    fn from_field(v: u8) -> Option<DbPath> {
        match v {
            0 => Some(DbPath::Roce),
            1 => Some(DbPath::L2),
            2 => Some(DbPath::Engine),
            _ => None,
        }
    }

    fn field(self) -> u64 {
        match self {
            DbPath::Roce => 0,
            DbPath::L2 => 1,
            DbPath::Engine => 2,
        }
    }
}

/// A decoded 64-bit doorbell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Doorbell {
    /// What it rings.
    pub ty: DbType,
    /// The queue or ring id.
    pub xid: u32,
    /// Producer or consumer index (24 bits).
    pub index: u32,
    /// Epoch bit of the index.
    pub epoch: bool,
    /// Toggle (2 bits).
    pub toggle: u8,
    /// Engine.
    pub path: DbPath,
    /// The valid bit (P7 ignores doorbells without it).
    pub valid: bool,
    /// The debug-trace bit.
    pub debug_trace: bool,
}

/// Why a 64-bit value is not a doorbell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoorbellError {
    /// Type 0xe is not defined.
    UndefinedType(u8),
    /// Path 3 is not defined.
    UndefinedPath(u8),
}

impl core::fmt::Display for DoorbellError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DoorbellError::UndefinedType(t) => write!(f, "doorbell type 0x{t:x} is not defined"),
            DoorbellError::UndefinedPath(p) => write!(f, "doorbell path {p} is not defined"),
        }
    }
}

impl Doorbell {
    /// A RoCE-path doorbell with the valid bit set, as bnxt_re builds them
    /// (`BNXT_QPLIB_INIT_DBHDR`): `index` and `xid` are masked to their fields.
    pub fn roce(ty: DbType, xid: u32, index: u32, epoch: bool, toggle: u8) -> Doorbell {
        Doorbell {
            ty,
            xid: xid & XID_MASK,
            index: index & INDEX_MASK,
            epoch,
            toggle: toggle & 3,
            path: DbPath::Roce,
            valid: true,
            debug_trace: false,
        }
    }

    /// An L2-path doorbell with the valid bit set, as bnxt_en builds them on P7 (bnxt.c
    /// `bnxt_set_db`: `DBR_PATH_L2 | DBR_VALID` and the ring id): `index` and `xid` are masked to
    /// their fields.
    pub fn l2(ty: DbType, xid: u32, index: u32, epoch: bool, toggle: u8) -> Doorbell {
        Doorbell { path: DbPath::L2, ..Doorbell::roce(ty, xid, index, epoch, toggle) }
    }

    /// The 64-bit value to store.
    pub fn encode(&self) -> u64 {
        u64::from(self.index & INDEX_MASK)
            | if self.epoch { D::EPOCH } else { 0 }
            | (u64::from(self.toggle & 3) << TOGGLE_SHIFT)
            | (u64::from(self.xid & XID_MASK) << XID_SHIFT)
            | (self.path.field() << PATH_SHIFT)
            | if self.valid { D::VALID } else { 0 }
            | if self.debug_trace { D::DEBUG_TRACE } else { 0 }
            | (u64::from(self.ty.field()) << TYPE_SHIFT)
    }

    /// Decode a 64-bit doorbell value. Reserved bits are ignored.
    #[inline]
    pub fn decode(v: u64) -> Result<Doorbell, DoorbellError> {
        let ty_field = (v >> TYPE_SHIFT) as u8 & 0xf;
        let path_field = (v >> PATH_SHIFT) as u8 & 0x3;
        Ok(Doorbell {
            ty: DbType::from_field(ty_field).ok_or(DoorbellError::UndefinedType(ty_field))?,
            xid: ((v & D::XID_MASK) >> XID_SHIFT) as u32,
            index: (v & D::INDEX_MASK) as u32,
            epoch: v & D::EPOCH != 0,
            toggle: ((v & D::TOGGLE_MASK) >> TOGGLE_SHIFT) as u8,
            path: DbPath::from_field(path_field).ok_or(DoorbellError::UndefinedPath(path_field))?,
            valid: v & D::VALID != 0,
            debug_trace: v & D::DEBUG_TRACE != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_matches_the_header_masks() {
        let db = Doorbell::roce(DbType::CqArmAll, 0x12345, 0xabcdef, true, 2);
        let v = db.encode();
        assert_eq!(v & D::TYPE_MASK, D::TYPE_CQ_ARMALL);
        assert_eq!(v & D::VALID, D::VALID);
        assert_eq!(v & D::PATH_MASK, D::PATH_ROCE);
        assert_eq!((v & D::XID_MASK) >> 32, 0x12345);
        assert_eq!(v & D::INDEX_MASK, 0xabcdef);
        assert_eq!(v & D::EPOCH, D::EPOCH);
        assert_eq!((v & D::TOGGLE_MASK) >> 25, 2);
        assert_eq!(Doorbell::decode(v), Ok(db));
    }

    #[test]
    fn every_defined_type_round_trips_and_undefined_ones_are_refused() {
        for f in 0..16u8 {
            match DbType::from_field(f) {
                Some(t) => {
                    assert_eq!(t.field(), f);
                    let v = Doorbell::roce(t, 1, 2, false, 0).encode();
                    assert_eq!(Doorbell::decode(v).unwrap().ty, t);
                }
                None => assert_eq!(Doorbell::decode(u64::from(f) << 60), Err(DoorbellError::UndefinedType(f))),
            }
        }
        assert_eq!(Doorbell::decode(3 << 56), Err(DoorbellError::UndefinedPath(3)));
        let l2 = Doorbell::decode(D::PATH_L2 | D::TYPE_NQ_ARM).unwrap();
        assert_eq!((l2.path, l2.valid, l2.ty), (DbPath::L2, false, DbType::NqArm));
        let v = Doorbell::l2(DbType::NqMask, 3, 0, false, 0).encode();
        assert_eq!(v & D::PATH_MASK, D::PATH_L2);
        assert_eq!(v & D::VALID, D::VALID);
        assert_eq!(v & D::TYPE_MASK, D::TYPE_NQ_MASK);
    }
}
