//! VNICs: VNIC_QCAPS, VNIC_ALLOC, VNIC_FREE, VNIC_CFG, VNIC_RSS_COS_LB_CTX_ALLOC/FREE and VNIC_RSS_CFG,
//! as bnxt_en drives them on a P5/P7 (bnxt.c `bnxt_hwrm_vnic_qcaps`,
//! `bnxt_hwrm_vnic_alloc`, `__bnxt_setup_vnic_p5`, `bnxt_hwrm_vnic_set_rss_p5`,
//! `bnxt_hwrm_vnic_cfg`, `bnxt_clear_vnic`). VNIC_PLCMODES_CFG is [`super::placement`].
//!
//! On P5/P7 a VNIC has no ring groups: VNIC_CFG names its default RX ring and that ring's
//! completion ring, and each RSS context's table (VNIC_RSS_CFG `ring_grp_tbl_addr`) is 64 pairs
//! of (RX ring id, completion ring id), which the firmware reads from host memory when the
//! request arrives, with the 40-byte Toeplitz key at `hash_key_tbl_addr`. A VNIC_RSS_CFG with no
//! hash type and no table turns RSS off for the VNIC (bnxt_en sends that before freeing it).
//!
//! VNIC_QCAPS reports what the model's L2 engine does: it strips VLAN tags when asked
//! (`VLAN_STRIP_CAP`), writes P7 (v3) RX completions (`RX_CMPL_V3_CAP`), selects rings with the
//! Toeplitz hash, and aggregates nothing (`max_aggs_supported` 0: no TPA; bnxt_en still uses
//! aggregation rings for frames larger than a page, placed as [`super::placement`] says). VNIC
//! modes for the RoCE driver (`ROCE_DUAL_VNIC_MODE`) are accepted and kept; a RoCE frame reaches
//! the RoCE engine through an L2 filter to a VNIC (see `roce::l2_gate`). VNIC_ALLOC and
//! VNIC_RSS_COS_LB_CTX_ALLOC past the function's FUNC_CFG reservation are refused
//! ([`super::reservation`]).

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::hwrm::layouts::{
    HwrmVnicAllocInput, HwrmVnicAllocOutput, HwrmVnicCfgInput, HwrmVnicCfgOutput, HwrmVnicFreeInput,
    HwrmVnicFreeOutput, HwrmVnicQcapsInput, HwrmVnicQcapsOutput, HwrmVnicRssCfgInput, HwrmVnicRssCfgOutput,
    HwrmVnicRssCosLbCtxAllocInput, HwrmVnicRssCosLbCtxAllocOutput, HwrmVnicRssCosLbCtxFreeInput,
    HwrmVnicRssCosLbCtxFreeOutput,
};

use super::Ctx;
use super::caps::{MAX_RSSCOS_CTX, MAX_VNICS};
use super::func::MAX_MTU;
use super::l2_config::{RSS_KEY_BYTES, RSS_PAIRS_PER_CTX, RssTable, Vnic, lowest_free_u16};
use super::reservation::{self, Reserved};
use super::response::{Outcome, Reject, parse, reply};
use super::state::RingType;

/// Ethernet header plus one VLAN tag (bnxt_en's MRU is MTU + `VLAN_ETH_HLEN`).
pub const VLAN_ETH_HLEN: u16 = 18;

/// VNIC_QCAPS: what VNICs can do.
pub fn vnic_qcaps(bytes: &[u8]) -> Outcome {
    let _req: HwrmVnicQcapsInput = parse(bytes);
    type O = HwrmVnicQcapsOutput;
    reply::<O>(|o| {
        o.mru = (MAX_MTU + VLAN_ETH_HLEN).into();
        o.flags = (O::FLAGS_VLAN_STRIP_CAP
            | O::FLAGS_ROCE_DUAL_VNIC_CAP
            | O::FLAGS_RX_CMPL_V3_CAP
            | O::FLAGS_RING_SELECT_MODE_TOEPLITZ_CAP)
            .into();
        o.max_aggs_supported = 0.into();
    })
}

fn vnic_mut<'a>(ctx: &'a mut Ctx<'_>, id: u32) -> Result<&'a mut Vnic, Reject> {
    u16::try_from(id)
        .ok()
        .and_then(|id| ctx.state.l2.vnics_mut().get_mut(&id))
        .ok_or_else(|| Reject::invalid(format!("VNIC {id} is not allocated")))
}

/// VNIC_ALLOC.
pub fn vnic_alloc(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    type R = HwrmVnicAllocInput;
    let req: R = parse(bytes);
    let flags = req.flags.get();
    if flags & (R::FLAGS_VIRTIO_NET_FID_VALID | R::FLAGS_VNIC_ID_VALID) != 0 {
        ctx.state.l2.unimplemented += 1;
        return Err(Reject::invalid(format!("flags 0x{flags:x}: virtio-net VNICs and chosen ids are not modelled")));
    }
    let default = flags & R::FLAGS_DEFAULT != 0;
    let l2 = &mut ctx.state.l2;
    if default && l2.default_vnic().is_some() {
        return Err(Reject::invalid("the function already has a default VNIC"));
    }
    reservation::check(&l2.reservation, Reserved::Vnics, l2.vnics().len())?;
    let id = lowest_free_u16(l2.vnics().keys().copied(), MAX_VNICS)
        .ok_or_else(|| Reject::new(ErrorCode::ResourceAllocError, format!("all {MAX_VNICS} VNICs are in use")))?;
    l2.vnics_mut().insert(id, Vnic { default, ..Vnic::default() });
    reply::<HwrmVnicAllocOutput>(|o| o.vnic_id = u32::from(id).into())
}

/// VNIC_FREE: the VNIC goes, with the filters that steer to it; RSS contexts configured for it
/// stay allocated, unbound.
pub fn vnic_free(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmVnicFreeInput = parse(bytes);
    let raw = req.vnic_id.get();
    vnic_mut(ctx, raw)?;
    let id = raw as u16;
    let l2 = &mut ctx.state.l2;
    l2.vnics_mut().remove(&id);
    l2.filters_mut().retain(|_, f| f.dst_vnic != id);
    for owner in l2.rss_ctxs.values_mut() {
        if *owner == Some(id) {
            *owner = None;
        }
    }
    reply::<HwrmVnicFreeOutput>(|_| {})
}

/// VNIC_CFG.
pub fn vnic_cfg(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    type R = HwrmVnicCfgInput;
    let req: R = parse(bytes);
    let enables = req.enables.get();
    let handled = R::ENABLES_MRU | R::ENABLES_DEFAULT_RX_RING_ID | R::ENABLES_DEFAULT_CMPL_RING_ID;
    if enables & !handled != 0 {
        ctx.state.l2.unimplemented += 1;
        return Err(Reject::invalid(format!(
            "enables 0x{:x}: ring groups, COS/LB rules, queue, checksum and CQE modes are not modelled on the P7",
            enables & !handled
        )));
    }
    let ring_of = |id: u16, ty: RingType, what: &str| -> Result<u16, Reject> {
        match ctx.state.rings.get(&id) {
            Some(r) if r.ty == ty => Ok(id),
            _ => Err(Reject::invalid(format!("{what} {id} is not an allocated {} ring", ty.name()))),
        }
    };
    let rx = (enables & R::ENABLES_DEFAULT_RX_RING_ID != 0)
        .then(|| ring_of(req.default_rx_ring_id.get(), RingType::Rx, "default_rx_ring_id"))
        .transpose()?;
    let cmpl = (enables & R::ENABLES_DEFAULT_CMPL_RING_ID != 0)
        .then(|| ring_of(req.default_cmpl_ring_id.get(), RingType::L2Cmpl, "default_cmpl_ring_id"))
        .transpose()?;
    // bnxt_en sets `mru` on P5/P7 without ENABLES_MRU (bnxt.c `bnxt_hwrm_vnic_cfg` jumps past
    // the enables to `vnic_mru`) and relies on it, so a non-zero `mru` is taken either way.
    let mru = req.mru.get();
    let set_mru = enables & R::ENABLES_MRU != 0 || mru != 0;
    if set_mru && !(64..=MAX_MTU + VLAN_ETH_HLEN).contains(&mru) {
        return Err(Reject::invalid(format!("mru {mru} outside 64..={}", MAX_MTU + VLAN_ETH_HLEN)));
    }
    let flags = req.flags.get();
    let vnic = vnic_mut(ctx, req.vnic_id.get().into())?;
    if let Some(id) = rx {
        vnic.default_rx_ring = Some(id);
    }
    if let Some(id) = cmpl {
        vnic.default_cmpl_ring = Some(id);
    }
    if set_mru {
        vnic.mru = mru;
    }
    vnic.flags = flags;
    vnic.vlan_strip = flags & R::FLAGS_VLAN_STRIP_MODE != 0;
    reply::<HwrmVnicCfgOutput>(|_| {})
}

/// VNIC_RSS_COS_LB_CTX_ALLOC.
pub fn rss_ctx_alloc(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let _req: HwrmVnicRssCosLbCtxAllocInput = parse(bytes);
    let l2 = &mut ctx.state.l2;
    reservation::check(&l2.reservation, Reserved::RssCtxs, l2.rss_ctxs.len())?;
    let id = lowest_free_u16(l2.rss_ctxs.keys().copied(), MAX_RSSCOS_CTX).ok_or_else(|| {
        Reject::new(ErrorCode::ResourceAllocError, format!("all {MAX_RSSCOS_CTX} RSS/COS/LB contexts are in use"))
    })?;
    l2.rss_ctxs.insert(id, None);
    reply::<HwrmVnicRssCosLbCtxAllocOutput>(|o| o.rss_cos_lb_ctx_id = id.into())
}

/// VNIC_RSS_COS_LB_CTX_FREE: the context goes, and with it the RSS table a VNIC had in it.
pub fn rss_ctx_free(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmVnicRssCosLbCtxFreeInput = parse(bytes);
    let id = req.rss_cos_lb_ctx_id.get();
    let l2 = &mut ctx.state.l2;
    let Some(owner) = l2.rss_ctxs.remove(&id) else {
        return Err(Reject::invalid(format!("RSS/COS/LB context {id} is not allocated")));
    };
    if let Some(v) = owner.and_then(|v| l2.vnics_mut().get_mut(&v)) {
        v.rss.remove(&id);
    }
    reply::<HwrmVnicRssCosLbCtxFreeOutput>(|_| {})
}

/// VNIC_RSS_CFG.
pub fn rss_cfg(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    type R = HwrmVnicRssCfgInput;
    let req: R = parse(bytes);
    let vnic_id = req.vnic_id.get();
    vnic_mut(ctx, vnic_id.into())?;
    let hash_type = req.hash_type.get();
    let (tbl, key_addr) = (req.ring_grp_tbl_addr.get(), req.hash_key_tbl_addr.get());
    if hash_type == 0 && tbl == 0 && key_addr == 0 {
        // RSS off for the VNIC (bnxt.c `bnxt_hwrm_vnic_set_rss_p5` with `set_rss` false).
        let l2 = &mut ctx.state.l2;
        let ids: Vec<u16> = l2.vnics()[&vnic_id].rss.keys().copied().collect();
        for id in ids {
            l2.rss_ctxs.insert(id, None);
        }
        l2.vnics_mut().get_mut(&vnic_id).expect("checked").rss.clear();
        return reply::<HwrmVnicRssCfgOutput>(|_| {});
    }
    let flags = req.flags;
    if flags & (R::FLAGS_HASH_TYPE_INCLUDE | R::FLAGS_HASH_TYPE_EXCLUDE) != 0 {
        return Err(Reject::invalid("hash type deltas need RSS_HASH_TYPE_DELTA_CAP, which VNIC_QCAPS does not report"));
    }
    if req.ring_select_mode != R::RING_SELECT_MODE_TOEPLITZ {
        ctx.state.l2.unimplemented += 1;
        return Err(Reject::invalid(format!("ring_select_mode {} (only Toeplitz is modelled)", req.ring_select_mode)));
    }
    if req.hash_mode_flags & !R::HASH_MODE_FLAGS_DEFAULT != 0 {
        ctx.state.l2.unimplemented += 1;
        return Err(Reject::invalid(format!("hash_mode_flags 0x{:x} (only DEFAULT is modelled)", req.hash_mode_flags)));
    }
    let known = R::HASH_TYPE_IPV4
        | R::HASH_TYPE_TCP_IPV4
        | R::HASH_TYPE_UDP_IPV4
        | R::HASH_TYPE_IPV6
        | R::HASH_TYPE_TCP_IPV6
        | R::HASH_TYPE_UDP_IPV6;
    if hash_type & !known != 0 {
        ctx.state.l2.unimplemented += 1;
        return Err(Reject::invalid(format!(
            "hash_type 0x{:x}: flow-label and IPsec hashing are not modelled",
            hash_type & !known
        )));
    }
    let ctx_id = req.rss_ctx_idx.get();
    match ctx.state.l2.rss_ctxs.get(&ctx_id) {
        None => return Err(Reject::invalid(format!("rss_ctx_idx {ctx_id} is not an allocated RSS context"))),
        Some(Some(owner)) if *owner != vnic_id => {
            return Err(Reject::invalid(format!("RSS context {ctx_id} belongs to VNIC {owner}")));
        }
        Some(_) => {}
    }
    let mut key = [0u8; RSS_KEY_BYTES];
    ctx.mem.read(key_addr, &mut key).map_err(|e| Reject::invalid(format!("hash key at 0x{key_addr:x}: {e}")))?;
    let mut raw = [0u8; 4 * RSS_PAIRS_PER_CTX];
    ctx.mem.read(tbl, &mut raw).map_err(|e| Reject::invalid(format!("ring table at 0x{tbl:x}: {e}")))?;
    let mut pairs = Vec::with_capacity(RSS_PAIRS_PER_CTX);
    for (i, p) in raw.chunks_exact(4).enumerate() {
        let (rx, cp) = (u16::from_le_bytes([p[0], p[1]]), u16::from_le_bytes([p[2], p[3]]));
        let ok = |id: u16, ty: RingType| ctx.state.rings.get(&id).is_some_and(|r| r.ty == ty);
        if !ok(rx, RingType::Rx) || !ok(cp, RingType::L2Cmpl) {
            return Err(Reject::invalid(format!(
                "ring table entry {i} ({rx}, {cp}) is not an allocated (RX ring, completion ring) pair"
            )));
        }
        pairs.push((rx, cp));
    }
    let l2 = &mut ctx.state.l2;
    l2.rss_ctxs.insert(ctx_id, Some(vnic_id));
    let table = RssTable { hash_type, key, pairs, pair_index: req.ring_table_pair_index };
    l2.vnics_mut().get_mut(&vnic_id).expect("checked").rss.insert(ctx_id, table);
    reply::<HwrmVnicRssCfgOutput>(|_| {})
}

/// Key fields of a VNIC_CFG request, for the event log.
pub fn vnic_cfg_summary(bytes: &[u8]) -> String {
    let r: HwrmVnicCfgInput = parse(bytes);
    format!(
        "vnic={} flags=0x{:x} enables=0x{:x} rx={} cmpl={} mru={}",
        r.vnic_id.get(),
        r.flags.get(),
        r.enables.get(),
        r.default_rx_ring_id.get(),
        r.default_cmpl_ring_id.get(),
        r.mru.get()
    )
}

/// Key fields of a VNIC_RSS_CFG request, for the event log.
pub fn rss_cfg_summary(bytes: &[u8]) -> String {
    let r: HwrmVnicRssCfgInput = parse(bytes);
    format!(
        "vnic={} ctx={} hash_type=0x{:x} pair_index={} flags=0x{:x}",
        r.vnic_id.get(),
        r.rss_ctx_idx.get(),
        r.hash_type.get(),
        r.ring_table_pair_index,
        r.flags
    )
}
