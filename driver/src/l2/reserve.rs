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
};
use zerocopy::FromZeros;

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

/// What the function reserves: one RX ring and its completion ring, the NQs, a statistics
/// context for the RX ring and one for the RoCE engine (`bnxt_get_func_stat_ctxs`: the
/// completion rings' and the RoCE driver's), one VNIC and its one RSS context
/// (`bnxt_get_nr_rss_ctxs` of one ring).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wanted {
    /// `num_rx_rings`.
    pub rx_rings: u16,
    /// `num_cmpl_rings`.
    pub cmpl_rings: u16,
    /// `num_msix`.
    pub nqs: u16,
    /// `num_stat_ctxs`.
    pub stat_ctxs: u16,
    /// `num_vnics`.
    pub vnics: u16,
    /// `num_rsscos_ctxs`.
    pub rss_ctxs: u16,
}

/// The reservation this driver makes.
pub(crate) const WANTED: Wanted =
    Wanted { rx_rings: 1, cmpl_rings: 1, nqs: L2_NQS + ROCE_NQS, stat_ctxs: 1 + ROCE_STAT_CTXS, vnics: 1, rss_ctxs: 1 };

impl Wanted {
    /// Each count with its name, the enable that sends it, and the field it goes in.
    fn counts(&self) -> [(&'static str, u16, u32, fn(&mut C) -> &mut zerocopy::little_endian::U16); 6] {
        [
            ("RX rings", self.rx_rings, C::ENABLES_NUM_RX_RINGS, |r| &mut r.num_rx_rings),
            ("statistics contexts", self.stat_ctxs, C::ENABLES_NUM_STAT_CTXS, |r| &mut r.num_stat_ctxs),
            ("NQs (MSI-X)", self.nqs, C::ENABLES_NUM_MSIX, |r| &mut r.num_msix),
            ("completion rings", self.cmpl_rings, C::ENABLES_NUM_CMPL_RINGS, |r| &mut r.num_cmpl_rings),
            ("VNICs", self.vnics, C::ENABLES_NUM_VNICS, |r| &mut r.num_vnics),
            ("RSS contexts", self.rss_ctxs, C::ENABLES_NUM_RSSCOS_CTXS, |r| &mut r.num_rsscos_ctxs),
        ]
    }
}

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

/// Reserve [`WANTED`] and check the grant. A firmware whose resource manager offers less than
/// that (FUNC_RESOURCE_QCAPS) cannot be driven.
pub(crate) fn reserve(nic: &str, hwrm: &mut Channel, caps: &ResourceCaps) -> Result<(), Error> {
    let w = WANTED;
    let offered = [
        ("RX rings", w.rx_rings, caps.rx_rings),
        ("completion rings", w.cmpl_rings, caps.cmpl_rings),
        ("NQs (MSI-X)", w.nqs, caps.nqs),
        ("statistics contexts", w.stat_ctxs, caps.stat_ctxs),
        ("VNICs", w.vnics, caps.vnics),
        ("RSS contexts", w.rss_ctxs, caps.rss_ctxs),
    ];
    if let Some((what, want, max)) = offered.iter().find(|(_, want, max)| want > max) {
        return Err(Error::Unsupported {
            nic: nic.to_string(),
            what: format!("FUNC_RESOURCE_QCAPS offers {max} {what}; this driver needs {want}"),
        });
    }
    let mut req = C { fid: FID_SELF.into(), ..FromZeros::new_zeroed() };
    let mut enables = 0;
    for (_, count, enable, field) in w.counts() {
        if count != 0 {
            enables |= enable;
            *field(&mut req) = count.into();
        }
    }
    req.enables = enables.into();
    hwrm.send_trimmed(req)?;

    let got = hwrm.send(HwrmFuncQcfgInput { fid: FID_SELF.into(), ..FromZeros::new_zeroed() })?;
    let granted = [
        ("RX rings", w.rx_rings, got.alloc_rx_rings.get()),
        ("completion rings", w.cmpl_rings, got.alloc_cmpl_rings.get()),
        ("NQs (MSI-X)", w.nqs, got.alloc_msix.get()),
        ("statistics contexts", w.stat_ctxs, got.alloc_stat_ctx.get()),
        ("VNICs", w.vnics, got.alloc_vnics.get()),
        ("RSS contexts", w.rss_ctxs, got.alloc_rsscos_ctx.get()),
    ];
    if let Some((what, want, have)) = granted.iter().find(|(_, want, have)| have < want) {
        return Err(Error::Firmware {
            nic: nic.to_string(),
            what: format!("FUNC_CFG reserved {have} of the {want} {what} asked for (FUNC_QCFG)"),
        });
    }
    Ok(())
}
