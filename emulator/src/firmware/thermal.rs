//! TEMP_MONITOR_QUERY: the chip's temperature and its thresholds.
//!
//! bnxt_en asks at probe (bnxt_hwmon.c `bnxt_hwmon_init` → `bnxt_hwrm_temp_query` with no output,
//! silent: EACCES or EOPNOTSUPP leave the hwmon device unregistered) for the thresholds, taken
//! when `FLAGS_THRESHOLD_VALUES_AVAILABLE` is set (temp1_max, temp1_crit, temp1_emergency and,
//! when not 0, temp1_shutdown), and again on every read of temp1_input or an alarm file for
//! `temp` (°C). The model's chip has no sensor; it reports a steady temperature well below its
//! thresholds, both the model's choices (no public source gives a BCM57608's), with no PHY
//! sensor and no optical module (the model's port is a direct-attach one).

use bnxt_hsi::hwrm::layouts::{HwrmTempMonitorQueryInput as I, HwrmTempMonitorQueryOutput as O};

use super::response::{Outcome, parse, reply};

/// The temperature the model reports, °C.
pub const TEMPERATURE_C: u8 = 45;
/// Thresholds, °C: warning, critical, fatal, shutdown (the model's choices, rising in that order
/// as bnxt_hwmon.c's alarms assume).
pub const THRESHOLDS_C: [u8; 4] = [95, 100, 105, 110];

/// Answer TEMP_MONITOR_QUERY.
pub fn temp_monitor_query(bytes: &[u8]) -> Outcome {
    let _req: I = parse(bytes);
    reply::<O>(|o| {
        o.temp = TEMPERATURE_C;
        o.flags = O::FLAGS_PHY_TEMP_NOT_AVAILABLE | O::FLAGS_OM_NOT_PRESENT | O::FLAGS_THRESHOLD_VALUES_AVAILABLE;
        [o.warn_threshold, o.critical_threshold, o.fatal_threshold, o.shutdown_threshold] = THRESHOLDS_C;
    })
}
