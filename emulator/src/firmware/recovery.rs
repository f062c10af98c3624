//! The error recovery capability (FUNC_QCAPS `FLAGS_ERROR_RECOVERY_CAPABLE`), offered when the
//! firmware option `error_recovery` is on, as bnxt_en uses it (lykeioner/driver bnxt_en/bnxt.c,
//! the same in torvalds/linux drivers/net/ethernet/broadcom/bnxt/bnxt.c):
//!
//! - bnxt_en sees the flag (`bnxt_hwrm_func_qcaps`: `BNXT_FW_CAP_ERROR_RECOVERY`) and, before
//!   registering, sends ERROR_RECOVERY_QCFG (`bnxt_drv_rgtr` → `bnxt_hwrm_error_recovery_qcfg`):
//!   the answer names the firmware's health status, heartbeat, reset-counter and
//!   reset-in-progress registers, each an address with its address space in the low two bits
//!   (`BNXT_FW_HEALTH_REG_TYPE`), how often the driver is to poll them and how long to wait
//!   around a reset. It refuses `FLAGS_CO_CPU` without a KONG channel, so the model says
//!   `FLAGS_HOST`.
//! - It registers with `FUNC_DRV_RGTR_REQ_FLAGS_ERROR_RECOVERY_SUPPORT` and asks for the
//!   ERROR_RECOVERY async event (`bnxt_hwrm_func_drv_rgtr`). The event with
//!   `RECOVERY_ENABLED` (and `MASTER_FUNC`: the function is the primary one, the only function
//!   of the model) turns its watchdog on (`bnxt_async_event_process` case ERROR_RECOVERY): from
//!   then on its timer reads the heartbeat every `driver_polling_freq` tenths of a second and
//!   the reset counter (`bnxt_fw_health_check`); a heartbeat that did not move, or a reset count
//!   that did, starts its recovery (`bnxt_fw_exception` → `bnxt_force_fw_reset`).
//!   The sources show only the driver taking the event whenever it comes; the model sends it
//!   when the registered driver names its async event ring (FUNC_CFG `async_event_cr`), the
//!   first moment it can arrive.
//! - After a recovery (`bnxt_fw_reset_task` state OPENING) the driver reads the reset counter
//!   again as its new reference.
//!
//! Where the registers are is the model's choice (no public source gives the BCM57608's; real
//! firmware names GRC addresses, which bnxt_en maps through GRC window 3, and bnxt_en reads any
//! of the four address spaces, `bnxt_fw_health_readl`): the status register at BAR0 0x520 (the
//! one `hcomm_status` points at), the heartbeat at [`HEARTBEAT_REG`], the reset counter at
//! [`RESET_COUNT_REG`]. The heartbeat counts tenths of a second of the firmware's life and stops
//! while it is down; the reset counter counts firmware restarts. No reset-in-progress register
//! (address 0 with mask 0, which `bnxt_fw_health_readl` masks to 0) and no host reset sequence
//! (`reg_array_cnt` 0): the model's firmware restarts by itself ([`super::reset`]), so
//! `bnxt_reset_all` has nothing to write.

use bnxt_hsi::hwrm::layouts::{HwrmAsyncEventCmpl, HwrmErrorRecoveryQcfgInput, HwrmErrorRecoveryQcfgOutput as O};

use super::Ctx;
use super::async_events;
use super::response::{Outcome, Reject, parse, reply};
use bnxt_hsi::hwrm::ErrorCode;

/// BAR0 offset of the heartbeat register (the model's choice, beside the status register).
pub const HEARTBEAT_REG: u64 = 0x524;
/// BAR0 offset of the reset-counter register (the model's choice).
pub const RESET_COUNT_REG: u64 = 0x528;

/// `driver_polling_freq`: the driver reads the heartbeat every second (tenths of a second).
pub const POLLING_DSECS: u32 = 10;
/// `master_func_wait_period`: how long the primary function waits before resetting (dsecs).
pub const MASTER_WAIT_DSECS: u32 = 0;
/// `normal_func_wait_period`: how long another function waits (dsecs).
pub const NORMAL_WAIT_DSECS: u32 = 10;
/// `master_func_wait_period_after_reset`: the wait after the reset before polling (dsecs),
/// as long as the model's restart takes ([`super::reset::MIN_WAIT_DSECS`]).
pub const AFTER_RESET_WAIT_DSECS: u32 = super::reset::MIN_WAIT_DSECS as u32;
/// `max_bailout_time_after_reset`: the longest the driver polls (dsecs).
pub const MAX_BAILOUT_DSECS: u32 = super::reset::MAX_WAIT_DSECS as u32;

/// `ASYNC_EVENT_CMPL_ERROR_RECOVERY_EVENT_DATA1_FLAGS_MASTER_FUNC`.
pub const EVENT_MASTER_FUNC: u32 = 0x1;
/// `ASYNC_EVENT_CMPL_ERROR_RECOVERY_EVENT_DATA1_FLAGS_RECOVERY_ENABLED`.
pub const EVENT_RECOVERY_ENABLED: u32 = 0x2;

/// A BAR0 register address as ERROR_RECOVERY_QCFG states it (address space BAR0 in the low
/// bits).
const fn bar0(offset: u64) -> u32 {
    offset as u32 | O::FW_HEALTH_STATUS_REG_ADDR_SPACE_BAR0
}

/// ERROR_RECOVERY_QCFG: where the health registers are and the waits. Refused
/// CMD_NOT_SUPPORTED when the capability is off (bnxt_en sends it only with the capability).
pub fn error_recovery_qcfg(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let _req: HwrmErrorRecoveryQcfgInput = parse(bytes);
    if !ctx.opts.error_recovery {
        return Err(Reject::new(
            ErrorCode::CmdNotSupported,
            "ERROR_RECOVERY_QCFG without the error recovery capability (firmware option error_recovery)",
        ));
    }
    reply::<O>(|o| {
        o.flags = O::FLAGS_HOST.into();
        o.driver_polling_freq = POLLING_DSECS.into();
        o.master_func_wait_period = MASTER_WAIT_DSECS.into();
        o.normal_func_wait_period = NORMAL_WAIT_DSECS.into();
        o.master_func_wait_period_after_reset = AFTER_RESET_WAIT_DSECS.into();
        o.max_bailout_time_after_reset = MAX_BAILOUT_DSECS.into();
        o.fw_health_status_reg = bar0(bnxt_hsi::bar0::FW_STATUS_P5).into();
        o.fw_heartbeat_reg = bar0(HEARTBEAT_REG).into();
        o.fw_reset_cnt_reg = bar0(RESET_COUNT_REG).into();
        o.reset_inprogress_reg = 0.into();
        o.reset_inprogress_reg_mask = 0.into();
        o.reg_array_cnt = 0;
    })
}

/// The registered driver named its async event ring: with the capability on and the driver
/// registered for error recovery, turn its watchdog on (ERROR_RECOVERY, primary function).
pub fn ring_named(ctx: &mut Ctx<'_>) {
    use bnxt_hsi::hwrm::layouts::HwrmFuncDrvRgtrInput as R;
    let supports = ctx.state.registration.as_ref().is_some_and(|r| r.flags & R::FLAGS_ERROR_RECOVERY_SUPPORT != 0);
    if ctx.opts.error_recovery && supports {
        async_events::send(
            ctx.state,
            HwrmAsyncEventCmpl::EVENT_ID_ERROR_RECOVERY,
            EVENT_MASTER_FUNC | EVENT_RECOVERY_ENABLED,
            0,
        );
    }
}
