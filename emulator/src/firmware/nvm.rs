//! NVM_GET_DEV_INFO: the NVM (flash) a P7 card keeps its firmware and configuration in.
//!
//! bnxt_en asks at probe (bnxt.c `bnxt_nvm_cfg_ver_get` → bnxt_ethtool.c
//! `bnxt_hwrm_nvm_get_dev_info`, not silent: a refusal is logged as "hwrm req_type 0xfff6 ...")
//! for `nvm_cfg_ver_maj/min/upd`, which devlink info shows as `fw.psid`, and again for `devlink dev
//! info` (bnxt_devlink.c `bnxt_dl_info_get`: with `FLAGS_FW_VER_VALID`, `pkg_name` as the stored
//! `fw` version and the stored `fw.mgmt`, `fw.ncsi`, `fw.roce` versions from the `*_fw_*` fields)
//! and ethtool's EEPROM dump (bnxt_ethtool.c `bnxt_get_eeprom`, the raw response). The layout's
//! fields are described in Broadcom's HSI (DPDK drivers/net/bnxt/hsi_struct_def_dpdk.h
//! `hwrm_nvm_get_dev_info_output`).
//!
//! The model has no flash; it answers as a card whose NVM holds the firmware it runs: the stored
//! versions are the running ones VER_GET reports, the package name VER_GET's `active_pkg_name`.
//! The device's geometry and the NVM configuration version are the model's choices (no public
//! source gives a BCM57608's): a 16 MiB part of 4 KiB sectors, NVM configuration 1.0.0.

use bnxt_hsi::hwrm::layouts::{HwrmNvmGetDevInfoInput as I, HwrmNvmGetDevInfoOutput as O};

use super::identity::{FW_NAME, FW_VERSION};
use super::response::{Outcome, Reject, name_field, parse, reply};

/// Bytes of the NVM device (the model's choice).
pub const NVRAM_SIZE: u32 = 16 << 20;
/// Bytes of one of its sectors (the model's choice).
pub const SECTOR_SIZE: u32 = 4096;
/// Bytes the firmware keeps to itself (the model's choice).
pub const RESERVED_SIZE: u32 = 0;
/// Bytes the stored images take (the model's choice).
pub const USED_SIZE: u32 = 8 << 20;
/// The NVM configuration version (major, minor, update) (the model's choice).
pub const NVM_CFG_VERSION: (u8, u8, u8) = (1, 0, 0);

/// Answer NVM_GET_DEV_INFO.
pub fn nvm_get_dev_info(bytes: &[u8]) -> Outcome {
    let req: I = parse(bytes);
    let flags = req.flags;
    if flags & !I::FLAGS_SECURITY_SOC_NVM != 0 {
        return Err(Reject::invalid(format!("flags 0x{flags:x} has undefined bits")));
    }
    if flags & I::FLAGS_SECURITY_SOC_NVM != 0 {
        // bnxt_en never sets it; what the security SoC's NVM would hold is not public.
        tracing::warn!(
            "NVM_GET_DEV_INFO with SECURITY_SOC_NVM: answered with the main NVM (no public source says what a \
             P7's security SoC NVM reports)"
        );
    }
    let (maj, min, bld, patch) = FW_VERSION;
    reply::<O>(|o| {
        o.sector_size = SECTOR_SIZE.into();
        o.nvram_size = NVRAM_SIZE.into();
        o.reserved_size = RESERVED_SIZE.into();
        o.available_size = (NVRAM_SIZE - RESERVED_SIZE - USED_SIZE).into();
        (o.nvm_cfg_ver_maj, o.nvm_cfg_ver_min, o.nvm_cfg_ver_upd) = NVM_CFG_VERSION;
        o.flags = O::FLAGS_FW_VER_VALID;
        o.pkg_name = name_field(FW_NAME);
        for v in [
            [&mut o.hwrm_fw_major, &mut o.hwrm_fw_minor, &mut o.hwrm_fw_build, &mut o.hwrm_fw_patch],
            [&mut o.mgmt_fw_major, &mut o.mgmt_fw_minor, &mut o.mgmt_fw_build, &mut o.mgmt_fw_patch],
            [&mut o.roce_fw_major, &mut o.roce_fw_minor, &mut o.roce_fw_build, &mut o.roce_fw_patch],
            [&mut o.netctrl_fw_major, &mut o.netctrl_fw_minor, &mut o.netctrl_fw_build, &mut o.netctrl_fw_patch],
            [&mut o.srt2_fw_major, &mut o.srt2_fw_minor, &mut o.srt2_fw_build, &mut o.srt2_fw_patch],
        ] {
            let [a, b, c, d] = v;
            (*a, *b, *c, *d) = (maj.into(), min.into(), bld.into(), patch.into());
        }
    })
}
