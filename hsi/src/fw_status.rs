//! Firmware status register values (`fw_status_reg`, bnxt_hsi.h; bnxt.h `BNXT_FW_STATUS_*`).

/// Bits 15:0 of the status register.
pub const CODE_MASK: u32 = 0xffff;
/// Code meaning the firmware is ready (`FW_STATUS_REG_CODE_READY`); smaller codes mean booting,
/// larger ones an error.
pub const CODE_READY: u32 = 0x8000;
/// Image degraded (`FW_STATUS_REG_IMAGE_DEGRADED`).
pub const IMAGE_DEGRADED: u32 = 0x10000;
/// Recoverable (`FW_STATUS_REG_RECOVERABLE`).
pub const RECOVERABLE: u32 = 0x20000;
/// Shutting down (`FW_STATUS_REG_SHUTDOWN`).
pub const SHUTDOWN: u32 = 0x100000;
/// Recovering (`FW_STATUS_REG_RECOVERING`).
pub const RECOVERING: u32 = 0x400000;
/// The `hcomm_status.sig_ver` value marking a valid structure: signature 'HCS' (0x484353) in bits
/// 31:8, version 1 in bits 7:0 (`HCOMM_STATUS_SIGNATURE_VAL`, `HCOMM_STATUS_VER_LATEST`).
pub const HCOMM_SIG_VER: u32 = (0x484353 << 8) | 1;
