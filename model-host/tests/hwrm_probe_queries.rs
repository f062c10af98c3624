//! What bnxt_en asks the firmware at probe about its NVM, QoS, self tests and temperature
//! (NVM_GET_DEV_INFO, QUEUE_DSCP_QCAPS, QUEUE_PFCWD_TIMEOUT_QCAPS, SELFTEST_QLIST,
//! TEMP_MONITOR_QUERY) is answered, with the fields bnxt_en reads, and counted as implemented.

mod common;

use bnxt_hsi::hwrm::layouts::*;
use common::{Rig, req};

const INVALID_PARAMS: u16 = 2;

#[test]
fn the_nvm_reports_versions_that_match_ver_get() {
    let mut rig = Rig::new(1);
    let ver = rig.ok(0, req::<HwrmVerGetInput>());
    let nvm = rig.ok(0, req::<HwrmNvmGetDevInfoInput>());
    assert_ne!(nvm.flags & HwrmNvmGetDevInfoOutput::FLAGS_FW_VER_VALID, 0, "devlink shows the stored versions");
    let stored = (nvm.hwrm_fw_major.get(), nvm.hwrm_fw_minor.get(), nvm.hwrm_fw_build.get(), nvm.hwrm_fw_patch.get());
    let running = (ver.hwrm_fw_major.get(), ver.hwrm_fw_minor.get(), ver.hwrm_fw_build.get(), ver.hwrm_fw_patch.get());
    assert_eq!(stored, running);
    assert_eq!((nvm.roce_fw_major.get(), nvm.roce_fw_minor.get()), (ver.roce_fw_major.get(), ver.roce_fw_minor.get()));
    assert_eq!(nvm.pkg_name, ver.active_pkg_name[..16], "the package VER_GET names");
    assert_eq!((nvm.nvm_cfg_ver_maj, nvm.nvm_cfg_ver_min, nvm.nvm_cfg_ver_upd), (1, 0, 0));
    let (size, avail) = (nvm.nvram_size.get(), nvm.available_size.get());
    assert!(avail <= size - nvm.reserved_size.get() && nvm.sector_size.get() > 0 && size % nvm.sector_size.get() == 0);
    let mut bad: HwrmNvmGetDevInfoInput = req();
    bad.flags = 0x80;
    assert_eq!(rig.call(0, bad).code, INVALID_PARAMS, "an undefined flag");
}

#[test]
fn dscp_maps_six_bits_and_there_is_no_pfc_watchdog() {
    let mut rig = Rig::new(1);
    let d = rig.ok(0, req::<HwrmQueueDscpQcapsInput>());
    // bnxt_dcb.c takes max_dscp_value = 2^bits - 1 only when it reaches 0x3f.
    assert_eq!(((1u32 << d.num_dscp_bits) - 1, d.max_entries.get()), (0x3f, 64));
    let mut other: HwrmQueueDscpQcapsInput = req();
    other.port_id = 3;
    assert_eq!(rig.call(0, other).code, INVALID_PARAMS, "no port 3");
    let p = rig.ok(0, req::<HwrmQueuePfcwdTimeoutQcapsInput>());
    assert_eq!(p.max_pfcwd_timeout.get(), 0, "no lossless queue, no PFC watchdog");
}

#[test]
fn no_firmware_self_tests_and_a_temperature_below_its_thresholds() {
    let mut rig = Rig::new(1);
    let s = rig.ok(0, req::<HwrmSelftestQlistInput>());
    assert_eq!((s.num_tests, s.available_tests, s.offline_tests), (0, 0, 0));
    assert_eq!(s.resp_len.get() as usize, size_of::<HwrmSelftestQlistOutput>(), "the whole 280-byte layout");
    let t = rig.ok(0, req::<HwrmTempMonitorQueryInput>());
    assert_ne!(t.flags & HwrmTempMonitorQueryOutput::FLAGS_THRESHOLD_VALUES_AVAILABLE, 0);
    assert_eq!(t.flags & HwrmTempMonitorQueryOutput::FLAGS_TEMP_NOT_AVAILABLE, 0);
    let th = [t.warn_threshold, t.critical_threshold, t.fatal_threshold, t.shutdown_threshold];
    assert!(th.windows(2).all(|w| w[0] < w[1]), "thresholds rise: {th:?}");
    assert!(t.temp > 0 && t.temp < th[0], "{} °C", t.temp);
    let st = rig.world.nic_state(0);
    assert!(st.unsupported_requests.is_empty() && st.unimplemented == 0, "{:?}", st.unsupported_requests);
}
