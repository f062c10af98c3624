//! The requests DPDK's bnxt PMD (drivers/net/bnxt/bnxt_hwrm.c) sends to bring up, start, run and
//! stop a P7 port, as it sends them: FUNC_QCAPS's capability flags, the V1 backing-store pair
//! (refused on P7), a level-1 context table longer than a page, FUNC_CFG with the MTUs and the
//! standard-TX-ring-mode flag, VNIC_PLCMODES_QCFG before VNIC_CFG, coalescing with timer reset
//! and ring-idle, PORT_MAC_QCFG, PORT_CLR_STATS, STAT_CTX_QUERY and STAT_CTX_CLR_STATS, statistics
//! contexts freed and allocated again at `port stop`/`port start`, VLAN filters without
//! `num_vlans`, a forced speed with duplex BOTH.

mod common;
mod l2_support;

use std::time::Duration;

use bnxt_hsi::hwrm::layouts::*;
use common::{Pages, Rig, req, reserve_rings, roomy_reservation};
use l2_support::{L2Nic, Setup, eth};
use rstest::rstest;

const INVALID_PARAMS: u16 = 2;
const CMD_NOT_SUPPORTED: u16 = 0xffff;

type F = HwrmFuncCfgInput;
type Q = HwrmFuncQcapsOutput;

#[test]
fn func_qcaps_sets_the_bit_dpdk_reads_as_backing_store_v2_and_bnxt_en_reads_in_flags_ext() {
    let mut rig = Rig::new(1);
    let q = rig.ok(0, req::<HwrmFuncQcapsInput>());
    // DPDK: `flags & HWRM_FUNC_QCAPS_OUTPUT_FLAGS_EXT_BS_V2_SUPPORTED` (0x4000000 of `flags`, which
    // the HSI names NOTIFY_VF_DEF_VNIC_CHNG_SUPPORTED).
    assert_ne!(q.flags.get() & 0x400_0000, 0);
    assert_ne!(q.flags.get() & Q::FLAGS_NOTIFY_VF_DEF_VNIC_CHNG_SUPPORTED, 0);
    assert_ne!(q.flags.get() & Q::FLAGS_ROCE_V2_SUPPORTED, 0);
    assert_eq!(q.flags.get() & Q::FLAGS_VLAN_ACCELERATION_TX_DISABLED, 0, "VLAN insertion offered");
    let ext = q.flags_ext.get();
    assert_ne!(ext & Q::FLAGS_EXT_BS_V2_SUPPORTED, 0);
    assert_ne!(ext & Q::FLAGS_EXT_BS_V2_REQUIRED, 0);
}

#[rstest]
#[case::qcaps(bnxt_hsi::hwrm::req_type::FUNC_BACKING_STORE_QCAPS)]
#[case::cfg(bnxt_hsi::hwrm::req_type::FUNC_BACKING_STORE_CFG)]
fn the_v1_backing_store_pair_is_not_served_on_p7(#[case] req_type: u16) {
    let mut rig = Rig::new(1);
    let mut bytes = vec![0u8; 64];
    bytes[0..2].copy_from_slice(&req_type.to_le_bytes());
    assert_eq!(rig.call_raw(0, bytes).code, CMD_NOT_SUPPORTED);
    assert!(rig.last_reason().unwrap().contains("BS_V2_REQUIRED"));
    // A refusal with its reason, not an unknown request.
    assert!(rig.world.nic_state(0).unsupported_requests.is_empty());
}

#[test]
fn a_context_type_in_one_level_one_table_longer_than_a_page_is_taken() {
    // DPDK's `bnxt_alloc_ctx_mem_blk` names each type's memory with one contiguous table of
    // `nr_pages` PTEs: 600 pages of CQ contexts (38,400 of 64 bytes) take a 4,800-byte table.
    let mut rig = Rig::new(1);
    let mut pages = Pages::default();
    let entries = 600 * 4096 / 64;
    let data: Vec<u64> = (0..600).map(|_| pages.take(1)).collect();
    let table = pages.take(2);
    rig.poke_u64s(0, table, &data.iter().map(|a| a | 1).collect::<Vec<_>>());
    let mut r: HwrmFuncBackingStoreCfgV2Input = req();
    r.type_ = 2.into(); // CQ
    r.num_entries = (entries as u32).into();
    r.entry_size = 64.into();
    r.page_size_pbl_level = 1;
    r.page_dir = table.into();
    rig.ok(0, r);
    // The same memory named by a table whose 513th entry is not valid is refused.
    rig.poke_u64s(0, table + 512 * 8, &[data[512]]);
    assert_eq!(rig.call(0, r).code, INVALID_PARAMS);
    assert!(rig.last_reason().unwrap().contains("entry 512"));
}

#[test]
fn tqm_rings_offer_what_bnxt_en_asks_for_without_megabytes_more() {
    let mut rig = Rig::new(1);
    for ty in [5u16, 6] {
        let mut q: HwrmFuncBackingStoreQcapsV2Input = req();
        q.type_ = ty.into();
        let c = rig.ok(0, q);
        // DPDK asks for max_num_entries of every TQM ring: 4 MiB each at most.
        assert!(u64::from(c.max_num_entries.get()) * u64::from(c.entry_size.get()) <= 4 << 20);
        assert!(c.max_num_entries.get() >= 132_544, "bnxt_en's TQM sizing with RoCE fits");
    }
}

/// FUNC_CFG as DPDK's `bnxt_hwrm_pf_func_cfg` sends it (after `bnxt_hwrm_allocate_pf_only`).
fn dpdk_func_cfg() -> F {
    let mut c = reserve_rings(1, 1, 2, 2, 2, 1, 1);
    c.enables =
        (c.enables.get() | F::ENABLES_ADMIN_MTU | F::ENABLES_HOST_MTU | F::ENABLES_MRU | F::ENABLES_NUM_L2_CTXS).into();
    c.flags = F::FLAGS_STD_TX_RING_MODE_DISABLE.into();
    (c.admin_mtu, c.host_mtu, c.mru, c.num_l2_ctxs) = (9574.into(), 1500.into(), 1518.into(), 1.into());
    c
}

#[test]
fn func_cfg_takes_dpdks_mtus_and_tx_ring_mode_and_func_qcfg_reports_them() {
    let mut rig = Rig::new(1);
    rig.ok(0, dpdk_func_cfg());
    let q = rig.ok(0, req::<HwrmFuncQcfgInput>());
    assert_eq!((q.admin_mtu.get(), q.host_mtu.get(), q.mru.get()), (9574, 1500, 1518));
    assert_eq!(q.flags.get() & HwrmFuncQcfgOutput::FLAGS_STD_TX_RING_MODE_ENABLED, 0);
    assert_eq!((q.alloc_tx_rings.get(), q.alloc_l2_ctx.get()), (1, 1));
    // A later request changes only the MTU it enables; ENABLE turns the mode on.
    let mut c: F = req();
    c.fid = 0xffff.into();
    c.enables = F::ENABLES_HOST_MTU.into();
    c.host_mtu = 9000.into();
    c.flags = F::FLAGS_STD_TX_RING_MODE_ENABLE.into();
    rig.ok(0, c);
    let q = rig.ok(0, req::<HwrmFuncQcfgInput>());
    assert_eq!((q.admin_mtu.get(), q.host_mtu.get()), (9574, 9000));
    assert_ne!(q.flags.get() & HwrmFuncQcfgOutput::FLAGS_STD_TX_RING_MODE_ENABLED, 0);
    c.flags = (F::FLAGS_STD_TX_RING_MODE_ENABLE | F::FLAGS_STD_TX_RING_MODE_DISABLE).into();
    assert_eq!(rig.call(0, c).code, INVALID_PARAMS, "both at once");
}

#[test]
fn plcmodes_qcfg_reports_what_plcmodes_cfg_set_and_dpdks_write_back_is_taken() {
    let mut rig = Rig::new(1);
    rig.ok(0, roomy_reservation());
    let mut va: HwrmVnicAllocInput = req();
    va.flags = HwrmVnicAllocInput::FLAGS_DEFAULT.into();
    let vnic = rig.ok(0, va).vnic_id.get() as u16;
    let mut q: HwrmVnicPlcmodesQcfgInput = req();
    q.vnic_id = u32::from(vnic).into();
    type P = HwrmVnicPlcmodesQcfgOutput;
    let got = rig.ok(0, q);
    assert_eq!(got.flags.get(), P::FLAGS_REGULAR_PLACEMENT | P::FLAGS_DFLT_VNIC);
    // DPDK's `bnxt_hwrm_vnic_plcmodes_cfg`: the flags read (DFLT_VNIC taken out), all three
    // thresholds enabled with the values read.
    type C = HwrmVnicPlcmodesCfgInput;
    let mut c: C = req();
    c.vnic_id = u32::from(vnic).into();
    c.flags = (got.flags.get() & !P::FLAGS_DFLT_VNIC).into();
    c.enables = (C::ENABLES_HDS_THRESHOLD_VALID | C::ENABLES_HDS_OFFSET_VALID | C::ENABLES_JUMBO_THRESH_VALID).into();
    rig.ok(0, c);
    let mut jumbo = c;
    jumbo.flags = (C::FLAGS_JUMBO_PLACEMENT | C::FLAGS_HDS_IPV4).into();
    (jumbo.jumbo_thresh, jumbo.hds_threshold) = (2048.into(), 256.into());
    rig.ok(0, jumbo);
    let got = rig.ok(0, q);
    assert_eq!(got.flags.get(), P::FLAGS_JUMBO_PLACEMENT | P::FLAGS_HDS_IPV4 | P::FLAGS_DFLT_VNIC);
    assert_eq!((got.jumbo_thresh.get(), got.hds_threshold.get()), (2048, 256));
    let mut offset = c;
    offset.hds_offset = 64.into();
    assert_eq!(rig.call(0, offset).code, INVALID_PARAMS, "a non-zero hds_offset is not modelled");
    q.vnic_id = 77.into();
    assert_eq!(rig.call(0, q).code, INVALID_PARAMS, "no such VNIC");
}

#[test]
fn coalescing_with_timer_reset_and_ring_idle_is_kept() {
    let mut rig = Rig::new(1);
    let mut pages = Pages::default();
    rig.ok(0, roomy_reservation());
    let mut r: HwrmRingAllocInput = req();
    r.ring_type = HwrmRingAllocInput::RING_TYPE_L2_CMPL;
    r.length = 64.into();
    r.page_tbl_addr = pages.take(1).into();
    let cq = rig.ok(0, r).ring_id.get();
    type A = HwrmRingCmplRingCfgAggintParamsInput;
    let mut c: A = req();
    c.ring_id = cq.into();
    c.flags = (A::FLAGS_TIMER_RESET | A::FLAGS_RING_IDLE).into();
    c.enables = (A::ENABLES_NUM_CMPL_DMA_AGGR | A::ENABLES_CMPL_AGGR_DMA_TMR).into();
    (c.num_cmpl_dma_aggr, c.cmpl_aggr_dma_tmr) = (63.into(), 1.into());
    rig.ok(0, c);
    assert_eq!(rig.world.device(0).firmware().state().l2.coalescing[&cq].flags, 0x3);
    c.flags = 0x8.into();
    assert_eq!(rig.call(0, c).code, INVALID_PARAMS, "an undefined flag");
}

#[test]
fn port_mac_qcfg_reports_the_mtus_and_a_valid_svif() {
    let mut rig = Rig::new(1);
    let q = rig.ok(0, req::<HwrmPortMacQcfgInput>());
    let svif = q.port_svif_info.get();
    assert_ne!(svif & HwrmPortMacQcfgOutput::PORT_SVIF_INFO_PORT_SVIF_VALID, 0);
    assert_eq!(q.ipg, 12);
    rig.ok(0, dpdk_func_cfg());
    let q = rig.ok(0, req::<HwrmPortMacQcfgInput>());
    assert_eq!((q.mtu.get(), q.mru.get()), (1500, 1518));
    let mut other: HwrmPortMacQcfgInput = req();
    other.port_id = 3.into();
    assert_eq!(rig.call(0, other).code, INVALID_PARAMS);
}

fn stat_query(rig: &mut Rig, nic: usize, id: u32) -> HwrmStatCtxQueryOutput {
    let mut q: HwrmStatCtxQueryInput = req();
    q.stat_ctx_id = id.into();
    rig.ok(nic, q)
}

/// Two brought-up NICs, receive buffers posted on the second, and two 100-byte frames sent from
/// the first to the second and delivered: what the counter tests count.
fn two_frames_from_a_to_b(rig: &mut Rig) -> (L2Nic, L2Nic, Vec<u8>) {
    let mut a = L2Nic::bring_up(rig, 0, Setup::default());
    let mut b = L2Nic::bring_up(rig, 1, Setup::default());
    b.post_rx(rig, 8);
    let frame = eth(b.mac, a.mac, 0x88b5, &[0xab; 100]);
    a.send(rig, &frame);
    a.send(rig, &frame);
    rig.world.advance(Duration::from_millis(1));
    (a, b, frame)
}

#[test]
fn ring_and_port_counters_are_queried_and_cleared_as_dpdk_does() {
    let mut rig = Rig::new(2);
    let (mut a, b, frame) = two_frames_from_a_to_b(&mut rig);
    let tx = stat_query(&mut rig, 0, a.stats[0]);
    assert_eq!((tx.tx_ucast_pkts.get(), tx.tx_ucast_bytes.get()), (2, 2 * frame.len() as u64));
    let rx = stat_query(&mut rig, 1, b.stats[1]);
    assert_eq!((rx.rx_ucast_pkts.get(), rx.rx_ucast_bytes.get()), (2, 2 * frame.len() as u64));
    assert_eq!(rx.tx_ucast_pkts.get(), 0);
    // STAT_CTX_CLR_STATS, then one more frame: counted from zero.
    let mut c: HwrmStatCtxClrStatsInput = req();
    c.stat_ctx_id = b.stats[1].into();
    rig.ok(1, c);
    assert_eq!(stat_query(&mut rig, 1, b.stats[1]).rx_ucast_pkts.get(), 0);
    a.send(&mut rig, &frame);
    rig.world.advance(Duration::from_millis(1));
    assert_eq!(stat_query(&mut rig, 1, b.stats[1]).rx_ucast_pkts.get(), 1);
    c.stat_ctx_id = 999.into();
    assert_eq!(rig.call(1, c).code, INVALID_PARAMS);
    let mut mask: HwrmStatCtxQueryInput = req();
    (mask.stat_ctx_id, mask.flags) = (b.stats[1].into(), HwrmStatCtxQueryInput::FLAGS_COUNTER_MASK);
    assert_eq!(rig.call(1, mask).code, INVALID_PARAMS, "counter widths are not modelled");

    // PORT_CLR_STATS: PORT_QSTATS counts from zero again.
    let stats = a.pages.take(2);
    let mut qs: HwrmPortQstatsInput = req();
    (qs.tx_stat_host_addr, qs.rx_stat_host_addr) = (stats.into(), (stats + 4096).into());
    rig.ok(0, qs);
    // The TX block's counters (tx_port_stats): some non-zero after three frames, none after.
    let nonzero = |rig: &Rig| rig.peek(0, stats, 256).iter().filter(|&&b| b != 0).count();
    assert!(nonzero(&rig) > 0);
    rig.ok(0, req::<HwrmPortClrStatsInput>());
    rig.world.advance(Duration::from_millis(1));
    rig.poke(0, stats, &[0xee; 256]);
    rig.ok(0, qs);
    assert_eq!(nonzero(&rig), 0);
    let mut other: HwrmPortClrStatsInput = req();
    other.port_id = 2.into();
    assert_eq!(rig.call(0, other).code, INVALID_PARAMS);
}

/// A frame to `dst` from `src` with an 802.1Q tag of VLAN `vid`.
fn tagged(dst: [u8; 6], src: [u8; 6], vid: u16) -> Vec<u8> {
    let mut f = eth(dst, src, 0x8100, &[]);
    f.truncate(14);
    f.extend_from_slice(&vid.to_be_bytes());
    f.extend_from_slice(&0x88b5u16.to_be_bytes());
    f.extend_from_slice(&[0xab; 100]);
    f
}

/// CFA_L2_FILTER_ALLOC of a MAC and VLAN filter as DPDK's `bnxt_add_vlan_filter` sends it: no
/// `num_vlans`, the flags `bnxt_hwrm_set_l2_filter` adds.
fn dpdk_vlan_filter(mac: [u8; 6], vnic: u16, vid: u16) -> HwrmCfaL2FilterAllocInput {
    type A = HwrmCfaL2FilterAllocInput;
    let mut f: A = req();
    f.flags = (A::FLAGS_PATH_RX | A::FLAGS_OUTERMOST | A::FLAGS_XDP_DISABLE | A::FLAGS_TRAFFIC_L2).into();
    f.enables = (A::ENABLES_L2_ADDR
        | A::ENABLES_L2_ADDR_MASK
        | A::ENABLES_L2_IVLAN
        | A::ENABLES_L2_IVLAN_MASK
        | A::ENABLES_DST_ID)
        .into();
    (f.l2_addr, f.l2_addr_mask) = (mac, [0xff; 6]);
    (f.l2_ivlan, f.l2_ivlan_mask) = (vid.into(), 0xfff.into());
    f.dst_id = vnic.into();
    f
}

#[test]
fn vlan_filters_as_dpdk_allocates_them_take_their_vlan_and_vlan_0_untagged_frames() {
    let mut rig = Rig::new(2);
    let mut a = L2Nic::bring_up(&mut rig, 0, Setup::default());
    let mut b = L2Nic::bring_up(&mut rig, 1, Setup::default());
    b.post_rx(&mut rig, 16);
    // VLAN filtering on: the MAC filter goes, one for VLAN 0 (untagged frames) and one for 100 come.
    let mut free: HwrmCfaL2FilterFreeInput = req();
    free.l2_filter_id = b.filter.into();
    rig.ok(1, free);
    rig.ok(1, dpdk_vlan_filter(b.mac, b.vnic, 0));
    rig.ok(1, dpdk_vlan_filter(b.mac, b.vnic, 100));
    let received = |rig: &mut Rig| stat_query(rig, 1, b.stats[1]).rx_ucast_pkts.get();
    for (frame, taken) in [
        (tagged(b.mac, a.mac, 100), true),
        (tagged(b.mac, a.mac, 200), false),
        (eth(b.mac, a.mac, 0x88b5, &[0xab; 100]), true),
        (tagged(b.mac, a.mac, 0x6000), true), // priority-tagged: VLAN 0
    ] {
        let before = received(&mut rig);
        a.send(&mut rig, &frame);
        rig.world.advance(Duration::from_millis(1));
        assert_eq!(received(&mut rig) - before, u64::from(taken), "{:02x?}", &frame[12..16]);
    }
    // bnxt_en's form (NUM_VLANS, num_vlans 1) is taken too; more than one tag is not modelled.
    let mut counted = dpdk_vlan_filter(b.mac, b.vnic, 300);
    counted.enables = (counted.enables.get() | HwrmCfaL2FilterAllocInput::ENABLES_NUM_VLANS).into();
    counted.num_vlans = 1;
    rig.ok(1, counted);
    counted.num_vlans = 2;
    assert_eq!(rig.call(1, counted).code, INVALID_PARAMS);
}

#[test]
fn a_statistics_context_allocated_again_under_its_id_counts_from_zero() {
    // DPDK frees its rings' contexts at `port stop` and allocates them again at `port start`, at
    // the same addresses; the firmware hands out the same ids.
    let mut rig = Rig::new(2);
    let (mut a, _, frame) = two_frames_from_a_to_b(&mut rig);
    assert_eq!(stat_query(&mut rig, 0, a.stats[0]).tx_ucast_pkts.get(), 2);
    let mut free: HwrmStatCtxFreeInput = req();
    free.stat_ctx_id = a.stats[0].into();
    rig.ok(0, free);
    let mut alloc: HwrmStatCtxAllocInput = req();
    alloc.stats_dma_addr = a.stats_addr[0].into();
    alloc.stats_dma_length = 160.into();
    alloc.update_period_ms = 1000.into();
    assert_eq!(rig.ok(0, alloc).stat_ctx_id.get(), a.stats[0], "the same id again");
    assert_eq!(stat_query(&mut rig, 0, a.stats[0]).tx_ucast_pkts.get(), 0);
    // The TX ring still names the id: its next frame counts from zero.
    a.send(&mut rig, &frame);
    rig.world.advance(Duration::from_millis(1));
    assert_eq!(stat_query(&mut rig, 0, a.stats[0]).tx_ucast_pkts.get(), 1);
}

#[test]
fn a_forced_speed_with_either_duplex_is_taken_as_dpdk_sends_it() {
    // `bnxt_hwrm_port_phy_cfg_v2` for `port config 0 speed 200000 duplex full`: RESET_PHY | FORCE,
    // force_link_speeds2, auto_duplex BOTH (`bnxt_parse_eth_link_duplex`), force_pause.
    type P = HwrmPortPhyCfgInput;
    let mut rig = Rig::new(1);
    let mut cfg: P = req();
    cfg.flags = (P::FLAGS_RESET_PHY | P::FLAGS_FORCE).into();
    cfg.enables = (P::ENABLES_FORCE_LINK_SPEEDS2 | P::ENABLES_AUTO_DUPLEX | P::ENABLES_FORCE_PAUSE).into();
    cfg.force_link_speeds2 = P::FORCE_LINK_SPEEDS2_200GB_PAM4_56.into();
    cfg.auto_duplex = P::AUTO_DUPLEX_BOTH;
    rig.ok(0, cfg);
    let q = rig.ok(0, req::<HwrmPortPhyQcfgInput>());
    assert_eq!(
        (q.link, q.link_speed.get()),
        (HwrmPortPhyQcfgOutput::LINK_LINK, HwrmPortPhyQcfgOutput::LINK_SPEED_200GB)
    );
    cfg.auto_duplex = P::AUTO_DUPLEX_HALF;
    assert_eq!(rig.call(0, cfg).code, INVALID_PARAMS, "the port runs full duplex only");
}
