//! Routing a request to its handler by `req_type`. Requests without a handler are answered
//! CMD_NOT_SUPPORTED by the caller, which counts and logs them.

use bnxt_hsi::hwrm::Request;
use bnxt_hsi::hwrm::layouts::*;

use super::response::Outcome;
use super::{Ctx, backing_store, driver_reg, func, port, queue, rings, stats, ver};

const VER_GET: u16 = <HwrmVerGetInput as Request>::REQ_TYPE;
const FUNC_RESET: u16 = <HwrmFuncResetInput as Request>::REQ_TYPE;
const FUNC_QCAPS: u16 = <HwrmFuncQcapsInput as Request>::REQ_TYPE;
const FUNC_QCFG: u16 = <HwrmFuncQcfgInput as Request>::REQ_TYPE;
const FUNC_DRV_RGTR: u16 = <HwrmFuncDrvRgtrInput as Request>::REQ_TYPE;
const FUNC_DRV_UNRGTR: u16 = <HwrmFuncDrvUnrgtrInput as Request>::REQ_TYPE;
const FUNC_DRV_IF_CHANGE: u16 = <HwrmFuncDrvIfChangeInput as Request>::REQ_TYPE;
const QUEUE_QPORTCFG: u16 = <HwrmQueueQportcfgInput as Request>::REQ_TYPE;
const BS_QCAPS_V2: u16 = <HwrmFuncBackingStoreQcapsV2Input as Request>::REQ_TYPE;
const BS_CFG_V2: u16 = <HwrmFuncBackingStoreCfgV2Input as Request>::REQ_TYPE;
const FUNC_RESOURCE_QCAPS: u16 = <HwrmFuncResourceQcapsInput as Request>::REQ_TYPE;
const STAT_CTX_ALLOC: u16 = <HwrmStatCtxAllocInput as Request>::REQ_TYPE;
const STAT_CTX_FREE: u16 = <HwrmStatCtxFreeInput as Request>::REQ_TYPE;
const RING_ALLOC: u16 = <HwrmRingAllocInput as Request>::REQ_TYPE;
const RING_FREE: u16 = <HwrmRingFreeInput as Request>::REQ_TYPE;
const PORT_PHY_QCAPS: u16 = <HwrmPortPhyQcapsInput as Request>::REQ_TYPE;
const PORT_PHY_QCFG: u16 = <HwrmPortPhyQcfgInput as Request>::REQ_TYPE;

/// Every `req_type` the firmware implements.
pub const IMPLEMENTED: [u16; 17] = [
    VER_GET,
    FUNC_RESET,
    FUNC_QCAPS,
    FUNC_QCFG,
    FUNC_DRV_RGTR,
    FUNC_DRV_UNRGTR,
    FUNC_DRV_IF_CHANGE,
    QUEUE_QPORTCFG,
    BS_QCAPS_V2,
    BS_CFG_V2,
    FUNC_RESOURCE_QCAPS,
    STAT_CTX_ALLOC,
    STAT_CTX_FREE,
    RING_ALLOC,
    RING_FREE,
    PORT_PHY_QCAPS,
    PORT_PHY_QCFG,
];

/// Run the handler for `req_type` on `bytes`; `None` when the firmware has none.
pub fn dispatch(req_type: u16, bytes: &[u8], ctx: &mut Ctx<'_>) -> Option<Outcome> {
    Some(match req_type {
        VER_GET => ver::ver_get(bytes),
        FUNC_RESET => func::func_reset(bytes, ctx),
        FUNC_QCAPS => func::func_qcaps(bytes, ctx),
        FUNC_QCFG => func::func_qcfg(bytes, ctx),
        FUNC_RESOURCE_QCAPS => func::func_resource_qcaps(bytes, ctx),
        FUNC_DRV_RGTR => driver_reg::drv_rgtr(bytes, ctx),
        FUNC_DRV_UNRGTR => driver_reg::drv_unrgtr(bytes, ctx),
        FUNC_DRV_IF_CHANGE => driver_reg::drv_if_change(bytes, ctx),
        QUEUE_QPORTCFG => queue::queue_qportcfg(bytes),
        BS_QCAPS_V2 => backing_store::qcaps_v2(bytes),
        BS_CFG_V2 => backing_store::cfg_v2(bytes, ctx),
        STAT_CTX_ALLOC => stats::stat_ctx_alloc(bytes, ctx),
        STAT_CTX_FREE => stats::stat_ctx_free(bytes, ctx),
        RING_ALLOC => rings::ring_alloc(bytes, ctx),
        RING_FREE => rings::ring_free(bytes, ctx),
        PORT_PHY_QCAPS => port::phy_qcaps(bytes),
        PORT_PHY_QCFG => port::phy_qcfg(bytes),
        _ => return None,
    })
}

/// Key fields of a request worth a transcript line (empty when there are none).
pub fn summary(req_type: u16, bytes: &[u8]) -> String {
    match req_type {
        BS_QCAPS_V2 => backing_store::qcaps_v2_summary(bytes),
        BS_CFG_V2 => backing_store::cfg_v2_summary(bytes),
        RING_ALLOC => rings::ring_alloc_summary(bytes),
        RING_FREE => rings::ring_free_summary(bytes),
        STAT_CTX_ALLOC => stats::stat_ctx_alloc_summary(bytes),
        STAT_CTX_FREE => stats::stat_ctx_free_summary(bytes),
        FUNC_RESET => {
            let r: HwrmFuncResetInput = super::response::parse(bytes);
            format!("level={} enables=0x{:x}", r.func_reset_level, r.enables.get())
        }
        FUNC_DRV_RGTR => {
            let r: HwrmFuncDrvRgtrInput = super::response::parse(bytes);
            format!("os_type=0x{:x} enables=0x{:x} flags=0x{:x}", r.os_type.get(), r.enables.get(), r.flags.get())
        }
        FUNC_DRV_IF_CHANGE => {
            let r: HwrmFuncDrvIfChangeInput = super::response::parse(bytes);
            format!("flags=0x{:x}", r.flags.get())
        }
        _ => String::new(),
    }
}
