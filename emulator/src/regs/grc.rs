//! The few GRC (chip-internal register space) addresses bnxt_en reads through BAR0's GRC
//! windows: the `hcomm_status` structure and the chip number.
//!
//! bnxt_en (bnxt.c `bnxt_try_map_fw_health_reg`) maps `HCOMM_STATUS_STRUCT_LOC` (0x31001f0)
//! through window 3 and reads `sig_ver`; if the 'HCS' signature is there it takes the firmware
//! status register's location from `fw_status_loc`, else it falls back to BAR0 0x520 on P5+
//! and reads the chip number at GRC 0x260048. The model implements the structure (signature,
//! version 1) pointing at BAR0 0x520 in address space 2 (BAR0): both of bnxt_en's paths then
//! read the same register, and DPDK's (bnxt_ethdev.c `bnxt_map_fw_health_status_regs`) as well.
//! The chip number register is implemented too, for drivers that read it anyway.
//!
//! DPDK's PMD looks for the structure too (bnxt_ethdev.c `bnxt_map_hcomm_fw_status_reg`), but
//! stores `HCOMM_STATUS_STRUCT_LOC` itself, low bits and all, into window 2's base register and
//! reads `sig_ver` at the window's first word (BAR0 0x2000), without the `& 0xffc` offset
//! (0x1f0) that bnxt_en adds and that DPDK adds itself everywhere else it uses a window
//! (`bnxt_map_fw_health_status_regs`, `bnxt_map_reset_regs`, `bnxt_map_regs`). The model keeps
//! a window's base 4 KiB-aligned, as those uses take it to be (bnxt.h `BNXT_GRC_BASE_MASK`), so
//! that read lands on GRC 0x3100000, which no public source describes: it stays unimplemented
//! (all-ones, logged), DPDK finds no signature and goes on without the structure, reading the
//! firmware's health only through ERROR_RECOVERY_QCFG's registers when FUNC_QCAPS offers
//! error recovery.

use bnxt_hsi::bar0::{FW_STATUS_P5, GRC_REG_BASE, GRC_REG_CHIP_NUM, HCOMM_STATUS_STRUCT_LOC};
use bnxt_hsi::fw_status::HCOMM_SIG_VER;
use bnxt_hsi::hwrm::layouts::HcommStatus;
use bnxt_hsi::pci::CHIP_NUM_57608;

/// `hcomm_status.fw_status_loc`: BAR0 offset 0x520, address space 2 (BAR0).
pub const FW_STATUS_LOC: u32 = FW_STATUS_P5 as u32 | HcommStatus::FW_STATUS_LOC_ADDR_SPACE_BAR0;

/// The 32-bit value at GRC address `addr`, or `None` if the model does not implement it.
pub fn read(addr: u32) -> Option<u32> {
    match addr {
        HCOMM_STATUS_STRUCT_LOC => Some(HCOMM_SIG_VER),
        a if a == HCOMM_STATUS_STRUCT_LOC + 4 => Some(FW_STATUS_LOC),
        a if a == GRC_REG_BASE + GRC_REG_CHIP_NUM => Some(CHIP_NUM_57608.into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hcomm_status_points_at_the_bar0_status_register() {
        let sig = read(HCOMM_STATUS_STRUCT_LOC).unwrap();
        assert_eq!(sig & HcommStatus::SIGNATURE_MASK, HcommStatus::SIGNATURE_VAL);
        let loc = read(HCOMM_STATUS_STRUCT_LOC + 4).unwrap();
        assert_eq!(loc & HcommStatus::TRUE_ADDR_SPACE_MASK, HcommStatus::FW_STATUS_LOC_ADDR_SPACE_BAR0);
        assert_eq!(loc & HcommStatus::TRUE_OFFSET_MASK, 0x520);
        assert_eq!(read(0x260048), Some(0x1760));
        assert_eq!(read(0x1234), None);
    }
}
