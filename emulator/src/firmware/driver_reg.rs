//! The driver's registration: FUNC_DRV_RGTR, FUNC_DRV_UNRGTR, FUNC_DRV_IF_CHANGE.
//!
//! bnxt.c `bnxt_hwrm_func_drv_rgtr` registers with os_type, version and the async events it
//! wants; if the response's flags carry IF_CHANGE_SUPPORTED it later sends FUNC_DRV_IF_CHANGE
//! (`bnxt_hwrm_if_change`) on open (flags UP) and close. The model reports IF_CHANGE_SUPPORTED
//! and answers IF_CHANGE with no RESC_CHANGE/CAPS_CHANGE flags, and HOT_FW_RESET_DONE only on the
//! first UP after a firmware reset ([`super::reset`]). bnxt_en unregisters only after registering
//! (`test_and_clear_bit(BNXT_STATE_DRV_REGISTERED)`); the model refuses an UNRGTR with nothing
//! registered with INVALID_PARAMS (no public source names the code real firmware uses).

use bnxt_hsi::hwrm::layouts::{
    HwrmFuncDrvIfChangeInput, HwrmFuncDrvIfChangeOutput, HwrmFuncDrvRgtrInput, HwrmFuncDrvRgtrOutput,
    HwrmFuncDrvUnrgtrInput, HwrmFuncDrvUnrgtrOutput,
};

use super::Ctx;
use super::response::{Outcome, Reject, parse, reply};
use super::state::Registration;

/// FUNC_DRV_RGTR: remember the driver (a second registration replaces the first, as bnxt_en's
/// async-only re-registration expects).
pub fn drv_rgtr(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmFuncDrvRgtrInput = parse(bytes);
    let enables = req.enables.get();
    let previous = ctx.state.registration.take();
    let os_type = if enables & HwrmFuncDrvRgtrInput::ENABLES_OS_TYPE != 0 {
        req.os_type.get()
    } else {
        previous.as_ref().map_or(0, |r| r.os_type)
    };
    let version = if enables & HwrmFuncDrvRgtrInput::ENABLES_VER != 0 {
        let wide = (req.ver_maj.get(), req.ver_min.get(), req.ver_upd.get(), req.ver_patch.get());
        if wide == (0, 0, 0, 0) {
            (req.ver_maj_8b.into(), req.ver_min_8b.into(), req.ver_upd_8b.into(), 0)
        } else {
            wide
        }
    } else {
        previous.as_ref().map_or((0, 0, 0, 0), |r| r.version)
    };
    let async_events = if enables & HwrmFuncDrvRgtrInput::ENABLES_ASYNC_EVENT_FWD != 0 {
        req.async_event_fwd.map(|w| w.get())
    } else {
        previous.as_ref().map_or([0; 8], |r| r.async_events)
    };
    ctx.state.registration = Some(Registration { os_type, version, flags: req.flags.get(), async_events });
    reply::<HwrmFuncDrvRgtrOutput>(|o| o.flags = HwrmFuncDrvRgtrOutput::FLAGS_IF_CHANGE_SUPPORTED.into())
}

/// FUNC_DRV_UNRGTR: forget the driver.
pub fn drv_unrgtr(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let _req: HwrmFuncDrvUnrgtrInput = parse(bytes);
    if ctx.state.registration.take().is_none() {
        return Err(Reject::invalid("no driver is registered"));
    }
    ctx.state.if_up = false;
    reply::<HwrmFuncDrvUnrgtrOutput>(|_| {})
}

/// FUNC_DRV_IF_CHANGE: the driver's interface goes up (flags UP) or down.
pub fn drv_if_change(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmFuncDrvIfChangeInput = parse(bytes);
    // After a firmware reset bnxt_en reopens with IF_CHANGE up before it registers again
    // (bnxt.c `bnxt_fw_reset_task` state OPENING → `bnxt_open` → `bnxt_hwrm_if_change`, whose
    // HOT_FW_RESET_DONE sends it to `bnxt_fw_init_one` and FUNC_DRV_RGTR): the restarted
    // firmware takes it. (Refused, bnxt_en falls back to `bnxt_try_recover_fw`, as a sid guest
    // showed: "hwrm req_type 0xd ... error 0x2".) Otherwise an unregistered function's
    // IF_CHANGE is refused.
    let up = req.flags.get() & HwrmFuncDrvIfChangeInput::FLAGS_UP != 0;
    if ctx.state.registration.is_none() && !(up && ctx.state.hot_reset_done) {
        return Err(Reject::invalid("FUNC_DRV_IF_CHANGE before FUNC_DRV_RGTR"));
    }
    ctx.state.if_up = req.flags.get() & HwrmFuncDrvIfChangeInput::FLAGS_UP != 0;
    // After a firmware reset, the first UP hears of it (bnxt.c `bnxt_hwrm_if_change`:
    // HOT_FW_RESET_DONE makes bnxt_en initialise the function again).
    let done = ctx.state.if_up && std::mem::take(&mut ctx.state.hot_reset_done);
    reply::<HwrmFuncDrvIfChangeOutput>(|o| {
        if done {
            o.flags = HwrmFuncDrvIfChangeOutput::FLAGS_HOT_FW_RESET_DONE.into();
        }
    })
}
