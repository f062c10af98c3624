//! The HWRM requests of a P7 PF bring-up, in bnxt_en's order, each with the checks bnxt_en makes
//! on its answer (bnxt.c `bnxt_fw_init_one_p1`, `bnxt_hwrm_ver_get`, `bnxt_hwrm_func_reset`,
//! `__bnxt_hwrm_func_qcaps`, `bnxt_hwrm_func_drv_rgtr`, `bnxt_hwrm_queue_qportcfg`,
//! `bnxt_hwrm_func_qcfg`, `bnxt_probe_phy`; hardware-map §3.1 and §6c). Context memory, between
//! QUEUE_QPORTCFG and FUNC_QCFG, is in [`crate::ctx_mem`].

use std::time::Duration;

use bnxt_hsi::hwrm::layouts::*;
use bnxt_hsi::hwrm::{FID_SELF, INTF_VERSION};
use bnxt_hsi::pci::CHIP_NUM_57608;
use zerocopy::FromZeros;

use crate::error::Error;
use crate::hwrm::Channel;
use crate::hwrm::framing::WindowLimits;
use crate::hwrm::timeouts::Timeouts;
use crate::nic::Doorbells;
use bnxt_pci::Clock;

/// `CHIP_NUM_58818`, the other chip `BNXT_CHIP_P7()` accepts (bnxt.h).
const CHIP_NUM_58818: u16 = 0xd818;
/// The HWRM interface from which bnxt_en gives the firmware context memory (`bnxt_hwrm_func_qcaps`:
/// `hwrm_spec_code >= 0x10803`).
const SPEC_BACKING_STORE: u32 = 0x10803;
/// How often VER_GET is asked again while the firmware says DEV_NOT_RDY (`BNXT_FW_RETRY`).
const NOT_READY_TRIES: u32 = 5;
/// The wait between those tries (bnxt_en waits 100 ms after an unanswered VER_GET, "FLR must
/// complete within 100 msec", `bnxt_fw_init_one_p1`).
const NOT_READY_WAIT: Duration = Duration::from_millis(100);

/// HWRM_VER_GET: the interface version, chip, timeouts and window sizes; retried while the
/// firmware is not ready. Configures the channel from the answer.
pub(crate) fn ver_get(nic: &str, ch: &mut Channel, clock: &dyn Clock) -> Result<HwrmVerGetOutput, Error> {
    let (maj, min, upd) = INTF_VERSION;
    let req = HwrmVerGetInput { hwrm_intf_maj: maj, hwrm_intf_min: min, hwrm_intf_upd: upd, ..FromZeros::new_zeroed() };
    let mut tries = 0;
    let resp = loop {
        let resp = ch.send(req)?;
        tries += 1;
        if resp.flags & HwrmVerGetOutput::FLAGS_DEV_NOT_RDY == 0 {
            break resp;
        }
        if tries == NOT_READY_TRIES {
            return Err(Error::Firmware {
                nic: nic.to_string(),
                what: format!("VER_GET still reports DEV_NOT_RDY after {tries} tries"),
            });
        }
        clock.sleep(NOT_READY_WAIT).map_err(|reason| Error::Interrupted {
            nic: nic.to_string(),
            request: "VER_GET (waiting out DEV_NOT_RDY)".into(),
            reason,
        })?;
    };
    ch.configure(
        WindowLimits::from_ver_get(&resp),
        Timeouts::from_ver_get(resp.def_req_timeout.get(), resp.max_req_timeout.get()),
    );

    let (maj, min, upd) = (resp.hwrm_intf_maj_8b, resp.hwrm_intf_min_8b, resp.hwrm_intf_upd_8b);
    let spec = u32::from(maj) << 16 | u32::from(min) << 8 | u32::from(upd);
    if spec < SPEC_BACKING_STORE {
        return Err(Error::Unsupported {
            nic: nic.to_string(),
            what: format!(
                "the firmware's HWRM interface {maj}.{min}.{upd} is older than 1.8.3, which gives the firmware context memory"
            ),
        });
    }
    let chip = resp.chip_num.get();
    if chip != CHIP_NUM_57608 && chip != CHIP_NUM_58818 {
        return Err(Error::Unsupported {
            nic: nic.to_string(),
            what: format!("VER_GET reports chip 0x{chip:04x}, not a P7 (BCM57608, 0x1760)"),
        });
    }
    tracing::info!(
        nic,
        chip = format_args!("0x{chip:04x}"),
        hwrm = format_args!("{maj}.{min}.{upd}"),
        fw = format_args!(
            "{}.{}.{}.{}",
            resp.hwrm_fw_major.get(),
            resp.hwrm_fw_minor.get(),
            resp.hwrm_fw_build.get(),
            resp.hwrm_fw_patch.get()
        ),
        "firmware"
    );
    Ok(resp)
}

/// HWRM_FUNC_RESET: reset the function and its children (`enables` 0, level RESETALL), waited
/// for four times the request timeout.
pub(crate) fn func_reset(ch: &mut Channel) -> Result<(), Error> {
    let req = HwrmFuncResetInput {
        func_reset_level: HwrmFuncResetInput::FUNC_RESET_LEVEL_RESETALL,
        ..FromZeros::new_zeroed()
    };
    let wait = ch.timeouts().reset_wait();
    ch.send_within(req, wait).map(|_| ())
}

/// What FUNC_QCAPS tells the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FuncCaps {
    /// The function's MAC address.
    pub mac: [u8; 6],
    /// The firmware states resource limits of its own (`flags_ext2` SW_MAX_RESOURCE_LIMITS).
    pub fw_limits: bool,
}

/// HWRM_FUNC_QCAPS for this function: the MAC address, and RoCE v2 and backing store V2, which
/// this driver needs.
pub(crate) fn func_qcaps(nic: &str, ch: &mut Channel) -> Result<FuncCaps, Error> {
    let resp = ch.send(HwrmFuncQcapsInput { fid: FID_SELF.into(), ..FromZeros::new_zeroed() })?;
    let unsupported = |what: &str| Error::Unsupported { nic: nic.to_string(), what: what.to_string() };
    if resp.flags.get() & HwrmFuncQcapsOutput::FLAGS_ROCE_V2_SUPPORTED == 0 {
        return Err(unsupported("FUNC_QCAPS does not report ROCE_V2_SUPPORTED"));
    }
    if resp.flags_ext.get() & HwrmFuncQcapsOutput::FLAGS_EXT_BS_V2_SUPPORTED == 0 {
        return Err(unsupported("FUNC_QCAPS does not report BS_V2_SUPPORTED (backing store V2, as P7 uses it)"));
    }
    let mac = resp.mac_address;
    if mac == [0; 6] || mac[0] & 1 != 0 {
        return Err(Error::Firmware {
            nic: nic.to_string(),
            what: format!("FUNC_QCAPS gives {}, not a unicast MAC address", crate::nic::format_mac(&mac)),
        });
    }
    let fw_limits = resp.flags_ext2.get() & HwrmFuncQcapsOutput::FLAGS_EXT2_SW_MAX_RESOURCE_LIMITS_SUPPORTED != 0;
    Ok(FuncCaps { mac, fw_limits })
}

/// HWRM_FUNC_DRV_RGTR as a user-space driver on Linux registers: its OS type and version, and
/// that it reads asymmetric queue configurations (it asks QUEUE_QPORTCFG for both paths then).
/// It claims no hot reset or error recovery support and asks for no async events or VF requests,
/// since it services no completion ring to receive them on. Whether the firmware wants
/// FUNC_DRV_IF_CHANGE at open and close (response `flags` IF_CHANGE_SUPPORTED, which bnxt_en
/// keeps as `BNXT_FW_CAP_IF_CHANGE` in `bnxt_hwrm_func_drv_rgtr`).
pub(crate) fn drv_rgtr(ch: &mut Channel) -> Result<bool, Error> {
    let version = |part: &str| part.parse::<u8>().unwrap_or(0);
    let req = HwrmFuncDrvRgtrInput {
        flags: HwrmFuncDrvRgtrInput::FLAGS_ASYM_QUEUE_CFG_SUPPORT.into(),
        enables: (HwrmFuncDrvRgtrInput::ENABLES_OS_TYPE | HwrmFuncDrvRgtrInput::ENABLES_VER).into(),
        os_type: HwrmFuncDrvRgtrInput::OS_TYPE_LINUX.into(),
        ver_maj_8b: version(env!("CARGO_PKG_VERSION_MAJOR")),
        ver_min_8b: version(env!("CARGO_PKG_VERSION_MINOR")),
        ver_upd_8b: version(env!("CARGO_PKG_VERSION_PATCH")),
        ..FromZeros::new_zeroed()
    };
    let resp = ch.send(req)?;
    Ok(resp.flags.get() & HwrmFuncDrvRgtrOutput::FLAGS_IF_CHANGE_SUPPORTED != 0)
}

/// HWRM_FUNC_DRV_UNRGTR.
pub(crate) fn drv_unrgtr(ch: &mut Channel) -> Result<(), Error> {
    ch.send(HwrmFuncDrvUnrgtrInput::new_zeroed()).map(|_| ())
}

/// HWRM_QUEUE_QPORTCFG for the transmit path, and the receive path too if the firmware's queues
/// are asymmetric. A firmware with no configurable queues is an error, as in bnxt_en.
pub(crate) fn queue_qportcfg(nic: &str, ch: &mut Channel) -> Result<(), Error> {
    let tx = ch.send(HwrmQueueQportcfgInput::new_zeroed())?;
    if tx.max_configurable_queues == 0 {
        return Err(Error::Firmware {
            nic: nic.to_string(),
            what: "QUEUE_QPORTCFG reports no configurable queues".into(),
        });
    }
    if tx.queue_cfg_info & HwrmQueueQportcfgOutput::QUEUE_CFG_INFO_ASYM_CFG != 0 {
        let rx = ch.send(HwrmQueueQportcfgInput {
            flags: HwrmQueueQportcfgInput::FLAGS_PATH_RX.into(),
            ..FromZeros::new_zeroed()
        })?;
        if rx.max_configurable_queues == 0 {
            return Err(Error::Firmware {
                nic: nic.to_string(),
                what: "QUEUE_QPORTCFG (receive path) reports no configurable queues".into(),
            });
        }
    }
    Ok(())
}

/// What the firmware's resource manager lets the function reserve (HWRM_FUNC_RESOURCE_QCAPS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ResourceCaps {
    /// Notification queues: `max_msix`, which bnxt_en takes as `max_nqs` on P5 and later.
    pub nqs: u16,
    /// L2 completion rings.
    pub cmpl_rings: u16,
    /// Receive rings.
    pub rx_rings: u16,
    /// Statistics contexts.
    pub stat_ctxs: u16,
    /// VNICs.
    pub vnics: u16,
    /// RSS contexts.
    pub rss_ctxs: u16,
}

/// HWRM_FUNC_RESOURCE_QCAPS for this function, after the backing store as bnxt_en sends it
/// (bnxt.c `bnxt_hwrm_func_qcaps` → `bnxt_hwrm_func_resc_qcaps`). Its answer is what makes
/// bnxt_en use the firmware's resource manager (`BNXT_FW_CAP_NEW_RM`), the only way a P5 or
/// later chip reserves RX rings, NQs, completion rings, statistics contexts, VNICs and RSS
/// contexts (`__bnxt_hwrm_reserve_pf_rings`); so a refusal is an error here, where bnxt_en
/// would go on without those reservations and find no rings to use.
pub(crate) fn resource_qcaps(ch: &mut Channel) -> Result<ResourceCaps, Error> {
    let r = ch.send(HwrmFuncResourceQcapsInput { fid: FID_SELF.into(), ..FromZeros::new_zeroed() })?;
    Ok(ResourceCaps {
        nqs: r.max_msix.get(),
        cmpl_rings: r.max_cmpl_rings.get(),
        rx_rings: r.max_rx_rings.get(),
        stat_ctxs: r.max_stat_ctx.get(),
        vnics: r.max_vnics.get(),
        rss_ctxs: r.max_rsscos_ctx.get(),
    })
}

/// What FUNC_QCFG tells the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FuncCfg {
    /// Where the doorbells are.
    pub doorbells: Doorbells,
    /// The largest MTU the function may be given (`max_mtu_configured`; bnxt_en takes 9500,
    /// `BNXT_MAX_MTU`, when it is 0: bnxt.c `bnxt_hwrm_func_qcfg`).
    pub max_mtu: u16,
}

/// `BNXT_MAX_MTU` (bnxt.h).
const DEFAULT_MAX_MTU: u16 = 9500;

/// HWRM_FUNC_QCFG for this function: where its doorbells are. On P7 the RoCE doorbells start
/// past the L2 ones, at `legacy_l2_db_size_kb` KB; the doorbell area is
/// `l2_doorbell_bar_size_kb` KB rounded up to pages (bnxt.c `bnxt_hwrm_func_qcfg`). bnxt_en falls
/// back to the whole BAR when that size is 0 or not past the offset; the seam does not know BAR
/// sizes, so the size is then unknown.
pub(crate) fn func_qcfg(nic: &str, ch: &mut Channel) -> Result<FuncCfg, Error> {
    let resp = ch.send(HwrmFuncQcfgInput { fid: FID_SELF.into(), ..FromZeros::new_zeroed() })?;
    let max_mtu = match resp.max_mtu_configured.get() {
        0 => DEFAULT_MAX_MTU,
        n => n,
    };
    let offset = u64::from(resp.legacy_l2_db_size_kb.get()) * 1024;
    let size = (u64::from(resp.l2_doorbell_bar_size_kb.get()) * 1024).next_multiple_of(bnxt_pci::dma::PAGE_SIZE as u64);
    let size = (size != 0 && size > offset).then_some(size);
    if size.is_none() {
        tracing::warn!(
            nic,
            offset,
            kb = resp.l2_doorbell_bar_size_kb.get(),
            "FUNC_QCFG gives no usable doorbell area size"
        );
    }
    Ok(FuncCfg { doorbells: Doorbells { offset, size }, max_mtu })
}

/// The VNIC mode that lets RoCE traffic reach the RoCE engine beside the L2 rings, as bnxt_en
/// picks it for VNIC 0 once a RoCE driver is registered (bnxt.c `bnxt_get_roce_vnic_mode`):
/// ROCE_MIRRORING_CAPABLE when HWRM_VNIC_QCAPS reports the capability (`bnxt_hwrm_vnic_qcaps`),
/// else ROCE_DUAL. A refused VNIC_QCAPS only loses the capability, as in bnxt_en.
pub(crate) fn vnic_qcaps(nic: &str, ch: &mut Channel) -> Result<u32, Error> {
    type O = HwrmVnicQcapsOutput;
    let mirror = match ch.send(HwrmVnicQcapsInput::new_zeroed()) {
        Ok(r) => r.flags.get() & O::FLAGS_ROCE_MIRRORING_CAPABLE_VNIC_CAP != 0,
        Err(e @ (Error::Timeout { .. } | Error::Wedged { .. })) => return Err(e),
        Err(e) => {
            tracing::warn!(nic, error = %e, "VNIC_QCAPS failed; the RoCE VNIC mode is ROCE_DUAL");
            false
        }
    };
    Ok(if mirror {
        HwrmVnicCfgInput::FLAGS_ROCE_MIRRORING_CAPABLE_VNIC_MODE
    } else {
        HwrmVnicCfgInput::FLAGS_ROCE_DUAL_VNIC_MODE
    })
}

/// HWRM_PORT_PHY_QCAPS then HWRM_PORT_PHY_QCFG (bnxt_en's `bnxt_probe_phy`); whether the link
/// is up.
pub(crate) fn port_phy(ch: &mut Channel) -> Result<bool, Error> {
    ch.send(HwrmPortPhyQcapsInput::new_zeroed())?;
    let cfg = ch.send(HwrmPortPhyQcfgInput::new_zeroed())?;
    Ok(cfg.link == HwrmPortPhyQcfgOutput::LINK_LINK)
}
