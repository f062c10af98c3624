//! HWRM_VER_GET: interface and firmware versions, chip identity, mailbox sizes and timeouts.
//!
//! What bnxt_en takes from it (bnxt.c `bnxt_hwrm_ver_get`): the 8-bit interface version (its
//! `hwrm_spec_code`, which gates backing store at >= 1.8.3/1.9.2), the 16-bit firmware version
//! when the spec is > 1.8.3, `active_pkg_name`, `def_req_timeout` (ms), `max_req_timeout` (s),
//! `max_req_win_len`, `max_ext_req_len`, `chip_num` (0x1760 makes it a P7), `chip_rev`, and
//! `dev_caps_cfg` (short commands are used only when both SUPPORTED and REQUIRED are set).

use bnxt_hsi::hwrm::layouts::{HwrmVerGetInput, HwrmVerGetOutput};
use bnxt_hsi::pci::CHIP_NUM_57608;

use super::identity::{
    CHIP_METAL, CHIP_REV, DEF_REQ_TIMEOUT_MS, FW_NAME, FW_VERSION, INTF_VERSION, MAX_EXT_REQ_LEN, MAX_REQ_TIMEOUT_S,
    MAX_REQ_WIN_LEN, MAX_RESP_LEN,
};
use super::response::{Outcome, name_field, parse, reply};

/// `dev_caps_cfg`: short commands supported but not required, so drivers may use either form.
pub const DEV_CAPS_CFG: u32 = HwrmVerGetOutput::DEV_CAPS_CFG_SHORT_CMD_SUPPORTED;

/// Answer VER_GET. The driver's own interface version (`hwrm_intf_maj/min/upd`) is only
/// informational: the firmware answers with its version whatever the driver's.
pub fn ver_get(bytes: &[u8]) -> Outcome {
    let _req: HwrmVerGetInput = parse(bytes);
    let (maj, min, upd, patch) = INTF_VERSION;
    let (fw_maj, fw_min, fw_bld, fw_patch) = FW_VERSION;
    reply::<HwrmVerGetOutput>(|o| {
        o.hwrm_intf_maj_8b = maj as u8;
        o.hwrm_intf_min_8b = min as u8;
        o.hwrm_intf_upd_8b = upd as u8;
        o.hwrm_fw_maj_8b = fw_maj as u8;
        o.hwrm_fw_min_8b = fw_min as u8;
        o.hwrm_fw_bld_8b = fw_bld as u8;
        o.hwrm_fw_rsvd_8b = fw_patch as u8;
        o.roce_fw_maj_8b = fw_maj as u8;
        o.roce_fw_min_8b = fw_min as u8;
        o.roce_fw_bld_8b = fw_bld as u8;
        o.roce_fw_rsvd_8b = fw_patch as u8;
        o.dev_caps_cfg = DEV_CAPS_CFG.into();
        o.hwrm_fw_name = name_field(FW_NAME);
        o.active_pkg_name = name_field(FW_NAME);
        o.roce_fw_name = name_field(FW_NAME);
        o.chip_num = CHIP_NUM_57608.into();
        o.chip_rev = CHIP_REV;
        o.chip_metal = CHIP_METAL;
        o.chip_platform_type = HwrmVerGetOutput::CHIP_PLATFORM_TYPE_ASIC;
        o.max_req_win_len = MAX_REQ_WIN_LEN.into();
        o.max_resp_len = MAX_RESP_LEN.into();
        o.def_req_timeout = DEF_REQ_TIMEOUT_MS.into();
        o.always_1 = 1;
        o.hwrm_intf_major = maj.into();
        o.hwrm_intf_minor = min.into();
        o.hwrm_intf_build = upd.into();
        o.hwrm_intf_patch = patch.into();
        o.hwrm_fw_major = fw_maj.into();
        o.hwrm_fw_minor = fw_min.into();
        o.hwrm_fw_build = fw_bld.into();
        o.hwrm_fw_patch = fw_patch.into();
        o.roce_fw_major = fw_maj.into();
        o.roce_fw_minor = fw_min.into();
        o.roce_fw_build = fw_bld.into();
        o.roce_fw_patch = fw_patch.into();
        o.max_ext_req_len = MAX_EXT_REQ_LEN.into();
        o.max_req_timeout = MAX_REQ_TIMEOUT_S.into();
    })
}
