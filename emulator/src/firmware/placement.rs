//! VNIC_PLCMODES_CFG and VNIC_PLCMODES_QCFG: how a VNIC places a received frame across the buffer of its RX ring and
//! the buffers of that ring's aggregation ring (the HSI: DPDK drivers/net/bnxt/hsi_struct_def_dpdk.h
//! `hwrm_vnic_plcmodes_cfg_input`; bnxt_en: bnxt.c `bnxt_hwrm_vnic_set_hds`, sent with aggregation
//! rings, which it uses once an MTU-sized RX buffer no longer fits a page: `bnxt_set_ring_params`).
//!
//! - Regular placement (the default): the whole frame in the RX ring's buffer.
//! - Jumbo placement (`FLAGS_JUMBO_PLACEMENT`): a frame longer than `jumbo_thresh` is placed by
//!   the jumbo algorithm: its first bytes in the RX buffer, the rest in aggregation buffers.
//! - Header-data split (`FLAGS_HDS_IPV4`, `FLAGS_HDS_IPV6`): an IPv4 (IPv6) frame longer than
//!   `hds_threshold` is split at the start of its TCP or UDP payload, or, for another protocol,
//!   at the start of the upper-layer header: the headers in the RX buffer, the rest in
//!   aggregation buffers. The HSI limits `hds_threshold` to 10 bits ("FW will fail this command"
//!   above 0x3ff) and asks for a multiple of 4.
//!
//! bnxt_en asks, per VNIC, for JUMBO | HDS_IPV4 | HDS_IPV6 with both thresholds at its copy
//! threshold (256 bytes, `BNXT_RX_COPY_THRESH`), or for jumbo placement alone at its buffer size
//! in page mode (XDP). What the L2 engine does with it: [`crate::l2`]'s receive path.
//! DPDK's PMD (drivers/net/bnxt/bnxt_hwrm.c `bnxt_hwrm_vnic_cfg`) reads a VNIC's modes with
//! VNIC_PLCMODES_QCFG before every VNIC_CFG and, after it, writes them back unchanged with
//! VNIC_PLCMODES_CFG (minus `DFLT_VNIC`, which CFG does not define); a failed QCFG fails the
//! VNIC_CFG. QCFG reports the flags CFG set (`REGULAR_PLACEMENT` when neither jumbo placement nor
//! header-data split is on), the thresholds, and `DFLT_VNIC` for the function's default VNIC.
//! HDS_FCOE, HDS_ROCE, virtio placement, a non-zero `hds_offset` and `max_bds` are not modelled
//! (INVALID_PARAMS, counted as unimplemented).

use bnxt_hsi::hwrm::layouts::{
    HwrmVnicPlcmodesCfgInput as R, HwrmVnicPlcmodesCfgOutput, HwrmVnicPlcmodesQcfgInput,
    HwrmVnicPlcmodesQcfgOutput as Q,
};

use super::Ctx;
use super::response::{Outcome, Reject, parse, reply};

/// Largest `hds_threshold` (the HSI: the hardware takes 10 bits).
pub const MAX_HDS_THRESHOLD: u16 = 0x3ff;

/// A VNIC's placement modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Placement {
    /// Jumbo placement, with its threshold (bytes).
    pub jumbo: Option<u16>,
    /// Header-data split of IPv4 frames.
    pub hds_ipv4: bool,
    /// Header-data split of IPv6 frames.
    pub hds_ipv6: bool,
    /// The header-data split threshold (bytes); 0 until set.
    pub hds_threshold: u16,
}

/// VNIC_PLCMODES_CFG.
pub fn plcmodes_cfg(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: R = parse(bytes);
    let flags = req.flags.get();
    let enables = req.enables.get();
    let flags_known = R::FLAGS_REGULAR_PLACEMENT | R::FLAGS_JUMBO_PLACEMENT | R::FLAGS_HDS_IPV4 | R::FLAGS_HDS_IPV6;
    // DPDK's `bnxt_hwrm_vnic_plcmodes_cfg` always sets HDS_OFFSET_VALID, with the offset QCFG
    // reported (0): an offset of 0 is the placement the model does; another is not modelled.
    let enables_known = R::ENABLES_JUMBO_THRESH_VALID | R::ENABLES_HDS_THRESHOLD_VALID | R::ENABLES_HDS_OFFSET_VALID;
    if enables & R::ENABLES_HDS_OFFSET_VALID != 0 && req.hds_offset.get() != 0 {
        ctx.state.l2.unimplemented += 1;
        return Err(Reject::invalid(format!("hds_offset {} is not modelled (only 0)", req.hds_offset.get())));
    }
    if flags & !flags_known != 0 || enables & !enables_known != 0 {
        ctx.state.l2.unimplemented += 1;
        return Err(Reject::invalid(format!(
            "flags 0x{:x} / enables 0x{:x}: FCoE and RoCE header-data split, virtio placement and max_bds \
             are not modelled",
            flags & !flags_known,
            enables & !enables_known
        )));
    }
    let hds_threshold = req.hds_threshold.get();
    if enables & R::ENABLES_HDS_THRESHOLD_VALID != 0 {
        if hds_threshold > MAX_HDS_THRESHOLD {
            return Err(Reject::invalid(format!(
                "hds_threshold {hds_threshold} is more than the 10 bits the hardware takes ({MAX_HDS_THRESHOLD})"
            )));
        }
        if !hds_threshold.is_multiple_of(4) {
            tracing::warn!(
                hds_threshold,
                "VNIC_PLCMODES_CFG: hds_threshold not a multiple of 4 bytes, as the HSI asks; no public source says \
                 what the firmware does with it: taken as given"
            );
        }
    }
    let Some(vnic) = u16::try_from(req.vnic_id.get()).ok().and_then(|id| ctx.state.l2.vnics_mut().get_mut(&id)) else {
        return Err(Reject::invalid(format!("VNIC {} is not allocated", req.vnic_id.get())));
    };
    let p = &mut vnic.placement;
    let jumbo_thresh =
        if enables & R::ENABLES_JUMBO_THRESH_VALID != 0 { req.jumbo_thresh.get() } else { p.jumbo.unwrap_or(0) };
    p.jumbo = (flags & R::FLAGS_JUMBO_PLACEMENT != 0).then_some(jumbo_thresh);
    p.hds_ipv4 = flags & R::FLAGS_HDS_IPV4 != 0;
    p.hds_ipv6 = flags & R::FLAGS_HDS_IPV6 != 0;
    if enables & R::ENABLES_HDS_THRESHOLD_VALID != 0 {
        p.hds_threshold = hds_threshold;
    }
    reply::<HwrmVnicPlcmodesCfgOutput>(|_| {})
}

/// VNIC_PLCMODES_QCFG: the VNIC's placement modes as VNIC_PLCMODES_CFG left them.
pub fn plcmodes_qcfg(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmVnicPlcmodesQcfgInput = parse(bytes);
    let Some(vnic) = u16::try_from(req.vnic_id.get()).ok().and_then(|id| ctx.state.l2.vnics().get(&id)) else {
        return Err(Reject::invalid(format!("VNIC {} is not allocated", req.vnic_id.get())));
    };
    let p = vnic.placement;
    let mut flags = 0;
    if p.jumbo.is_some() {
        flags |= Q::FLAGS_JUMBO_PLACEMENT;
    }
    if p.hds_ipv4 {
        flags |= Q::FLAGS_HDS_IPV4;
    }
    if p.hds_ipv6 {
        flags |= Q::FLAGS_HDS_IPV6;
    }
    if flags == 0 {
        flags = Q::FLAGS_REGULAR_PLACEMENT;
    }
    if vnic.default {
        flags |= Q::FLAGS_DFLT_VNIC;
    }
    reply::<Q>(|o| {
        o.flags = flags.into();
        o.jumbo_thresh = p.jumbo.unwrap_or(0).into();
        o.hds_threshold = p.hds_threshold.into();
    })
}

/// Key fields of a VNIC_PLCMODES_CFG request, for the event log.
pub fn plcmodes_cfg_summary(bytes: &[u8]) -> String {
    let r: R = parse(bytes);
    format!(
        "vnic={} flags=0x{:x} enables=0x{:x} jumbo_thresh={} hds_threshold={}",
        r.vnic_id.get(),
        r.flags.get(),
        r.enables.get(),
        r.jumbo_thresh.get(),
        r.hds_threshold.get()
    )
}
