//! Routing a request to its handler by `req_type`. Requests without a handler are answered
//! CMD_NOT_SUPPORTED by the caller, which counts and logs them.

use bnxt_hsi::hwrm::Request;
use bnxt_hsi::hwrm::layouts::*;

use super::response::Outcome;
use super::{
    Ctx, backing_store, coalescing, driver_reg, func, func_cfg, fw_time, l2_filter, nvm, placement, port, port_cfg,
    port_stats, qos_caps, queue, recovery, rings, selftest, stats, thermal, ver, vnic,
};

const VER_GET: u16 = <HwrmVerGetInput as Request>::REQ_TYPE;
const FUNC_RESET: u16 = <HwrmFuncResetInput as Request>::REQ_TYPE;
const FUNC_QCAPS: u16 = <HwrmFuncQcapsInput as Request>::REQ_TYPE;
const FUNC_QCFG: u16 = <HwrmFuncQcfgInput as Request>::REQ_TYPE;
const FUNC_CFG: u16 = <HwrmFuncCfgInput as Request>::REQ_TYPE;
const FUNC_DRV_RGTR: u16 = <HwrmFuncDrvRgtrInput as Request>::REQ_TYPE;
pub(super) const FUNC_DRV_UNRGTR: u16 = <HwrmFuncDrvUnrgtrInput as Request>::REQ_TYPE;
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
const PORT_PHY_CFG: u16 = <HwrmPortPhyCfgInput as Request>::REQ_TYPE;
const PORT_MAC_QCAPS: u16 = <HwrmPortMacQcapsInput as Request>::REQ_TYPE;
const PORT_LED_QCAPS: u16 = <HwrmPortLedQcapsInput as Request>::REQ_TYPE;
const VNIC_QCAPS: u16 = <HwrmVnicQcapsInput as Request>::REQ_TYPE;
const VNIC_ALLOC: u16 = <HwrmVnicAllocInput as Request>::REQ_TYPE;
const VNIC_FREE: u16 = <HwrmVnicFreeInput as Request>::REQ_TYPE;
const VNIC_CFG: u16 = <HwrmVnicCfgInput as Request>::REQ_TYPE;
const VNIC_RSS_CFG: u16 = <HwrmVnicRssCfgInput as Request>::REQ_TYPE;
const VNIC_PLCMODES_CFG: u16 = <HwrmVnicPlcmodesCfgInput as Request>::REQ_TYPE;
const RSS_CTX_ALLOC: u16 = <HwrmVnicRssCosLbCtxAllocInput as Request>::REQ_TYPE;
const RSS_CTX_FREE: u16 = <HwrmVnicRssCosLbCtxFreeInput as Request>::REQ_TYPE;
const L2_FILTER_ALLOC: u16 = <HwrmCfaL2FilterAllocInput as Request>::REQ_TYPE;
const L2_FILTER_FREE: u16 = <HwrmCfaL2FilterFreeInput as Request>::REQ_TYPE;
const L2_SET_RX_MASK: u16 = <HwrmCfaL2SetRxMaskInput as Request>::REQ_TYPE;
const RING_AGGINT_QCAPS: u16 = <HwrmRingAggintQcapsInput as Request>::REQ_TYPE;
const RING_AGGINT_PARAMS: u16 = <HwrmRingCmplRingCfgAggintParamsInput as Request>::REQ_TYPE;
const FW_SET_TIME: u16 = <HwrmFwSetTimeInput as Request>::REQ_TYPE;
const PORT_QSTATS: u16 = <HwrmPortQstatsInput as Request>::REQ_TYPE;
const PORT_QSTATS_EXT: u16 = <HwrmPortQstatsExtInput as Request>::REQ_TYPE;
const NVM_GET_DEV_INFO: u16 = <HwrmNvmGetDevInfoInput as Request>::REQ_TYPE;
const QUEUE_DSCP_QCAPS: u16 = <HwrmQueueDscpQcapsInput as Request>::REQ_TYPE;
const QUEUE_PFCWD_TIMEOUT_QCAPS: u16 = <HwrmQueuePfcwdTimeoutQcapsInput as Request>::REQ_TYPE;
const SELFTEST_QLIST: u16 = <HwrmSelftestQlistInput as Request>::REQ_TYPE;
const TEMP_MONITOR_QUERY: u16 = <HwrmTempMonitorQueryInput as Request>::REQ_TYPE;
const ERROR_RECOVERY_QCFG: u16 = <HwrmErrorRecoveryQcfgInput as Request>::REQ_TYPE;
const VNIC_PLCMODES_QCFG: u16 = <HwrmVnicPlcmodesQcfgInput as Request>::REQ_TYPE;
const PORT_MAC_QCFG: u16 = <HwrmPortMacQcfgInput as Request>::REQ_TYPE;
const PORT_CLR_STATS: u16 = <HwrmPortClrStatsInput as Request>::REQ_TYPE;
const STAT_CTX_QUERY: u16 = <HwrmStatCtxQueryInput as Request>::REQ_TYPE;
const STAT_CTX_CLR_STATS: u16 = <HwrmStatCtxClrStatsInput as Request>::REQ_TYPE;
const BS_QCAPS_V1: u16 = bnxt_hsi::hwrm::req_type::FUNC_BACKING_STORE_QCAPS;
const BS_CFG_V1: u16 = bnxt_hsi::hwrm::req_type::FUNC_BACKING_STORE_CFG;

/// Every `req_type` the firmware implements.
pub const IMPLEMENTED: [u16; 50] = [
    VER_GET,
    FUNC_CFG,
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
    PORT_PHY_CFG,
    PORT_MAC_QCAPS,
    PORT_LED_QCAPS,
    VNIC_QCAPS,
    VNIC_ALLOC,
    VNIC_FREE,
    VNIC_CFG,
    VNIC_RSS_CFG,
    VNIC_PLCMODES_CFG,
    RSS_CTX_ALLOC,
    RSS_CTX_FREE,
    L2_FILTER_ALLOC,
    L2_FILTER_FREE,
    L2_SET_RX_MASK,
    RING_AGGINT_QCAPS,
    RING_AGGINT_PARAMS,
    FW_SET_TIME,
    PORT_QSTATS,
    PORT_QSTATS_EXT,
    NVM_GET_DEV_INFO,
    QUEUE_DSCP_QCAPS,
    QUEUE_PFCWD_TIMEOUT_QCAPS,
    SELFTEST_QLIST,
    TEMP_MONITOR_QUERY,
    ERROR_RECOVERY_QCFG,
    VNIC_PLCMODES_QCFG,
    PORT_MAC_QCFG,
    PORT_CLR_STATS,
    BS_QCAPS_V1,
    BS_CFG_V1,
    STAT_CTX_QUERY,
    STAT_CTX_CLR_STATS,
];

/// Run the handler for `req_type` on `bytes`; `None` when the firmware has none.
pub fn dispatch(req_type: u16, bytes: &[u8], ctx: &mut Ctx<'_>) -> Option<Outcome> {
    Some(match req_type {
        VER_GET => ver::ver_get(bytes),
        FUNC_RESET => func::func_reset(bytes, ctx),
        FUNC_QCAPS => func::func_qcaps(bytes, ctx),
        FUNC_QCFG => func::func_qcfg(bytes, ctx),
        FUNC_CFG => func_cfg::func_cfg(bytes, ctx),
        FUNC_RESOURCE_QCAPS => func::func_resource_qcaps(bytes, ctx),
        FUNC_DRV_RGTR => driver_reg::drv_rgtr(bytes, ctx),
        FUNC_DRV_UNRGTR => driver_reg::drv_unrgtr(bytes, ctx),
        FUNC_DRV_IF_CHANGE => driver_reg::drv_if_change(bytes, ctx),
        QUEUE_QPORTCFG => queue::queue_qportcfg(bytes),
        BS_QCAPS_V2 => backing_store::qcaps_v2(bytes, ctx.opts),
        BS_CFG_V2 => backing_store::cfg_v2(bytes, ctx),
        STAT_CTX_ALLOC => stats::stat_ctx_alloc(bytes, ctx),
        STAT_CTX_FREE => stats::stat_ctx_free(bytes, ctx),
        RING_ALLOC => rings::ring_alloc(bytes, ctx),
        RING_FREE => rings::ring_free(bytes, ctx),
        PORT_PHY_QCAPS => port::phy_qcaps(bytes),
        PORT_PHY_QCFG => port::phy_qcfg(bytes, ctx),
        PORT_PHY_CFG => port_cfg::phy_cfg(bytes, ctx),
        PORT_MAC_QCAPS => port_cfg::mac_qcaps(bytes),
        PORT_LED_QCAPS => port_cfg::led_qcaps(bytes),
        VNIC_QCAPS => vnic::vnic_qcaps(bytes),
        VNIC_ALLOC => vnic::vnic_alloc(bytes, ctx),
        VNIC_FREE => vnic::vnic_free(bytes, ctx),
        VNIC_CFG => vnic::vnic_cfg(bytes, ctx),
        VNIC_RSS_CFG => vnic::rss_cfg(bytes, ctx),
        VNIC_PLCMODES_CFG => placement::plcmodes_cfg(bytes, ctx),
        RSS_CTX_ALLOC => vnic::rss_ctx_alloc(bytes, ctx),
        RSS_CTX_FREE => vnic::rss_ctx_free(bytes, ctx),
        L2_FILTER_ALLOC => l2_filter::filter_alloc(bytes, ctx),
        L2_FILTER_FREE => l2_filter::filter_free(bytes, ctx),
        L2_SET_RX_MASK => l2_filter::set_rx_mask(bytes, ctx),
        RING_AGGINT_QCAPS => coalescing::aggint_qcaps(bytes),
        RING_AGGINT_PARAMS => coalescing::aggint_params(bytes, ctx),
        FW_SET_TIME => fw_time::set_time(bytes, ctx),
        PORT_QSTATS => port_stats::port_qstats(bytes, ctx),
        PORT_QSTATS_EXT => port_stats::port_qstats_ext(bytes, ctx),
        NVM_GET_DEV_INFO => nvm::nvm_get_dev_info(bytes),
        QUEUE_DSCP_QCAPS => qos_caps::dscp_qcaps(bytes),
        QUEUE_PFCWD_TIMEOUT_QCAPS => qos_caps::pfcwd_timeout_qcaps(bytes),
        SELFTEST_QLIST => selftest::selftest_qlist(bytes),
        TEMP_MONITOR_QUERY => thermal::temp_monitor_query(bytes),
        ERROR_RECOVERY_QCFG => recovery::error_recovery_qcfg(bytes, ctx),
        VNIC_PLCMODES_QCFG => placement::plcmodes_qcfg(bytes, ctx),
        PORT_MAC_QCFG => port_cfg::mac_qcfg(bytes, ctx),
        PORT_CLR_STATS => port_stats::port_clr_stats(bytes, ctx),
        BS_QCAPS_V1 | BS_CFG_V1 => backing_store::v1_refused(req_type),
        STAT_CTX_QUERY => stats::stat_ctx_query(bytes, ctx),
        STAT_CTX_CLR_STATS => stats::stat_ctx_clr_stats(bytes, ctx),
        _ => return None,
    })
}

/// Key fields of a request worth a transcript line (empty when there are none).
pub fn summary(req_type: u16, bytes: &[u8]) -> String {
    match req_type {
        BS_QCAPS_V2 => backing_store::qcaps_v2_summary(bytes),
        BS_CFG_V2 => backing_store::cfg_v2_summary(bytes),
        RING_ALLOC => rings::ring_alloc_summary(bytes),
        FUNC_CFG => func_cfg::func_cfg_summary(bytes),
        PORT_PHY_CFG => port_cfg::phy_cfg_summary(bytes),
        VNIC_CFG => vnic::vnic_cfg_summary(bytes),
        VNIC_RSS_CFG => vnic::rss_cfg_summary(bytes),
        VNIC_PLCMODES_CFG => placement::plcmodes_cfg_summary(bytes),
        L2_FILTER_ALLOC => l2_filter::filter_alloc_summary(bytes),
        L2_SET_RX_MASK => l2_filter::set_rx_mask_summary(bytes),
        RING_AGGINT_PARAMS => coalescing::aggint_params_summary(bytes),
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
