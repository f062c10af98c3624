//! What the RoCE firmware reports and enforces that no public source states for a BCM57608: the
//! model's choices, each picked to be plausible for a P7 and consistent with what bnxt_re does
//! with it (qplib_sp.c `bnxt_qplib_get_dev_attr`; hardware-map §4.5 QUERY_FUNC). Limits that
//! follow from the context memory (QPs, CQs, SRQs, regions, AVs) are not here: they come from
//! [`crate::firmware::context_mem::ContextLimits`].

use std::time::Duration;

use crate::config_space::BAR2_SIZE;
use crate::firmware::func::L2_DOORBELL_BAR_SIZE_KB;

/// Time from a CMDQ trigger to the command's CREQ completion: the model's fixed firmware
/// latency (bnxt_re waits up to `RCFW_FW_STALL_MAX_TIMEOUT`, 40 s, for any command).
pub const RCFW_LATENCY: Duration = Duration::from_micros(10);

/// Time a frame to one of the NIC's own MACs takes to come back in (the model's choice: the
/// switch's latency).
pub const LOOPBACK_LATENCY: Duration = Duration::from_micros(1);

/// Largest CMDQ (`cmdq_init` size, 16-byte slots). The 14-bit field could name 16383, but the
/// producer register carries a 16-bit free-running index (bnxt_re `cmdq_hwq->prod & 0xFFFF`),
/// which only wraps cleanly for power-of-two depths; bnxt_re uses 8192.
pub const MAX_CMDQ_SLOTS: u32 = 8192;
/// Longest command in 16-byte slots the firmware takes: MODIFY_QP, the longest plain command
/// bnxt_re sends, is 9; its TLV-encapsulated MODIFY_ROCE_CC with every extension is 19
/// (qplib_tlv.h `bnxt_qplib_tlv_modify_cc_req`: 16 + 56 + 8 + 96 + 32 + 48 + 48 bytes).
pub const MAX_CMD_SLOTS: u8 = 32;

/// QUERY_FUNC `max_mr_size`: 1 TiB.
pub const MAX_MR_SIZE: u64 = 1 << 40;
/// QUERY_FUNC `max_qp_wr`: SQ/RQ entries; bnxt_re subtracts one.
pub const MAX_QP_WR: u16 = 0xffff;
/// Most WQEs or slots CREATE_QP takes in `sq_size`/`rq_size` (bnxt_re `BNXT_QPLIB_MAX_SQSZ`).
pub const MAX_QUEUE_SIZE: u32 = 0xffff;
/// QUERY_FUNC `max_cqe`: entries per CQ.
pub const MAX_CQE: u32 = (1 << 20) - 1;
/// QUERY_FUNC `max_pd`: protection domains are driver-chosen ids below this.
pub const MAX_PD: u32 = 1 << 16;
/// QUERY_FUNC `max_sge` for static (128-byte) WQEs (bnxt_re `BNXT_RE_STATIC_WQE_MAX_SGE`; "for
/// Thor2 SGE should be 6", qplib_fp.h `BNXT_MSN_TBLE_SGE`).
pub const MAX_SGE: u8 = 6;
/// QUERY_FUNC `max_sge_var_wqe` (bnxt_re `BNXT_VAR_MAX_SGE`).
pub const MAX_SGE_VAR_WQE: u8 = 13;
/// QUERY_FUNC `max_qp_rd_atom` and `max_qp_init_rd_atom`: outstanding RDMA READs per QP.
pub const MAX_RD_ATOM: u8 = 16;
/// QUERY_FUNC `max_inline_data` for static WQEs: the 128-byte WQE less its 32-byte header.
pub const MAX_INLINE_DATA: u32 = 96;
/// QUERY_FUNC `max_inline_data_var_wqe`: 13 slots of 16 bytes.
pub const MAX_INLINE_DATA_VAR_WQE: u16 = MAX_SGE_VAR_WQE as u16 * 16;
/// QUERY_FUNC `max_gid`: hardware GID table entries.
pub const MAX_GID: u32 = 128;
/// QUERY_FUNC `max_pkeys`.
pub const MAX_PKEYS: u32 = 1;
/// QUERY_FUNC `max_srq_wr`.
pub const MAX_SRQ_WR: u32 = 0xffff;
/// QUERY_FUNC `max_msn_table_size`. The field's unit is not documented and bnxt_re does not
/// read it; the model reports log2 of the largest table (64 Ki entries).
pub const MAX_MSN_TABLE_SIZE_LOG2: u8 = 16;
/// QUERY_FUNC `max_dpi`: the kernel doorbell page plus one user page per 4 KiB of BAR2 above the
/// L2 doorbell area.
pub const MAX_DPI: u32 = 1 + ((BAR2_SIZE - L2_DOORBELL_BAR_SIZE_KB as u64 * 1024) / 4096) as u32;
/// Bytes of one doorbell page (DPI).
pub const DPI_PAGE: u64 = 4096;

/// Page sizes the RoCE commands' 3-bit page-size codes name (`*_PG_SIZE_PG_4K` ... `_PG_1G`):
/// log2 of 4 KiB, 8 KiB, 64 KiB, 2 MiB, 8 MiB, 1 GiB.
pub fn page_shift_of_code(code: u8) -> Option<u32> {
    [12, 13, 16, 21, 23, 30].get(usize::from(code)).copied()
}
