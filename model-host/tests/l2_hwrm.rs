//! The firmware's L2 requests one by one, with good and bad requests: reservations and their
//! echo, VNICs, RSS, filters and receive masks, PHY configuration, port statistics, coalescing,
//! and the queries bnxt_en makes at probe.

mod common;

use bnxt_hsi::hwrm::layouts::*;
use common::{Pages, Rig, req, reserve_rings, roomy_reservation};

const INVALID_PARAMS: u16 = 2;
const RESOURCE_ALLOC_ERROR: u16 = 4;

type F = HwrmFuncCfgInput;

#[test]
fn func_cfg_reservations_are_echoed_by_func_qcfg() {
    let mut rig = Rig::new(1);
    let q = rig.ok(0, req::<HwrmFuncQcfgInput>());
    assert_eq!((q.alloc_tx_rings.get(), q.alloc_msix.get()), (0, 0), "nothing reserved at power-on");
    // What bnxt_en asks for on a 2-CPU guest with RoCE (docs/bnxt_en-needs.md §3.20); FUNC_CFG
    // is 160 bytes, so it goes as a short command.
    rig.ok(0, reserve_rings(2, 2, 4, 5, 3, 1, 1));
    let q = rig.ok(0, req::<HwrmFuncQcfgInput>());
    let got = (
        q.alloc_tx_rings.get(),
        q.alloc_rx_rings.get(),
        q.alloc_cmpl_rings.get(),
        q.alloc_msix.get(),
        q.alloc_stat_ctx.get(),
        q.alloc_vnics.get(),
        q.alloc_rsscos_ctx.get(),
    );
    assert_eq!(got, (2, 2, 4, 5, 3, 1, 1));
    // A later FUNC_CFG changes only what it enables.
    let mut c: F = req();
    c.fid = 0xffff.into();
    c.enables = F::ENABLES_NUM_TX_RINGS.into();
    c.num_tx_rings = 1.into();
    rig.ok(0, c);
    let q = rig.ok(0, req::<HwrmFuncQcfgInput>());
    assert_eq!((q.alloc_tx_rings.get(), q.alloc_rx_rings.get(), q.alloc_msix.get()), (1, 2, 5));
    // More than the function has is granted up to its maximum (bnxt_en trims to the grant).
    let max = rig.ok(0, req::<HwrmFuncResourceQcapsInput>());
    rig.ok(0, reserve_rings(9999, 1, 1, 9999, 1, 1, 1));
    let q = rig.ok(0, req::<HwrmFuncQcfgInput>());
    assert_eq!(q.alloc_tx_rings.get(), max.max_tx_rings.get());
    assert_eq!(q.alloc_msix.get(), max.max_msix.get());
    assert!(max.max_msix.get() > 0, "bnxt_en takes max_nqs from max_msix");
    // FUNC_RESET drops the reservation.
    rig.ok(0, req::<HwrmFuncResetInput>());
    assert_eq!(rig.ok(0, req::<HwrmFuncQcfgInput>()).alloc_tx_rings.get(), 0);
}

#[test]
fn func_cfg_assets_tests_ask_without_reserving_and_unknown_settings_are_refused() {
    let mut rig = Rig::new(1);
    let mut t = reserve_rings(2, 2, 4, 5, 3, 1, 1);
    t.flags = (F::FLAGS_TX_ASSETS_TEST | F::FLAGS_RX_ASSETS_TEST | F::FLAGS_NQ_ASSETS_TEST).into();
    rig.ok(0, t);
    assert_eq!(rig.ok(0, req::<HwrmFuncQcfgInput>()).alloc_tx_rings.get(), 0, "a test reserves nothing");
    let mut too_many = reserve_rings(9999, 1, 1, 1, 1, 1, 1);
    too_many.flags = F::FLAGS_TX_ASSETS_TEST.into();
    assert_eq!(rig.call(0, too_many).code, RESOURCE_ALLOC_ERROR);
    let mut vf_defaults: F = req();
    vf_defaults.fid = 0xffff.into();
    vf_defaults.enables = F::ENABLES_DFLT_MAC_ADDR.into();
    assert_eq!(rig.call(0, vf_defaults).code, INVALID_PARAMS);
    assert!(rig.last_reason().unwrap().contains("does not implement"));
    assert_eq!(rig.world.nic_state(0).unimplemented, 1, "counted");
    let mut other_fid = reserve_rings(1, 1, 1, 1, 1, 1, 1);
    other_fid.fid = 3.into();
    assert_eq!(rig.call(0, other_fid).code, INVALID_PARAMS);
    let mut cache: F = req();
    cache.fid = 0xffff.into();
    cache.enables = F::ENABLES_CACHE_LINESIZE.into();
    cache.options = F::OPTIONS_CACHE_LINESIZE_SIZE_128;
    rig.ok(0, cache);
    let mut cr: F = req();
    cr.fid = 0xffff.into();
    cr.enables = F::ENABLES_ASYNC_EVENT_CR.into();
    cr.async_event_cr = 7.into();
    assert_eq!(rig.call(0, cr).code, INVALID_PARAMS, "no ring 7");
}

/// Allocate an L2 completion ring and an RX ring; their ids.
fn rings(rig: &mut Rig, pages: &mut Pages) -> (u16, u16) {
    rig.ok(0, roomy_reservation());
    let mut r: HwrmRingAllocInput = req();
    r.ring_type = HwrmRingAllocInput::RING_TYPE_L2_CMPL;
    r.length = 64.into();
    r.page_tbl_addr = pages.take(1).into();
    let cq = rig.ok(0, r).ring_id.get();
    let mut r: HwrmRingAllocInput = req();
    r.ring_type = HwrmRingAllocInput::RING_TYPE_RX;
    r.length = 64.into();
    r.page_tbl_addr = pages.take(1).into();
    let rx = rig.ok(0, r).ring_id.get();
    (cq, rx)
}

#[test]
fn vnics_take_their_rings_rss_tables_and_masks_and_refuse_bad_ones() {
    let mut rig = Rig::new(1);
    let mut pages = Pages::default();
    let (cq, rx) = rings(&mut rig, &mut pages);
    let q = rig.ok(0, req::<HwrmVnicQcapsInput>());
    assert_ne!(q.flags.get() & HwrmVnicQcapsOutput::FLAGS_VLAN_STRIP_CAP, 0);
    assert_eq!(q.max_aggs_supported.get(), 0, "no TPA: bnxt_en uses no aggregation rings");
    let mut va: HwrmVnicAllocInput = req();
    va.flags = HwrmVnicAllocInput::FLAGS_DEFAULT.into();
    let vnic = rig.ok(0, va).vnic_id.get();
    assert_eq!(rig.call(0, va).code, INVALID_PARAMS, "one default VNIC");

    let mut vc: HwrmVnicCfgInput = req();
    type V = HwrmVnicCfgInput;
    vc.vnic_id = (vnic as u16).into();
    vc.enables = (V::ENABLES_DEFAULT_RX_RING_ID | V::ENABLES_DEFAULT_CMPL_RING_ID).into();
    vc.default_rx_ring_id = cq.into(); // a completion ring where an RX ring belongs
    vc.default_cmpl_ring_id = cq.into();
    assert_eq!(rig.call(0, vc).code, INVALID_PARAMS);
    vc.default_rx_ring_id = rx.into();
    vc.mru = 1518.into(); // as bnxt_en: no ENABLES_MRU on P5/P7, the value taken anyway
    rig.ok(0, vc);
    let cfg = &rig.world.device(0).firmware().state().l2.vnics()[&(vnic as u16)];
    assert_eq!((cfg.default_rx_ring, cfg.default_cmpl_ring, cfg.mru), (Some(rx), Some(cq), 1518));
    vc.enables = V::ENABLES_DFLT_RING_GRP.into();
    assert_eq!(rig.call(0, vc).code, INVALID_PARAMS, "ring groups are not a P7 thing");

    let ctx = rig.ok(0, req::<HwrmVnicRssCosLbCtxAllocInput>()).rss_cos_lb_ctx_id.get();
    let table = pages.take(1);
    let key = pages.take(1);
    let mut rss: HwrmVnicRssCfgInput = req();
    rss.vnic_id = (vnic as u16).into();
    rss.hash_type = HwrmVnicRssCfgInput::HASH_TYPE_IPV4.into();
    rss.rss_ctx_idx = ctx.into();
    rss.ring_grp_tbl_addr = table.into();
    rss.hash_key_tbl_addr = key.into();
    // An all-zero table names ring 0 (the completion ring) as an RX ring: refused.
    assert_eq!(rig.call(0, rss).code, INVALID_PARAMS);
    let pairs: Vec<u8> = (0..64).flat_map(|_| [rx.to_le_bytes(), cq.to_le_bytes()].concat()).collect();
    rig.poke(0, table, &pairs);
    rig.ok(0, rss);
    let mut other = rss;
    other.rss_ctx_idx = (ctx + 5).into();
    assert_eq!(rig.call(0, other).code, INVALID_PARAMS, "context not allocated");
    let mut flow_label = rss;
    flow_label.hash_type = HwrmVnicRssCfgInput::HASH_TYPE_IPV6_FLOW_LABEL.into();
    assert_eq!(rig.call(0, flow_label).code, INVALID_PARAMS);
    // RSS off (what bnxt_en sends before freeing), then the context and the VNIC go.
    let mut off: HwrmVnicRssCfgInput = req();
    off.vnic_id = (vnic as u16).into();
    rig.ok(0, off);
    assert!(rig.world.device(0).firmware().state().l2.vnics()[&(vnic as u16)].rss.is_empty());
    let mut cf: HwrmVnicRssCosLbCtxFreeInput = req();
    cf.rss_cos_lb_ctx_id = ctx.into();
    rig.ok(0, cf);
    assert_eq!(rig.call(0, cf).code, INVALID_PARAMS, "freed twice");
    let mut vf: HwrmVnicFreeInput = req();
    vf.vnic_id = vnic.into();
    rig.ok(0, vf);
    assert_eq!(rig.call(0, vf).code, INVALID_PARAMS, "freed twice");
}

#[test]
fn l2_filters_and_receive_masks() {
    let mut rig = Rig::new(1);
    rig.ok(0, roomy_reservation());
    let vnic = rig.ok(0, req::<HwrmVnicAllocInput>()).vnic_id.get() as u16;
    let mut fl: HwrmCfaL2FilterAllocInput = req();
    type A = HwrmCfaL2FilterAllocInput;
    fl.flags = (A::FLAGS_PATH_RX | A::FLAGS_OUTERMOST).into();
    fl.enables = (A::ENABLES_L2_ADDR | A::ENABLES_L2_ADDR_MASK | A::ENABLES_DST_ID).into();
    fl.l2_addr = [2, 0, 0, 0, 0, 7];
    fl.l2_addr_mask = [0xff; 6];
    fl.dst_id = (vnic + 1).into();
    assert_eq!(rig.call(0, fl).code, INVALID_PARAMS, "no such VNIC");
    fl.dst_id = vnic.into();
    let id = rig.ok(0, fl).l2_filter_id.get();
    let mut tx = fl;
    tx.flags = A::FLAGS_PATH_TX.into();
    assert_eq!(rig.call(0, tx).code, INVALID_PARAMS, "transmit-path filters are not modelled");
    let l2 = &rig.world.device(0).firmware().state().l2;
    assert_eq!(l2.filter_vnic(&[2, 0, 0, 0, 0, 7], None), Some(vnic));

    let mut m: HwrmCfaL2SetRxMaskInput = req();
    type M = HwrmCfaL2SetRxMaskInput;
    m.vnic_id = u32::from(vnic).into();
    m.mask = (M::MASK_MCAST | M::MASK_BCAST).into();
    m.num_mc_entries = 2.into();
    let tbl = common::SCRATCH;
    rig.poke(0, tbl, &[0x33, 0x33, 0, 0, 0, 1, 0x01, 0x00, 0x5e, 0, 0, 1]);
    m.mc_tbl_addr = tbl.into();
    rig.ok(0, m);
    assert_eq!(rig.world.device(0).firmware().state().l2.vnics()[&vnic].mcast.len(), 2);
    rig.poke(0, tbl, &[0x02, 0x33, 0, 0, 0, 1]);
    assert_eq!(rig.call(0, m).code, INVALID_PARAMS, "a unicast address in the multicast list");
    let mut vlan_only = m;
    vlan_only.mask = M::MASK_VLANONLY.into();
    assert_eq!(rig.call(0, vlan_only).code, INVALID_PARAMS);

    let mut ff: HwrmCfaL2FilterFreeInput = req();
    ff.l2_filter_id = id.into();
    rig.ok(0, ff);
    assert_eq!(rig.call(0, ff).code, INVALID_PARAMS, "freed twice");
}

#[test]
fn phy_configuration_is_checked_and_reported_back() {
    let mut rig = Rig::new(1);
    type P = HwrmPortPhyCfgInput;
    let mut forced: P = req();
    forced.flags = (P::FLAGS_RESET_PHY | P::FLAGS_FORCE).into();
    forced.enables = P::ENABLES_FORCE_LINK_SPEEDS2.into();
    forced.force_link_speeds2 = P::FORCE_LINK_SPEEDS2_10GB.into();
    assert_eq!(rig.call(0, forced).code, INVALID_PARAMS, "the port has no 10G");
    forced.force_link_speeds2 = P::FORCE_LINK_SPEEDS2_100GB_PAM4_56.into();
    rig.ok(0, forced);
    let q = rig.ok(0, req::<HwrmPortPhyQcfgInput>());
    assert_eq!((q.link, q.link_speed.get(), q.auto_mode), (2, 1000, 0));
    assert_eq!(q.force_link_speeds2.get(), P::FORCE_LINK_SPEEDS2_100GB_PAM4_56);
    let mut eee: P = req();
    eee.flags = P::FLAGS_EEE_ENABLE.into();
    assert_eq!(rig.call(0, eee).code, INVALID_PARAMS, "EEE is not offered");
    let mut other_port: P = req();
    other_port.port_id = 1.into();
    assert_eq!(rig.call(0, other_port).code, INVALID_PARAMS);
    let m = rig.ok(0, req::<HwrmPortMacQcapsInput>());
    assert_eq!(m.flags, HwrmPortMacQcapsOutput::FLAGS_LOCAL_LPBK_NOT_SUPPORTED);
    assert_eq!(rig.ok(0, req::<HwrmPortLedQcapsInput>()).num_leds, 0);
}

#[test]
fn port_statistics_are_written_where_the_request_says() {
    let mut rig = Rig::new(1);
    let (rx_at, tx_at) = (common::SCRATCH, common::SCRATCH + 0x1000);
    rig.poke(0, rx_at, &[0xee; 0x800]);
    let mut q: HwrmPortQstatsInput = req();
    q.rx_stat_host_addr = rx_at.into();
    q.tx_stat_host_addr = tx_at.into();
    let r = rig.ok(0, q);
    assert_eq!(r.rx_stat_size.get() as usize, size_of::<RxPortStats>());
    assert!(rig.peek(0, rx_at, size_of::<RxPortStats>()).iter().all(|&b| b == 0), "no frames yet: all zero");
    let mut masks = q;
    masks.flags = HwrmPortQstatsInput::FLAGS_COUNTER_MASK;
    assert_eq!(rig.call(0, masks).code, INVALID_PARAMS, "counter masks need extended statistics");
    let mut e: HwrmPortQstatsExtInput = req();
    e.rx_stat_size = 4096.into();
    e.tx_stat_size = 4096.into();
    e.rx_stat_host_addr = rx_at.into();
    e.tx_stat_host_addr = tx_at.into();
    let r = rig.ok(0, e);
    assert_eq!(r.rx_stat_size.get() as usize, size_of::<RxPortStatsExt>());
    assert_eq!(r.tx_stat_size.get(), 128, "per-CoS counters only: no PFC");
    let mut bad: HwrmPortQstatsInput = q;
    bad.rx_stat_host_addr = 0x10.into();
    assert_eq!(rig.call(0, bad).code, INVALID_PARAMS, "unreachable memory");
}

#[test]
fn coalescing_capabilities_and_settings() {
    let mut rig = Rig::new(1);
    let mut pages = Pages::default();
    let (cq, rx) = rings(&mut rig, &mut pages);
    let caps = rig.ok(0, req::<HwrmRingAggintQcapsInput>());
    assert_eq!(caps.timer_units.get(), 80);
    assert_eq!(caps.nq_params.get(), 0);
    type C = HwrmRingCmplRingCfgAggintParamsInput;
    let mut c: C = req();
    c.ring_id = cq.into();
    c.enables = (C::ENABLES_NUM_CMPL_AGGR_INT | C::ENABLES_INT_LAT_TMR_MAX | C::ENABLES_NUM_CMPL_DMA_AGGR).into();
    (c.num_cmpl_aggr_int, c.int_lat_tmr_max, c.num_cmpl_dma_aggr) = (30.into(), 125.into(), 30.into());
    rig.ok(0, c);
    let got = rig.world.device(0).firmware().state().l2.coalescing[&cq];
    assert_eq!((got.num_cmpl_aggr_int, got.int_lat_tmr_max), (30, 125));
    let mut wrong = c;
    wrong.ring_id = rx.into();
    assert_eq!(rig.call(0, wrong).code, INVALID_PARAMS, "an RX ring has no coalescing");
    let mut nq = c;
    nq.flags = C::FLAGS_IS_NQ.into();
    assert_eq!(rig.call(0, nq).code, INVALID_PARAMS);
}

#[test]
fn fw_set_time_keeps_a_date_and_refuses_nonsense() {
    let mut rig = Rig::new(1);
    let mut t: HwrmFwSetTimeInput = req();
    t.year = 2026.into();
    (t.month, t.day, t.hour, t.minute, t.second) = (11, 29, 10, 41, 33);
    rig.ok(0, t);
    assert_eq!(rig.world.device(0).firmware().state().l2.wall_clock.map(|w| w.year), Some(2026));
    t.month = 13;
    assert_eq!(rig.call(0, t).code, INVALID_PARAMS);
}
