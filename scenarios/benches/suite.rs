//! What the scenario suite costs: `bnxt-rig run scenarios/` (the release build of this package's
//! binary, every scenario on the in-process model) with `--jobs 1` and `--jobs 2`, its wall time
//! and the user and system CPU time it took.
//!
//! Each trial runs the suite once per job count, alternating, and the trial with the least wall
//! time is kept for each; its user and system time are the child's own (`/proc/self/stat`'s
//! `cutime` and `cstime`, in clock ticks, after the child is waited for). The reference is a
//! single-core memcpy of 1 MiB measured before and after the trials (its best kept): the wall
//! time is also given as that many memcpys, which means the same on a loaded machine.
//!
//! Run: `cargo bench -p bnxt-rig --bench suite -- [seconds of memcpy] [trials] [words]` (words:
//! `jobs1`, `jobs2`), as `-- 1 3`.

#[path = "../../emulator/benches/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use support::{Args, measure, memcpy_figure};

const MIB: usize = 1 << 20;

/// Clock ticks a second, for `/proc/self/stat` (Linux reports them at `USER_HZ`, 100).
const TICKS: f64 = 100.0;

/// User and system seconds of this process's waited-for children so far (`cutime`, `cstime`).
fn children_cpu() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command's closing parenthesis, the third of which is field 3 (state).
    let after = &stat[stat.rfind(')').expect("a command in parentheses") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |n: usize| fields[n - 3].parse::<f64>().expect("a number of ticks") / TICKS;
    (field(16), field(17))
}

/// One run of the suite with `jobs` (its run record written into `dir`): wall, user and system
/// seconds.
fn run_suite(jobs: u32, dir: &Path) -> [f64; 3] {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (user, system) = children_cpu();
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_bnxt-rig"))
        .args(["run", "--jobs", &jobs.to_string(), "--record"])
        .arg(dir.join("run.json"))
        .arg(suite)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .expect("run bnxt-rig");
    let wall = start.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the suite failed with --jobs {jobs}:\n{stdout}");
    assert!(stdout.contains(" 0 failed"), "the suite's summary says failures:\n{stdout}");
    let (user2, system2) = children_cpu();
    [wall, user2 - user, system2 - system]
}

fn main() {
    let args = Args::parse(1.0);
    let src = vec![0x5au8; MIB];
    let mut dst = vec![0u8; MIB];
    let mut memcpy = [memcpy_figure(&src, &mut dst)];
    let wanted: Vec<u32> = [1, 2].into_iter().filter(|j| args.want(&format!("jobs{j}"))).collect();
    let mut best = vec![[f64::INFINITY; 3]; wanted.len()];
    let records = tempfile::tempdir().expect("a folder for the run records");
    measure(&args, &mut memcpy);
    for _ in 0..args.trials {
        for (slot, &jobs) in best.iter_mut().zip(&wanted) {
            let got = run_suite(jobs, records.path());
            if got[0] < slot[0] {
                *slot = got;
            }
        }
    }
    measure(&args, &mut memcpy);
    let copy = MIB as f64 / memcpy[0].best;
    println!("{:<36} {:>9.2} GB/s ({:.1} us a copy)", memcpy[0].name, memcpy[0].best / 1e9, copy * 1e6);
    for (&jobs, [wall, user, system]) in wanted.iter().zip(&best) {
        println!(
            "{:<36} {wall:>9.2} s wall = {:.0} memcpys of 1 MiB; {user:.2} s user, {system:.2} s system",
            format!("the suite, --jobs {jobs} (best wall)"),
            wall / copy
        );
    }
}
