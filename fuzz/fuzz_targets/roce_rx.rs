//! Frames received at a live QP: every RoCE v2 opcode with fuzzed BTH fields (PSN near the
//! expected one or anywhere, flags, P_Key), RETHs naming the registered region, its edges, the
//! read-only canary or anywhere, with the region's key or another, AETHs, DETHs, immediates and
//! payloads, each built into a frame whose ICRC and checksums are right (so it reaches the
//! transport, not the ICRC check). Invariants: no panic; the canary is never written; the QP's
//! NIC takes the frames addressed to it; afterwards a fresh QP pair still moves a message.
#![no_main]

use std::time::Duration;

use arbitrary::Arbitrary;
use bnxt_fuzz::common::MEM_LEN;
use bnxt_fuzz::snapshot::Snapshot;
use bnxt_fuzz::{Pair, Place, pair};
use bnxt_model::net::bth::BthRepr;
use bnxt_model::net::ext::{AethRepr, DethRepr, RethRepr, Syndrome};
use bnxt_model::net::opcode::ALL_OPCODES;
use bnxt_model::net::{MacAddr, Path, Transport, build_frame};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Frame {
    opcode: u8,
    /// The live QP, or another.
    dest: Option<u32>,
    /// The PSN: an offset from the expected one, or any.
    psn: Result<i8, u32>,
    ack_req: bool,
    solicited: bool,
    migreq: bool,
    fecn: bool,
    becn: bool,
    pkey: Option<u16>,
    reth: (Place, Option<u32>, u32),
    aeth: (u8, u32),
    immdt: u32,
    deth: (u32, u32),
    payload: Vec<u8>,
    /// Virtual time to let pass after it (microseconds).
    pause: u8,
}

thread_local! {
    /// Two NICs with connected QPs.
    static MACHINE: Snapshot<Pair> = Snapshot::take(MEM_LEN, pair);
}

fuzz_target!(|frames: Vec<Frame>| MACHINE.with(|m| m.run(|p| run(p, &frames))));

fn run(p: &mut Pair, frames: &[Frame]) {
    let (k1, _) = p.mr[1];
    let (mac0, mac1, qp1) = (MacAddr(p.f[0].mac), MacAddr(p.f[1].mac), p.qp[1].id);
    let mut out = Vec::new();
    let before = p.rig.world.nic_state(1).roce.frames_received;
    let mut built = 0u64;
    for f in frames.iter().take(128) {
        let op = ALL_OPCODES[usize::from(f.opcode) % ALL_OPCODES.len()];
        let dest = f.dest.map_or(qp1, |d| d & 0xff_ffff);
        let psn = match f.psn {
            Ok(off) => 0x100u32.wrapping_add(off as i32 as u32) & 0xff_ffff,
            Err(any) => any & 0xff_ffff,
        };
        let mut bth = BthRepr::new(op, dest, psn);
        (bth.ack_req, bth.solicited, bth.migreq, bth.fecn, bth.becn) =
            (f.ack_req, f.solicited, f.migreq, f.fecn, f.becn);
        if let Some(pkey) = f.pkey {
            bth.pkey = pkey;
        }
        let mut t = Transport::bth(bth);
        if op.has_reth() {
            let (at, key, len) = f.reth;
            t.reth = Some(RethRepr { va: at.address(), rkey: key.unwrap_or(k1), dma_len: len });
        }
        if op.has_aeth() {
            let syndrome = Syndrome::from_byte(f.aeth.0).unwrap_or(Syndrome::from_byte(0).unwrap());
            t.aeth = Some(AethRepr { syndrome, msn: f.aeth.1 & 0xff_ffff });
        }
        if op.has_immdt() {
            t.immdt = Some(f.immdt);
        }
        if op.has_deth() {
            t.deth = Some(DethRepr { qkey: f.deth.0, src_qp: f.deth.1 & 0xff_ffff });
        }
        let payload = if op.has_payload() { &f.payload[..f.payload.len().min(4096)] } else { &[][..] };
        if build_frame(&Path::between(mac0, mac1, dest), &t, payload, &mut out).is_ok() {
            p.rig.world.inject_frame(1, &out);
            built += 1;
        }
        if f.pause > 0 {
            p.rig.world.advance(Duration::from_micros(u64::from(f.pause)));
        }
    }
    p.rig.world.advance(Duration::from_secs(1));
    let taken = p.rig.world.nic_state(1).roce.frames_received - before;
    assert!(taken <= built, "the NIC counted {taken} frames of {built} sent");
    p.still_moves_data();
}
