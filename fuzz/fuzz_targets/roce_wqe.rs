//! WQEs and doorbells against live QPs: bytes the fuzzer shapes written into the live QP's send
//! and receive queues (and MSN table), WQEs aimed at the registered region, its edges, the
//! read-only canary or anywhere, and doorbells of every kind for the QP, its CQ or any id.
//! Invariants: no panic; the canary is never written; afterwards a fresh QP pair on the same
//! NICs still moves a message.
#![no_main]

use std::time::Duration;

use arbitrary::Arbitrary;
use bnxt_fuzz::common::MEM_LEN;
use bnxt_fuzz::roce_support::ring;
use bnxt_fuzz::snapshot::Snapshot;
use bnxt_fuzz::{Pair, Place, pair};
use bnxt_hsi::roce::doorbell::{DbType, Doorbell};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
enum Op {
    /// Write 16-byte slots into the send queue (and MSN table) at slot `at`.
    Sq { at: u16, slots: Vec<[u8; 16]>, address: Option<Place> },
    /// Write a slot into the receive queue.
    Rq { at: u16, slot: [u8; 16], address: Option<Place> },
    /// Ring a doorbell.
    Doorbell { kind: u8, xid: Xid, index: u32, epoch: bool, toggle: u8 },
    /// Let virtual time pass (microseconds).
    Wait(u16),
}

#[derive(Debug, Arbitrary)]
enum Xid {
    Qp,
    Cq,
    Any(u32),
}

const DB_TYPES: [DbType; 11] = [
    DbType::Sq,
    DbType::Rq,
    DbType::Srq,
    DbType::SrqArm,
    DbType::Cq,
    DbType::CqArmSe,
    DbType::CqArmAll,
    DbType::CqArmEna,
    DbType::SrqArmEna,
    DbType::CqCutoffAck,
    DbType::Nq,
];

thread_local! {
    /// Two NICs with connected QPs.
    static MACHINE: Snapshot<Pair> = Snapshot::take(MEM_LEN, pair);
}

fuzz_target!(|ops: Vec<Op>| MACHINE.with(|m| m.run(|p| run(p, &ops))));

fn run(p: &mut Pair, ops: &[Op]) {
    let q = p.qp[0].clone();
    let sq_bytes = u64::from(q.depth) * 16 + u64::from(q.msn_entries) * 8;
    let rq_bytes = u64::from(q.rq_size) * q.rq_stride;
    for op in ops.iter().take(256) {
        match op {
            Op::Sq { at, slots, address } => {
                let at = (u64::from(*at) * 16) % sq_bytes;
                let mut bytes: Vec<u8> = slots.iter().take(8).flatten().copied().collect();
                if let (Some(a), true) = (address, bytes.len() >= 48) {
                    // The first SGE of a send WQE (after its 32-byte header).
                    bytes[32..40].copy_from_slice(&a.address().to_le_bytes());
                }
                bytes.truncate((sq_bytes - at) as usize);
                p.rig.poke(0, q.sq_base + at, &bytes);
            }
            Op::Rq { at, slot, address } => {
                let at = (u64::from(*at) * 16) % rq_bytes;
                let mut bytes = slot.to_vec();
                if let Some(a) = address {
                    bytes[0..8].copy_from_slice(&a.address().to_le_bytes());
                }
                p.rig.poke(0, q.rq_base + at, &bytes);
            }
            Op::Doorbell { kind, xid, index, epoch, toggle } => {
                let ty = DB_TYPES[usize::from(*kind) % DB_TYPES.len()];
                let xid = match xid {
                    Xid::Qp => q.id,
                    Xid::Cq => p.cq[0].id,
                    Xid::Any(x) => x & 0xf_ffff,
                };
                ring(&mut p.rig, 0, Doorbell::roce(ty, xid, *index & 0xff_ffff, *epoch, *toggle));
            }
            Op::Wait(us) => p.rig.world.advance(Duration::from_micros(u64::from(*us))),
        }
    }
    p.rig.world.advance(Duration::from_secs(5));
    p.still_moves_data();
}
