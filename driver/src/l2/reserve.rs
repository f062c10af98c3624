//! Telling the firmware the interface goes up and down (HWRM_FUNC_DRV_IF_CHANGE), and reserving
//! what the function will allocate (HWRM_FUNC_CFG, read back with HWRM_FUNC_QCFG).
//!
//! bnxt.c `bnxt_hwrm_if_change`: `flags` UP at open and 0 at close, sent again while the
//! firmware answers BUSY or HOT_RESET_PROGRESS (-EAGAIN), at most `BNXT_FW_IF_RETRY` (10) times
//! 50 ms apart. A RESC_CHANGE answer cancels the reservations and reads FUNC_RESOURCE_QCAPS
//! again (`bnxt_cancel_reservations`); HOT_FW_RESET_DONE or CAPS_CHANGE make bnxt_en run its
//! whole firmware bring-up again inside open. This driver has just run it, with a FUNC_RESET,
//! so a firmware that says it was reset or changed its capabilities since then fails the open
//! with that said, rather than the driver going on with what it learnt before.
//!
//! bnxt.c `__bnxt_hwrm_reserve_pf_rings` on P5 and later, with the firmware's resource manager
//! (`BNXT_NEW_RM`): `fid` 0xffff, and for each count that is not zero its enable and value:
//! `num_rx_rings`, `num_stat_ctxs`, `num_msix` (the NQs: bnxt_en's and the RoCE driver's,
//! `bnxt_nq_rings_in_use`), `num_cmpl_rings` (the L2 completion rings), `num_vnics`,
//! `num_rsscos_ctxs`; `num_tx_rings` only with TX rings, which this driver has none of. The
//! request is cut to the longest the firmware takes (`bnxt_hwrm_func_cfg_short_req_init`).
//! Then `bnxt_hwrm_get_rings` reads what was granted from FUNC_QCFG's `alloc_*` fields; bnxt_en
//! trims its rings to a smaller grant, this driver needs each one it asked for and fails the
//! open naming the shortfall.

use std::time::Duration;

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::hwrm::FID_SELF;
use bnxt_hsi::hwrm::layouts::{
    HwrmFuncCfgInput as C, HwrmFuncDrvIfChangeInput, HwrmFuncDrvIfChangeOutput as IfOut, HwrmFuncQcfgInput,
    HwrmFuncQcfgOutput,
};
use zerocopy::FromZeros;
use zerocopy::little_endian::U16;

use super::L2_NQS;
use crate::bringup::ResourceCaps;
use crate::error::Error;
use crate::hwrm::Channel;
use crate::roce::device::{ROCE_NQS, ROCE_STAT_CTXS};
use bnxt_pci::Clock;

/// Sends of FUNC_DRV_IF_CHANGE while the firmware is busy (`BNXT_FW_IF_RETRY`).
const IF_CHANGE_TRIES: u32 = 10;
/// The wait between them (`msleep(50)` in `bnxt_hwrm_if_change`).
const IF_CHANGE_WAIT: Duration = Duration::from_millis(50);

/// One count the function reserves: what it is, how many, the FUNC_CFG enable and field that
/// ask for it, where FUNC_RESOURCE_QCAPS says how many may be, and where FUNC_QCFG says how many
/// were granted.
struct Count {
    what: &'static str,
    wanted: u16,
    enable: u32,
    field: fn(&mut C) -> &mut U16,
    offered: fn(&ResourceCaps) -> u16,
    granted: fn(&HwrmFuncQcfgOutput) -> u16,
}

/// What the function reserves: one RX ring and its completion ring, the NQs (this side's and
/// the RoCE engine's CREQ and NQ), a statistics context for the RX ring and one for the RoCE
/// engine (`bnxt_get_func_stat_ctxs`: the completion rings' and the RoCE driver's), one VNIC
/// and its one RSS context (`bnxt_get_nr_rss_ctxs` of one ring), in the order bnxt_en fills them.
const COUNTS: [Count; 6] = [
    Count {
        what: "RX rings",
        wanted: 1,
        enable: C::ENABLES_NUM_RX_RINGS,
        field: |r| &mut r.num_rx_rings,
        offered: |c| c.rx_rings,
        granted: |g| g.alloc_rx_rings.get(),
    },
    Count {
        what: "statistics contexts",
        wanted: 1 + ROCE_STAT_CTXS,
        enable: C::ENABLES_NUM_STAT_CTXS,
        field: |r| &mut r.num_stat_ctxs,
        offered: |c| c.stat_ctxs,
        granted: |g| g.alloc_stat_ctx.get(),
    },
    Count {
        what: "NQs (MSI-X)",
        wanted: L2_NQS + ROCE_NQS,
        enable: C::ENABLES_NUM_MSIX,
        field: |r| &mut r.num_msix,
        offered: |c| c.nqs,
        granted: |g| g.alloc_msix.get(),
    },
    Count {
        what: "completion rings",
        wanted: 1,
        enable: C::ENABLES_NUM_CMPL_RINGS,
        field: |r| &mut r.num_cmpl_rings,
        offered: |c| c.cmpl_rings,
        granted: |g| g.alloc_cmpl_rings.get(),
    },
    Count {
        what: "VNICs",
        wanted: 1,
        enable: C::ENABLES_NUM_VNICS,
        field: |r| &mut r.num_vnics,
        offered: |c| c.vnics,
        granted: |g| g.alloc_vnics.get(),
    },
    Count {
        what: "RSS contexts",
        wanted: 1,
        enable: C::ENABLES_NUM_RSSCOS_CTXS,
        field: |r| &mut r.num_rsscos_ctxs,
        offered: |c| c.rss_ctxs,
        granted: |g| g.alloc_rsscos_ctx.get(),
    },
];

/// FUNC_DRV_IF_CHANGE up, retried while the firmware is busy.
pub(crate) fn if_change_up(nic: &str, hwrm: &mut Channel, clock: &dyn Clock) -> Result<(), Error> {
    let req = HwrmFuncDrvIfChangeInput { flags: HwrmFuncDrvIfChangeInput::FLAGS_UP.into(), ..FromZeros::new_zeroed() };
    let mut tries = 0;
    let resp = loop {
        tries += 1;
        match hwrm.send(req) {
            Err(Error::Refused { code: ErrorCode::Busy | ErrorCode::HotResetProgress, .. })
                if tries < IF_CHANGE_TRIES =>
            {
                clock.sleep(IF_CHANGE_WAIT).map_err(|reason| Error::Interrupted {
                    nic: nic.to_string(),
                    request: "FUNC_DRV_IF_CHANGE (waiting out BUSY)".into(),
                    reason,
                })?;
            }
            other => break other?,
        }
    };
    let flags = resp.flags.get();
    if flags & (IfOut::FLAGS_HOT_FW_RESET_DONE | IfOut::FLAGS_CAPS_CHANGE) != 0 {
        return Err(Error::Firmware {
            nic: nic.to_string(),
            what: format!(
                "FUNC_DRV_IF_CHANGE says the firmware was reset or changed its capabilities during open (flags 0x{flags:x}); open again"
            ),
        });
    }
    if flags & IfOut::FLAGS_RESC_CHANGE != 0 {
        // Nothing is reserved yet; the reservation that follows is made against the firmware's
        // resources as they are now.
        tracing::info!(nic, "FUNC_DRV_IF_CHANGE reports changed resources");
    }
    Ok(())
}

/// FUNC_DRV_IF_CHANGE down.
pub(crate) fn if_change_down(hwrm: &mut Channel) -> Result<(), Error> {
    hwrm.send(HwrmFuncDrvIfChangeInput::new_zeroed()).map(|_| ())
}

/// Reserve [`COUNTS`] and check the grant. A firmware whose resource manager offers less than
/// that (FUNC_RESOURCE_QCAPS) cannot be driven.
pub(crate) fn reserve(nic: &str, hwrm: &mut Channel, caps: &ResourceCaps) -> Result<(), Error> {
    if let Some(c) = COUNTS.iter().find(|c| c.wanted > (c.offered)(caps)) {
        return Err(Error::Unsupported {
            nic: nic.to_string(),
            what: format!(
                "FUNC_RESOURCE_QCAPS offers {} {}; this driver needs {}",
                (c.offered)(caps),
                c.what,
                c.wanted
            ),
        });
    }
    let mut req = C { fid: FID_SELF.into(), ..FromZeros::new_zeroed() };
    let mut enables = 0;
    for c in COUNTS.iter().filter(|c| c.wanted != 0) {
        enables |= c.enable;
        *(c.field)(&mut req) = c.wanted.into();
    }
    req.enables = enables.into();
    hwrm.send_trimmed(req)?;

    let got = hwrm.send(HwrmFuncQcfgInput { fid: FID_SELF.into(), ..FromZeros::new_zeroed() })?;
    if let Some(c) = COUNTS.iter().find(|c| (c.granted)(&got) < c.wanted) {
        return Err(Error::Firmware {
            nic: nic.to_string(),
            what: format!(
                "FUNC_CFG reserved {} of the {} {} asked for (FUNC_QCFG)",
                (c.granted)(&got),
                c.wanted,
                c.what
            ),
        });
    }
    Ok(())
}
