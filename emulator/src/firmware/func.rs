//! Function-level requests: FUNC_RESET, FUNC_QCAPS, FUNC_QCFG, FUNC_RESOURCE_QCAPS.
//!
//! What bnxt_en reads from them: bnxt.c `__bnxt_hwrm_func_qcaps` (flags, flags_ext, maxima, MAC,
//! fid, port), `bnxt_hwrm_func_qcfg` (MTU, doorbell sizes: on P7 `db_offset =
//! legacy_l2_db_size_kb * 1024` and `db_size = l2_doorbell_bar_size_kb * 1024`, which must be
//! larger than `db_offset` and no larger than BAR2), `bnxt_hwrm_func_resc_qcaps` (min/max per
//! resource, `max_msix` as the number of NQs on P5+).

use bnxt_hsi::hwrm::FID_SELF;
use bnxt_hsi::hwrm::layouts::{
    HwrmFuncQcapsInput, HwrmFuncQcapsOutput, HwrmFuncQcfgInput, HwrmFuncQcfgOutput, HwrmFuncResetInput,
    HwrmFuncResetOutput, HwrmFuncResourceQcapsInput, HwrmFuncResourceQcapsOutput,
};

use super::Ctx;
use super::caps::{
    MAX_CMPL_RINGS, MAX_HW_RING_GRPS, MAX_L2_CTXS, MAX_NQS, MAX_RSSCOS_CTX, MAX_RX_RINGS, MAX_STAT_CTX, MAX_TX_RINGS,
    MAX_VNICS,
};
use super::identity::{PF_FID, PORT_ID};
use super::response::{Outcome, Reject, parse, reply};
use crate::config_space::BAR2_SIZE;

/// FUNC_QCFG `legacy_l2_db_size_kb`: the L2 doorbells start 64 KiB into BAR2, where a P5 PF has
/// them (`DB_PF_OFFSET_P5` 0x10000), leaving the first 64 KiB as the legacy area.
pub const LEGACY_L2_DB_SIZE_KB: u16 = 64;
/// FUNC_QCFG `l2_doorbell_bar_size_kb`: the L2 doorbell area ends 256 KiB into BAR2 (192 KiB of
/// L2 doorbell pages); RoCE doorbell pages follow up to the end of the BAR.
pub const L2_DOORBELL_BAR_SIZE_KB: u16 = 256;
/// FUNC_QCFG `admin_mtu`: 9000, so RoCE's 4096-byte path MTU fits (the model's choice).
pub const ADMIN_MTU: u16 = 9000;
/// FUNC_QCFG `max_mtu_configured` (bnxt.h `BNXT_MAX_MTU`).
pub const MAX_MTU: u16 = 9500;

/// FUNC_QCAPS `flags` (besides `ERROR_RECOVERY_CAPABLE`, which follows the firmware options):
/// - `ROCE_V2_SUPPORTED`: the function offers RoCE v2 (bnxt.c `__bnxt_hwrm_func_qcaps` gives bnxt_re
///   the function only with it).
/// - `NOTIFY_VF_DEF_VNIC_CHNG_SUPPORTED`: a PF capability (the HSI: a PF's host may register for
///   the default-VNIC-change event of its VFs). DPDK's PMD (drivers/net/bnxt/bnxt_hwrm.c
///   `__bnxt_hwrm_func_qcaps`) tests this bit of `flags` under the name of `flags_ext`'s
///   `EXT_BS_V2_SUPPORTED` (both 0x4000000) and on P7 takes the backing-store V2 path only when it
///   is set; its P7 support (commit fe2f715ca5, "The firmware supports the new backing store
///   scheme for P7") was written and run against the vendor's P7 PF firmware, so that firmware
///   sets the bit. No source shows a P7 PF without it.
pub const QCAPS_FLAGS: u32 =
    HwrmFuncQcapsOutput::FLAGS_ROCE_V2_SUPPORTED | HwrmFuncQcapsOutput::FLAGS_NOTIFY_VF_DEF_VNIC_CHNG_SUPPORTED;
/// FUNC_QCAPS `flags_ext`:
/// - `BS_V2_SUPPORTED`: every context type through FUNC_BACKING_STORE_QCAPS_V2/CFG_V2 (bnxt.c
///   `__bnxt_hwrm_func_qcaps` sets `BNXT_FW_CAP_BACKING_STORE_V2` from it).
/// - `BS_V2_REQUIRED`: the V1 pair is not served on P7 (DPDK commit fe2f715ca5: "Older P5 device
///   family continues to support the version 1 of backing store"; the model refuses V1, see
///   [`super::backing_store::v1_refused`]).
pub const QCAPS_FLAGS_EXT: u32 =
    HwrmFuncQcapsOutput::FLAGS_EXT_BS_V2_SUPPORTED | HwrmFuncQcapsOutput::FLAGS_EXT_BS_V2_REQUIRED;

const _: () = assert!((L2_DOORBELL_BAR_SIZE_KB as u64) * 1024 <= BAR2_SIZE);
const _: () = assert!(L2_DOORBELL_BAR_SIZE_KB > LEGACY_L2_DB_SIZE_KB);

/// The function a request names by `fid`: this PF, as 0xffff or its own fid; there are no VFs.
fn check_fid(fid: u16) -> Result<(), Reject> {
    if fid == FID_SELF || fid == PF_FID {
        Ok(())
    } else {
        Err(Reject::invalid(format!("fid 0x{fid:x} names no function (the PF is 0x{PF_FID:x}, it has no VFs)")))
    }
}

/// FUNC_RESET: free the function's rings and statistics contexts. Levels RESETALL and RESETME
/// reset this function; RESETCHILDREN has no children to reset; RESETVF and `vf_id` name VFs,
/// which this PF does not have.
pub fn func_reset(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmFuncResetInput = parse(bytes);
    if req.enables.get() & HwrmFuncResetInput::ENABLES_VF_ID_VALID != 0 {
        return Err(Reject::invalid(format!("vf_id {} given, but the function has no VFs", req.vf_id.get())));
    }
    match req.func_reset_level {
        HwrmFuncResetInput::FUNC_RESET_LEVEL_RESETALL | HwrmFuncResetInput::FUNC_RESET_LEVEL_RESETME => {
            ctx.state.free_resources();
        }
        HwrmFuncResetInput::FUNC_RESET_LEVEL_RESETCHILDREN => {}
        HwrmFuncResetInput::FUNC_RESET_LEVEL_RESETVF => {
            return Err(Reject::invalid("func_reset_level RESETVF, but the function has no VFs"));
        }
        other => return Err(Reject::invalid(format!("func_reset_level {other} is not defined"))),
    }
    reply::<HwrmFuncResetOutput>(|_| {})
}

/// FUNC_QCAPS: what the function can do and have.
pub fn func_qcaps(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmFuncQcapsInput = parse(bytes);
    check_fid(req.fid.get())?;
    let (id, ctx) = (ctx.id, &*ctx);
    reply::<HwrmFuncQcapsOutput>(|o| {
        o.fid = PF_FID.into();
        o.port_id = PORT_ID.into();
        let recovery = if ctx.opts.error_recovery { HwrmFuncQcapsOutput::FLAGS_ERROR_RECOVERY_CAPABLE } else { 0 };
        o.flags = (QCAPS_FLAGS | recovery).into();
        o.mac_address = id.mac;
        o.max_rsscos_ctx = MAX_RSSCOS_CTX.into();
        o.max_cmpl_rings = MAX_CMPL_RINGS.into();
        o.max_tx_rings = MAX_TX_RINGS.into();
        o.max_rx_rings = MAX_RX_RINGS.into();
        o.max_l2_ctxs = MAX_L2_CTXS.into();
        o.max_vnics = MAX_VNICS.into();
        o.max_stat_ctx = MAX_STAT_CTX.into();
        o.max_hw_ring_grps = MAX_HW_RING_GRPS.into();
        o.flags_ext = QCAPS_FLAGS_EXT.into();
        if ctx.opts.resource_limits {
            o.flags_ext2 = HwrmFuncQcapsOutput::FLAGS_EXT2_SW_MAX_RESOURCE_LIMITS_SUPPORTED.into();
        }
        o.device_serial_number = id.serial.to_le_bytes();
    })
}

/// FUNC_QCFG: how the function is configured now.
pub fn func_qcfg(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmFuncQcfgInput = parse(bytes);
    check_fid(req.fid.get())?;
    let id = ctx.id;
    // The `alloc_*` fields echo the last FUNC_CFG reservation (bnxt.c `bnxt_hwrm_get_rings`).
    let resv = ctx.state.l2.reservation;
    reply::<HwrmFuncQcfgOutput>(|o| {
        o.fid = PF_FID.into();
        o.port_id = PORT_ID.into();
        o.mac_address = id.mac;
        o.pci_id = id.pci_id().into();
        o.alloc_rsscos_ctx = resv.rsscos_ctxs.into();
        o.alloc_cmpl_rings = resv.cmpl_rings.into();
        o.alloc_tx_rings = resv.tx_rings.into();
        o.alloc_rx_rings = resv.rx_rings.into();
        o.alloc_l2_ctx = resv.l2_ctxs.into();
        o.alloc_vnics = resv.vnics.into();
        o.alloc_stat_ctx = resv.stat_ctxs.into();
        o.alloc_hw_ring_grps = u32::from(resv.hw_ring_grps).into();
        o.alloc_msix = resv.msix.into();
        let mtu = ctx.state.l2.mtu;
        o.admin_mtu = mtu.admin.unwrap_or(ADMIN_MTU).into();
        o.mru = mtu.mru.unwrap_or(ADMIN_MTU).into();
        o.stat_ctx_id = u16::MAX.into();
        o.port_partition_type = HwrmFuncQcfgOutput::PORT_PARTITION_TYPE_SPF;
        o.port_pf_cnt = 1;
        o.dflt_vnic_id = u16::MAX.into();
        o.max_mtu_configured = MAX_MTU.into();
        o.evb_mode = HwrmFuncQcfgOutput::EVB_MODE_NO_EVB;
        o.l2_doorbell_bar_size_kb = L2_DOORBELL_BAR_SIZE_KB.into();
        o.always_1 = 1;
        o.legacy_l2_db_size_kb = LEGACY_L2_DB_SIZE_KB.into();
        o.db_page_size = HwrmFuncQcfgOutput::DB_PAGE_SIZE_4KB;
        o.roce_vnic_id = u16::MAX.into();
        o.host_mtu = mtu.host.unwrap_or(ADMIN_MTU).into();
        if ctx.state.l2.std_tx_ring_mode {
            o.flags = (o.flags.get() | HwrmFuncQcfgOutput::FLAGS_STD_TX_RING_MODE_ENABLED).into();
        }
    })
}

/// FUNC_RESOURCE_QCAPS: minimum and maximum of each resource. The PF has no VFs to share with, so
/// its guaranteed minimum is everything.
pub fn func_resource_qcaps(bytes: &[u8], _ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmFuncResourceQcapsInput = parse(bytes);
    check_fid(req.fid.get())?;
    reply::<HwrmFuncResourceQcapsOutput>(|o| {
        o.max_msix = MAX_NQS.into();
        o.min_msix = 1.into();
        o.min_rsscos_ctx = MAX_RSSCOS_CTX.into();
        o.max_rsscos_ctx = MAX_RSSCOS_CTX.into();
        o.min_cmpl_rings = MAX_CMPL_RINGS.into();
        o.max_cmpl_rings = MAX_CMPL_RINGS.into();
        o.min_tx_rings = MAX_TX_RINGS.into();
        o.max_tx_rings = MAX_TX_RINGS.into();
        o.min_rx_rings = MAX_RX_RINGS.into();
        o.max_rx_rings = MAX_RX_RINGS.into();
        o.min_l2_ctxs = MAX_L2_CTXS.into();
        o.max_l2_ctxs = MAX_L2_CTXS.into();
        o.min_vnics = MAX_VNICS.into();
        o.max_vnics = MAX_VNICS.into();
        o.min_stat_ctx = MAX_STAT_CTX.into();
        o.max_stat_ctx = MAX_STAT_CTX.into();
        o.min_hw_ring_grps = (MAX_HW_RING_GRPS as u16).into();
        o.max_hw_ring_grps = (MAX_HW_RING_GRPS as u16).into();
    })
}
