//! RoCE frames reach a function's RoCE engine only through one of its L2 filters: a frame to a
//! function with no filter for its destination MAC, or only filters that carry L2 traffic
//! alone, is dropped and counted in `rx_no_l2_filter` (see the model's `roce::l2_gate`).

mod common;
mod roce_support;

use std::time::Duration;

use bnxt_hsi::hwrm::layouts::{HwrmCfaL2FilterAllocInput as F, HwrmCfaL2FilterFreeInput};
use bnxt_hsi::roce::layouts::CmdqRegisterMr;
use bnxt_model::events::EventKind;
use bnxt_model::net::bth::BthRepr;
use bnxt_model::net::{MacAddr, Opcode, Path, Transport, build_frame};
use common::{Rig, req};
use roce_support::*;

const PEER_MAC: [u8; 6] = [0x02, 0x00, 0x0a, 0x00, 0x00, 0x63];
const PEER_QP: u32 = 0x44;
const PSN: u32 = 0x100;

/// One NIC with a QP in RTS to a peer that is only frames this test builds, a receive CQ, and
/// a region.
struct One {
    rig: Rig,
    f: Func,
    qp: TQp,
    cq: TCq,
    mr: (u32, u64),
}

fn one() -> One {
    let (mut rig, mut f) = up();
    let sgid = f.add_own_gid(&mut rig);
    let nq = nq_ring(&mut rig, 0, &mut f.pages, 256, 1);
    let cq = f.create_cq(&mut rig, 64, nq.id);
    let mut qp = f.create_qp(&mut rig, Rings::fixed(64, 64), &cq);
    let mr = f.region(&mut rig, 64 << 10, CmdqRegisterMr::ACCESS_LOCAL_WRITE);
    let peer_gid = bnxt_hsi::roce::gid::ipv4_mapped_gid(bnxt_model::net::ipv4_of_mac(MacAddr(PEER_MAC)).octets());
    f.connect(&mut rig, &mut qp, sgid, (&peer_gid, PEER_MAC, PEER_QP), PSN);
    One { rig, f, qp, cq, mr }
}

impl One {
    /// A SEND ONLY of `payload` from the peer to the QP, PSN `psn`, to destination MAC `dst`.
    fn send_from_peer(&mut self, dst: [u8; 6], psn: u32, payload: &[u8]) {
        let path = Path::between(MacAddr(PEER_MAC), MacAddr(dst), self.qp.id);
        let bth = BthRepr::new(Opcode::SendOnly, self.qp.id, psn);
        let mut frame = Vec::new();
        build_frame(&path, &Transport::bth(bth), payload, &mut frame).unwrap();
        self.rig.world.inject_frame(0, &frame);
        self.rig.world.advance(Duration::from_millis(1));
    }

    fn no_filter_drops(&self) -> u64 {
        self.rig.world.nic_state(0).roce.rx_no_l2_filter
    }

    fn dropped_because(&mut self) -> Vec<String> {
        self.rig
            .world
            .take_events()
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::FrameDropped { reason } => Some(reason),
                _ => None,
            })
            .collect()
    }

    fn filter(&mut self, traffic: u32) -> u64 {
        let mut f: F = req();
        f.flags = (F::FLAGS_PATH_RX | F::FLAGS_OUTERMOST | traffic).into();
        f.enables = (F::ENABLES_L2_ADDR | F::ENABLES_L2_ADDR_MASK | F::ENABLES_DST_ID).into();
        f.l2_addr = self.f.mac;
        f.l2_addr_mask = [0xff; 6];
        f.dst_id = 0.into();
        self.rig.ok(0, f).l2_filter_id.get()
    }

    fn free_filter(&mut self, id: u64) {
        let mut r: HwrmCfaL2FilterFreeInput = req();
        r.l2_filter_id = id.into();
        self.rig.ok(0, r);
    }
}

#[test]
fn a_roce_frame_without_a_matching_l2_filter_is_dropped_and_counted() {
    let mut o = one();
    let (k, b) = o.mr;
    o.f.post_recv(&mut o.rig, &mut o.qp, 1, &[(b, k, 64)]);
    o.f.post_recv(&mut o.rig, &mut o.qp, 2, &[(b + 64, k, 64)]);

    // Through the filter the bring-up gave the NIC's MAC: delivered.
    o.send_from_peer(o.f.mac, PSN, b"through the filter");
    assert_eq!(res_wr_id(&o.cq.wait(&mut o.rig, 0, Duration::from_millis(10))), 1);
    assert_eq!(o.no_filter_drops(), 0);
    o.dropped_because();

    // The filter freed: the next frame goes nowhere, and says why.
    let id = o.f.filter;
    o.free_filter(id);
    o.send_from_peer(o.f.mac, PSN + 1, b"no filter");
    assert_eq!(o.no_filter_drops(), 1);
    let why = o.dropped_because();
    assert!(
        why.iter().any(|w| w.contains("no L2 filter of the function takes its destination MAC (rx_no_l2_filter)")),
        "{why:?}"
    );
    assert!(o.cq.peek(&o.rig, 0).is_none(), "nothing was received");

    // A frame to a MAC the NIC has no filter for, while it has one for its own: dropped too.
    let own = o.filter(F::FLAGS_TRAFFIC_ROCE);
    o.send_from_peer([0x02, 0, 0, 0, 0, 0x77], PSN + 1, b"not ours");
    assert_eq!(o.no_filter_drops(), 2);
    o.free_filter(own);

    // A filter that carries L2 traffic only does not let RoCE through.
    let l2_only = o.filter(F::FLAGS_TRAFFIC_L2);
    o.send_from_peer(o.f.mac, PSN + 1, b"L2 only");
    assert_eq!(o.no_filter_drops(), 3);
    let why = o.dropped_because();
    assert!(why.iter().any(|w| w.contains("carry L2 traffic only (TRAFFIC_L2)")), "{why:?}");
    assert!(o.cq.peek(&o.rig, 0).is_none());
    o.free_filter(l2_only);

    // A RoCE filter again: the same PSN is received now.
    o.filter(F::FLAGS_TRAFFIC_ROCE);
    o.send_from_peer(o.f.mac, PSN + 1, b"back");
    assert_eq!(res_wr_id(&o.cq.wait(&mut o.rig, 0, Duration::from_millis(10))), 2);
    assert_eq!(o.rig.peek(0, b + 64, 4), b"back");
    assert_eq!(o.no_filter_drops(), 3);
}
