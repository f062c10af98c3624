//! What filling one NIC costs on the built-in model: making the 65,536 queue pairs its limits
//! promise, and registering the 262,144 regions of 4 KiB the contract promises (on a firmware
//! whose MRAV context type offers 524,288 entries, of which the driver keeps half for regions),
//! through our driver; then giving them back.
//!
//! Each is timed once per trial (they take seconds, not microseconds), the best of the trials
//! kept, and reported per object and as a multiple of a reference measured in the same run,
//! before and after the trials: a single-core memcpy of 1 MiB (how many such copies one object costs),
//! so the figure means the same on a loaded machine. The process's peak resident memory
//! (`VmHWM` in /proc/self/status) is read after the queue pairs are made, before anything else
//! has run in the process, and given as bytes a queue pair.
//!
//! Run: `cargo bench -p bnxt-rig --bench scale -- [seconds of memcpy] [trials] [words]` (words:
//! `qps`, `regions`), as `-- 1 3`.

#[path = "../../emulator/benches/support/mod.rs"]
mod support;

use std::time::Instant;

use bnxt::{Nic, Qp, Region};
use bnxt_model::firmware::options::FirmwareOptions;
use bnxt_model_host::machine::ModelMachine;
use bnxt_model_host::world::WorldConfig;
use support::{Args, measure, memcpy_figure};

const MIB: usize = 1 << 20;
const QPS: usize = 65_536;
const REGIONS: usize = 262_144;
/// The MRAV entries the firmware offers for [`REGIONS`] (the driver keeps half).
const MRAV_ENTRIES: u32 = 524_288;

/// `VmHWM` of this process, in bytes.
fn peak_resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Seconds to make `QPS` queue pairs on a freshly opened NIC (their teardown and the close not
/// counted).
fn make_qps() -> f64 {
    let machine = ModelMachine::new(WorldConfig { nics: 1, seed: 1, ..Default::default() });
    let mut nic = Nic::open(&*machine, 0).expect("open NIC 0");
    let start = Instant::now();
    let qps: Vec<Qp> = (0..QPS).map(|i| Qp::make(&nic).unwrap_or_else(|e| panic!("queue pair {i}: {e}"))).collect();
    let took = start.elapsed().as_secs_f64();
    assert!(Qp::make(&nic).is_err(), "the queue pair past the limit is refused");
    drop(qps);
    nic.close();
    took
}

/// Seconds to register `REGIONS` regions of 4 KiB on a freshly opened NIC.
fn register_regions() -> f64 {
    let firmware = FirmwareOptions { mrav_entries: MRAV_ENTRIES, ..FirmwareOptions::default() };
    let machine = ModelMachine::new(WorldConfig { nics: 1, seed: 1, firmware, ..Default::default() });
    let mut nic = Nic::open(&*machine, 0).expect("open NIC 0");
    let start = Instant::now();
    let regions: Vec<Region> =
        (0..REGIONS).map(|i| Region::host(&nic, 4096).unwrap_or_else(|e| panic!("region {i}: {e}"))).collect();
    let took = start.elapsed().as_secs_f64();
    assert!(Region::host(&nic, 4096).is_err(), "the region past the limit is refused");
    drop(regions);
    nic.close();
    took
}

fn main() {
    let args = Args::parse(1.0);
    let src = vec![0x5au8; MIB];
    let mut dst = vec![0u8; MIB];
    let mut memcpy = [memcpy_figure(&src, &mut dst)];
    let (mut qps, mut regions, mut peak) = (f64::INFINITY, f64::INFINITY, 0);
    // The reference before and after the objects' trials (its best kept).
    measure(&args, &mut memcpy);
    for trial in 0..args.trials {
        if args.want("qps") {
            qps = qps.min(make_qps());
            if trial == 0 {
                peak = peak_resident();
            }
        }
        if args.want("regions") {
            regions = regions.min(register_regions());
        }
    }
    measure(&args, &mut memcpy);
    let copy = MIB as f64 / memcpy[0].best;
    println!("{:<44} {:>9.2} GB/s ({:.1} us a copy)", memcpy[0].name, memcpy[0].best / 1e9, copy * 1e6);
    if args.want("qps") {
        print_per_object("make 65,536 queue pairs (best)", qps, QPS, copy);
        println!(
            "{:<44} {:>9.2} GiB = {:.1} KiB a queue pair",
            "  peak resident memory (VmHWM) after",
            peak as f64 / f64::from(1u32 << 30),
            peak as f64 / QPS as f64 / 1024.0
        );
    }
    if args.want("regions") {
        print_per_object("register 262,144 regions of 4 KiB (best)", regions, REGIONS, copy);
    }
}

/// One figure: `seconds` for `count` objects, and each object's time in microseconds and in
/// memcpys of 1 MiB (`copy` seconds each).
fn print_per_object(name: &str, seconds: f64, count: usize, copy: f64) {
    let each = seconds / count as f64;
    println!("{name:<44} {seconds:>9.2} s = {:.1} us each = {:.1} memcpys of 1 MiB each", each * 1e6, each / copy);
}
