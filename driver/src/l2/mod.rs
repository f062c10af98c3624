//! The function's L2 side, opened as bnxt_en opens a netdev on P7 and cut down to what a RoCE
//! function needs (bnxt.c `bnxt_open` → `bnxt_hwrm_if_change`, `__bnxt_open_nic` →
//! `bnxt_reserve_rings`, `bnxt_init_nic` → `bnxt_init_chip`; close: `bnxt_close` →
//! `__bnxt_close_nic` → `bnxt_hwrm_resource_free`, then `bnxt_hwrm_if_change` down):
//!
//! 1. HWRM_FUNC_DRV_IF_CHANGE up, when FUNC_DRV_RGTR said the firmware wants it;
//! 2. HWRM_FUNC_CFG reserving the rings, NQs (this side's and the RoCE engine's), statistics
//!    contexts, VNIC and RSS context, read back with HWRM_FUNC_QCFG ([`reserve`]);
//! 3. HWRM_STAT_CTX_ALLOC for the receive ring, then HWRM_RING_ALLOC of an NQ, the RX ring and
//!    its completion ring ([`rings`]);
//! 4. HWRM_VNIC_ALLOC of the default VNIC, HWRM_VNIC_RSS_COS_LB_CTX_ALLOC and HWRM_VNIC_RSS_CFG
//!    (P7 steers through an RSS context's table of (RX ring, completion ring) pairs, and has no
//!    ring groups), HWRM_VNIC_CFG with the default rings, an MRU for RoCE's 4096-byte path MTU
//!    and the RoCE VNIC mode, and HWRM_CFA_L2_FILTER_ALLOC of the NIC's MAC ([`vnic`]).
//!
//! What bnxt_en does for a netdev and a RoCE function does not need is left out: no TX rings,
//! no receive mask (CFA_L2_SET_RX_MASK sets broadcast and multicast for the IP stack), no async
//! event ring (the driver registers for no async events), no interrupt coalescing, no RX
//! buffers posted (frames that are not RoCE find none and are dropped by the NIC). Close frees
//! in bnxt_en's order, the reverse: the filter, the VNIC, the RSS context, the RX ring, the
//! completion ring, the NQ, the statistics context, then FUNC_DRV_IF_CHANGE down. The
//! reservation stays with the function, as bnxt_en leaves it; the next open's FUNC_RESET ends it.

pub(crate) mod reserve;
pub(crate) mod rings;
pub(crate) mod vnic;

use std::sync::Arc;

use bnxt_hsi::hwrm::layouts::{
    HwrmCfaL2FilterFreeInput, HwrmStatCtxAllocInput, HwrmStatCtxFreeInput, HwrmVnicFreeInput,
    HwrmVnicRssCosLbCtxFreeInput,
};
use zerocopy::FromZeros;

use crate::bringup::ResourceCaps;
use crate::error::Error;
use crate::hwrm::Channel;
use crate::roce::Memory;
use crate::roce::db::DbPage;
use bnxt_pci::dma::{DmaBuffer, PAGE_SIZE};
use bnxt_pci::{Clock, PciFunction};
use rings::Ring;

/// NQs this side uses: one, on MSI-X vector 0, as bnxt_en's first NQ; the RoCE engine's vectors
/// follow it (bnxt_en gives bnxt_re the vectors after its own, `bnxt_get_ulp_msix_base`).
pub(crate) const L2_NQS: u16 = 1;
/// Bytes of the counters a statistics context writes: `struct ctx_hw_stats` (bnxt_hsi.h, 20
/// 64-bit counters), bnxt_en's `hw_ring_stats_size` unless VNIC_QCAPS offers aggregation.
pub(crate) const HW_STATS_BYTES: u16 = 20 * 8;
/// How often the firmware writes them (bnxt_en's default `stats_coal_ticks`, 1 s).
pub(crate) const STATS_PERIOD_MS: u32 = 1000;

/// What the L2 open needs.
pub(crate) struct Inputs<'a> {
    /// The NIC's name.
    pub nic: &'a str,
    /// Its function.
    pub function: &'a Arc<dyn PciFunction>,
    /// The doorbell page.
    pub db: DbPage,
    /// The MAC the filter takes.
    pub mac: [u8; 6],
    /// The firmware wants FUNC_DRV_IF_CHANGE.
    pub if_change: bool,
    /// What its resource manager lets the function reserve.
    pub caps: ResourceCaps,
    /// FUNC_QCFG `max_mtu_configured`.
    pub max_mtu: u16,
    /// The VNIC mode for RoCE (VNIC_QCAPS).
    pub roce_vnic_mode: u32,
    /// The NIC's clock (FUNC_DRV_IF_CHANGE retries wait on it).
    pub clock: &'a dyn Clock,
}

/// What the L2 open gave the firmware so far; undone in reverse.
#[derive(Default)]
pub(crate) struct L2 {
    if_up: bool,
    stats: Option<DmaBuffer>,
    stat_ctx: Option<u32>,
    nq: Option<Ring>,
    rx: Option<Ring>,
    cmpl: Option<Ring>,
    vnic: Option<u16>,
    rss_ctx: Option<u16>,
    rss_mem: Option<DmaBuffer>,
    filter: Option<u64>,
}

/// Open the L2 side. On failure what was done is undone, and its memory comes back with the
/// error (kept if the NIC is wedged, else freed once bus mastering is off).
pub(crate) fn start(inputs: Inputs<'_>, hwrm: &mut Channel) -> Result<L2, (Error, Vec<Memory>)> {
    let mut l2 = L2::default();
    match open(&inputs, hwrm, &mut l2) {
        Ok(()) => Ok(l2),
        Err(e) => Err((e, l2.undo(inputs.nic, hwrm))),
    }
}

fn open(inputs: &Inputs<'_>, hwrm: &mut Channel, l2: &mut L2) -> Result<(), Error> {
    let nic = inputs.nic;
    let pci = |source| Error::Pci { nic: nic.to_string(), source };
    if inputs.if_change {
        reserve::if_change_up(nic, hwrm, inputs.clock)?;
        l2.if_up = true;
    }
    reserve::reserve(nic, hwrm, &inputs.caps)?;

    let stats = inputs.function.alloc_dma(PAGE_SIZE).map_err(pci)?;
    let stats_addr = stats.iova();
    l2.stats = Some(stats);
    let req = HwrmStatCtxAllocInput {
        stats_dma_addr: stats_addr.into(),
        stats_dma_length: HW_STATS_BYTES.into(),
        update_period_ms: STATS_PERIOD_MS.into(),
        ..FromZeros::new_zeroed()
    };
    let stat_ctx = hwrm.send(req)?.stat_ctx_id.get();
    l2.stat_ctx = Some(stat_ctx);

    let f = &**inputs.function;
    let nq = l2.nq.insert(Ring::alloc(f, rings::Kind::Nq).map_err(pci)?);
    let nq_id = rings::alloc_nq(hwrm, nq, &inputs.db)?;
    let rx = l2.rx.insert(Ring::alloc(f, rings::Kind::Rx).map_err(pci)?);
    rings::alloc_rx(hwrm, rx, nq_id, stat_ctx, &inputs.db)?;
    let cmpl = l2.cmpl.insert(Ring::alloc(f, rings::Kind::Cmpl).map_err(pci)?);
    rings::alloc_cmpl(hwrm, cmpl, nq_id, &inputs.db)?;
    let (rx_id, cmpl_id) = (l2.rx.as_ref().and_then(Ring::id), l2.cmpl.as_ref().and_then(Ring::id));
    let (rx_id, cmpl_id) = (rx_id.expect("allocated above"), cmpl_id.expect("allocated above"));

    let vnic = vnic::alloc(nic, hwrm)?;
    l2.vnic = Some(vnic);
    let rss_ctx = vnic::rss_ctx_alloc(hwrm)?;
    l2.rss_ctx = Some(rss_ctx);
    let rss_mem = l2.rss_mem.insert(inputs.function.alloc_dma(PAGE_SIZE).map_err(pci)?);
    vnic::rss_cfg(hwrm, vnic, rss_ctx, rss_mem, (rx_id, cmpl_id))?;
    let mru = vnic::mru(nic, inputs.max_mtu)?;
    vnic::cfg(hwrm, vnic, (rx_id, cmpl_id), mru, inputs.roce_vnic_mode)?;
    l2.filter = Some(vnic::filter_alloc(hwrm, vnic, inputs.mac)?);
    tracing::info!(nic, vnic, rx_ring = rx_id, cmpl_ring = cmpl_id, nq_ring = nq_id, mru, "L2 side open");
    Ok(())
}

impl L2 {
    /// Undo what was done, in bnxt_en's order, skipping firmware requests once the NIC is
    /// wedged; the memory, to free once the NIC can no longer reach it.
    pub(crate) fn undo(mut self, nic: &str, hwrm: &mut Channel) -> Vec<Memory> {
        let warn = |what: &str, e: Error| tracing::warn!(nic, error = %e, "{what} failed while closing");
        if let Some(id) = self.filter.take()
            && !hwrm.is_wedged()
            && let Err(e) = hwrm.send(HwrmCfaL2FilterFreeInput { l2_filter_id: id.into(), ..FromZeros::new_zeroed() })
        {
            warn("CFA_L2_FILTER_FREE", e);
        }
        if let Some(id) = self.vnic.take()
            && !hwrm.is_wedged()
            && let Err(e) = hwrm.send(HwrmVnicFreeInput { vnic_id: u32::from(id).into(), ..FromZeros::new_zeroed() })
        {
            warn("VNIC_FREE", e);
        }
        if let Some(id) = self.rss_ctx.take()
            && !hwrm.is_wedged()
            && let Err(e) =
                hwrm.send(HwrmVnicRssCosLbCtxFreeInput { rss_cos_lb_ctx_id: id.into(), ..FromZeros::new_zeroed() })
        {
            warn("VNIC_RSS_COS_LB_CTX_FREE", e);
        }
        for (ring, what) in [(&mut self.rx, "RX ring"), (&mut self.cmpl, "completion ring"), (&mut self.nq, "NQ")] {
            if let Some(r) = ring.as_mut()
                && let Some(id) = r.take_id()
                && !hwrm.is_wedged()
                && let Err(e) = rings::free(hwrm, r.kind, id)
            {
                warn(&format!("RING_FREE of the L2 {what}"), e);
            }
        }
        if let Some(id) = self.stat_ctx.take()
            && !hwrm.is_wedged()
            && let Err(e) = hwrm.send(HwrmStatCtxFreeInput { stat_ctx_id: id.into(), ..FromZeros::new_zeroed() })
        {
            warn("STAT_CTX_FREE of the L2 statistics", e);
        }
        if std::mem::take(&mut self.if_up)
            && !hwrm.is_wedged()
            && let Err(e) = reserve::if_change_down(hwrm)
        {
            warn("FUNC_DRV_IF_CHANGE down", e);
        }
        let mut memory = Vec::new();
        for ring in [self.rx.take(), self.cmpl.take(), self.nq.take()].into_iter().flatten() {
            memory.push(ring.into_memory());
        }
        for buffer in [self.rss_mem.take(), self.stats.take()].into_iter().flatten() {
            let bytes = buffer.len();
            memory.push(Memory::new(buffer, bytes));
        }
        memory
    }
}

#[cfg(test)]
mod tests;
