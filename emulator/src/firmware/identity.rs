//! Who the firmware says it is: per-NIC identity and the firmware's fixed version facts.
//!
//! Nothing here has a public source for a real BCM57608 beyond what is cited; values the model
//! chose are marked as such.

use std::time::Duration;

/// Per-NIC identity the firmware reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NicIdentity {
    /// MAC address (FUNC_QCAPS/FUNC_QCFG `mac_address`).
    pub mac: [u8; 6],
    /// Device serial number (FUNC_QCAPS `device_serial_number`, PCIe DSN capability).
    pub serial: u64,
    /// PCI bus number of the function (FUNC_QCFG `pci_id` = bus << 8 | devfn, devfn 0).
    pub bus: u8,
}

impl NicIdentity {
    /// FUNC_QCFG `pci_id`.
    pub fn pci_id(&self) -> u16 {
        u16::from(self.bus) << 8
    }
}

/// Time between a trigger and the response's DMA: the model's fixed firmware latency. Real
/// firmware answers simple requests in tens of microseconds (bnxt_en polls first with 3-10 µs
/// sleeps, then 25-40 µs ones: bnxt_hwrm.h `HWRM_SHORT_MIN_TIMEOUT`, `HWRM_MIN_TIMEOUT`).
pub const HWRM_LATENCY: Duration = Duration::from_micros(20);

/// The function id of the PF (FUNC_QCAPS/QCFG `fid`); requests may also name it as 0xffff.
pub const PF_FID: u16 = 0;
/// Port the PF sits on.
pub const PORT_ID: u16 = 0;

/// HWRM interface version the firmware implements: bnxt_hsi.h `HWRM_VERSION_MAJOR/MINOR/UPDATE/
/// RSVD` (1.10.3.129), the version of the layouts in bnxt-hsi.
pub const INTF_VERSION: (u16, u16, u16, u16) = (1, 10, 3, 129);
/// Firmware version the model reports (major 230: the 2024 NetXtreme-E release line that
/// supports P7; the model's choice, no exact public value).
pub const FW_VERSION: (u16, u16, u16, u16) = (230, 0, 0, 0);
/// Name in VER_GET's firmware name fields and `active_pkg_name`.
pub const FW_NAME: &str = "bnxt-model";
/// VER_GET `chip_rev` (B0; PCI revision id 0x10 says the same).
pub const CHIP_REV: u8 = 1;
/// VER_GET `chip_metal`.
pub const CHIP_METAL: u8 = 0;
/// VER_GET `max_req_win_len`: the direct window is 128 bytes (`HWRM_MAX_REQ_LEN`).
pub const MAX_REQ_WIN_LEN: u16 = bnxt_hsi::hwrm::MAX_REQ_LEN as u16;
/// VER_GET `max_resp_len` (`HWRM_MAX_RESP_LEN`).
pub const MAX_RESP_LEN: u16 = bnxt_hsi::hwrm::MAX_RESP_LEN as u16;
/// VER_GET `max_ext_req_len`: largest short-command request. 256 bytes take every layout bnxt_en
/// sends (FUNC_CFG, 160 bytes, is the largest on the P7 bring-up path).
pub const MAX_EXT_REQ_LEN: u16 = 256;
/// VER_GET `def_req_timeout` in ms: the same 500 ms bnxt_en uses before it knows
/// (`DFLT_HWRM_CMD_TIMEOUT`).
pub const DEF_REQ_TIMEOUT_MS: u16 = 500;
/// VER_GET `max_req_timeout` in seconds: bnxt_en's own ceiling (`HWRM_CMD_MAX_TIMEOUT`, 40 s).
pub const MAX_REQ_TIMEOUT_S: u16 = 40;
