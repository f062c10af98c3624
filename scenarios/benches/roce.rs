//! Throughput of the whole stack on the built-in model: our driver posting WQEs and ringing
//! doorbells, the model's RoCE engine building, switching, checking (ICRC included) and landing
//! RoCE v2 frames, and the driver polling CQEs, between two in-process model NICs.
//!
//! Every figure is measured in the same run as a single-core memcpy of 1 MiB, and reported as a
//! ratio of it (absolute rates on a shared machine are noise). The virtual clock costs nothing:
//! what is measured is the CPU the driver and the model spend. The 1 MiB figure is also given as
//! a fraction of its floor, measured in the same run: the same bytes copied into 4 KiB frames,
//! one ICRC pass over each (the frames go sealed between in-process NICs) and copied out, with
//! nothing else; that fraction is the fair measure of what the driver and the model add.
//!
//! Run: `cargo bench -p bnxt-rig --bench roce -- [seconds per figure] [trials] [words]` (words:
//! `large`, `large-events`, `large-spread`, `small`, `small-events`, `floor`).

#[path = "../../emulator/benches/floor/mod.rs"]
mod floor;
#[path = "../../emulator/benches/support/mod.rs"]
mod support;

mod link;

use std::sync::Arc;

use bnxt::Nic;
use bnxt_model_host::machine::ModelMachine;
use bnxt_model_host::world::WorldConfig;
use floor::floor;
use link::Link;
use support::{Args, Figure, measure, memcpy_figure};

const MIB: usize = 1 << 20;
/// 1 MiB messages in flight per call of the large-message figures (and MiB of each region).
const LARGE_BATCH: usize = 8;
/// 64-byte messages per call of the message-rate figure (well inside the 4095-entry rings).
const SMALL_BATCH: usize = 1024;

/// Two open NICs of one in-process model with a link between them.
struct Pair {
    machine: Arc<ModelMachine>,
    /// Whether data-path events are recorded (and taken after each call, as a transcript does).
    events: bool,
    link: Link,
    _a: Nic,
    _b: Nic,
}

/// Two NICs as `bnxt-rig run` sets them up: data-path events recorded only when `events`
/// (the runner records them for a transcript, `--transcript`, and not otherwise).
fn pair(events: bool) -> Pair {
    let machine = ModelMachine::new(WorldConfig { nics: 2, seed: 1, ..Default::default() });
    machine.world().set_data_path_events(events);
    let a = Nic::open(&*machine, 0).expect("open NIC 0");
    let b = Nic::open(&*machine, 1).expect("open NIC 1");
    let link = Link::between(&a, &b, LARGE_BATCH * MIB);
    machine.world().take_events();
    Pair { machine, events, link, _a: a, _b: b }
}

impl Pair {
    /// [`Link::transfer`], then the world's events taken when a transcript would take them.
    fn transfer(&mut self, count: usize, len: usize, stride: usize) {
        self.link.transfer(count, len, stride);
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
    /// The floor of a 1 MiB message (copy in, one ICRC pass, copy out).
    Floor,
    /// Bytes moved, as a ratio of the first reference (and of the floor, when measured).
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
    let floor_src = vec![0x3cu8; MIB];
    let mut floor_dst = vec![0u8; MIB];

    // One checked transfer first: the figures below measure a path that delivers every byte.
    pair(true).link.check(2 * MIB);

    let mut figures = vec![memcpy_figure(&src, &mut dst)];
    let mut kinds = vec![Kind::Reference];
    let batch = (LARGE_BATCH * MIB) as f64;
    if args.want("large") || args.want("floor") {
        // The sealed path's floor: frames between two in-process NICs take one ICRC pass.
        figures.push(Figure::new("floor: copy in, ICRC, copy out", MIB as f64, floor(&floor_src, &mut floor_dst, 1)));
        kinds.push(Kind::Floor);
    }
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
    let floor = figures.iter().zip(&kinds).find(|(_, k)| **k == Kind::Floor).map(|(f, _)| f.best);
    let spread_memcpy = figures.iter().filter(|f| f.name.starts_with("memcpy 8")).map(|f| f.best).next();
    println!("{:<48} {:>14}", "figure", "rate");
    for (f, kind) in figures.iter().zip(kinds) {
        let rate = f.best;
        match kind {
            Kind::Reference => println!("{:<48} {:>10.2} GB/s", f.name, rate / 1e9),
            Kind::Floor => println!("{:<48} {:>10.2} GB/s = {:.3} of memcpy", f.name, rate / 1e9, rate / memcpy),
            Kind::Hot => {
                let of_floor = floor.map(|fl| format!(" = {:.3} of the floor", rate / fl)).unwrap_or_default();
                println!("{:<48} {:>10.2} GB/s = {:.3} of memcpy{of_floor}", f.name, rate / 1e9, rate / memcpy);
            }
            Kind::Spread => {
                let of = spread_memcpy.expect("the 8 MiB reference runs with this figure");
                println!("{:<48} {:>10.2} GB/s = {:.3} of memcpy 8 MiB", f.name, rate / 1e9, rate / of);
            }
            Kind::Messages => println!("{:<48} {:>10.3} M messages/s", f.name, rate / 1e6),
        }
    }
}
