//! The QoS capabilities bnxt_en asks for at probe: QUEUE_DSCP_QCAPS (DSCP-to-priority mapping)
//! and QUEUE_PFCWD_TIMEOUT_QCAPS (the PFC watchdog).
//!
//! - QUEUE_DSCP_QCAPS (bnxt_dcb.c `bnxt_hwrm_queue_dscp_qcaps`, silent, from `bnxt_dcb_init`,
//!   spec ≥ 1.8.0): `num_dscp_bits` sets the largest DSCP a DCB application entry may map
//!   (`max_dscp_value` = 2^bits − 1, taken only when it reaches 0x3f); `max_entries` is the number
//!   of DSCP-mask-priority entries (hsi_struct_def_dpdk.h). The hardware's DSCP field is the IP
//!   header's, 6 bits (RFC 2474), which the model's RoCE frames carry (MODIFY_QP TOS_DSCP);
//!   64 entries, one per DSCP value, is the model's choice. The mapping requests themselves
//!   (QUEUE_DSCP2PRI_CFG/QCFG, sent only when a user adds a DCB app entry) are not implemented.
//! - QUEUE_PFCWD_TIMEOUT_QCAPS (7.x bnxt.c `bnxt_hwrm_pfcwd_qcaps`, silent): `max_pfcwd_timeout`
//!   in ms, 0 meaning no PFC watchdog (bnxt_ethtool.c `bnxt_get_tunable` answers EOPNOTSUPP for
//!   ETHTOOL_PFC_PREVENTION_TOUT then). The model's port has no lossless queue
//!   (QUEUE_QPORTCFG `max_configurable_lossless_queues` 0) and sends no PFC, so it has no PFC
//!   watchdog either: 0.

use bnxt_hsi::hwrm::layouts::{
    HwrmQueueDscpQcapsInput, HwrmQueueDscpQcapsOutput, HwrmQueuePfcwdTimeoutQcapsInput,
    HwrmQueuePfcwdTimeoutQcapsOutput,
};

use super::identity::PORT_ID;
use super::response::{Outcome, Reject, parse, reply};

/// Bits of the DSCP field (RFC 2474: the upper six of the IPv4 ToS / IPv6 traffic class byte).
pub const DSCP_BITS: u8 = 6;
/// DSCP-mask-priority entries (one per DSCP value; the model's choice).
pub const DSCP_ENTRIES: u16 = 1 << DSCP_BITS;

/// Answer QUEUE_DSCP_QCAPS.
pub fn dscp_qcaps(bytes: &[u8]) -> Outcome {
    let req: HwrmQueueDscpQcapsInput = parse(bytes);
    if u16::from(req.port_id) != PORT_ID {
        return Err(Reject::invalid(format!(
            "port_id {} does not exist (the function has port {PORT_ID})",
            req.port_id
        )));
    }
    reply::<HwrmQueueDscpQcapsOutput>(|o| {
        o.num_dscp_bits = DSCP_BITS;
        o.max_entries = DSCP_ENTRIES.into();
    })
}

/// Answer QUEUE_PFCWD_TIMEOUT_QCAPS: no PFC watchdog.
pub fn pfcwd_timeout_qcaps(bytes: &[u8]) -> Outcome {
    let _req: HwrmQueuePfcwdTimeoutQcapsInput = parse(bytes);
    reply::<HwrmQueuePfcwdTimeoutQcapsOutput>(|o| o.max_pfcwd_timeout = 0.into())
}
