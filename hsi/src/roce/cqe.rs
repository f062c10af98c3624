//! Completion-queue entries and notification-queue entries (roce_hsi.h `cq_base`, `cq_req`,
//! `cq_res_rc`, `nq_base`, `nq_cn`; bnxt_re qplib_fp.h `CQE_CMP_VALID`, `NQE_CMP_VALID`,
//! qplib_fp.c `bnxt_qplib_service_nq`, `bnxt_qplib_poll_cq`; hardware-map §5.4-5.5).
//!
//! A CQE is 32 bytes; byte 0x18 holds the toggle (bit 0) and the type (bits 4:1), byte 0x19 the
//! status. An entry is new when its toggle bit differs from the consumer's epoch, which starts at
//! 0 and flips at each wrap: the producer writes toggle 1 on its first pass. NQ entries are 16
//! bytes with their valid bit in bit 0 of the dword at +8, by the same rule.

use super::layouts::{CqBase, NqCn};

/// Bytes of one CQE.
pub const CQE_BYTES: usize = 32;
/// Bytes of one NQ entry.
pub const NQE_BYTES: usize = 16;
/// Offset of `cqe_type_toggle` in every CQE.
pub const CQE_TYPE_TOGGLE_OFFSET: usize = 0x18;
/// Offset of `status` in every CQE.
pub const CQE_STATUS_OFFSET: usize = 0x19;
/// Shift of the type in `cqe_type_toggle` (`CQ_BASE_CQE_TYPE_SFT`).
pub const CQE_TYPE_SHIFT: u8 = 1;
/// Shift of the toggle in `nq_cn.type` (`NQ_CN_TOGGLE_SFT`, P7).
pub const NQ_CN_TOGGLE_SHIFT: u16 = 6;
/// Offset of the dword holding an NQ entry's valid bit.
pub const NQE_VALID_OFFSET: usize = 8;

/// CQE types (`CQ_BASE_CQE_TYPE_*` >> 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CqeType {
    /// Requester completion (`cq_req`).
    Req,
    /// RC responder completion (`cq_res_rc`).
    ResRc,
    /// UD responder completion.
    ResUd,
    /// Raw Ethernet / QP1 responder completion.
    ResRawethQp1,
    /// UD responder completion with CFA metadata.
    ResUdCfa,
    /// Nothing (a placeholder the hardware may write).
    NoOp,
    /// A QP went to the error state (`cq_terminal`).
    Terminal,
    /// Resize cut-off (`cq_cutoff`).
    CutOff,
}

impl CqeType {
    /// The value of the type field (already shifted into bits 4:1).
    pub fn field(self) -> u8 {
        match self {
            CqeType::Req => CqBase::CQE_TYPE_REQ,
            CqeType::ResRc => CqBase::CQE_TYPE_RES_RC,
            CqeType::ResUd => CqBase::CQE_TYPE_RES_UD,
            CqeType::ResRawethQp1 => CqBase::CQE_TYPE_RES_RAWETH_QP1,
            CqeType::ResUdCfa => CqBase::CQE_TYPE_RES_UD_CFA,
            CqeType::NoOp => CqBase::CQE_TYPE_NO_OP,
            CqeType::Terminal => CqBase::CQE_TYPE_TERMINAL,
            CqeType::CutOff => CqBase::CQE_TYPE_CUT_OFF,
        }
    }

    /// The type of a `cqe_type_toggle` byte, if it is one of these.
    #[inline]
    pub fn of(type_toggle: u8) -> Option<CqeType> {
        let f = type_toggle & CqBase::CQE_TYPE_MASK;
        [
            CqeType::Req,
            CqeType::ResRc,
            CqeType::ResUd,
            CqeType::ResRawethQp1,
            CqeType::ResUdCfa,
            CqeType::NoOp,
            CqeType::Terminal,
            CqeType::CutOff,
        ]
        .into_iter()
        .find(|t| t.field() == f)
    }
}

/// The `cqe_type_toggle` byte of a CQE of type `ty` written with toggle bit `toggle`.
pub fn type_toggle(ty: CqeType, toggle: bool) -> u8 {
    ty.field() | u8::from(toggle)
}

/// `nq_cn.type` of a CQ notification carrying the CQ's 2-bit `toggle` (P7).
pub fn nq_cn_type(toggle: u8) -> u16 {
    NqCn::TYPE_CQ_NOTIFICATION | ((u16::from(toggle) << NQ_CN_TOGGLE_SHIFT) & NqCn::TOGGLE_MASK)
}

/// Whether an entry whose valid/toggle bit is `bit` is new to a consumer in epoch `epoch`
/// (`CQE_CMP_VALID`, `NQE_CMP_VALID`, `CREQ_CMP_VALID`).
pub fn is_new(bit: bool, epoch: bool) -> bool {
    bit != epoch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_toggles_pack_as_the_header_says() {
        assert_eq!(type_toggle(CqeType::ResRc, true), 0x3);
        assert_eq!(CqeType::of(0x3), Some(CqeType::ResRc));
        assert_eq!(CqeType::of(0x1c), Some(CqeType::Terminal));
        assert_eq!(CqeType::of(0x10), None);
        assert_eq!(nq_cn_type(3), 0xf0);
        assert!(is_new(true, false) && !is_new(true, true));
    }
}
