//! FW_SET_TIME: the host tells the firmware the wall-clock time (bnxt.c `bnxt_hwrm_fw_set_time`,
//! sent at probe with the UTC date and time). The model keeps it ([`super::l2_config::L2Config`]
//! `wall_clock`) after checking it is a date; nothing in the model reads it yet.

use bnxt_hsi::hwrm::layouts::{HwrmFwSetTimeInput, HwrmFwSetTimeOutput};

use super::Ctx;
use super::l2_config::WallClock;
use super::response::{Outcome, Reject, parse, reply};

/// FW_SET_TIME.
pub fn set_time(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let r: HwrmFwSetTimeInput = parse(bytes);
    let (year, month, day) = (r.year.get(), r.month, r.day);
    if year != HwrmFwSetTimeInput::YEAR_UNKNOWN
        && (!(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || r.hour > 23
            || r.minute > 59
            || r.second > 60
            || r.millisecond.get() > 999)
    {
        return Err(Reject::invalid(format!(
            "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:03} is not a date and time",
            r.hour,
            r.minute,
            r.second,
            r.millisecond.get()
        )));
    }
    let zone = r.zone.get() as i16;
    let (hour, minute, second, millisecond) = (r.hour, r.minute, r.second, r.millisecond.get());
    ctx.state.l2.wall_clock = Some(WallClock { year, month, day, hour, minute, second, millisecond, zone });
    reply::<HwrmFwSetTimeOutput>(|_| {})
}
