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
use bnxt_model_host::machine::ModelMachine;
use bnxt_model_host::world::WorldConfig;
use support::{Args, Figure, measure, memcpy_figure};

const MIB: usize = 1 << 20;
/// 1 MiB messages in flight per call of the large-message figures (and MiB of each region).
const LARGE_BATCH: usize = 8;
/// 64-byte messages per call of the message-rate figure (well inside the 4095-entry rings).
const SMALL_BATCH: usize = 1024;
/// Generous: a completion that has not come in this much virtual time is a failure.
const WAIT: Duration = Duration::from_secs(10);

/// Two open NICs with a connected queue pair between them and a source and a destination region.
struct Pair {
    machine: Arc<ModelMachine>,
    /// Whether data-path events are recorded (and taken after each call, as a transcript does).
    events: bool,
    _a: Nic,
    _b: Nic,
    qa: Qp,
    qb: Qp,
    src: Region,
    dst: Region,
}

/// Two NICs as `bnxt-rig run` sets them up: data-path events recorded only when `events`
/// (the runner records them for a transcript, `--transcript`, and not otherwise).
fn pair(events: bool) -> Pair {
    let machine = ModelMachine::new(WorldConfig { nics: 2, seed: 1, ..Default::default() });
    machine.world().set_data_path_events(events);
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
    machine.world().take_events();
    Pair { machine, events, _a: a, _b: b, qa, qb, src, dst }
}

impl Pair {
    /// Post `count` receives and sends of `len` bytes, the `i`th at `i * stride` (modulo the
    /// regions' size) on both sides, and take every completion, checking each.
    fn transfer(&mut self, count: usize, len: usize, stride: usize) {
        for i in 0..count {
            self.qb.receive(&self.dst, (i * stride) % self.dst.len(), len);
        }
        for i in 0..count {
            self.qa.send(&self.src, (i * stride) % self.src.len(), len);
        }
        for (qp, side) in [(&mut self.qa, Side::Send), (&mut self.qb, Side::Receive)] {
            for _ in 0..count {
                let c = qp.wait(side, WAIT).unwrap_or_else(|| panic!("no {side:?} completion within {WAIT:?}"));
                assert_eq!(c.status, Status::Ok, "{side:?} completion failed");
            }
        }
        if self.events {
            // A transcript takes the world's events after every step.
            std::hint::black_box(self.machine.world().take_events());
        }
    }
}

/// What a figure is: bytes (a ratio of the memcpy reference of the same working set) or
/// messages.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A memcpy reference.
    Reference,
    /// Bytes moved, as a ratio of the first reference.
    Hot,
    /// Bytes moved through 8 MiB on each side, as a ratio of the 8 MiB reference.
    Spread,
    /// Messages.
    Messages,
}

fn main() {
    let args = Args::parse(3.0);
    let src = vec![0x5au8; MIB];
    let mut dst = vec![0u8; MIB];
    let spread_src = vec![0xa5u8; LARGE_BATCH * MIB];
    let mut spread_dst = vec![0u8; LARGE_BATCH * MIB];

    // One checked transfer first: the figures below measure a path that delivers every byte.
    let mut check = pair(true);
    check.transfer(2, MIB, MIB);
    assert_eq!(check.dst.read(0, 2 * MIB), check.src.read(0, 2 * MIB), "2 MiB arrived changed");
    drop(check);

    let mut figures = vec![memcpy_figure(&src, &mut dst)];
    let mut kinds = vec![Kind::Reference];
    let batch = (LARGE_BATCH * MIB) as f64;
    for (word, name, events) in [
        ("large", "1 MiB SENDs, NIC to NIC (driver + model)", false),
        ("large-events", "  the same, data-path events recorded", true),
    ] {
        if args.want(word) {
            let mut p = pair(events);
            figures.push(Figure::new(name, batch, move || p.transfer(LARGE_BATCH, MIB, 0)));
            kinds.push(Kind::Hot);
        }
    }
    if args.want("large-spread") {
        let (s, d) = (&spread_src[..], &mut spread_dst[..]);
        figures.push(Figure::new("memcpy 8 MiB (single core)", batch, move || {
            d.copy_from_slice(std::hint::black_box(s));
            std::hint::black_box(&mut *d);
        }));
        kinds.push(Kind::Reference);
        let mut p = pair(false);
        let name = "1 MiB SENDs through 8 MiB each side";
        figures.push(Figure::new(name, batch, move || p.transfer(LARGE_BATCH, MIB, MIB)));
        kinds.push(Kind::Spread);
    }
    for (word, name, events) in [
        ("small", "64-byte SENDs, NIC to NIC (driver + model)", false),
        ("small-events", "  the same, data-path events recorded", true),
    ] {
        if args.want(word) {
            let mut p = pair(events);
            figures.push(Figure::new(name, SMALL_BATCH as f64, move || p.transfer(SMALL_BATCH, 64, 64)));
            kinds.push(Kind::Messages);
        }
    }
    measure(&args, &mut figures);

    let memcpy = figures[0].best;
    let spread_memcpy = figures.iter().filter(|f| f.name.starts_with("memcpy 8")).map(|f| f.best).next();
    println!("{:<48} {:>14}", "figure", "rate");
    for (f, kind) in figures.iter().zip(kinds) {
        let rate = f.best;
        match kind {
            Kind::Reference => println!("{:<48} {:>10.2} GB/s", f.name, rate / 1e9),
            Kind::Hot => println!("{:<48} {:>10.2} GB/s = {:.3} of memcpy", f.name, rate / 1e9, rate / memcpy),
            Kind::Spread => {
                let of = spread_memcpy.expect("the 8 MiB reference runs with this figure");
                println!("{:<48} {:>10.2} GB/s = {:.3} of memcpy 8 MiB", f.name, rate / 1e9, rate / of);
            }
            Kind::Messages => println!("{:<48} {:>10.3} M messages/s", f.name, rate / 1e6),
        }
    }
}
