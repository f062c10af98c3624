//! Throughput of the whole stack on the built-in model: our driver posting WQEs and ringing
//! doorbells, the model's RoCE engine building, switching, checking (ICRC included) and landing
//! RoCE v2 frames, and the driver polling CQEs, between two in-process model NICs.
//!
//! Every figure is measured in the same run as a single-core memcpy of 1 MiB, and reported as a
//! ratio of it (absolute rates on a shared machine are noise). The virtual clock costs nothing:
//! what is measured is the CPU the driver and the model spend.
//!
//! Run: `cargo bench -p bnxt-rig --bench roce -- [seconds per figure] [trials]`.

#[path = "../../emulator/benches/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use bnxt::{Nic, Qp, Region, Side, Status};
use bnxt_model::world::WorldConfig;
use bnxt_rig::target::model_pci::ModelMachine;
use support::{Args, Figure, measure, memcpy_figure};

const MIB: usize = 1 << 20;
/// 1 MiB messages in flight per call of the large-message figure.
const LARGE_BATCH: usize = 8;
/// 64-byte messages per call of the message-rate figure (well inside the 4095-entry rings).
const SMALL_BATCH: usize = 1024;
/// Generous: a completion that has not come in this much virtual time is a failure.
const WAIT: Duration = Duration::from_secs(10);

/// Two open NICs with a connected queue pair between them and a source and a destination region.
struct Pair {
    _machine: Arc<ModelMachine>,
    _a: Nic,
    _b: Nic,
    qa: Qp,
    qb: Qp,
    src: Region,
    dst: Region,
}

fn pair() -> Pair {
    let machine = ModelMachine::new(WorldConfig { nics: 2, seed: 1, ..Default::default() });
    let a = Nic::open(&*machine, 0).expect("open NIC 0");
    let b = Nic::open(&*machine, 1).expect("open NIC 1");
    let src = Region::host(&a, LARGE_BATCH * MIB).expect("source region");
    let dst = Region::host(&b, LARGE_BATCH * MIB).expect("destination region");
    let pattern: Vec<u8> = (0..LARGE_BATCH * MIB).map(|i| (i * 7 + i / 4096) as u8).collect();
    src.write(0, &pattern);
    let mut qa = Qp::make(&a).expect("queue pair on NIC 0");
    let mut qb = Qp::make(&b).expect("queue pair on NIC 1");
    let (ea, eb) = (qa.endpoint(), qb.endpoint());
    qa.connect(&eb).expect("connect NIC 0's queue pair");
    qb.connect(&ea).expect("connect NIC 1's queue pair");
    Pair { _machine: machine, _a: a, _b: b, qa, qb, src, dst }
}

impl Pair {
    /// Post `count` receives and sends of `len` bytes and take every completion, checking each.
    fn transfer(&mut self, count: usize, len: usize) {
        for i in 0..count {
            self.qb.receive(&self.dst, (i * len) % self.dst.len(), len);
        }
        for i in 0..count {
            self.qa.send(&self.src, (i * len) % self.src.len(), len);
        }
        for (qp, side) in [(&mut self.qa, Side::Send), (&mut self.qb, Side::Receive)] {
            for _ in 0..count {
                let c = qp.wait(side, WAIT).unwrap_or_else(|| panic!("no {side:?} completion within {WAIT:?}"));
                assert_eq!(c.status, Status::Ok, "{side:?} completion failed");
            }
        }
    }
}

fn main() {
    let args = Args::parse(3.0);
    let src = vec![0x5au8; MIB];
    let mut dst = vec![0u8; MIB];
    let mut large = pair();
    let mut small = pair();

    // One checked transfer first: the figures below measure a path that delivers every byte.
    large.transfer(1, MIB);
    assert_eq!(large.dst.read(0, MIB), large.src.read(0, MIB), "1 MiB arrived changed");

    let mut figures = vec![memcpy_figure(&src, &mut dst)];
    if args.want("large") {
        figures.push(Figure::new("1 MiB SENDs, NIC to NIC (driver + model)", (LARGE_BATCH * MIB) as f64, move || {
            large.transfer(LARGE_BATCH, MIB)
        }));
    }
    if args.want("small") {
        figures.push(Figure::new("64-byte SENDs, NIC to NIC (driver + model)", SMALL_BATCH as f64, move || {
            small.transfer(SMALL_BATCH, 64)
        }));
    }
    measure(&args, &mut figures);

    let memcpy = figures[0].best;
    println!("{:<48} {:>14}", "figure", "rate");
    for f in &figures {
        if f.name.starts_with("64-byte") {
            println!("{:<48} {:>10.3} M messages/s", f.name, f.best / 1e6);
        } else if f.name.starts_with("memcpy") {
            println!("{:<48} {:>10.2} GB/s", f.name, f.best / 1e9);
        } else {
            println!("{:<48} {:>10.2} GB/s = {:.3} of memcpy", f.name, f.best / 1e9, f.best / memcpy);
        }
    }
}
