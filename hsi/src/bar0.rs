//! Offsets into BAR0, the register space.
//!
//! Sources: bnxt.h `BNXT_GRCPF_REG_*`, `BNXT_GRC_REG_STATUS_P5`, `BNXT_FW_HEALTH_WIN_*`;
//! bnxt_re qplib_rcfw.h `RCFW_COMM_*`; hardware-map §2.1.

/// HWRM request window (`BNXT_GRCPF_REG_CHIMP_COMM`): the driver writes the request's dwords here.
pub const HWRM_REQ_WINDOW: u64 = 0x000;
/// Size of the HWRM request window the model implements (`max_req_win_len` it reports).
pub const HWRM_REQ_WINDOW_LEN: u64 = 0x80;
/// HWRM trigger (`BNXT_GRCPF_REG_CHIMP_COMM_TRIGGER`): writing 1 submits the request in the window.
pub const HWRM_TRIGGER: u64 = 0x100;
/// First GRC window base register (`BNXT_GRCPF_REG_WINDOW_BASE_OUT`); window k (1-based) is
/// programmed at `GRC_WINDOW_BASE + 4*(k-1)` and appears at BAR0 + k * 0x1000.
pub const GRC_WINDOW_BASE: u64 = 0x400;
/// Number of GRC windows the model implements (windows 1..=3; bnxt_en uses 2 and 3).
pub const GRC_WINDOW_COUNT: u64 = 3;
/// Size of one GRC window in BAR0.
pub const GRC_WINDOW_SIZE: u64 = 0x1000;
/// Firmware status register on P5/P7 when the `hcomm_status` structure is absent
/// (`BNXT_GRC_REG_STATUS_P5`).
pub const FW_STATUS_P5: u64 = 0x520;
/// RoCE firmware channel mailbox (`RCFW_COMM_BASE_OFFSET`): the 16-byte `cmdq_init` block.
pub const RCFW_COMM_BASE: u64 = 0x600;
/// RoCE command-queue producer index (`RCFW_COMM_BASE_OFFSET + RCFW_PF_VF_COMM_PROD_OFFSET`).
pub const RCFW_CMDQ_PROD: u64 = 0x60c;
/// RoCE command-queue trigger (`RCFW_COMM_BASE_OFFSET + RCFW_COMM_TRIG_OFFSET`); write 1.
pub const RCFW_CMDQ_TRIG: u64 = 0x700;
/// Value written to the HWRM and RoCE triggers.
pub const TRIGGER_VALUE: u32 = 1;
/// KONG mailbox request window (`BNXT_GRCPF_REG_KONG_COMM`), not implemented by the model.
pub const KONG_REQ_WINDOW: u64 = 0xa00;
/// KONG trigger (`BNXT_GRCPF_REG_KONG_COMM_TRIGGER`), not implemented by the model.
pub const KONG_TRIGGER: u64 = 0xb00;
/// GRC address of the `hcomm_status` structure (`HCOMM_STATUS_STRUCT_LOC`), read through a GRC
/// window by bnxt_en to locate the firmware status register.
pub const HCOMM_STATUS_STRUCT_LOC: u32 = 0x31001f0;
/// GRC base of the chip registers (`BNXT_GRC_REG_BASE`); chip number at +0x48 (`BNXT_GRC_REG_CHIP_NUM`).
pub const GRC_REG_BASE: u32 = 0x260000;
/// Offset of the chip number register from [`GRC_REG_BASE`] (`BNXT_GRC_REG_CHIP_NUM`).
pub const GRC_REG_CHIP_NUM: u32 = 0x48;
/// Size of BAR0 the model exposes (no public source states it; large enough for the offsets above).
pub const BAR0_SIZE: u64 = 0x1_0000;
