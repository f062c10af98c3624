//! L2 filters and receive masks: CFA_L2_FILTER_ALLOC, CFA_L2_FILTER_FREE, CFA_L2_SET_RX_MASK
//! (bnxt.c `bnxt_hwrm_l2_filter_alloc`, `bnxt_hwrm_l2_filter_free`,
//! `bnxt_hwrm_cfa_l2_set_rx_mask`, `bnxt_cfg_rx_mode`).
//!
//! A filter steers received frames whose destination MAC matches `l2_addr` under `l2_addr_mask`
//! (and the inner VLAN and tag count, when given: [`super::l2_config::L2Filter`]) to VNIC
//! `dst_id`. bnxt_en allocates one per unicast address (the netdev's MAC first) with flags
//! PATH_RX | OUTERMOST and a full mask. DPDK's PMD, with VLAN filtering on, replaces its MAC
//! filter by one per VLAN on the same MAC (VLAN 0 for untagged frames), without `num_vlans`
//! (drivers/net/bnxt/bnxt_ethdev.c `bnxt_add_vlan_filter`, bnxt_hwrm.c
//! `bnxt_hwrm_set_l2_filter`). The receive mask of
//! a VNIC adds broadcast (`BCAST`), the listed multicast addresses (`MCAST`, `num_mc_entries`
//! 6-byte addresses at `mc_tbl_addr`), all multicast (`ALL_MCAST`) or everything
//! (`PROMISCUOUS`). Transmit-path, drop, loopback, tunnel, outer-VLAN, source and mirror
//! filters and VLAN tables are not modelled: refused with INVALID_PARAMS naming what was asked,
//! and counted.

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_hsi::hwrm::layouts::{
    HwrmCfaL2FilterAllocInput as A, HwrmCfaL2FilterAllocOutput, HwrmCfaL2FilterFreeInput, HwrmCfaL2FilterFreeOutput,
    HwrmCfaL2SetRxMaskInput as M, HwrmCfaL2SetRxMaskOutput,
};

use super::Ctx;
use super::caps::MAX_L2_CTXS;
use super::l2_config::L2Filter;
use super::response::{Outcome, Reject, parse, reply};

/// Most multicast addresses one CFA_L2_SET_RX_MASK may list (the model's limit; bnxt_en sends at
/// most `BNXT_MAX_MC_ADDRS` = 16 and falls back to ALL_MCAST beyond).
pub const MAX_MCAST_ENTRIES: u32 = 256;

/// Filter ids are this base plus a serial: opaque 64-bit handles, as the HSI describes them.
const FILTER_ID_BASE: u64 = 0x4c32_0000_0000_0000;

/// CFA_L2_FILTER_ALLOC.
pub fn filter_alloc(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: A = parse(bytes);
    let flags = req.flags.get();
    let enables = req.enables.get();
    let needed = A::ENABLES_L2_ADDR | A::ENABLES_L2_ADDR_MASK | A::ENABLES_DST_ID;
    let vlan_enables = A::ENABLES_L2_IVLAN | A::ENABLES_L2_IVLAN_MASK | A::ENABLES_NUM_VLANS;
    if flags & A::FLAGS_PATH != A::FLAGS_PATH_RX
        || flags & (A::FLAGS_DROP | A::FLAGS_LOOPBACK | A::FLAGS_SOURCE_VALID) != 0
        || enables & !(needed | vlan_enables) != 0
    {
        ctx.state.l2.unimplemented += 1;
        return Err(Reject::invalid(format!(
            "flags 0x{flags:x} / enables 0x{enables:x}: only receive-path filters on the destination MAC and inner VLAN are modelled"
        )));
    }
    if enables & needed != needed {
        return Err(Reject::invalid(format!("enables 0x{enables:x} lack L2_ADDR, L2_ADDR_MASK or DST_ID")));
    }
    let vnic = req.dst_id.get();
    if !ctx.state.l2.vnics().contains_key(&vnic) {
        return Err(Reject::invalid(format!("dst_id {vnic} is not an allocated VNIC")));
    }
    let vlan = (enables & A::ENABLES_L2_IVLAN != 0).then(|| {
        let mask = if enables & A::ENABLES_L2_IVLAN_MASK != 0 { req.l2_ivlan_mask.get() } else { 0xfff };
        (req.l2_ivlan.get() & 0xfff, mask & 0xfff)
    });
    let num_vlans = (enables & A::ENABLES_NUM_VLANS != 0).then_some(req.num_vlans);
    if let Some(n @ 2..) = num_vlans {
        ctx.state.l2.unimplemented += 1;
        return Err(Reject::invalid(format!("num_vlans {n}: frames with more than one VLAN tag are not modelled")));
    }
    let l2 = &mut ctx.state.l2;
    if l2.filters().len() >= usize::from(MAX_L2_CTXS) {
        return Err(Reject::new(ErrorCode::ResourceAllocError, format!("all {MAX_L2_CTXS} L2 filters are in use")));
    }
    let id = FILTER_ID_BASE | l2.next_filter_serial;
    l2.next_filter_serial += 1;
    let filter = L2Filter { addr: req.l2_addr, mask: req.l2_addr_mask, vlan, num_vlans, dst_vnic: vnic, flags };
    l2.filters_mut().insert(id, filter);
    reply::<HwrmCfaL2FilterAllocOutput>(|o| {
        o.l2_filter_id = id.into();
        o.flow_id = u32::MAX.into();
    })
}

/// CFA_L2_FILTER_FREE.
pub fn filter_free(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmCfaL2FilterFreeInput = parse(bytes);
    let id = req.l2_filter_id.get();
    if ctx.state.l2.filters_mut().remove(&id).is_none() {
        return Err(Reject::invalid(format!("L2 filter 0x{id:x} is not allocated")));
    }
    reply::<HwrmCfaL2FilterFreeOutput>(|_| {})
}

/// CFA_L2_SET_RX_MASK.
pub fn set_rx_mask(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: M = parse(bytes);
    let mask = req.mask.get();
    let handled = M::MASK_MCAST | M::MASK_ALL_MCAST | M::MASK_BCAST | M::MASK_PROMISCUOUS | M::MASK_OUTERMOST;
    if mask & !handled != 0 || req.num_vlan_tags.get() != 0 {
        ctx.state.l2.unimplemented += 1;
        return Err(Reject::invalid(format!(
            "mask 0x{:x} / {} VLAN tags: VLAN-only receive masks are not modelled",
            mask & !handled,
            req.num_vlan_tags.get()
        )));
    }
    let vnic_id = req.vnic_id.get();
    let Some(vnic) = u16::try_from(vnic_id).ok().filter(|v| ctx.state.l2.vnics().contains_key(v)) else {
        return Err(Reject::invalid(format!("vnic_id {vnic_id} is not an allocated VNIC")));
    };
    let mut mcast = Vec::new();
    if mask & M::MASK_MCAST != 0 {
        let n = req.num_mc_entries.get();
        if n > MAX_MCAST_ENTRIES {
            return Err(Reject::invalid(format!("{n} multicast entries (at most {MAX_MCAST_ENTRIES})")));
        }
        let mut table = vec![0u8; 6 * n as usize];
        let addr = req.mc_tbl_addr.get();
        if n > 0 {
            ctx.mem
                .read(addr, &mut table)
                .map_err(|e| Reject::invalid(format!("multicast table at 0x{addr:x}: {e}")))?;
        }
        for m in table.chunks_exact(6) {
            let mac: [u8; 6] = m.try_into().expect("6 bytes");
            if mac[0] & 1 == 0 {
                return Err(Reject::invalid(format!("multicast table entry {mac:02x?} is not a multicast address")));
            }
            mcast.push(mac);
        }
    }
    let v = ctx.state.l2.vnics_mut().get_mut(&vnic).expect("checked");
    v.rx_mask = mask;
    v.mcast = mcast;
    reply::<HwrmCfaL2SetRxMaskOutput>(|_| {})
}

/// Key fields of a CFA_L2_FILTER_ALLOC request, for the event log.
pub fn filter_alloc_summary(bytes: &[u8]) -> String {
    let r: A = parse(bytes);
    format!(
        "flags=0x{:x} enables=0x{:x} addr={:02x?} dst_id={}",
        r.flags.get(),
        r.enables.get(),
        r.l2_addr,
        r.dst_id.get()
    )
}

/// Key fields of a CFA_L2_SET_RX_MASK request, for the event log.
pub fn set_rx_mask_summary(bytes: &[u8]) -> String {
    let r: M = parse(bytes);
    format!("vnic={} mask=0x{:x} mc_entries={}", r.vnic_id.get(), r.mask.get(), r.num_mc_entries.get())
}
