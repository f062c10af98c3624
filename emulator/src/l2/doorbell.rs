//! L2-path doorbells (bnxt.c `bnxt_set_db`, `bnxt_db_write`, `bnxt_db_cq`, `bnxt_db_nq`,
//! `bnxt_db_nq_arm`, `__bnxt_poll_cqs_done`; bnxt_hsi.h `dbc_dbc64`).
//!
//! bnxt_en rings every L2 ring with one 64-bit store at BAR2 + `db_offset` (the page FUNC_QCFG's
//! `legacy_l2_db_size_kb` names): index bits 23:0, epoch bit 24, toggle bits 26:25, the ring id
//! (XID) in bits 51:32, path 1 (L2) in bits 57:56, the valid bit 58 (P7), and the type in bits
//! 63:60: SQ for TX rings, SRQ for RX and aggregation rings, CQ / CQ_ARMALL / CQ_ARMSE for
//! completion rings, and NQ / NQ_ARM / NQ_MASK for NQs. NQ_MASK (0xe, `DBR_TYPE_NQ_MASK`) is
//! what P7 bnxt_en writes to update an NQ's consumer with its interrupt masked
//! (`BNXT_DB_NQ_P7`, used at ring allocation and by `bnxt_disable_int`); the model reads it as
//! "consumer update, disarm".

use bnxt_hsi::hwrm::layouts::DbcDbc64 as D;

/// What an L2 doorbell asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L2DbKind {
    /// SQ: the TX ring's producer.
    Sq,
    /// SRQ: an RX or aggregation ring's producer.
    Srq,
    /// CQ: the completion ring's consumer, no arming.
    Cq,
    /// CQ_ARMALL: consumer, then a notification for the next completion.
    CqArmAll,
    /// CQ_ARMSE: consumer, then a notification for the next solicited completion (L2
    /// completions are never solicited, so this arms like ARMALL for errors only: the model
    /// treats it as ARMALL).
    CqArmSe,
    /// CQ_ARMENA: enable arming (the RoCE driver's sequence; bnxt_en does not send it).
    CqArmEna,
    /// NQ: the NQ's consumer.
    Nq,
    /// NQ_ARM: consumer, and interrupt on the next entry.
    NqArm,
    /// NQ_MASK: consumer, interrupt masked.
    NqMask,
    /// NULL: nothing.
    Null,
    /// A type the L2 path does not take here (RQ, SRQ arming, CQ cut-off, push), with its
    /// 4-bit value.
    Other(u8),
}

/// A decoded L2 doorbell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L2Doorbell {
    /// What it asks for.
    pub kind: L2DbKind,
    /// The ring id.
    pub xid: u16,
    /// Index (24 bits).
    pub index: u32,
    /// Epoch bit.
    pub epoch: bool,
    /// Toggle (2 bits).
    pub toggle: u8,
    /// The valid bit (P7 ignores doorbells without it).
    pub valid: bool,
}

/// Why a 64-bit value is not an L2 doorbell the model takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum L2DbError {
    /// The path field is not L2.
    #[error("path {0} is not the L2 path")]
    NotL2(u8),
    /// The XID does not fit a ring id.
    #[error("xid 0x{0:x} is not a ring id")]
    BadXid(u32),
}

/// Path bits of a 64-bit doorbell.
pub fn path_of(value: u64) -> u8 {
    ((value & D::PATH_MASK) >> 56) as u8
}

/// Whether a 64-bit doorbell value is on the L2 path.
pub fn is_l2(value: u64) -> bool {
    value & D::PATH_MASK == D::PATH_L2
}

impl L2Doorbell {
    /// Decode `value`.
    pub fn decode(value: u64) -> Result<L2Doorbell, L2DbError> {
        if !is_l2(value) {
            return Err(L2DbError::NotL2(path_of(value)));
        }
        let xid32 = ((value & D::XID_MASK) >> 32) as u32;
        let xid = u16::try_from(xid32).map_err(|_| L2DbError::BadXid(xid32))?;
        let ty = (value >> 60) as u8;
        let kind = match ty {
            0x0 => L2DbKind::Sq,
            0x2 => L2DbKind::Srq,
            0x4 => L2DbKind::Cq,
            0x5 => L2DbKind::CqArmSe,
            0x6 => L2DbKind::CqArmAll,
            0x7 => L2DbKind::CqArmEna,
            0xa => L2DbKind::Nq,
            0xb => L2DbKind::NqArm,
            0xe => L2DbKind::NqMask,
            0xf => L2DbKind::Null,
            other => L2DbKind::Other(other),
        };
        Ok(L2Doorbell {
            kind,
            xid,
            index: (value & D::INDEX_MASK) as u32,
            epoch: value & D::EPOCH != 0,
            toggle: ((value & D::TOGGLE_MASK) >> 25) as u8,
            valid: value & D::VALID != 0,
        })
    }

    /// Encode (for tests and test drivers): an L2 doorbell with the valid bit set.
    pub fn encode(kind: L2DbKind, xid: u16, index: u32, epoch: bool, toggle: u8) -> u64 {
        let ty: u64 = match kind {
            L2DbKind::Sq => 0x0,
            L2DbKind::Srq => 0x2,
            L2DbKind::Cq => 0x4,
            L2DbKind::CqArmSe => 0x5,
            L2DbKind::CqArmAll => 0x6,
            L2DbKind::CqArmEna => 0x7,
            L2DbKind::Nq => 0xa,
            L2DbKind::NqArm => 0xb,
            L2DbKind::NqMask => 0xe,
            L2DbKind::Null => 0xf,
            L2DbKind::Other(t) => u64::from(t & 0xf),
        };
        u64::from(index) & D::INDEX_MASK
            | if epoch { D::EPOCH } else { 0 }
            | (u64::from(toggle & 3) << 25)
            | (u64::from(xid) << 32)
            | D::PATH_L2
            | D::VALID
            | (ty << 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bnxt_en_doorbells_decode() {
        // BNXT_DB_NQ_P7 of NQ 3 at consumer 5: DBR_PATH_L2 | DBR_VALID | xid << 32 | NQ_MASK | 5.
        let v = (1u64 << 56) | (1 << 58) | (3u64 << 32) | (0xe << 60) | 5;
        let d = L2Doorbell::decode(v).unwrap();
        assert_eq!((d.kind, d.xid, d.index, d.valid), (L2DbKind::NqMask, 3, 5, true));
        let arm = L2Doorbell::encode(L2DbKind::CqArmAll, 7, 0x1ff, true, 2);
        let d = L2Doorbell::decode(arm).unwrap();
        assert_eq!((d.kind, d.xid, d.index, d.epoch, d.toggle), (L2DbKind::CqArmAll, 7, 0x1ff, true, 2));
        assert_eq!(L2Doorbell::decode(0x1u64 << 60), Err(L2DbError::NotL2(0)));
        assert_eq!(L2Doorbell::decode((1 << 56) | (0x10000u64 << 32)), Err(L2DbError::BadXid(0x10000)));
        assert_eq!(L2Doorbell::decode((1 << 56) | (0x1u64 << 60)).unwrap().kind, L2DbKind::Other(1));
    }
}
