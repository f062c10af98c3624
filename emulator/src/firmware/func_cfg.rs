//! FUNC_CFG for the PF itself: resource reservation, the async event ring, cache line size and
//! bridge mode.
//!
//! What bnxt_en sends (bnxt.c): `__bnxt_hwrm_reserve_pf_rings` reserves TX, RX, statistics
//! contexts, MSI-X (NQs plus the RoCE driver's vectors), L2 completion rings, VNICs and RSS
//! contexts, each enable only when its count is non-zero, then reads the grant back with
//! FUNC_QCFG (`bnxt_hwrm_get_rings`, the `alloc_*` fields); `bnxt_hwrm_check_pf_rings` sends the
//! same counts with the `*_ASSETS_TEST` flags to ask whether they would fit, without reserving;
//! `bnxt_hwrm_set_async_event_cr` names NQ 0 as the ring async events go to;
//! `bnxt_hwrm_set_cache_line_size` (`CACHE_LINESIZE`) and `bnxt_hwrm_set_br_mode` (`EVB_MODE`).
//! The request is 160 bytes, longer than the 128-byte window, so it arrives as a short command
//! (bnxt_hwrm.h `bnxt_hwrm_func_cfg_short_req_init`).
//!
//! Grants: each count is granted up to the function's maximum (FUNC_RESOURCE_QCAPS); bnxt_en is
//! written for partial grants ("Able to reserve only N out of M requested ... rings") and trims
//! to what FUNC_QCFG reports. DPDK's PMD (drivers/net/bnxt/bnxt_hwrm.c `bnxt_hwrm_pf_func_cfg`)
//! reserves with the same request and always adds `ADMIN_MTU` (its `BNXT_MAX_MTU`, 9574), `MRU`
//! and `HOST_MTU` (the port's MTU); `bnxt_hwrm_allocate_pf_only` sets `STD_TX_RING_MODE_DISABLE`.
//! The three MTUs are kept and reported by FUNC_QCFG; no source shows firmware refusing an
//! `admin_mtu` above FUNC_QCFG's `max_mtu_configured`, so one is taken with a warning. The
//! standard-TX-ring-mode flags are kept (the mode changes nothing the model does: its TX rings
//! have no per-ring scheduler limits). No public source says whether real firmware grants partially or
//! refuses; the model grants what fits. An assets test asks for more than the maxima is refused
//! with RESOURCE_ALLOC_ERROR (bnxt_en maps it to -ENOSPC). Other enables (VF defaults, bandwidth,
//! VLAN anti-spoofing, MTU and the rest) name settings the model does not implement: refused
//! with INVALID_PARAMS naming them, counted and warned about.

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::hwrm::FID_SELF;
use bnxt_hsi::hwrm::layouts::{HwrmFuncCfgInput as R, HwrmFuncCfgOutput};

use super::Ctx;
use super::caps::{
    MAX_CMPL_RINGS, MAX_HW_RING_GRPS, MAX_L2_CTXS, MAX_NQS, MAX_RSSCOS_CTX, MAX_RX_RINGS, MAX_STAT_CTX, MAX_TX_RINGS,
    MAX_VNICS,
};
use super::identity::PF_FID;
use super::l2_config::Reservation;
use super::response::{Outcome, Reject, parse, reply};
use super::state::RingType;

/// The reservation enables and the field each sets.
const RESERVATION_ENABLES: u32 = R::ENABLES_NUM_TX_RINGS
    | R::ENABLES_NUM_RX_RINGS
    | R::ENABLES_NUM_CMPL_RINGS
    | R::ENABLES_NUM_MSIX
    | R::ENABLES_NUM_STAT_CTXS
    | R::ENABLES_NUM_VNICS
    | R::ENABLES_NUM_RSSCOS_CTXS
    | R::ENABLES_NUM_HW_RING_GRPS
    | R::ENABLES_NUM_L2_CTXS;

/// Every enable the model acts on.
const HANDLED_ENABLES: u32 = RESERVATION_ENABLES
    | R::ENABLES_ASYNC_EVENT_CR
    | R::ENABLES_CACHE_LINESIZE
    | R::ENABLES_EVB_MODE
    | R::ENABLES_ADMIN_MTU
    | R::ENABLES_MRU
    | R::ENABLES_HOST_MTU;

/// The standard-TX-ring-mode flags (either may be given; both at once is refused).
const STD_TX_FLAGS: u32 = R::FLAGS_STD_TX_RING_MODE_ENABLE | R::FLAGS_STD_TX_RING_MODE_DISABLE;

/// The `*_ASSETS_TEST` flags: ask, do not reserve.
const ASSETS_TEST_FLAGS: u32 = R::FLAGS_TX_ASSETS_TEST
    | R::FLAGS_RX_ASSETS_TEST
    | R::FLAGS_CMPL_ASSETS_TEST
    | R::FLAGS_RSSCOS_CTX_ASSETS_TEST
    | R::FLAGS_RING_GRP_ASSETS_TEST
    | R::FLAGS_STAT_CTX_ASSETS_TEST
    | R::FLAGS_VNIC_ASSETS_TEST
    | R::FLAGS_L2_CTX_ASSETS_TEST
    | R::FLAGS_NQ_ASSETS_TEST;

/// One reservable resource: its enable, name, the count asked for, the maximum, and where the
/// grant goes.
struct Ask {
    enable: u32,
    name: &'static str,
    count: u16,
    max: u16,
    slot: fn(&mut Reservation) -> &mut u16,
}

fn asks(req: &R) -> [Ask; 9] {
    [
        Ask {
            enable: R::ENABLES_NUM_TX_RINGS,
            name: "TX rings",
            count: req.num_tx_rings.get(),
            max: MAX_TX_RINGS,
            slot: |r| &mut r.tx_rings,
        },
        Ask {
            enable: R::ENABLES_NUM_RX_RINGS,
            name: "RX rings",
            count: req.num_rx_rings.get(),
            max: MAX_RX_RINGS,
            slot: |r| &mut r.rx_rings,
        },
        Ask {
            enable: R::ENABLES_NUM_CMPL_RINGS,
            name: "completion rings",
            count: req.num_cmpl_rings.get(),
            max: MAX_CMPL_RINGS,
            slot: |r| &mut r.cmpl_rings,
        },
        Ask {
            enable: R::ENABLES_NUM_MSIX,
            name: "MSI-X vectors",
            count: req.num_msix.get(),
            max: MAX_NQS,
            slot: |r| &mut r.msix,
        },
        Ask {
            enable: R::ENABLES_NUM_STAT_CTXS,
            name: "statistics contexts",
            count: req.num_stat_ctxs.get(),
            max: MAX_STAT_CTX,
            slot: |r| &mut r.stat_ctxs,
        },
        Ask {
            enable: R::ENABLES_NUM_VNICS,
            name: "VNICs",
            count: req.num_vnics.get(),
            max: MAX_VNICS,
            slot: |r| &mut r.vnics,
        },
        Ask {
            enable: R::ENABLES_NUM_RSSCOS_CTXS,
            name: "RSS contexts",
            count: req.num_rsscos_ctxs.get(),
            max: MAX_RSSCOS_CTX,
            slot: |r| &mut r.rsscos_ctxs,
        },
        Ask {
            enable: R::ENABLES_NUM_HW_RING_GRPS,
            name: "ring groups",
            count: req.num_hw_ring_grps.get(),
            max: MAX_HW_RING_GRPS as u16,
            slot: |r| &mut r.hw_ring_grps,
        },
        Ask {
            enable: R::ENABLES_NUM_L2_CTXS,
            name: "L2 contexts",
            count: req.num_l2_ctxs.get(),
            max: MAX_L2_CTXS,
            slot: |r| &mut r.l2_ctxs,
        },
    ]
}

/// FUNC_CFG.
pub fn func_cfg(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: R = parse(bytes);
    let fid = req.fid.get();
    if fid != FID_SELF && fid != PF_FID {
        return Err(Reject::invalid(format!(
            "fid 0x{fid:x} names no function (the PF is 0x{PF_FID:x}, it has no VFs)"
        )));
    }
    let enables = req.enables.get();
    let flags = req.flags.get();
    let unknown = enables & !HANDLED_ENABLES;
    if unknown != 0 || req.enables2.get() != 0 {
        ctx.state.l2.unimplemented += 1;
        let what = format!(
            "enables 0x{unknown:x} / enables2 0x{:x} name settings the model does not implement",
            req.enables2.get()
        );
        tracing::warn!(%what, "FUNC_CFG refused");
        return Err(Reject::invalid(what));
    }
    if flags & !(ASSETS_TEST_FLAGS | STD_TX_FLAGS) != 0 {
        ctx.state.l2.unimplemented += 1;
        let what = format!(
            "flags 0x{:x} name settings the model does not implement",
            flags & !(ASSETS_TEST_FLAGS | STD_TX_FLAGS)
        );
        tracing::warn!(%what, "FUNC_CFG refused");
        return Err(Reject::invalid(what));
    }
    let asks = asks(&req);
    if flags & ASSETS_TEST_FLAGS != 0 {
        for a in asks.iter().filter(|a| enables & a.enable != 0) {
            if a.count > a.max {
                return Err(Reject::new(
                    ErrorCode::ResourceAllocError,
                    format!("assets test: {} {} asked, the function has {}", a.count, a.name, a.max),
                ));
            }
        }
        return reply::<HwrmFuncCfgOutput>(|_| {});
    }
    // Check everything before changing anything.
    let async_cr = if enables & R::ENABLES_ASYNC_EVENT_CR != 0 {
        let id = req.async_event_cr.get();
        match ctx.state.rings.get(&id).map(|r| r.ty) {
            Some(RingType::Nq | RingType::L2Cmpl) => Some(id),
            _ => return Err(Reject::invalid(format!("async_event_cr {id} is not an allocated NQ or completion ring"))),
        }
    } else {
        None
    };
    let cache_line = if enables & R::ENABLES_CACHE_LINESIZE != 0 {
        match req.options & R::OPTIONS_CACHE_LINESIZE_MASK {
            R::OPTIONS_CACHE_LINESIZE_SIZE_64 => Some(64),
            R::OPTIONS_CACHE_LINESIZE_SIZE_128 => Some(128),
            other => return Err(Reject::invalid(format!("cache line size option {other} is not defined"))),
        }
    } else {
        None
    };
    if flags & STD_TX_FLAGS == STD_TX_FLAGS {
        return Err(Reject::invalid("flags STD_TX_RING_MODE_ENABLE and _DISABLE together"));
    }
    let mtu_of = |bit: u32, v: u16| (enables & bit != 0).then_some(v);
    let admin_mtu = mtu_of(R::ENABLES_ADMIN_MTU, req.admin_mtu.get());
    let mru = mtu_of(R::ENABLES_MRU, req.mru.get());
    let host_mtu = mtu_of(R::ENABLES_HOST_MTU, req.host_mtu.get());
    if let Some(m) = admin_mtu.filter(|&m| m > super::func::MAX_MTU) {
        tracing::warn!(
            admin_mtu = m,
            max = super::func::MAX_MTU,
            "FUNC_CFG: admin_mtu above FUNC_QCFG max_mtu_configured; no public source shows the firmware refusing it: \
             taken as given"
        );
    }
    let evb = if enables & R::ENABLES_EVB_MODE != 0 {
        match req.evb_mode {
            m @ (R::EVB_MODE_NO_EVB | R::EVB_MODE_VEB | R::EVB_MODE_VEPA) => Some(m),
            other => return Err(Reject::invalid(format!("evb_mode {other} is not defined"))),
        }
    } else {
        None
    };
    let l2 = &mut ctx.state.l2;
    for a in asks.iter().filter(|a| enables & a.enable != 0) {
        *(a.slot)(&mut l2.reservation) = a.count.min(a.max);
    }
    if let Some(id) = async_cr {
        l2.async_event_cr = Some(id);
    }
    if let Some(size) = cache_line {
        l2.cache_line = Some(size);
    }
    if let Some(m) = evb {
        l2.evb_mode = Some(m);
    }
    l2.mtu.admin = admin_mtu.or(l2.mtu.admin);
    l2.mtu.mru = mru.or(l2.mtu.mru);
    l2.mtu.host = host_mtu.or(l2.mtu.host);
    if flags & STD_TX_FLAGS != 0 {
        l2.std_tx_ring_mode = flags & R::FLAGS_STD_TX_RING_MODE_ENABLE != 0;
    }
    if async_cr.is_some() {
        super::recovery::ring_named(ctx);
    }
    reply::<HwrmFuncCfgOutput>(|_| {})
}

/// Key fields of a FUNC_CFG request, for the event log.
pub fn func_cfg_summary(bytes: &[u8]) -> String {
    let req: R = parse(bytes);
    let mut s = format!("fid=0x{:x} enables=0x{:x} flags=0x{:x}", req.fid.get(), req.enables.get(), req.flags.get());
    for a in asks(&req).iter().filter(|a| req.enables.get() & a.enable != 0) {
        s.push_str(&format!(" {}={}", a.name.replace(' ', "_"), a.count));
    }
    if req.enables.get() & R::ENABLES_ASYNC_EVENT_CR != 0 {
        s.push_str(&format!(" async_event_cr={}", req.async_event_cr.get()));
    }
    s
}
