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
//! Each is also measured by the CPU time it takes, of this process and the three others
//! together (`/proc/PID/schedstat`, time on a CPU): on a machine shared with other work the
//! wall-clock rate is mostly how often the four processes get a CPU, the CPU time what the path
//! itself costs. The memcpy's CPU-time rate is the reference of the CPU-time ratios.
//!
//! The floor of a message one at a time: a round trip of 8 bytes over a UNIX socket between this
//! process and another (`--echo`), measured in the same run. A 64-byte SEND waited for crosses
//! five sockets one way (this process to the sending server, that server to the hub, the hub to
//! the receiving server, and the acknowledgement back through the hub to the sender, which writes
//! the completion this process polls for in memory), so it costs at least two and a half of
//! them.
//!
//! Run: `cargo bench -p bnxt-rig --bench vfio_user -- [seconds per figure] [trials] [words]`
//! (words: `echo`, `small-one`, `small`, `large-one`, `large`, and `split`: afterwards, the
//! in-flight figures run again and each process's user and system time a unit is printed).

#[path = "../../emulator/benches/support/mod.rs"]
mod support;

mod link;

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use bnxt::Nic;
use bnxt::vfio_user::VfioUserMachine;
use bnxt_model::faults::FaultPlan;
use bnxt_model_host::serve::segment::{Hub, SegmentOptions};
use bnxt_model_host::serve::{ServeOptions, serve};
use link::Link;
use support::{Args, CpuClock, Figure, measure, memcpy_figure};

const MIB: usize = 1 << 20;
/// 1 MiB messages in flight per call of the large-message rate (and MiB of its regions).
const LARGE_BATCH: usize = 8;
/// 64-byte messages in flight per call of the message rate.
const SMALL_BATCH: usize = 256;

/// What this executable does when started as one of the bench's processes.
fn child(args: &[String]) -> Option<()> {
    match args {
        [flag, socket] if flag == "--hub" => {
            let options =
                SegmentOptions { socket: PathBuf::from(socket), control: None, pcap: None, catch_signals: true };
            Hub::bind(&options).expect("the hub listens").run().expect("the hub runs");
            Some(())
        }
        [flag, socket] if flag == "--echo" => {
            // Each connection in turn (the first is the bench's check that this one listens).
            let listener = UnixListener::bind(socket).expect("the echo socket listens");
            for mut peer in listener.incoming().map_while(Result::ok) {
                let mut word = [0u8; 8];
                while peer.read_exact(&mut word).is_ok() && peer.write_all(&word).is_ok() {}
            }
            Some(())
        }
        [flag, socket, nic, segment] if flag == "--serve" => {
            let nic: u8 = nic.parse().expect("a NIC number");
            let options = ServeOptions {
                socket: PathBuf::from(socket),
                mac: [0x02, 0x57, 0x60, 0x80, 0x00, nic],
                seed: u64::from(nic),
                faults: FaultPlan::default(),
                firmware: Default::default(),
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
    /// Start the echo process, the hub, then two servers joined to the hub, each once its
    /// socket is there.
    fn start() -> Processes {
        let exe = std::env::current_exe().expect("this executable's path");
        let mut p = Processes { dir: tempfile::tempdir().expect("a private folder"), children: Vec::new() };
        let echo = p.socket("echo");
        p.spawn(&exe, &["--echo", &echo.display().to_string()], &echo);
        let segment = p.socket("segment");
        p.spawn(&exe, &["--hub", &segment.display().to_string()], &segment);
        for nic in 1..=2 {
            let socket = p.socket(&format!("nic{nic}"));
            let args = ["--serve", &socket.display().to_string(), &nic.to_string(), &segment.display().to_string()];
            p.spawn(&exe, &args, &socket);
        }
        p
    }

    /// Seconds on a CPU of this process's main thread, and of the hub's and servers' as well
    /// when `all` (the echo process's is not counted: it runs only for its own figure).
    fn cpu_clock(&self, all: bool) -> CpuClock {
        let mut files = vec![PathBuf::from("/proc/self/schedstat")];
        if all {
            files.extend(self.children[1..].iter().map(|c| PathBuf::from(format!("/proc/{}/schedstat", c.id()))));
        }
        Box::new(move || files.iter().map(|f| on_cpu(f)).sum())
    }

    fn socket(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}.sock"))
    }

    fn spawn(&mut self, exe: &Path, args: &[&str], socket: &Path) {
        self.children.push(Command::new(exe).args(args).spawn().expect("start a process of the bench"));
        // The file appears when the socket is bound, a moment before it listens: wait until a
        // connection is taken (the servers and the hub take a connection closed at once as a
        // probe, the echo process serves the next).
        let deadline = Instant::now() + Duration::from_secs(10);
        while UnixStream::connect(socket).is_err() {
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

/// Run `f`; if it panics (a transfer failed), print what each server's NIC says of itself (its
/// RoCE counters, `BNXT_RIG_STATE`) before the panic goes on.
fn states_on_failure(machine: &VfioUserMachine, f: impl FnOnce()) {
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        for nic in 0..2 {
            let state = machine.client(nic).map(|c| c.call(bnxt_vfio_user::header::Command::RigState, &[], &[]));
            match state {
                Some(Ok(reply)) => eprintln!("NIC {nic}: {}", String::from_utf8_lossy(&reply.body)),
                Some(Err(e)) => eprintln!("NIC {nic}: no state: {e}"),
                None => {}
            }
        }
        std::panic::resume_unwind(panic);
    }
}

/// Seconds a task has run on a CPU: the first field of its `/proc/PID/schedstat`, in ns.
fn on_cpu(file: &Path) -> f64 {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let ns: u64 = text.split_whitespace().next().and_then(|f| f.parse().ok()).expect("schedstat's first field");
    ns as f64 / 1e9
}

/// User and system seconds of a whole process (every thread), from `/proc/PID/stat` (fields 14
/// and 15, in clock ticks: 10 ms on Linux's usual `USER_HZ` of 100).
fn user_system(pid: &str) -> (f64, f64) {
    let file = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let rest = &text[text.rfind(')').expect("stat's command name") + 2..];
    let fields: Vec<f64> = rest.split_whitespace().map(|f| f.parse().unwrap_or(0.0)).collect();
    // `rest` starts at field 3: utime is field 14, stime field 15.
    (fields[11] / 100.0, fields[12] / 100.0)
}

/// Where a figure's CPU time goes: `f` (moving `units` each call) run for `seconds` of wall
/// time, and the user and system time each process took for it, a unit.
fn split(processes: &Processes, name: &str, units: f64, seconds: f64, mut f: impl FnMut()) {
    let pids: Vec<(String, &str)> = std::iter::once(("self".to_string(), "driver (this process)"))
        .chain(processes.children[1..].iter().map(|c| c.id().to_string()).zip(["hub", "server A", "server B"]))
        .collect();
    let before: Vec<(f64, f64)> = pids.iter().map(|(p, _)| user_system(p)).collect();
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        f();
        calls += 1;
    }
    let done = calls as f64 * units;
    println!(
        "{name}: {calls} calls in {:.2} s of wall time; CPU a unit (us), user + system:",
        start.elapsed().as_secs_f64()
    );
    let (mut user, mut system) = (0.0, 0.0);
    for ((p, what), (u0, s0)) in pids.iter().zip(before) {
        let (u1, s1) = user_system(p);
        let (u, s) = ((u1 - u0) * 1e6 / done, (s1 - s0) * 1e6 / done);
        println!("  {what:<22} {u:>9.2} + {s:>9.2}");
        user += u;
        system += s;
    }
    println!("  {:<22} {user:>9.2} + {system:>9.2}", "all four");
}

/// How a figure is reported.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Reference,
    Bytes,
    Messages,
    Echo,
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if let Some(filter) = std::env::var_os("BNXT_BENCH_LOG") {
        // The processes' logs on stderr (`BNXT_BENCH_LOG=debug`, or any tracing filter).
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter.to_string_lossy()))
            .with_writer(std::io::stderr)
            .init();
    }
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
    states_on_failure(&machine, || Link::between(&a, &b, 2 * MIB).check(2 * MIB));

    let src = vec![0x5au8; MIB];
    let mut dst = vec![0u8; MIB];
    let mut figures = vec![memcpy_figure(&src, &mut dst).with_cpu(processes.cpu_clock(false))];
    let mut kinds = vec![Kind::Reference];
    if args.want("echo") {
        let mut echo = UnixStream::connect(processes.socket("echo")).expect("connect to the echo process");
        let mut word = *b"8 bytes.";
        figures.push(Figure::new("socket round trip between two processes", 1.0, move || {
            echo.write_all(&word).expect("the echo process reads");
            echo.read_exact(&mut word).expect("the echo process answers");
        }));
        kinds.push(Kind::Echo);
    }
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
            let figure = Figure::new(name, units, move || link.transfer(count, len, len));
            figures.push(figure.with_cpu(processes.cpu_clock(true)));
            kinds.push(kind);
        }
    }
    states_on_failure(&machine, || measure(&args, &mut figures));

    let (memcpy, memcpy_cpu) = (figures[0].best, figures[0].best_cpu);
    println!("{:<40} {:>24} {:>36}", "figure (vfio-user: 2 servers + hub)", "rate", "CPU time (4 processes)");
    for (f, kind) in figures.iter().zip(kinds) {
        let (rate, cpu) = (f.best, f.best_cpu);
        match kind {
            Kind::Reference => {
                println!("{:<40} {:>17.2} GB/s {:>29.2} GB/s", f.name, rate / 1e9, cpu / 1e9)
            }
            Kind::Echo => println!("{:<40} {:>15.0} /s = {:.1} us each", f.name, rate, 1e6 / rate),
            Kind::Bytes => println!(
                "{:<40} {:>9.3} GB/s = {:.4} of memcpy {:>9.3} GB/s = {:.4} of memcpy",
                f.name,
                rate / 1e9,
                rate / memcpy,
                cpu / 1e9,
                cpu / memcpy_cpu
            ),
            Kind::Messages => println!(
                "{:<40} {:>9.0} messages/s = {:>6.1} us each {:>9.1} us a message",
                f.name,
                rate,
                1e6 / rate,
                1e6 / cpu
            ),
        }
    }
    drop(figures);
    if args.want("split") {
        // Where each figure's CPU time goes, process by process (whole processes, user and
        // system time from /proc/PID/stat).
        for (word, name, count, len, kind) in plan {
            if word != "small-one" && args.want(word) {
                let mut link = Link::between(&a, &b, (count * len).max(64 * 1024));
                let units = if kind == Kind::Bytes { (count * len) as f64 / MIB as f64 } else { count as f64 };
                let unit = if kind == Kind::Bytes { "MiB" } else { "message" };
                split(&processes, &format!("{name} (a unit: a {unit})"), units, 4.0 * args.secs, || {
                    link.transfer(count, len, len)
                });
            }
        }
    }
    drop((a, b));
    drop(machine);
    drop(processes);
}
