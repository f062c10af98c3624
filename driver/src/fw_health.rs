//! The firmware status register: where it is and waiting until it reads ready.
//!
//! bnxt_en looks for the `hcomm_status` structure at GRC address `HCOMM_STATUS_STRUCT_LOC`
//! through GRC window 3 (base register BAR0 0x408, window at BAR0 0x3000); if its signature is
//! there, `fw_status_loc` says where the status register is (2-bit address space: config space,
//! GRC, BAR0, BAR1); if not, a P5/P7 keeps it at BAR0 0x520. Bits 15:0 == 0x8000 mean ready,
//! less means booting, more means an error. Sources: bnxt.c `bnxt_try_map_fw_health_reg`,
//! `__bnxt_map_fw_health_reg`, `bnxt_fw_health_readl`; bnxt.h `BNXT_FW_HEALTH_WIN_*`,
//! `BNXT_GRC_BASE_MASK`, `BNXT_GRC_OFFSET_MASK`, `BNXT_FW_HEALTH_REG_TYPE_*`, `BNXT_FW_IS_*`;
//! bnxt_hsi.h `struct hcomm_status` (hardware-map §2.4).

use std::time::Duration;

use bnxt_hsi::bar0;
use bnxt_hsi::fw_status;
use bnxt_hsi::hwrm::layouts::HcommStatus;
use bnxt_hsi::pci::{BAR_DOORBELLS, BAR_REGS};

use crate::error::Error;
use crate::wait::{self, Waiter};
use bnxt_pci::{ConfigExt, PciError, PciFunction};

/// GRC window bnxt_en maps health registers through (`BNXT_FW_HEALTH_WIN_MAP_OFF` 8 → window 3).
const HEALTH_WINDOW_BASE_REG: u64 = bar0::GRC_WINDOW_BASE + 8;
/// Where window 3 appears in BAR0 (`BNXT_FW_HEALTH_WIN_BASE`).
const HEALTH_WINDOW: u64 = 3 * bar0::GRC_WINDOW_SIZE;
/// `BNXT_GRC_BASE_MASK`: the part of a GRC address written to a window base register.
const GRC_BASE_MASK: u32 = 0xffff_f000;
/// `BNXT_GRC_OFFSET_MASK`: the part of a GRC address that is its offset in the window.
const GRC_OFFSET_MASK: u32 = 0x0000_0ffc;

/// How long open waits for the firmware to become ready: bnxt_en's recovery loop polls up to
/// `BNXT_FW_RETRY` (5) times, each poll a VER_GET of up to `DFLT_HWRM_CMD_TIMEOUT` (500 ms)
/// (bnxt.c `bnxt_try_recover_fw`).
pub(crate) const READY_TIMEOUT: Duration = Duration::from_millis(5 * 500);

/// Where the firmware status register is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusReg {
    /// In config space at this offset.
    Config(u16),
    /// In GRC space at this address, read through window 3.
    Grc(u32),
    /// In BAR0 at this offset.
    Bar0(u64),
    /// In bnxt_en's "BAR1", the doorbell BAR (PCI BAR 2), at this offset.
    Doorbells(u64),
}

impl StatusReg {
    /// Decode a `fw_status_loc` / health register location word.
    fn decode(loc: u32) -> StatusReg {
        let offset = loc & HcommStatus::TRUE_OFFSET_MASK;
        match loc & HcommStatus::TRUE_ADDR_SPACE_MASK {
            HcommStatus::FW_STATUS_LOC_ADDR_SPACE_PCIE_CFG => StatusReg::Config(offset as u16),
            HcommStatus::FW_STATUS_LOC_ADDR_SPACE_GRC => StatusReg::Grc(offset),
            HcommStatus::FW_STATUS_LOC_ADDR_SPACE_BAR0 => StatusReg::Bar0(u64::from(offset)),
            _ => StatusReg::Doorbells(u64::from(offset)),
        }
    }

    /// Find the status register, as `bnxt_try_map_fw_health_reg` does for a P5/P7 chip.
    pub(crate) fn locate(function: &dyn PciFunction) -> StatusReg {
        map_window(function, bar0::HCOMM_STATUS_STRUCT_LOC);
        let hs = HEALTH_WINDOW + u64::from(bar0::HCOMM_STATUS_STRUCT_LOC & GRC_OFFSET_MASK);
        let sig = function.bar_read32(BAR_REGS, hs);
        if sig & HcommStatus::SIGNATURE_MASK != HcommStatus::SIGNATURE_VAL {
            return StatusReg::Bar0(bar0::FW_STATUS_P5);
        }
        StatusReg::decode(function.bar_read32(BAR_REGS, hs + 4))
    }

    /// Read the register.
    pub(crate) fn read(&self, function: &dyn PciFunction) -> Result<u32, PciError> {
        Ok(match *self {
            StatusReg::Config(offset) => function.config_read32(offset)?,
            StatusReg::Grc(addr) => {
                map_window(function, addr);
                function.bar_read32(BAR_REGS, HEALTH_WINDOW + u64::from(addr & GRC_OFFSET_MASK))
            }
            StatusReg::Bar0(offset) => function.bar_read32(BAR_REGS, offset),
            StatusReg::Doorbells(offset) => function.bar_read32(BAR_DOORBELLS, offset),
        })
    }
}

fn map_window(function: &dyn PciFunction, grc_addr: u32) {
    function.bar_write32(BAR_REGS, HEALTH_WINDOW_BASE_REG, grc_addr & GRC_BASE_MASK);
}

/// Wait until the status register reads ready. An error status fails at once; a firmware still
/// booting after `timeout` fails then.
pub(crate) fn wait_ready(
    nic: &str,
    function: &dyn PciFunction,
    reg: StatusReg,
    timeout: Duration,
) -> Result<(), Error> {
    let pci = |source| Error::Pci { nic: nic.to_string(), source };
    let mut waiter = Waiter::new(function.clock(), timeout, wait::HWRM_RESPONSE);
    loop {
        let status = reg.read(function).map_err(pci)?;
        let code = status & fw_status::CODE_MASK;
        if code == fw_status::CODE_READY {
            return Ok(());
        }
        if code > fw_status::CODE_READY {
            return Err(Error::Firmware {
                nic: nic.to_string(),
                what: format!("the firmware reports an error: status register ({reg:?}) reads 0x{status:08x}"),
            });
        }
        let more = waiter.pause().map_err(|reason| Error::Interrupted {
            nic: nic.to_string(),
            request: format!("waiting for the firmware to be ready ({reg:?})"),
            reason,
        })?;
        if !more {
            return Err(Error::Firmware {
                nic: nic.to_string(),
                what: format!(
                    "the firmware is still booting after {} ms: status register ({reg:?}) reads 0x{status:08x}",
                    timeout.as_millis()
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FakeFunction, Reply};

    #[test]
    fn without_hcomm_status_a_p7_status_register_is_bar0_0x520() {
        let f = FakeFunction::new(|_| Reply::Never);
        assert_eq!(StatusReg::locate(&f), StatusReg::Bar0(0x520));
        assert_eq!(StatusReg::Bar0(0x520).read(&f).unwrap(), 0x8000);
    }

    #[test]
    fn hcomm_status_points_at_the_register_through_the_grc_window() {
        let f = FakeFunction::new(|_| Reply::Never);
        f.set_grc(0x31001f0, fw_status::HCOMM_SIG_VER);
        f.set_grc(0x31001f4, 0x0123_4568 | 1); // GRC space, offset 0x1234568
        let reg = StatusReg::locate(&f);
        assert_eq!(reg, StatusReg::Grc(0x0123_4568));
        f.set_grc(0x0123_4568, 0x8000);
        assert_eq!(reg.read(&f).unwrap(), 0x8000);
        f.set_grc(0x31001f4, 0x520 | 2);
        assert_eq!(StatusReg::locate(&f), StatusReg::Bar0(0x520));
    }

    #[test]
    fn an_error_status_fails_at_once_and_booting_fails_after_the_timeout() {
        let f = FakeFunction::new(|_| Reply::Never);
        f.set_fw_status(0x8001);
        let err = wait_ready("BNXT", &f, StatusReg::Bar0(0x520), READY_TIMEOUT).unwrap_err();
        assert!(err.to_string().starts_with("BNXT: the firmware reports an error"), "{err}");
        assert_eq!(bnxt_pci::Clock::now(&f), Duration::ZERO);
        f.set_fw_status(0x4000);
        let err = wait_ready("BNXT", &f, StatusReg::Bar0(0x520), READY_TIMEOUT).unwrap_err();
        assert!(err.to_string().contains("still booting"), "{err}");
        assert_eq!(bnxt_pci::Clock::now(&f), READY_TIMEOUT);
        f.set_fw_status(0x8000);
        wait_ready("BNXT", &f, StatusReg::Bar0(0x520), READY_TIMEOUT).unwrap();
    }
}
