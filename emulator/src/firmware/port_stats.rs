//! Port statistics: PORT_QSTATS and PORT_QSTATS_EXT (bnxt.c `bnxt_hwrm_port_qstats`,
//! `bnxt_hwrm_port_qstats_ext`, `bnxt_init_stats`; bnxt_en sends both at open and then
//! periodically while the link is up).
//!
//! The firmware DMA-writes `rx_port_stats`/`tx_port_stats` (bnxt_hsi.h) to the addresses the
//! request names, and for the `_EXT` form `rx_port_stats_ext`/`tx_port_stats_ext` up to the sizes
//! the driver gives, answering with the sizes it wrote. The values are the L2 engine's port
//! counters; everything a virtual full-duplex link without pause, FEC or PCS never sees (pause,
//! PFC, collisions, FCS and code errors, EEE) is truthfully zero. With `COUNTER_MASK` the
//! firmware writes each counter's width instead (all 64 bits: the model's counters do not wrap
//! earlier), but only when FUNC_QCAPS offers extended statistics, which the model does not:
//! such a request is refused as bnxt_en expects (it then assumes 40-bit counters).

use bnxt_hsi::hwrm::layouts::{
    HwrmPortClrStatsInput, HwrmPortClrStatsOutput, HwrmPortQstatsExtInput, HwrmPortQstatsExtOutput,
    HwrmPortQstatsInput, HwrmPortQstatsOutput, RxPortStats, RxPortStatsExt, TxPortStats, TxPortStatsExt,
};
use zerocopy::{FromZeros, IntoBytes};

use super::Ctx;
use super::l2_config::{PortCounters, PortDirCounters};
use super::port_cfg::check_port;
use super::response::{Outcome, Reject, parse, reply};

fn check(port: u16, flags: u8) -> Result<(), Reject> {
    check_port(port)?;
    if flags != 0 {
        return Err(Reject::invalid(format!(
            "flags 0x{flags:x}: counter masks need extended statistics, which FUNC_QCAPS does not offer"
        )));
    }
    Ok(())
}

/// `rx_port_stats` from the counters.
pub fn rx_stats(c: &PortDirCounters) -> RxPortStats {
    let mut s = RxPortStats::new_zeroed();
    let b = &c.sizes;
    s.rx_64b_frames = b[0].into();
    s.rx_65b_127b_frames = b[1].into();
    s.rx_128b_255b_frames = b[2].into();
    s.rx_256b_511b_frames = b[3].into();
    s.rx_512b_1023b_frames = b[4].into();
    s.rx_1024b_1518b_frames = b[5].into();
    s.rx_1519b_2047b_frames = b[6].into();
    s.rx_2048b_4095b_frames = b[7].into();
    s.rx_4096b_9216b_frames = b[8].into();
    s.rx_9217b_16383b_frames = b[9].into();
    s.rx_total_frames = c.frames.into();
    s.rx_good_frames = c.frames.into();
    s.rx_ucast_frames = c.ucast.into();
    s.rx_mcast_frames = c.mcast.into();
    s.rx_bcast_frames = c.bcast.into();
    s.rx_tagged_frames = c.tagged.into();
    s.rx_good_vlan_frames = c.tagged.into();
    s.rx_bytes = c.bytes.into();
    s.rx_stat_discard = c.discards.into();
    s
}

/// `tx_port_stats` from the counters.
pub fn tx_stats(c: &PortDirCounters) -> TxPortStats {
    let mut s = TxPortStats::new_zeroed();
    let b = &c.sizes;
    s.tx_64b_frames = b[0].into();
    s.tx_65b_127b_frames = b[1].into();
    s.tx_128b_255b_frames = b[2].into();
    s.tx_256b_511b_frames = b[3].into();
    s.tx_512b_1023b_frames = b[4].into();
    s.tx_1024b_1518b_frames = b[5].into();
    s.tx_1519b_2047b_frames = b[6].into();
    s.tx_2048b_4095b_frames = b[7].into();
    s.tx_4096b_9216b_frames = b[8].into();
    s.tx_9217b_16383b_frames = b[9].into();
    s.tx_total_frames = c.frames.into();
    s.tx_good_frames = c.frames.into();
    s.tx_ucast_frames = c.ucast.into();
    s.tx_mcast_frames = c.mcast.into();
    s.tx_bcast_frames = c.bcast.into();
    s.tx_tagged_frames = c.tagged.into();
    s.tx_good_vlan_frames = c.tagged.into();
    s.tx_bytes = c.bytes.into();
    s.tx_stat_discard = c.discards.into();
    s
}

fn write(ctx: &Ctx<'_>, what: &str, addr: u64, bytes: &[u8]) -> Result<(), Reject> {
    ctx.mem.write(addr, bytes).map_err(|e| Reject::invalid(format!("{what} at 0x{addr:x}: {e}")))
}

/// PORT_QSTATS.
pub fn port_qstats(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmPortQstatsInput = parse(bytes);
    check(req.port_id.get(), req.flags)?;
    let c = ctx.state.l2.port_counters;
    let rx = rx_stats(&c.rx);
    let tx = tx_stats(&c.tx);
    write(ctx, "rx_stat_host_addr", req.rx_stat_host_addr.get(), rx.as_bytes())?;
    write(ctx, "tx_stat_host_addr", req.tx_stat_host_addr.get(), tx.as_bytes())?;
    reply::<HwrmPortQstatsOutput>(|o| {
        o.tx_stat_size = (size_of::<TxPortStats>() as u16).into();
        o.rx_stat_size = (size_of::<RxPortStats>() as u16).into();
    })
}

/// `rx_port_stats_ext` from the counters.
pub fn rx_stats_ext(c: &PortCounters) -> RxPortStatsExt {
    let mut s = RxPortStatsExt::new_zeroed();
    s.link_down_events = c.link_down_events.into();
    let rx = &c.rx;
    let bytes = [
        &mut s.rx_bytes_cos0,
        &mut s.rx_bytes_cos1,
        &mut s.rx_bytes_cos2,
        &mut s.rx_bytes_cos3,
        &mut s.rx_bytes_cos4,
        &mut s.rx_bytes_cos5,
        &mut s.rx_bytes_cos6,
        &mut s.rx_bytes_cos7,
    ];
    for (f, v) in bytes.into_iter().zip(rx.cos_bytes) {
        *f = v.into();
    }
    let pkts = [
        &mut s.rx_packets_cos0,
        &mut s.rx_packets_cos1,
        &mut s.rx_packets_cos2,
        &mut s.rx_packets_cos3,
        &mut s.rx_packets_cos4,
        &mut s.rx_packets_cos5,
        &mut s.rx_packets_cos6,
        &mut s.rx_packets_cos7,
    ];
    for (f, v) in pkts.into_iter().zip(rx.cos_frames) {
        *f = v.into();
    }
    s.rx_bits = (rx.bytes * 8).into();
    s.rx_discard_packets_cos0 = rx.discards.into();
    s.rx_discard_bytes_cos0 = rx.discard_bytes.into();
    s
}

/// `tx_port_stats_ext` from the counters.
pub fn tx_stats_ext(c: &PortCounters) -> TxPortStatsExt {
    let mut s = TxPortStatsExt::new_zeroed();
    let tx = &c.tx;
    let bytes = [
        &mut s.tx_bytes_cos0,
        &mut s.tx_bytes_cos1,
        &mut s.tx_bytes_cos2,
        &mut s.tx_bytes_cos3,
        &mut s.tx_bytes_cos4,
        &mut s.tx_bytes_cos5,
        &mut s.tx_bytes_cos6,
        &mut s.tx_bytes_cos7,
    ];
    for (f, v) in bytes.into_iter().zip(tx.cos_bytes) {
        *f = v.into();
    }
    let pkts = [
        &mut s.tx_packets_cos0,
        &mut s.tx_packets_cos1,
        &mut s.tx_packets_cos2,
        &mut s.tx_packets_cos3,
        &mut s.tx_packets_cos4,
        &mut s.tx_packets_cos5,
        &mut s.tx_packets_cos6,
        &mut s.tx_packets_cos7,
    ];
    for (f, v) in pkts.into_iter().zip(tx.cos_frames) {
        *f = v.into();
    }
    s
}

/// Bytes of `tx_port_stats_ext` up to the PFC durations: the model has no PFC, so it writes
/// only the per-CoS counters (and bnxt_en then does not ask for the priority mapping).
pub const TX_EXT_WRITTEN: usize = 16 * 8;

/// PORT_QSTATS_EXT.
pub fn port_qstats_ext(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmPortQstatsExtInput = parse(bytes);
    check(req.port_id.get(), req.flags)?;
    let c = ctx.state.l2.port_counters;
    let rx = rx_stats_ext(&c);
    let tx = tx_stats_ext(&c);
    let rx_len = usize::from(req.rx_stat_size.get()).min(size_of::<RxPortStatsExt>()) & !7;
    let tx_len = usize::from(req.tx_stat_size.get()).min(TX_EXT_WRITTEN) & !7;
    if rx_len > 0 {
        write(ctx, "rx_stat_host_addr", req.rx_stat_host_addr.get(), &rx.as_bytes()[..rx_len])?;
    }
    if tx_len > 0 {
        write(ctx, "tx_stat_host_addr", req.tx_stat_host_addr.get(), &tx.as_bytes()[..tx_len])?;
    }
    reply::<HwrmPortQstatsExtOutput>(|o| {
        o.rx_stat_size = (rx_len as u16).into();
        o.tx_stat_size = (tx_len as u16).into();
        o.total_active_cos_queues = (super::caps::QUEUES.len() as u16).into();
    })
}

/// PORT_CLR_STATS: the port's counters start from zero again (DPDK's `bnxt_stats_reset_op`
/// sends it: drivers/net/bnxt/bnxt_stats.c, bnxt_hwrm.c `bnxt_hwrm_port_clr_stats`). The
/// firmware's copy is zeroed at once and the L2 engine's with the notice; `FLAGS_ROCE_COUNTERS`
/// also asks for the RoCE counters, which the model keeps per QP in its RoCE engine and does not
/// clear (warned).
pub fn port_clr_stats(bytes: &[u8], ctx: &mut Ctx<'_>) -> Outcome {
    let req: HwrmPortClrStatsInput = parse(bytes);
    check_port(req.port_id.get())?;
    if req.flags & HwrmPortClrStatsInput::FLAGS_ROCE_COUNTERS != 0 {
        tracing::warn!("PORT_CLR_STATS: ROCE_COUNTERS asked; the RoCE counters are not cleared (not modelled)");
    }
    ctx.state.l2.port_counters = PortCounters::default();
    ctx.state.l2.notify(super::l2_config::Notice::ClearPortCounters);
    reply::<HwrmPortClrStatsOutput>(|_| {})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_land_in_their_fields() {
        let mut c = PortCounters::default();
        c.tx.count(&[0xff; 6], 60, false, 0);
        c.tx.count(&[0x33, 0x33, 0, 0, 0, 1], 90, true, 2);
        c.rx.count(&[2, 0, 0, 0, 0, 1], 1514, false, 0);
        let tx = tx_stats(&c.tx);
        assert_eq!((tx.tx_total_frames.get(), tx.tx_bcast_frames.get(), tx.tx_mcast_frames.get()), (2, 1, 1));
        assert_eq!((tx.tx_64b_frames.get(), tx.tx_65b_127b_frames.get(), tx.tx_bytes.get()), (1, 1, 150));
        let rx = rx_stats(&c.rx);
        assert_eq!((rx.rx_ucast_frames.get(), rx.rx_1024b_1518b_frames.get()), (1, 1));
        let ext = tx_stats_ext(&c);
        assert_eq!((ext.tx_packets_cos0.get(), ext.tx_packets_cos2.get(), ext.tx_bytes_cos2.get()), (1, 1, 90));
    }
}
