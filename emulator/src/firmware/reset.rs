//! A firmware reset the host asks for (`bnxt-model ctl fw reset` / `fw fatal`), shaped after how
//! bnxt_en recovers from one (bnxt.c `bnxt_async_event_process` case RESET_NOTIFY, `bnxt_fw_reset`,
//! `bnxt_fw_reset_task`, `bnxt_hwrm_if_change`; lykeioner/driver bnxt_en/bnxt.c, the same in
//! torvalds/linux drivers/net/ethernet/broadcom/bnxt/bnxt.c):
//!
//! 1. The firmware sends RESET_NOTIFY (`ASYNC_EVENT_CMPL_EVENT_ID_RESET_NOTIFY`) to a driver that
//!    registered for it, with the minimum and maximum time the driver is to wait in
//!    `timestamp_lo` / `timestamp_hi` (tenths of a second; bnxt_en's `fw_reset_min_dsecs` /
//!    `fw_reset_max_dsecs`). bnxt_en acts on it because it mapped the firmware status register
//!    (`bnxt_try_map_fw_health_reg`, which allocates `fw_health` on P5+ chips), closes the
//!    function, waits the minimum, re-enables the PCI device, polls VER_GET and opens again.
//!    - `reset`: reason MANAGEMENT_RESET_REQUEST; the firmware answers as usual until it restarts
//!      (the driver's close is served).
//!    - `fatal`: reason FW_EXCEPTION_FATAL (bnxt_en sets `BNXT_STATE_FW_FATAL_COND` and stops
//!      sending requests); the firmware is dead at once: it takes no request and its status
//!      register reads SHUTDOWN without the ready code (no public source gives the value a
//!      crashed firmware leaves there; any value bnxt_en's `BNXT_FW_IS_HEALTHY` refuses does).
//! 2. The firmware restarts ([`restart_at`]): it forgets everything about the function (as a
//!    function-level reset does to its state; config space and BARs are the PCI function's and
//!    stay), its status register reads ready again, and the next FUNC_DRV_IF_CHANGE with flags UP
//!    answers `HOT_FW_RESET_DONE` (bnxt_en refuses to reopen without it: "RESET_DONE not set
//!    during FW reset.").
//!    - `reset` with a driver told of it: once the driver has unregistered (FUNC_DRV_UNRGTR
//!      answered), at most [`MAX_WAIT_DSECS`] after the notice. bnxt_en closes first and only
//!      then waits: `bnxt_fw_reset` runs bnxt_re's teardown (`bnxt_ulp_stop`: RoCE commands) and
//!      `bnxt_fw_reset_close` (RING_FREE, ..., FUNC_DRV_UNRGTR) and queues its reset task
//!      `fw_reset_min_dsecs` after that close, however long it took; a PF with VFs holds its own
//!      close until its VFs have unregistered (state POLL_VF, `bnxt_get_registered_vfs`). No
//!      public source says when real firmware goes down; that order implies it serves the close
//!      of every registered driver first, and the model is back by the time the driver polls
//!      VER_GET (state POLL_FW) since it restarted at the close. A restart at a fixed time after
//!      the notice would cut a slow close short: in a loaded guest bnxt_re's DELETE_GID goes
//!      unanswered until bnxt_re declares the firmware stalled, and bnxt_en's RING_FREEs are
//!      refused by a firmware that no longer knows the rings.
//!    - `reset` with no driver told (none registered, or none named its async event ring), and
//!      `fatal`: [`MIN_WAIT_DSECS`] after the notice.
//!
//! The error recovery capability (ERROR_RECOVERY_QCFG, heartbeat and reset-counter registers) is
//! [`super::recovery`]'s. Not modelled: the driver-driven chip reset of `bnxt_reset_all`,
//! FW_ACTIVATION and non-fatal exceptions.

use std::time::Duration;

/// The driver's minimum wait the notice gives, in tenths of a second (1 s).
pub const MIN_WAIT_DSECS: u8 = 10;
/// The driver's maximum wait the notice gives, in tenths of a second (30 s).
pub const MAX_WAIT_DSECS: u16 = 300;

/// What the status register reads while a fatal firmware is down: SHUTDOWN, no ready code.
pub const DEAD_STATUS: u32 = bnxt_hsi::fw_status::SHUTDOWN;

/// Which reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetKind {
    /// Asked for by management (`MANAGEMENT_RESET_REQUEST`): the firmware serves the driver's
    /// close, then restarts.
    Solicited,
    /// A firmware exception (`FW_EXCEPTION_FATAL`): dead at once, then restarts.
    Fatal,
}

/// When the firmware restarts after a notice given at `now`, unless the driver it waits for
/// unregisters sooner: with `waits_for_driver`, the notice's maximum wait ([`MAX_WAIT_DSECS`]),
/// else its minimum ([`MIN_WAIT_DSECS`]).
pub fn restart_at(now: Duration, waits_for_driver: bool) -> Duration {
    let dsecs = if waits_for_driver { MAX_WAIT_DSECS } else { u16::from(MIN_WAIT_DSECS) };
    now + Duration::from_millis(100 * u64::from(dsecs))
}
