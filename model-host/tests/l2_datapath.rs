//! The L2 data path as Linux's bnxt_en drives it: frames sent from one NIC's TX ring arrive in
//! the other's RX ring across the World's segment, with TX and RX completions, CQ notifications
//! on the NQ, MSI-X vectors, offloads, steering, drops, statistics DMA, coalescing, HWRM_DONE
//! completions and link events.

mod common;
mod l2_support;

use std::time::Duration;

use bnxt_hsi::hwrm::layouts::*;
use bnxt_model::l2::doorbell::L2DbKind;
use common::{Rig, req};
use l2_support::{L2Nic, RING_LEN, RX_BUF, Setup, VECTOR, db, eth, udp4};
use zerocopy::IntoBytes;

fn pair(setup: Setup) -> (Rig, L2Nic, L2Nic) {
    let mut rig = Rig::new(2);
    let a = L2Nic::bring_up(&mut rig, 0, setup);
    let b = L2Nic::bring_up(&mut rig, 1, setup);
    (rig, a, b)
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Let the frames in flight arrive.
fn settle(rig: &mut Rig) {
    rig.world.advance(Duration::from_millis(1));
}

#[test]
fn a_frame_goes_from_one_tx_ring_to_the_other_nics_rx_ring_with_completions_and_interrupts() {
    let (mut rig, mut a, mut b) = pair(Setup::default());
    b.post_rx(&mut rig, 8);
    let frame = eth(b.mac, a.mac, 0x88b5, &[0xab; 100]);
    let opaque = a.send(&mut rig, &frame);

    // Sender: one TX completion with the first BD's opaque, one notification for the TX ring's
    // completion ring on the NQ, the NQ's vector raised.
    assert_eq!(rig.world.take_interrupts(0), vec![VECTOR]);
    let nq = a.take_nq(&mut rig);
    assert_eq!(nq.len(), 1);
    assert_eq!(a.note(&nq[0]), Some(0), "notification names the TX completion ring");
    assert_eq!(u16::from_le_bytes([nq[0][0], nq[0][1]]) >> 6 & 3, 1, "first notification's toggle");
    let tx = a.take_cq(&mut rig, 0);
    assert_eq!(tx.len(), 1);
    assert_eq!(le32(&tx[0], 0) & 0x3f, 0, "TX_L2 completion");
    assert_eq!(le32(&tx[0], 4), opaque);
    assert_eq!(le32(&tx[0], 8) & !1, 0, "no errors");

    settle(&mut rig);
    // Receiver: the frame in buffer 0, an RX v3 completion (two entries), a notification.
    assert_eq!(rig.world.take_interrupts(1), vec![VECTOR]);
    let nq = b.take_nq(&mut rig);
    assert_eq!(b.note(&nq[0]), Some(1));
    let rx = b.take_cq(&mut rig, 1);
    assert_eq!(rx.len(), 2);
    let w0 = le32(&rx[0], 0);
    assert_eq!(w0 & 0x3f, 0x17, "RX_L2_V3 completion");
    assert_eq!((w0 >> 16) as usize, frame.len());
    assert_eq!(le32(&rx[0], 4), 0, "opaque of BD 0");
    assert_eq!(rig.peek(1, b.rx_bufs[0], frame.len()), frame);
    assert_eq!(rx[1][8] & 1, 1, "second entry valid too");

    // Counters: ring statistics reach host memory once the update period passed.
    rig.world.advance(Duration::from_millis(1100));
    let s = rig.peek(0, a.stats_addr[0], 160);
    assert_eq!(u64::from_le_bytes(s[64..72].try_into().unwrap()), 1, "tx_ucast_pkts");
    assert_eq!(u64::from_le_bytes(s[104..112].try_into().unwrap()), frame.len() as u64, "tx_ucast_bytes");
    let s = rig.peek(1, b.stats_addr[1], 160);
    assert_eq!(u64::from_le_bytes(s[0..8].try_into().unwrap()), 1, "rx_ucast_pkts");
    let c = rig.world.device(1).l2().counters();
    assert_eq!((c.rx_frames, c.rx_drops.len()), (1, 0));
}

#[test]
fn short_frames_are_padded_and_no_cmpl_packets_complete_with_the_next() {
    let (mut rig, mut a, mut b) = pair(Setup::default());
    b.post_rx(&mut rig, 4);
    let short = eth(b.mac, a.mac, 0x88b5, &[1, 2, 3]);
    a.queue_tx(&mut rig, &short, 0, 0, 0, 1 << 7); // NO_CMPL
    let second = a.queue_tx(&mut rig, &short, 0, 0, 0, 0);
    a.kick_tx(&mut rig);
    let tx = a.take_cq(&mut rig, 0);
    assert_eq!(tx.len(), 1, "only the packet without NO_CMPL completes");
    assert_eq!(le32(&tx[0], 4), second);
    settle(&mut rig);
    let rx = b.take_cq(&mut rig, 1);
    assert_eq!(rx.len(), 4, "two frames, two entries each");
    assert_eq!(le32(&rx[0], 0) >> 16, 60, "padded to the 60-byte minimum");
}

#[test]
fn frames_no_filter_takes_and_frames_without_buffers_are_dropped_and_counted() {
    let (mut rig, mut a, mut b) = pair(Setup::default());
    // No buffers posted yet.
    a.send(&mut rig, &eth(b.mac, a.mac, 0x88b5, &[0; 50]));
    settle(&mut rig);
    // A unicast frame to someone else, a multicast the mask does not take.
    a.send(&mut rig, &eth([2, 9, 9, 9, 9, 9], a.mac, 0x88b5, &[0; 50]));
    a.send(&mut rig, &eth([1, 0, 0x5e, 0, 0, 1], a.mac, 0x88b5, &[0; 50]));
    settle(&mut rig);
    let c = rig.world.device(1).l2().counters();
    assert_eq!(c.rx_drops.get("no RX buffer posted"), Some(&1));
    assert_eq!(c.rx_drops.get("no L2 filter or receive mask takes it"), Some(&2));
    assert_eq!(c.rx_frames, 0);
    assert!(b.take_cq(&mut rig, 1).is_empty(), "nothing completed");
    // Broadcast is taken (BCAST mask).
    b.post_rx(&mut rig, 1);
    a.send(&mut rig, &eth([0xff; 6], a.mac, 0x0806, &[0; 28]));
    settle(&mut rig);
    assert_eq!(b.take_cq(&mut rig, 1).len(), 2);
    // A frame longer than the buffer consumes it and completes with "did not fit".
    b.post_rx(&mut rig, 1);
    let mut m: HwrmVnicCfgInput = req();
    m.vnic_id = b.vnic.into();
    m.enables = HwrmVnicCfgInput::ENABLES_MRU.into();
    m.mru = 9018.into();
    rig.ok(1, m);
    a.send(&mut rig, &eth(b.mac, a.mac, 0x88b5, &vec![7; RX_BUF as usize + 100]));
    settle(&mut rig);
    let rx = b.take_cq(&mut rig, 1);
    assert_eq!(rx.len(), 2);
    assert_ne!(le32(&rx[0], 0) & (1 << 6), 0, "error flag");
    assert_eq!(le32(&rx[1], 8) >> 1 & 7, 1, "BUFFER_ERROR_DID_NOT_FIT");
}

#[test]
fn the_tx_checksum_offload_fills_udp_and_the_receiver_reports_it_checked() {
    let (mut rig, mut a, mut b) = pair(Setup::default());
    b.post_rx(&mut rig, 2);
    let f = udp4(b.mac, a.mac, ([10, 0, 0, 1], [10, 0, 0, 2]), (1000, 2000), b"payload", false);
    a.queue_tx(&mut rig, &f, 0x3, 0, 0, 0); // TCP_UDP_CHKSUM | IP_CKSUM
    a.kick_tx(&mut rig);
    settle(&mut rig);
    let rx = b.take_cq(&mut rig, 1);
    let got = rig.peek(1, b.rx_bufs[0], le32(&rx[0], 0) as usize >> 16);
    let p = bnxt_model::l2::frame::parse(&got).unwrap();
    let chk = bnxt_model::l2::frame::check_checksums(&got, &p);
    assert_eq!((chk.ip, chk.l4), (Some(true), Some(true)), "checksums filled on the way out");
    assert_eq!(le32(&rx[0], 0) >> 12 & 0xf, 3, "itype UDP");
    assert_eq!(le32(&rx[1], 0) & 3, 3, "IP_CS_CALC | L4_CS_CALC");
    assert_eq!(le32(&rx[1], 8) & 0x30, 0, "no checksum errors");
    // A frame whose UDP checksum is wrong is delivered with L4_CS_ERROR.
    let mut bad = udp4(b.mac, a.mac, ([10, 0, 0, 1], [10, 0, 0, 2]), (1000, 2000), b"payload", true);
    bad[40] ^= 0xff;
    a.send(&mut rig, &bad);
    settle(&mut rig);
    let rx = b.take_cq(&mut rig, 1);
    assert_eq!(le32(&rx[1], 8) & 0x20, 0x20, "L4_CS_ERROR");
}

#[test]
fn lso_splits_a_tcp_super_frame_into_mss_segments() {
    let (mut rig, mut a, mut b) = pair(Setup::default());
    b.post_rx(&mut rig, 8);
    let payload: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    let mut f = eth(b.mac, a.mac, 0x0800, &[]);
    let total = 40 + payload.len();
    f.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        9,
        0x40,
        0,
        64,
        6,
        0,
        0,
        10,
        0,
        0,
        1,
        10,
        0,
        0,
        2,
    ]);
    f.extend_from_slice(&[0, 80, 0x30, 0x39, 0, 0, 0, 100, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(&payload);
    // LSO | T_IPID with the header length (54) in 16-bit words at bits 23:16, MSS 1400.
    let lflags = (1 << 5) | (1 << 7) | (54 << 15);
    a.queue_tx(&mut rig, &f, lflags, 1400, 0, 0);
    a.kick_tx(&mut rig);
    assert_eq!(a.take_cq(&mut rig, 0).len(), 1, "one completion for the packet");
    settle(&mut rig);
    let rx = b.take_cq(&mut rig, 1);
    assert_eq!(rx.len(), 6, "three segments");
    let mut joined = Vec::new();
    for (i, pair) in rx.chunks(2).enumerate() {
        let len = (le32(&pair[0], 0) >> 16) as usize;
        assert_eq!(le32(&pair[1], 8) & 0x30, 0, "segment {i}: checksums right");
        let seg = rig.peek(1, b.rx_bufs[i], len);
        assert_eq!(u32::from_be_bytes(seg[38..42].try_into().unwrap()), 100 + 1400 * i as u32, "sequence");
        joined.extend_from_slice(&seg[54..]);
    }
    assert_eq!(joined, payload);
    assert_eq!(rig.world.device(0).l2().counters().tx_frames, 3);
}

#[test]
fn vlan_tags_are_inserted_on_transmit_and_stripped_into_the_completion() {
    let (mut rig, mut a, mut b) = pair(Setup { vlan_strip: true, ..Setup::default() });
    b.post_rx(&mut rig, 2);
    let f = eth(b.mac, a.mac, 0x88b5, &[5; 60]);
    // cfa_meta: KEY_VLAN, TPID selector 1 (0x8100), PCP 3, VID 42.
    let meta = (1 << 28) | (1 << 16) | (3 << 13) | 42;
    a.queue_tx(&mut rig, &f, 0, 0, meta, 0);
    a.kick_tx(&mut rig);
    settle(&mut rig);
    let rx = b.take_cq(&mut rig, 1);
    assert_eq!(le32(&rx[0], 0) >> 16, f.len() as u32, "tag stripped from the placed frame");
    assert_eq!(rig.peek(1, b.rx_bufs[0], f.len()), f);
    let misc = le32(&rx[0], 8);
    assert_eq!(misc >> 28, 0x8 | 0x1, "METADATA1 valid, TPID 0x8100");
    assert_eq!(le32(&rx[1], 8) >> 16, (3 << 13) | 42, "the tag's TCI in metadata0");
}

#[test]
fn rss_spreads_by_the_toeplitz_hash_and_reports_it() {
    let hash_type = HwrmVnicRssCfgInput::HASH_TYPE_IPV4 | HwrmVnicRssCfgInput::HASH_TYPE_UDP_IPV4;
    let (mut rig, mut a, mut b) = pair(Setup { hash_type, ..Setup::default() });
    b.post_rx(&mut rig, 2);
    // Microsoft's vector: 66.9.149.187:2794 -> 161.142.100.80:1766, 4-tuple hash 0x51ccc178.
    let f = udp4(b.mac, a.mac, ([66, 9, 149, 187], [161, 142, 100, 80]), (2794, 1766), b"x", true);
    a.send(&mut rig, &f);
    settle(&mut rig);
    let rx = b.take_cq(&mut rig, 1);
    assert_ne!(le32(&rx[0], 0) & (1 << 10), 0, "RSS_VALID");
    assert_eq!(le32(&rx[0], 12), 0x51cc_c178);
    assert_eq!(le32(&rx[0], 8) >> 12 & 0xf, 0, "ext op: L4 hash");
}

#[test]
fn tx_stops_when_its_completion_ring_is_full_and_resumes_when_given_room() {
    let (mut rig, mut a, mut b) = pair(Setup::default());
    b.post_rx(&mut rig, 2);
    // Fill the TX completion ring without consuming it (RING_LEN packets of 2 BDs need two
    // passes of the TX ring).
    for round in 0..2 {
        for _ in 0..RING_LEN / 2 {
            a.queue_tx(&mut rig, &eth(b.mac, a.mac, 0x88b5, &[round; 46]), 0, 0, 0, 0);
        }
        a.kick_tx(&mut rig);
    }
    let c = rig.world.device(0).l2().counters();
    assert_eq!(c.tx_completions, u64::from(RING_LEN));
    assert_eq!(c.cmpl_lost, 0, "the ring stopped instead of overwriting");
    // One more packet waits for room.
    a.queue_tx(&mut rig, &eth(b.mac, a.mac, 0x88b5, &[9; 46]), 0, 0, 0, 0);
    a.kick_tx(&mut rig);
    assert_eq!(rig.world.device(0).l2().counters().tx_packets, u64::from(RING_LEN));
    // The driver reads the NQ first (the notification's toggle goes into the next arm).
    let nq = a.take_nq(&mut rig);
    assert_eq!(nq.len(), 1, "one notification: the ring disarms until armed again");
    a.note(&nq[0]);
    let done = a.take_cq(&mut rig, 0);
    assert_eq!(done.len(), RING_LEN as usize);
    assert_eq!(rig.world.device(0).l2().counters().tx_packets, u64::from(RING_LEN) + 1, "resumed");
}

#[test]
fn coalescing_holds_the_notification_until_the_count_or_the_timer() {
    let (mut rig, mut a, mut b) = pair(Setup::default());
    b.post_rx(&mut rig, 8);
    let mut c: HwrmRingCmplRingCfgAggintParamsInput = req();
    type C = HwrmRingCmplRingCfgAggintParamsInput;
    c.ring_id = a.tx_cq.id.into();
    c.enables = (C::ENABLES_NUM_CMPL_AGGR_INT | C::ENABLES_INT_LAT_TMR_MAX).into();
    c.num_cmpl_aggr_int = 3.into();
    c.int_lat_tmr_max = 1250.into(); // 100 us in 80 ns units
    rig.ok(0, c);
    a.send(&mut rig, &eth(b.mac, a.mac, 0x88b5, &[0; 46]));
    assert!(rig.world.take_interrupts(0).is_empty(), "one completion: held");
    rig.world.advance(Duration::from_micros(99));
    assert!(rig.world.take_interrupts(0).is_empty(), "timer not run out");
    rig.world.advance(Duration::from_micros(2));
    assert_eq!(rig.world.take_interrupts(0), vec![VECTOR], "timer ran out");
    let nq = a.take_nq(&mut rig);
    a.note(&nq[0]);
    a.take_cq(&mut rig, 0);
    for _ in 0..3 {
        a.send(&mut rig, &eth(b.mac, a.mac, 0x88b5, &[0; 46]));
    }
    assert_eq!(rig.world.take_interrupts(0), vec![VECTOR], "third completion: at once");
}

#[test]
fn stale_arm_toggles_and_bad_doorbells_are_ignored_and_counted() {
    let (mut rig, a, _b) = pair(Setup::default());
    // The CQ's toggle is 0; an ARMALL with toggle 2 is stale.
    a.ring(&mut rig, db(L2DbKind::CqArmAll, a.tx_cq.id, 0, RING_LEN, 2));
    // Producer beyond the ring, unknown ring, valid bit clear, RoCE-only types on the L2 path.
    a.ring(&mut rig, db(L2DbKind::Sq, a.tx, 3 * RING_LEN, 4 * RING_LEN, 0));
    a.ring(&mut rig, db(L2DbKind::Srq, 999, 1, RING_LEN, 0));
    a.ring(&mut rig, db(L2DbKind::Sq, a.tx, 2, RING_LEN, 0) & !(1 << 58));
    a.ring(&mut rig, db(L2DbKind::Other(1), a.rx, 1, RING_LEN, 0));
    let c = rig.world.device(0).l2().counters().clone();
    assert_eq!(c.ignored_doorbells.values().sum::<u64>(), 4, "{:?}", c.ignored_doorbells);
    assert_eq!(c.unimplemented_doorbells, 1);
    assert_eq!(rig.world.nic_state(0).unimplemented, 1);
}

#[test]
fn ring_free_naming_a_completion_ring_gets_hwrm_done_there() {
    let (mut rig, mut a, _b) = pair(Setup::default());
    let mut f: HwrmRingFreeInput = req();
    f.ring_type = HwrmRingFreeInput::RING_TYPE_TX;
    f.ring_id = a.tx.into();
    let mut bytes = zerocopy::IntoBytes::as_bytes(&f).to_vec();
    bytes[0..2].copy_from_slice(&0x51u16.to_le_bytes());
    let seq = rig.stamp(&mut bytes);
    bytes[2..4].copy_from_slice(&a.tx_cq.id.to_le_bytes()); // cmpl_ring
    rig.submit_direct(0, &bytes);
    assert_eq!(rig.wait(0, seq, common::TIMEOUT).unwrap().code, 0);
    assert_eq!(rig.world.take_interrupts(0), vec![VECTOR]);
    let nq = a.take_nq(&mut rig);
    assert_eq!(a.note(&nq[0]), Some(0));
    let done = a.take_cq(&mut rig, 0);
    assert_eq!(done.len(), 1);
    assert_eq!(u16::from_le_bytes([done[0][0], done[0][1]]) & 0x3f, 0x20, "HWRM_DONE");
    assert_eq!(u16::from_le_bytes([done[0][2], done[0][3]]), seq);
}

#[test]
fn forcing_the_link_down_and_up_sends_link_status_changes_to_nq0() {
    let (mut rig, mut a, _b) = pair(Setup::default());
    let mut down: HwrmPortPhyCfgInput = req();
    down.flags = HwrmPortPhyCfgInput::FLAGS_FORCE_LINK_DWN.into();
    rig.ok(0, down);
    let q = rig.ok(0, req::<HwrmPortPhyQcfgInput>());
    assert_eq!(q.link, HwrmPortPhyQcfgOutput::LINK_NO_LINK);
    let mut up: HwrmPortPhyCfgInput = req();
    up.flags = (HwrmPortPhyCfgInput::FLAGS_RESET_PHY | HwrmPortPhyCfgInput::FLAGS_RESTART_AUTONEG).into();
    up.enables = HwrmPortPhyCfgInput::ENABLES_AUTO_MODE.into();
    up.auto_mode = HwrmPortPhyCfgInput::AUTO_MODE_SPEED_MASK;
    rig.ok(0, up);
    let q = rig.ok(0, req::<HwrmPortPhyQcfgInput>());
    assert_eq!(
        (q.link, q.link_speed.get()),
        (HwrmPortPhyQcfgOutput::LINK_LINK, HwrmPortPhyQcfgOutput::LINK_SPEED_400GB)
    );
    let events = a.take_nq(&mut rig);
    let got: Vec<(u16, u16, u32)> = events
        .iter()
        .map(|e| (u16::from_le_bytes([e[0], e[1]]) & 0x3f, u16::from_le_bytes([e[2], e[3]]), le32(e, 12)))
        .collect();
    assert_eq!(got, vec![(0x2e, 0, 0), (0x2e, 0, 1)], "LINK_STATUS_CHANGE down, then up");
}

#[test]
fn a_link_forced_down_passes_no_frame_either_way_until_brought_up() {
    let (mut rig, mut a, mut b) = pair(Setup::default());
    a.post_rx(&mut rig, 8);
    b.post_rx(&mut rig, 8);
    // bnxt_en at close (bnxt.c `bnxt_hwrm_shutdown_link`).
    let mut down: HwrmPortPhyCfgInput = req();
    down.flags = HwrmPortPhyCfgInput::FLAGS_FORCE_LINK_DWN.into();
    rig.ok(1, down);
    a.send(&mut rig, &eth(b.mac, a.mac, 0x88b5, &[0; 46]));
    settle(&mut rig);
    assert_eq!(rig.world.device(1).l2().counters().rx_frames, 0, "nothing arrives at a port forced down");
    b.send(&mut rig, &eth(a.mac, b.mac, 0x88b5, &[0; 46]));
    settle(&mut rig);
    assert_eq!(rig.world.device(0).l2().counters().rx_frames, 0, "nothing leaves it");
    assert_eq!(rig.world.device(1).frames_dropped_forced_down(), 2);
    assert_eq!(rig.world.nic_state(1).frames_dropped_forced_down, 2);
    assert_eq!(rig.world.device(1).frames_dropped_no_peer(), 0);
    let mut up: HwrmPortPhyCfgInput = req();
    up.flags = (HwrmPortPhyCfgInput::FLAGS_RESET_PHY | HwrmPortPhyCfgInput::FLAGS_RESTART_AUTONEG).into();
    up.enables = HwrmPortPhyCfgInput::ENABLES_AUTO_MODE.into();
    up.auto_mode = HwrmPortPhyCfgInput::AUTO_MODE_SPEED_MASK;
    rig.ok(1, up);
    a.send(&mut rig, &eth(b.mac, a.mac, 0x88b5, &[0; 46]));
    settle(&mut rig);
    assert_eq!(rig.world.device(1).l2().counters().rx_frames, 1, "frames cross again");
}

#[test]

fn a_pulled_cable_takes_the_link_down_stops_frames_and_survives_a_function_reset() {
    let (mut rig, mut a, mut b) = pair(Setup::default());
    b.post_rx(&mut rig, 8);
    assert!(rig.world.set_peer(1, false), "the link went down");
    assert!(!rig.world.set_peer(1, false), "already down");
    let q = rig.ok(1, req::<HwrmPortPhyQcfgInput>());
    assert_eq!(q.link, HwrmPortPhyQcfgOutput::LINK_NO_LINK);
    a.send(&mut rig, &eth(b.mac, a.mac, 0x88b5, &[0; 46]));
    settle(&mut rig);
    assert_eq!(rig.world.device(1).l2().counters().rx_frames, 0, "nothing arrives at a port without its peer");
    assert_eq!(rig.world.device(1).frames_dropped_no_peer(), 1);
    // A driver's PORT_PHY_CFG cannot bring the link up without a peer.
    let mut up: HwrmPortPhyCfgInput = req();
    up.flags = (HwrmPortPhyCfgInput::FLAGS_RESET_PHY | HwrmPortPhyCfgInput::FLAGS_RESTART_AUTONEG).into();
    rig.ok(1, up);
    assert_eq!(rig.ok(1, req::<HwrmPortPhyQcfgInput>()).link, HwrmPortPhyQcfgOutput::LINK_NO_LINK);
    assert!(rig.world.set_peer(1, true));
    let events = b.take_nq(&mut rig);
    let got: Vec<(u16, u16, u32)> = events
        .iter()
        .map(|e| (u16::from_le_bytes([e[0], e[1]]) & 0x3f, u16::from_le_bytes([e[2], e[3]]), le32(e, 12)))
        .filter(|(ty, _, _)| *ty == 0x2e)
        .collect();
    assert_eq!(got, vec![(0x2e, 0, 0), (0x2e, 0, 1)], "LINK_STATUS_CHANGE down, then up");
    a.send(&mut rig, &eth(b.mac, a.mac, 0x88b5, &[0; 46]));
    settle(&mut rig);
    assert_eq!(rig.world.device(1).l2().counters().rx_frames, 1, "frames cross again");
    assert!(rig.world.nic_state(1).link_up);
}

/// The async events on `a`'s NQ: (event_id, data1, timestamp_lo, timestamp_hi).
fn async_events(rig: &mut Rig, a: &mut L2Nic) -> Vec<(u16, u32, u8, u16)> {
    a.take_nq(rig)
        .iter()
        .filter(|e| u16::from_le_bytes([e[0], e[1]]) & 0x3f == 0x2e)
        .map(|e| (u16::from_le_bytes([e[2], e[3]]), le32(e, 12), e[9], u16::from_le_bytes([e[10], e[11]])))
        .collect()
}

fn status(rig: &mut Rig) -> u32 {
    let mut v = [0u8; 4];
    rig.world.bar_read(0, 0, 0x520, &mut v);
    u32::from_le_bytes(v)
}

#[test]

fn a_firmware_reset_notifies_the_driver_then_restarts_and_says_so_at_the_next_if_change_up() {
    use bnxt_model::firmware::reset::ResetKind;
    let (mut rig, mut a, _b) = pair(Setup::default());
    assert!(rig.world.fw_reset(0, ResetKind::Solicited));
    assert!(!rig.world.fw_reset(0, ResetKind::Solicited), "one reset at a time");
    // RESET_NOTIFY: STOP_TX_QUEUE, reason MANAGEMENT_RESET_REQUEST, 1 s minimum, 30 s maximum.
    assert_eq!(async_events(&mut rig, &mut a), vec![(0x8, 0x101, 10, 300)]);
    // The driver's close is served however long it takes: the firmware waits for the driver to
    // unregister (bnxt_en's `bnxt_fw_reset` closes first, then waits its minimum).
    rig.world.advance(Duration::from_secs(5));
    rig.ok(0, req::<HwrmFuncQcfgInput>());
    assert_eq!(status(&mut rig), 0x8000);
    assert!(rig.world.nic_state(0).driver_registered);
    // FUNC_DRV_UNRGTR ends the close: answered, then the firmware restarts.
    rig.ok(0, req::<HwrmFuncDrvUnrgtrInput>());
    rig.world.advance(Duration::from_millis(10));
    let st = rig.world.nic_state(0);
    assert!(!st.driver_registered && st.rings == 0, "the restarted firmware knows nothing of the function");
    assert!(rig.world.device(0).l2().rings().is_empty());
    // bnxt_en's reopen: IF_CHANGE up first (bnxt_open), told of the reset, then it initialises
    // the function again (bnxt_fw_init_one: FUNC_DRV_RGTR among the rest).
    let mut up: HwrmFuncDrvIfChangeInput = req();
    up.flags = HwrmFuncDrvIfChangeInput::FLAGS_UP.into();
    let flags = |o: HwrmFuncDrvIfChangeOutput| o.flags.get();
    assert_eq!(flags(rig.ok(0, up)), HwrmFuncDrvIfChangeOutput::FLAGS_HOT_FW_RESET_DONE);
    assert_eq!(rig.call(0, up).code, 2, "told once; unregistered again, refused");
    let mut rg: HwrmFuncDrvRgtrInput = req();
    rg.enables = HwrmFuncDrvRgtrInput::ENABLES_OS_TYPE.into();
    rig.ok(0, rg);
    assert_eq!(flags(rig.ok(0, up)), 0);
}

#[test]
fn a_firmware_reset_whose_driver_never_unregisters_restarts_at_the_notices_maximum_wait() {
    use bnxt_model::firmware::reset::ResetKind;
    let (mut rig, mut a, _b) = pair(Setup::default());
    assert!(rig.world.fw_reset(0, ResetKind::Solicited));
    assert_eq!(async_events(&mut rig, &mut a), vec![(0x8, 0x101, 10, 300)]);
    rig.world.advance(Duration::from_millis(29_900));
    assert!(rig.world.nic_state(0).driver_registered, "still waiting for the driver's close");
    rig.world.advance(Duration::from_millis(200));
    assert!(!rig.world.nic_state(0).driver_registered, "restarted 30 s after the notice");
}

#[test]
fn a_firmware_reset_no_driver_was_told_of_restarts_a_second_after_it() {
    use bnxt_model::firmware::reset::ResetKind;
    let (mut rig, _a, _b) = pair(Setup::default());
    // NIC 0's driver unregisters before the reset: nobody to tell, nothing to wait for.
    rig.ok(0, req::<HwrmFuncDrvUnrgtrInput>());
    assert!(rig.world.fw_reset(0, ResetKind::Solicited));
    rig.world.advance(Duration::from_millis(900));
    assert!(!rig.world.fw_reset(0, ResetKind::Solicited), "the reset is still under way");
    rig.world.advance(Duration::from_millis(200));
    assert!(rig.world.fw_reset(0, ResetKind::Solicited), "restarted a second after the notice");
}

#[test]

fn a_fatal_firmware_takes_no_request_and_reads_unhealthy_until_it_restarts() {
    use bnxt_model::firmware::reset::ResetKind;
    let (mut rig, mut a, _b) = pair(Setup::default());
    assert!(rig.world.fw_reset(0, ResetKind::Fatal));
    assert_eq!(async_events(&mut rig, &mut a), vec![(0x8, 0x201, 10, 300)], "reason FW_EXCEPTION_FATAL");
    assert_eq!(status(&mut rig) & 0xffff, 0, "not ready (bnxt_en's BNXT_FW_IS_HEALTHY fails)");
    let mut bytes = req::<HwrmFuncQcfgInput>().as_bytes().to_vec();
    bytes[0..2].copy_from_slice(&<HwrmFuncQcfgInput as bnxt_hsi::hwrm::Request>::REQ_TYPE.to_le_bytes());
    let seq = rig.stamp(&mut bytes);
    rig.submit_direct(0, &bytes);
    assert!(rig.wait(0, seq, Duration::from_millis(500)).is_none(), "a dead firmware answers nothing");
    rig.world.advance(Duration::from_millis(600));
    assert_eq!(status(&mut rig), 0x8000, "ready again");
    rig.ok(0, req::<HwrmVerGetInput>());
}

#[test]
fn function_reset_forgets_rings_and_vnics_and_the_engine_follows() {
    let (mut rig, mut a, mut b) = pair(Setup::default());
    b.post_rx(&mut rig, 2);
    rig.ok(1, req::<HwrmFuncResetInput>());
    a.send(&mut rig, &eth(b.mac, a.mac, 0x88b5, &[0; 46]));
    settle(&mut rig);
    let c = rig.world.device(1).l2().counters();
    assert_eq!(c.rx_frames, 0);
    assert_eq!(c.rx_drops.get("no L2 filter or receive mask takes it"), Some(&1));
    assert!(rig.world.device(1).l2().rings().is_empty());
    let q = rig.ok(1, req::<HwrmFuncQcfgInput>());
    assert_eq!((q.alloc_tx_rings.get(), q.alloc_msix.get()), (0, 0), "reservation gone");
}
