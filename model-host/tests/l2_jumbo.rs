//! Jumbo frames on the L2 path as bnxt_en receives them once its MTU needs more than a page: an
//! aggregation ring serving the RX ring, VNIC_PLCMODES_CFG asking for jumbo placement and
//! header-data split at 256 bytes (bnxt.c `bnxt_hwrm_vnic_set_hds`), and a frame's headers in the
//! RX buffer, the rest in aggregation buffers with an RX_AGG completion each after the packet's
//! completion (bnxt.c `bnxt_rx_pkt`, `__bnxt_rx_agg_pages`).

mod common;
mod l2_support;

use std::time::Duration;

use bnxt_hsi::hwrm::layouts::*;
use bnxt_model::l2::doorbell::L2DbKind;
use common::{Rig, req, reserve_rings};
use l2_support::{L2Nic, RING_LEN, Setup, db, eth, udp4};

/// Bytes of an aggregation buffer (bnxt.h `BNXT_RX_PAGE_SIZE` on 4 KiB pages).
const AGG_BUF: u32 = 4096;
/// bnxt_en's copy threshold (`BNXT_RX_COPY_THRESH`): both thresholds it asks for.
const THRESH: u16 = 256;

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// NIC `b` with an aggregation ring of `RING_LEN` page-sized buffers behind its RX ring, jumbo
/// placement and header-data split, and room for 9000-byte frames; (ring id, buffer addresses,
/// ring address).
fn with_agg_ring(rig: &mut Rig, b: &mut L2Nic) -> (u16, Vec<u64>, u64) {
    rig.ok(b.nic, reserve_rings(1, 2, 2, 1, 2, 1, 1));
    type R = HwrmRingAllocInput;
    let addr = b.pages.take(1);
    let mut r: R = req();
    r.ring_type = R::RING_TYPE_RX_AGG;
    r.length = RING_LEN.into();
    r.page_tbl_addr = addr.into();
    r.rx_ring_id = b.rx.into();
    r.rx_buf_size = (AGG_BUF as u16).into();
    r.stat_ctx_id = b.stats[1].into();
    r.enables = (R::ENABLES_RX_RING_ID_VALID | R::ENABLES_RX_BUF_SIZE_VALID).into();
    let agg = rig.ok(b.nic, r).ring_id.get();
    let bufs: Vec<u64> = (0..RING_LEN).map(|_| b.pages.take(1)).collect();
    type P = HwrmVnicPlcmodesCfgInput;
    let mut p: P = req();
    p.vnic_id = u32::from(b.vnic).into();
    p.flags = (P::FLAGS_JUMBO_PLACEMENT | P::FLAGS_HDS_IPV4 | P::FLAGS_HDS_IPV6).into();
    p.enables = (P::ENABLES_JUMBO_THRESH_VALID | P::ENABLES_HDS_THRESHOLD_VALID).into();
    p.jumbo_thresh = THRESH.into();
    p.hds_threshold = THRESH.into();
    rig.ok(b.nic, p);
    let mut vc: HwrmVnicCfgInput = req();
    type V = HwrmVnicCfgInput;
    vc.vnic_id = b.vnic.into();
    vc.enables = (V::ENABLES_DEFAULT_RX_RING_ID | V::ENABLES_DEFAULT_CMPL_RING_ID | V::ENABLES_MRU).into();
    vc.default_rx_ring_id = b.rx.into();
    vc.default_cmpl_ring_id = b.rx_cq.id.into();
    vc.mru = 9018.into();
    rig.ok(b.nic, vc);
    (agg, bufs, addr)
}

/// Post `n` aggregation BDs from raw producer `prod` (opaque 0x8000 | index), ring the doorbell;
/// the new producer.
fn post_agg(rig: &mut Rig, b: &L2Nic, (agg, bufs, addr): &(u16, Vec<u64>, u64), prod: u32, n: u32) -> u32 {
    let mut p = prod;
    for _ in 0..n {
        let idx = p % RING_LEN;
        let mut bd = Vec::with_capacity(16);
        bd.extend_from_slice(&(0x6 | (1 << 6) | (AGG_BUF << 16)).to_le_bytes());
        bd.extend_from_slice(&(0x8000 | idx).to_le_bytes());
        bd.extend_from_slice(&bufs[idx as usize].to_le_bytes());
        rig.poke(b.nic, addr + 16 * u64::from(idx), &bd);
        p = (p + 1) % (2 * RING_LEN);
    }
    b.ring(rig, db(L2DbKind::Srq, *agg, p, RING_LEN, 0));
    p
}

/// Send `frame` from `a` out of a buffer of its own (frames longer than a page).
fn send_big(rig: &mut Rig, a: &mut L2Nic, frame: &[u8]) {
    let idx = (a.tx_prod % RING_LEN) as usize;
    a.tx_bufs[idx] = a.pages.take(frame.len().div_ceil(4096) as u64);
    a.send(rig, frame);
    a.take_cq(rig, 0);
    rig.world.advance(Duration::from_millis(1));
}

/// Put the packet of completion entries `c` back together from the RX buffer `rx_buf` and the
/// aggregation buffers `bufs`; (placement code, agg count, RX buffer part, the bytes).
fn reassemble(rig: &Rig, nic: usize, c: &[[u8; 16]], rx_buf: u64, bufs: &[u64]) -> (u32, usize, usize, Vec<u8>) {
    let w0 = le32(&c[0], 0);
    let aggs = ((le32(&c[0], 8) >> 1) & 0x1f) as usize;
    let head = (w0 >> 16) as usize;
    let mut data = rig.peek(nic, rx_buf, head);
    for e in &c[2..2 + aggs] {
        assert_eq!(le32(e, 0) & 0x3f, 0x12, "RX_AGG completion");
        assert_eq!(e[8] & 1, 1, "valid");
        let len = (le32(e, 0) >> 16) as usize;
        let opaque = le32(e, 4);
        assert_eq!(opaque & 0x8000, 0x8000, "the aggregation BD's opaque");
        data.extend(rig.peek(nic, bufs[(opaque & 0x7fff) as usize], len));
    }
    ((w0 >> 7) & 7, aggs, head, data)
}

#[test]
fn a_jumbo_udp_frame_is_split_after_its_headers_into_aggregation_buffers() {
    let mut rig = Rig::new(2);
    let mut a = L2Nic::bring_up(&mut rig, 0, Setup::default());
    let mut b = L2Nic::bring_up(&mut rig, 1, Setup::default());
    let agg = with_agg_ring(&mut rig, &mut b);
    post_agg(&mut rig, &b, &agg, 0, 16);
    b.post_rx(&mut rig, 4);
    let payload: Vec<u8> = (0..8958u32).map(|i| (i * 7 % 251) as u8).collect();
    let frame = udp4(b.mac, a.mac, ([10, 0, 0, 1], [10, 0, 0, 2]), (1000, 2000), &payload, true);
    assert_eq!(frame.len(), 9000);
    send_big(&mut rig, &mut a, &frame);
    let c = b.take_cq(&mut rig, 1);
    assert_eq!(c.len(), 2 + 3, "the packet's two entries, then three RX_AGG completions");
    let (placement, aggs, head, data) = reassemble(&rig, 1, &c, b.rx_bufs[0], &agg.1);
    assert_eq!((placement, aggs, head), (2, 3, 14 + 20 + 8), "header-data split after the UDP header");
    assert!(data == frame, "the frame, whole, across the buffers");
    let lens: Vec<u32> = c[2..].iter().map(|e| le32(e, 0) >> 16).collect();
    assert_eq!(lens, [4096, 4096, 766]);
    let flags2 = le32(&c[1], 0);
    assert_eq!(flags2 & 0x3, 0x3, "IP and L4 checksums checked over the whole frame");
    assert_eq!(le32(&c[1], 8) & 0xfffe, 0, "no errors");
    assert_eq!(rig.world.device(1).l2().counters().rx_agg_bufs, 3);
}

#[test]
fn frames_other_than_ip_take_the_jumbo_threshold_and_small_ones_stay_whole() {
    let mut rig = Rig::new(2);
    let mut a = L2Nic::bring_up(&mut rig, 0, Setup::default());
    let mut b = L2Nic::bring_up(&mut rig, 1, Setup::default());
    let agg = with_agg_ring(&mut rig, &mut b);
    post_agg(&mut rig, &b, &agg, 0, 16);
    b.post_rx(&mut rig, 4);
    let big = eth(b.mac, a.mac, 0x88b5, &(0..5986u32).map(|i| i as u8).collect::<Vec<_>>());
    send_big(&mut rig, &mut a, &big);
    let c = b.take_cq(&mut rig, 1);
    let (placement, aggs, head, data) = reassemble(&rig, 1, &c, b.rx_bufs[0], &agg.1);
    assert_eq!((placement, aggs, head), (1, 2, 256), "jumbo placement: the first 256 bytes in the RX buffer");
    assert!(data == big);
    let small = eth(b.mac, a.mac, 0x88b5, &[5; 200]);
    send_big(&mut rig, &mut a, &small);
    let c = b.take_cq(&mut rig, 1);
    assert_eq!(c.len(), 2, "no aggregation buffer");
    assert!(reassemble(&rig, 1, &c, b.rx_bufs[1], &agg.1) == (0, 0, small.len(), small));
}

#[test]
fn a_frame_without_enough_aggregation_buffers_is_dropped_and_keeps_its_rx_buffer() {
    let mut rig = Rig::new(2);
    let mut a = L2Nic::bring_up(&mut rig, 0, Setup::default());
    let mut b = L2Nic::bring_up(&mut rig, 1, Setup::default());
    let agg = with_agg_ring(&mut rig, &mut b);
    let prod = post_agg(&mut rig, &b, &agg, 0, 1);
    b.post_rx(&mut rig, 4);
    let frame = udp4(b.mac, a.mac, ([10, 0, 0, 1], [10, 0, 0, 2]), (1, 2), &[9; 8000], true);
    send_big(&mut rig, &mut a, &frame);
    assert!(b.take_cq(&mut rig, 1).is_empty(), "dropped");
    let drops = rig.world.device(1).l2().counters().rx_drops.clone();
    assert_eq!(drops.get("no aggregation buffer posted"), Some(&1), "{drops:?}");
    // With buffers posted, the next one lands in RX buffer 0: the dropped frame took none.
    post_agg(&mut rig, &b, &agg, prod, 8);
    send_big(&mut rig, &mut a, &frame);
    let c = b.take_cq(&mut rig, 1);
    assert_eq!(le32(&c[0], 4), 0, "RX BD 0");
    assert!(reassemble(&rig, 1, &c, b.rx_bufs[0], &agg.1).3 == frame);
}

#[test]
fn plcmodes_cfg_refuses_what_it_does_not_model_and_a_threshold_past_ten_bits() {
    let mut rig = Rig::new(1);
    let b = L2Nic::bring_up(&mut rig, 0, Setup::default());
    type P = HwrmVnicPlcmodesCfgInput;
    let mut p: P = req();
    p.vnic_id = u32::from(b.vnic).into();
    p.flags = P::FLAGS_HDS_IPV4.into();
    p.enables = P::ENABLES_HDS_THRESHOLD_VALID.into();
    p.hds_threshold = 0x400.into();
    assert_eq!(rig.call(0, p).code, 2, "hds_threshold 0x400: the HSI says the firmware fails it");
    p.hds_threshold = 0x3fc.into();
    assert_eq!(rig.call(0, p).code, 0);
    p.flags = P::FLAGS_HDS_ROCE.into();
    assert_eq!(rig.call(0, p).code, 2, "RoCE header-data split is not modelled");
    p.flags = 0.into();
    p.vnic_id = 77.into();
    assert_eq!(rig.call(0, p).code, 2, "no VNIC 77");
    // An aggregation ring must name an RX ring when it names one (asked within the function's
    // reservation, so that it is the ring it names that is refused).
    rig.ok(b.nic, reserve_rings(1, 2, 2, 1, 2, 1, 1));
    type R = HwrmRingAllocInput;
    let mut r: R = req();
    r.ring_type = R::RING_TYPE_RX_AGG;
    r.length = RING_LEN.into();
    r.page_tbl_addr = common::SCRATCH.into();
    r.rx_ring_id = b.tx.into();
    r.enables = R::ENABLES_RX_RING_ID_VALID.into();
    assert_eq!(rig.call(0, r).code, 2, "a TX ring is no RX ring");
}
