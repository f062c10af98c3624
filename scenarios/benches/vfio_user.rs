//! Throughput of the vfio-user target as a user meets it: two model NICs, each in a process of
//! its own (`bnxt-model serve --segment`), joined by a segment hub in a third process (`bnxt-model
//! segment`), and our driver in this process reaching them over their vfio-user sockets, posting
//! WQEs, ringing doorbells and polling CQEs on the real clock, as `bnxt-rig run --target
//! vfio-user:A,B` does.
//!
//! The server and hub processes are this bench's own executable started again with `--serve` or
//! `--hub` (the library's `serve` and `Hub`, the same code as the `bnxt-model` binary's, which a
//! bench of this package cannot name), so `cargo bench` builds everything it runs.
//!
//! Figures: 64-byte SENDs one at a time (each waited for before the next is posted: the round
//! trip) and 256 in flight (the rate), as messages a second; 1 MiB SENDs one at a time and 8 in
//! flight, as a ratio of a single-core 1 MiB memcpy measured in the same run. Every figure's
//! trials are interleaved with the reference's and the best kept (`support`).
//!
//! Run: `cargo bench -p bnxt-rig --bench vfio_user -- [seconds per figure] [trials] [words]`
//! (words: `small-one`, `small`, `large-one`, `large`).

#[path = "../../emulator/benches/support/mod.rs"]
mod support;

mod link;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use bnxt::Nic;
use bnxt::vfio_user::VfioUserMachine;
use bnxt_model::faults::FaultPlan;
use bnxt_model_host::serve::segment::{Hub, SegmentOptions};
use bnxt_model_host::serve::{ServeOptions, serve};
use link::Link;
use support::{Args, Figure, measure, memcpy_figure};

const MIB: usize = 1 << 20;
/// 1 MiB messages in flight per call of the large-message rate (and MiB of its regions).
const LARGE_BATCH: usize = 8;
/// 64-byte messages in flight per call of the message rate.
const SMALL_BATCH: usize = 256;

/// What this executable does when started as one of the bench's processes.
fn child(args: &[String]) -> Option<()> {
    match args {
        [flag, socket] if flag == "--hub" => {
            let options = SegmentOptions { socket: PathBuf::from(socket), pcap: None, catch_signals: true };
            Hub::bind(&options).expect("the hub listens").run().expect("the hub runs");
            Some(())
        }
        [flag, socket, nic, segment] if flag == "--serve" => {
            let nic: u8 = nic.parse().expect("a NIC number");
            let options = ServeOptions {
                socket: PathBuf::from(socket),
                mac: [0x02, 0x57, 0x60, 0x80, 0x00, nic],
                seed: u64::from(nic),
                faults: FaultPlan::default(),
                armed: Vec::new(),
                control: None,
                hwrm_log: None,
                persist: false,
                segment: Some(PathBuf::from(segment)),
                pcap: None,
                catch_signals: true,
            };
            serve(&options).expect("the server runs");
            Some(())
        }
        _ => None,
    }
}

/// The hub and server processes, stopped when dropped (a panic of the bench included).
struct Processes {
    dir: tempfile::TempDir,
    children: Vec<Child>,
}

impl Processes {
    /// Start the hub, then two servers joined to it, each once its socket is there.
    fn start() -> Processes {
        let exe = std::env::current_exe().expect("this executable's path");
        let mut p = Processes { dir: tempfile::tempdir().expect("a private folder"), children: Vec::new() };
        let segment = p.socket("segment");
        p.spawn(&exe, &["--hub", &segment.display().to_string()], &segment);
        for nic in 1..=2 {
            let socket = p.socket(&format!("nic{nic}"));
            let args = ["--serve", &socket.display().to_string(), &nic.to_string(), &segment.display().to_string()];
            p.spawn(&exe, &args, &socket);
        }
        p
    }

    fn socket(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}.sock"))
    }

    fn spawn(&mut self, exe: &Path, args: &[&str], socket: &Path) {
        self.children.push(Command::new(exe).args(args).spawn().expect("start a process of the bench"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !socket.exists() {
            assert!(Instant::now() < deadline, "{} did not listen at {}", args[0], socket.display());
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// How a figure is reported.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Reference,
    Bytes,
    Messages,
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if child(&argv).is_some() {
        return;
    }
    let args = Args::parse(3.0);
    let processes = Processes::start();
    let machine = VfioUserMachine::connect(&[processes.socket("nic1"), processes.socket("nic2")])
        .expect("connect to the two servers");
    let a = Nic::open(&machine, 0).expect("open NIC 0");
    let b = Nic::open(&machine, 1).expect("open NIC 1");

    // One checked transfer first: the figures below measure a path that delivers every byte.
    Link::between(&a, &b, 2 * MIB).check(2 * MIB);

    let src = vec![0x5au8; MIB];
    let mut dst = vec![0u8; MIB];
    let mut figures = vec![memcpy_figure(&src, &mut dst)];
    let mut kinds = vec![Kind::Reference];
    let plan: [(&str, &'static str, usize, usize, Kind); 4] = [
        ("small-one", "64-byte SENDs, one at a time", 1, 64, Kind::Messages),
        ("small", "64-byte SENDs, 256 in flight", SMALL_BATCH, 64, Kind::Messages),
        ("large-one", "1 MiB SENDs, one at a time", 1, MIB, Kind::Bytes),
        ("large", "1 MiB SENDs, 8 in flight", LARGE_BATCH, MIB, Kind::Bytes),
    ];
    for (word, name, count, len, kind) in plan {
        if args.want(word) {
            let mut link = Link::between(&a, &b, (count * len).max(64 * 1024));
            let units = if kind == Kind::Bytes { (count * len) as f64 } else { count as f64 };
            figures.push(Figure::new(name, units, move || link.transfer(count, len, len)));
            kinds.push(kind);
        }
    }
    measure(&args, &mut figures);

    let memcpy = figures[0].best;
    println!("{:<40} {:>14}", "figure (vfio-user: 2 servers + hub)", "rate");
    for (f, kind) in figures.iter().zip(kinds) {
        let rate = f.best;
        match kind {
            Kind::Reference => println!("{:<40} {:>10.2} GB/s", f.name, rate / 1e9),
            Kind::Bytes => println!("{:<40} {:>10.3} GB/s = {:.4} of memcpy", f.name, rate / 1e9, rate / memcpy),
            Kind::Messages => {
                println!("{:<40} {:>10.0} messages/s = {:.1} us each", f.name, rate, 1e6 / rate)
            }
        }
    }
    drop(figures);
    drop((a, b));
    drop(machine);
    drop(processes);
}
