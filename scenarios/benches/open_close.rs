//! What opening and closing a NIC costs on the built-in model: our driver's whole bring-up
//! (reset, HWRM handshake, context memory, L2 rings, RoCE engine) against a fresh in-process model
//! NIC, then its close. A scenario opens at least one NIC, so this is the floor under every
//! scenario's wall time.
//!
//! Reported as opens a second and as a multiple of a reference measured in the same run: a
//! single-core memcpy of 1 MiB (how many such copies one open and close costs), so the figure
//! means the same on a loaded machine.
//!
//! Run: `cargo bench -p bnxt-rig --bench open_close -- [seconds per figure] [trials] [words]`
//! (words: `open-close`, `open-close-machine`).

#[path = "../../emulator/benches/support/mod.rs"]
mod support;

use bnxt::Nic;
use bnxt_model_host::machine::ModelMachine;
use bnxt_model_host::world::WorldConfig;
use support::{Args, Figure, measure, memcpy_figure};

const MIB: usize = 1 << 20;

fn main() {
    let args = Args::parse(3.0);
    let src = vec![0x5au8; MIB];
    let mut dst = vec![0u8; MIB];
    let mut figures = vec![memcpy_figure(&src, &mut dst)];

    if args.want("open-close") {
        // One machine for every open: what a scenario that opens and closes a NIC again pays.
        let machine = ModelMachine::new(WorldConfig { nics: 1, seed: 1, ..Default::default() });
        figures.push(Figure::new("open + close of a NIC", 1.0, move || {
            let mut nic = Nic::open(&*machine, 0).expect("open NIC 0");
            nic.close();
        }));
    }
    if args.want("open-close-machine") {
        // A fresh one-NIC model each time: what each scenario of the suite pays.
        figures.push(Figure::new("  the same on a fresh model", 1.0, || {
            let machine = ModelMachine::new(WorldConfig { nics: 1, seed: 1, ..Default::default() });
            let mut nic = Nic::open(&*machine, 0).expect("open NIC 0");
            nic.close();
        }));
    }
    measure(&args, &mut figures);

    let memcpy = figures[0].best;
    println!("{:<40} {:>12}", "figure", "rate");
    println!("{:<40} {:>9.2} GB/s", figures[0].name, memcpy / 1e9);
    for f in &figures[1..] {
        println!(
            "{:<40} {:>9.1} /s = {:.3} ms each = {:.0} memcpys of 1 MiB",
            f.name,
            f.best,
            1e3 / f.best,
            memcpy / MIB as f64 / f.best
        );
    }
}
