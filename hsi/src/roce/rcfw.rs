//! The RoCE firmware channel (RCFW): the command queue (CMDQ) the driver writes commands into
//! and the completion ring (CREQ) the firmware answers on (bnxt_re `qplib_rcfw.[ch]`; roce_hsi.h
//! `cmdq_init`, `cmdq_base`, `creq_base`, `creq_qp_event`; hardware-map §4).

use super::layouts::{CmdqBase as B, CreqQpEvent as E};

/// Bytes of one CMDQ slot (`BNXT_QPLIB_CMDQE_UNITS`); `cmd_size` counts these.
pub const CMDQE_BYTES: usize = 16;
/// Bytes of one CREQ entry (`BNXT_QPLIB_CREQE_UNITS`).
pub const CREQE_BYTES: usize = 16;
/// CMDQ slots bnxt_re allocates (`BNXT_QPLIB_CMDQE_MAX_CNT`).
pub const BNXT_RE_CMDQ_SLOTS: u32 = 8192;
/// CREQ entries bnxt_re allocates (`BNXT_QPLIB_CREQE_MAX_CNT`).
pub const BNXT_RE_CREQ_ENTRIES: u32 = 64 * 1024;
/// Bit of the producer register that makes the firmware reset its pointers; bnxt_re sets it on
/// its first producer write after starting the channel (`FIRMWARE_FIRST_FLAG`).
pub const FIRMWARE_FIRST_FLAG: u32 = 1 << 31;
/// Bits of the producer register holding the producer (`cmdq_hwq->prod & 0xFFFF`).
pub const CMDQ_PROD_MASK: u32 = 0xffff;
/// Shift of the size field in `cmdq_init.cmdq_size_cmdq_lvl` (`CMDQ_INIT_CMDQ_SIZE_SFT`).
pub const CMDQ_INIT_SIZE_SHIFT: u32 = 2;
/// Bit 15 of `cookie` that bnxt_re sets on blocking commands (`RCFW_CMD_IS_BLOCKING`); the
/// firmware echoes the cookie as is.
pub const COOKIE_BLOCKING: u16 = 0x8000;

/// First 16 bits of a TLV-encapsulated command (bnxt_hsi.h `tlv.cmd_discr`, `CMD_DISCR_TLV_ENCAP`):
/// the command starts with a 16-byte `roce_tlv` header (bnxt_re qplib_tlv.h: the 8-byte `tlv`,
/// then `total_size` in 16-byte slots at byte 8, then 7 unused bytes), and its `cmdq_base`
/// follows at [`TLV_HEADER_BYTES`] (qplib_tlv.h `GET_TLV_DATA`, `__get_cmdq_base_opcode`).
/// bnxt_re sends MODIFY_ROCE_CC this way on P7 (qplib_sp.c `bnxt_qplib_modify_cc`).
pub const CMD_DISCR_TLV_ENCAP: u16 = 0x8000;
/// Bytes of the `roce_tlv` header before an encapsulated command (qplib_tlv.h `TLV_BYTES`).
pub const TLV_HEADER_BYTES: usize = 16;
/// Byte of `roce_tlv` holding the command's whole size in 16-byte slots, the header included
/// (qplib_tlv.h `roce_tlv.total_size`; `bnxt_qplib_get_cmd_slots`).
pub const TLV_TOTAL_SIZE_BYTE: usize = 8;
/// `tlv.tlv_type` of the command a TLV-encapsulated command carries first (bnxt_hsi.h
/// `TLV_TYPE_ROCE_SP_COMMAND`; qplib_tlv.h `ROCE_1ST_TLV_PREP`).
pub const TLV_TYPE_ROCE_SP_COMMAND: u16 = 0x3;
/// `tlv.tlv_type` of the generation-1 congestion-control parameters in QUERY_ROCE_CC's side
/// buffer (bnxt_hsi.h `TLV_TYPE_QUERY_ROCE_CC_GEN1`; roce_hsi.h
/// `creq_query_roce_cc_gen1_resp_sb_tlv`).
pub const TLV_TYPE_QUERY_ROCE_CC_GEN1: u16 = 0x4;
/// `tlv.tlv_type` of MODIFY_ROCE_CC's generation-1 extension (bnxt_hsi.h
/// `TLV_TYPE_MODIFY_ROCE_CC_GEN1`; roce_hsi.h `cmdq_modify_roce_cc_gen1_tlv`).
pub const TLV_TYPE_MODIFY_ROCE_CC_GEN1: u16 = 0x5;

/// `creq_base.type`: command completion or QP/CQ error (`CREQ_BASE_TYPE_QP_EVENT`).
pub const CREQ_TYPE_QP_EVENT: u8 = 0x38;
/// `creq_base.type`: function event (`CREQ_BASE_TYPE_FUNC_EVENT`).
pub const CREQ_TYPE_FUNC_EVENT: u8 = 0x3a;
/// An HWRM async event on the CREQ, which bnxt_re ignores
/// (`ASYNC_EVENT_CMPL_TYPE_HWRM_ASYNC_EVENT`).
pub const CREQ_TYPE_HWRM_ASYNC_EVENT: u8 = 0x2e;
/// `creq_qp_event.event` of a QP error (`CREQ_QP_EVENT_EVENT_QP_ERROR_NOTIFICATION`).
pub const EVENT_QP_ERROR_NOTIFICATION: u8 = E::EVENT_QP_ERROR_NOTIFICATION;
/// `creq_qp_event.event` of a CQ error (`CREQ_QP_EVENT_EVENT_CQ_ERROR_NOTIFICATION`).
pub const EVENT_CQ_ERROR_NOTIFICATION: u8 = E::EVENT_CQ_ERROR_NOTIFICATION;

/// `creq_cq_error_notification.cq_err_reason` (`CREQ_CQ_ERROR_NOTIFICATION_CQ_ERR_REASON_*`).
pub mod cq_err_reason {
    /// The requester's CQ is invalid.
    pub const REQ_CQ_INVALID: u8 = 0x1;
    /// The requester's CQ overflowed.
    pub const REQ_CQ_OVERFLOW: u8 = 0x2;
    /// The requester's CQ context could not be loaded.
    pub const REQ_CQ_LOAD: u8 = 0x3;
    /// The responder's CQ is invalid.
    pub const RES_CQ_INVALID: u8 = 0x4;
    /// The responder's CQ overflowed.
    pub const RES_CQ_OVERFLOW: u8 = 0x5;
    /// The responder's CQ context could not be loaded.
    pub const RES_CQ_LOAD: u8 = 0x6;
}

/// `creq_qp_event.status`, the outcome of a command (`CREQ_QP_EVENT_STATUS_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreqStatus {
    /// Done.
    Success,
    /// Failed.
    Fail,
    /// A resource (QP, CQ, key, ...) is exhausted.
    Resources,
    /// The command is not one the firmware knows.
    InvalidCmd,
    /// The command is known but not implemented.
    NotImplemented,
    /// A field of the command is wrong.
    InvalidParameter,
    /// The hardware failed.
    HardwareError,
    /// The firmware failed.
    InternalError,
}

impl CreqStatus {
    /// The wire value.
    pub fn value(self) -> u8 {
        match self {
            CreqStatus::Success => E::STATUS_SUCCESS,
            CreqStatus::Fail => E::STATUS_FAIL,
            CreqStatus::Resources => E::STATUS_RESOURCES,
            CreqStatus::InvalidCmd => E::STATUS_INVALID_CMD,
            CreqStatus::NotImplemented => E::STATUS_NOT_IMPLEMENTED,
            CreqStatus::InvalidParameter => E::STATUS_INVALID_PARAMETER,
            CreqStatus::HardwareError => E::STATUS_HARDWARE_ERROR,
            CreqStatus::InternalError => E::STATUS_INTERNAL_ERROR,
        }
    }

    /// The status for a wire value, if defined.
    pub fn from_value(v: u8) -> Option<CreqStatus> {
        [
            CreqStatus::Success,
            CreqStatus::Fail,
            CreqStatus::Resources,
            CreqStatus::InvalidCmd,
            CreqStatus::NotImplemented,
            CreqStatus::InvalidParameter,
            CreqStatus::HardwareError,
            CreqStatus::InternalError,
        ]
        .into_iter()
        .find(|s| s.value() == v)
    }

    /// The header's name (`INVALID_PARAMETER`).
    pub fn name(self) -> &'static str {
        match self {
            CreqStatus::Success => "SUCCESS",
            CreqStatus::Fail => "FAIL",
            CreqStatus::Resources => "RESOURCES",
            CreqStatus::InvalidCmd => "INVALID_CMD",
            CreqStatus::NotImplemented => "NOT_IMPLEMENTED",
            CreqStatus::InvalidParameter => "INVALID_PARAMETER",
            CreqStatus::HardwareError => "HARDWARE_ERROR",
            CreqStatus::InternalError => "INTERNAL_ERROR",
        }
    }
}

/// Every opcode `cmdq_base.opcode` defines (`CMDQ_BASE_OPCODE_*`), with its name.
pub const OPCODES: [(u8, &str); 49] = [
    (B::OPCODE_CREATE_QP, "CREATE_QP"),
    (B::OPCODE_DESTROY_QP, "DESTROY_QP"),
    (B::OPCODE_MODIFY_QP, "MODIFY_QP"),
    (B::OPCODE_QUERY_QP, "QUERY_QP"),
    (B::OPCODE_CREATE_SRQ, "CREATE_SRQ"),
    (B::OPCODE_DESTROY_SRQ, "DESTROY_SRQ"),
    (B::OPCODE_QUERY_SRQ, "QUERY_SRQ"),
    (B::OPCODE_CREATE_CQ, "CREATE_CQ"),
    (B::OPCODE_DESTROY_CQ, "DESTROY_CQ"),
    (B::OPCODE_RESIZE_CQ, "RESIZE_CQ"),
    (B::OPCODE_ALLOCATE_MRW, "ALLOCATE_MRW"),
    (B::OPCODE_DEALLOCATE_KEY, "DEALLOCATE_KEY"),
    (B::OPCODE_REGISTER_MR, "REGISTER_MR"),
    (B::OPCODE_DEREGISTER_MR, "DEREGISTER_MR"),
    (B::OPCODE_ADD_GID, "ADD_GID"),
    (B::OPCODE_DELETE_GID, "DELETE_GID"),
    (B::OPCODE_MODIFY_GID, "MODIFY_GID"),
    (B::OPCODE_QUERY_GID, "QUERY_GID"),
    (B::OPCODE_CREATE_QP1, "CREATE_QP1"),
    (B::OPCODE_DESTROY_QP1, "DESTROY_QP1"),
    (B::OPCODE_CREATE_AH, "CREATE_AH"),
    (B::OPCODE_DESTROY_AH, "DESTROY_AH"),
    (B::OPCODE_INITIALIZE_FW, "INITIALIZE_FW"),
    (B::OPCODE_DEINITIALIZE_FW, "DEINITIALIZE_FW"),
    (B::OPCODE_STOP_FUNC, "STOP_FUNC"),
    (B::OPCODE_QUERY_FUNC, "QUERY_FUNC"),
    (B::OPCODE_SET_FUNC_RESOURCES, "SET_FUNC_RESOURCES"),
    (B::OPCODE_READ_CONTEXT, "READ_CONTEXT"),
    (B::OPCODE_VF_BACKCHANNEL_REQUEST, "VF_BACKCHANNEL_REQUEST"),
    (B::OPCODE_READ_VF_MEMORY, "READ_VF_MEMORY"),
    (B::OPCODE_COMPLETE_VF_REQUEST, "COMPLETE_VF_REQUEST"),
    (B::OPCODE_EXTEND_CONTEXT_ARRAY_DEPRECATED, "EXTEND_CONTEXT_ARRAY_DEPRECATED"),
    (B::OPCODE_MAP_TC_TO_COS, "MAP_TC_TO_COS"),
    (B::OPCODE_QUERY_VERSION, "QUERY_VERSION"),
    (B::OPCODE_MODIFY_ROCE_CC, "MODIFY_ROCE_CC"),
    (B::OPCODE_QUERY_ROCE_CC, "QUERY_ROCE_CC"),
    (B::OPCODE_QUERY_ROCE_STATS, "QUERY_ROCE_STATS"),
    (B::OPCODE_SET_LINK_AGGR_MODE, "SET_LINK_AGGR_MODE"),
    (B::OPCODE_MODIFY_CQ, "MODIFY_CQ"),
    (B::OPCODE_QUERY_QP_EXTEND, "QUERY_QP_EXTEND"),
    (B::OPCODE_QUERY_ROCE_STATS_EXT, "QUERY_ROCE_STATS_EXT"),
    (B::OPCODE_ORCHESTRATE_QID_MIGRATION, "ORCHESTRATE_QID_MIGRATION"),
    (B::OPCODE_CREATE_QP_BATCH, "CREATE_QP_BATCH"),
    (B::OPCODE_DESTROY_QP_BATCH, "DESTROY_QP_BATCH"),
    (B::OPCODE_ALLOCATE_ROCE_STATS_EXT_CTX, "ALLOCATE_ROCE_STATS_EXT_CTX"),
    (B::OPCODE_DEALLOCATE_ROCE_STATS_EXT_CTX, "DEALLOCATE_ROCE_STATS_EXT_CTX"),
    (B::OPCODE_QUERY_ROCE_STATS_EXT_V2, "QUERY_ROCE_STATS_EXT_V2"),
    (B::OPCODE_ROCE_MIRROR_CFG, "ROCE_MIRROR_CFG"),
    (B::OPCODE_ROCE_CFG, "ROCE_CFG"),
];

/// The name of an opcode (`CREATE_QP`), if the interface defines it.
pub fn opcode_name(opcode: u8) -> Option<&'static str> {
    OPCODES.iter().find(|(o, _)| *o == opcode).map(|(_, n)| *n)
}

/// CMDQ slots a command of `bytes` bytes occupies (`bnxt_qplib_set_cmd_slots`).
pub fn cmd_slots(bytes: usize) -> usize {
    bytes.div_ceil(CMDQE_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_opcodes_have_their_header_values() {
        assert_eq!(CreqStatus::InvalidParameter.value(), 5);
        assert_eq!(CreqStatus::from_value(2), Some(CreqStatus::Resources));
        assert_eq!(CreqStatus::from_value(8), None);
        assert_eq!(opcode_name(0x83), Some("QUERY_FUNC"));
        assert_eq!(opcode_name(0x7f), None);
        assert_eq!(cmd_slots(112), 7);
        assert_eq!(cmd_slots(144), 9);
    }
}
