//! What a hostile client or fault plan once did to `bnxt-model serve`, kept from coming back:
//! fault delays near the largest duration, interrupt descriptors that block or are not eventfds,
//! a second server on the same socket, loosely parsed DMA_MAP and VERSION payloads, and a flood
//! of refused commands. Each is seen as a client sees it: over the socket, with a real server
//! process.

mod vfio_user_support;

use std::os::fd::{AsFd, OwnedFd};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use bnxt_vfio_user::header::Command;
use bnxt_vfio_user::linux::*;
use bnxt_vfio_user::payload::{DmaMap, IrqSet, RegionAccess, Version};
use rustix::event::{EventfdFlags, eventfd};
use vfio_user_support::{MAC, Raw, Server, fd_of, memfd, ver_get, wait_response};
use zerocopy::IntoBytes;

const WAIT: Duration = Duration::from_secs(10);

/// A fault plan delaying every HWRM_VER_GET (req_type 0) by the largest `Duration` serde reads.
const HUGE_DELAY_PLAN: &str = r#"{"firmware":[{"nic":0,"req_type":0,"nth":null,
    "action":{"delay":{"secs":18446744073709551615,"nanos":999999999}}}]}"#;

/// A RoCE command fault of the same size (CREATE_QP, opcode 1).
const HUGE_COMMAND_DELAY_PLAN: &str = r#"{"firmware":[],"roce_commands":[{"nic":0,"opcode":1,
    "action":{"delay":{"secs":18446744073709551615,"nanos":999999999}}}]}"#;

/// A wire plan whose rule delays frames by the same amount.
/// The same three as `serve --faults` files name them (requests by name, delays in ms).
const HUGE_DELAY_FILES: [&str; 3] = [
    r#"{"firmware":[{"request":"VER_GET","action":"delay","delay_ms":18446744073709551615}]}"#,
    r#"{"firmware":[{"request":"CREATE_QP","action":"delay","delay_ms":18446744073709551615}]}"#,
    HUGE_WIRE_DELAY_PLAN,
];

const HUGE_WIRE_DELAY_PLAN: &str = r#"{"firmware":[],"wire":{"rules":[{"kind":"delay",
    "delay":{"secs":18446744073709551615,"nanos":999999999}}]}}"#;

fn config_read16(c: &mut Raw, offset: u64) -> u16 {
    let req = RegionAccess { offset, region: PCI_CONFIG_REGION_INDEX, count: 2 };
    let body = c.ok(Command::RegionRead, &[req.as_bytes()], &[]);
    u16::from_le_bytes([body[16], body[17]])
}

fn write_region(c: &mut Raw, region: u32, offset: u64, data: &[u8]) {
    let req = RegionAccess { offset, region, count: data.len() as u32 };
    c.ok(Command::RegionWrite, &[req.as_bytes(), data], &[]);
}

/// Lend one page of guest memory at 0x10000, enable bus mastering and send HWRM_VER_GET `seq`
/// through the BAR0 window; the memory, to look for the answer at offset 0x100.
fn send_ver_get(c: &mut Raw, seq: u16) -> OwnedFd {
    let ram = memfd(0x1000);
    let map =
        DmaMap { argsz: 32, flags: DMA_MAP_FLAG_READ | DMA_MAP_FLAG_WRITE, offset: 0, address: 0x10000, size: 0x1000 };
    c.ok(Command::DmaMap, &[map.as_bytes()], &[fd_of(&ram)]);
    write_region(c, PCI_CONFIG_REGION_INDEX, 4, &0x0006u16.to_le_bytes());
    let mut window = [0u8; 128];
    let req = ver_get(seq, 0x10100);
    window[..req.len()].copy_from_slice(&req);
    write_region(c, 0, 0, &window);
    write_region(c, 0, 0x100, &1u32.to_le_bytes());
    ram
}

/// The server still answers on this connection, well after every deadline a huge delay could
/// have broken.
fn still_answers(c: &mut Raw) {
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(config_read16(c, 0), 0x14e4);
}

#[test]
fn a_fault_plan_file_with_a_huge_delay_is_refused_at_start_with_its_reason() {
    for plan in HUGE_DELAY_FILES {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("faults.json");
        let socket = dir.path().join("nic.sock");
        std::fs::write(&file, plan).unwrap();
        let mut child = Process::new(env!("CARGO_BIN_EXE_bnxt-model"))
            .args(["serve", "--mac", MAC, "--socket"])
            .arg(&socket)
            .arg("--faults")
            .arg(&file)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if socket.exists() || Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server took a plan with a huge delay and is serving: {plan}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("faults.json") && stderr.contains("longest delay"), "{stderr}");
    }
}

#[test]
fn a_restart_with_a_huge_delay_is_refused_and_the_server_carries_on() {
    let mut server = Server::start(&[]);
    let mut c = Raw::negotiated(&server.socket);
    for plan in [HUGE_DELAY_PLAN, HUGE_COMMAND_DELAY_PLAN, HUGE_WIRE_DELAY_PLAN] {
        let restart = format!(r#"{{"seed":1,"faults":{plan}}}"#);
        assert_eq!(c.refused(Command::RigRestart as u16, &[restart.as_bytes()], &[]), errno::EINVAL, "{plan}");
    }
    let ram = send_ver_get(&mut c, 7);
    assert!(wait_response(&ram, 0x100, 7, WAIT).is_some(), "the plan was not applied: answered as usual");
    still_answers(&mut c);
    assert!(server.running());
}

#[test]
fn the_longest_delay_a_plan_may_have_delays_without_breaking_the_clock() {
    // One hour is the longest delay a plan may ask for: accepted, and the request simply stays
    // unanswered while the server goes on serving.
    let mut server = Server::start(&[]);
    let mut c = Raw::negotiated(&server.socket);
    let restart = r#"{"seed":1,"faults":{"firmware":[{"nic":0,"req_type":0,"nth":null,
        "action":{"delay":{"secs":3600,"nanos":0}}}]}}"#;
    c.ok(Command::RigRestart, &[restart.as_bytes()], &[]);
    let ram = send_ver_get(&mut c, 3);
    assert!(wait_response(&ram, 0x100, 3, Duration::from_millis(300)).is_none(), "delayed by an hour");
    still_answers(&mut c);
    assert!(server.running());
}

fn set_irqs(c: &mut Raw, flags: u32, index: u32, start: u32, count: u32, fds: &[&OwnedFd]) -> Option<u32> {
    let req = IrqSet { argsz: 20, flags, index, start, count };
    let fds: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
    let reply = c.call(Command::DeviceSetIrqs as u16, &[req.as_bytes()], &fds);
    reply.header.is_error().then_some(reply.header.error)
}

const TRIGGER_WITH_EVENTFD: u32 = IRQ_SET_DATA_EVENTFD | IRQ_SET_ACTION_TRIGGER;
const TRIGGER_NOW: u32 = IRQ_SET_DATA_NONE | IRQ_SET_ACTION_TRIGGER;

#[test]
fn a_blocking_eventfd_at_its_largest_count_never_blocks_the_server() {
    let mut server = Server::start(&[]);
    let mut c = Raw::negotiated(&server.socket);
    // eventfd(2): the counter's largest value is 2^64 - 2; a blocking write of 1 then waits for
    // a read that never comes.
    let full = eventfd(0, EventfdFlags::empty()).unwrap();
    rustix::io::write(&full, &(u64::MAX - 1).to_ne_bytes()).unwrap();
    assert_eq!(set_irqs(&mut c, TRIGGER_WITH_EVENTFD, PCI_MSIX_IRQ_INDEX, 0, 1, &[&full]), None);
    // The client asks the server to signal the vector: the write cannot be done now.
    c.stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let started = Instant::now();
    assert_eq!(set_irqs(&mut c, TRIGGER_NOW, PCI_MSIX_IRQ_INDEX, 0, 1, &[]), None);
    assert!(started.elapsed() < Duration::from_secs(5));
    still_answers(&mut c);
    let state = c.ok(Command::RigState, &[], &[]);
    let state: serde_json::Value = serde_json::from_slice(&state).unwrap();
    assert_eq!(state["interrupts_dropped"], 1, "the interrupt that could not be signalled is counted: {state}");
    // SIGTERM still ends it.
    rustix::process::kill_process(rustix::process::Pid::from_child(&server.child), rustix::process::Signal::TERM)
        .unwrap();
    let (status, log) = server.wait_exit(WAIT);
    assert!(status.success(), "{status}: {log}");
}

#[test]
fn triggers_that_are_not_writable_eventfds_are_refused_when_set() {
    let server = Server::start(&[]);
    let mut c = Raw::negotiated(&server.socket);
    let (pipe_read, pipe_write) = rustix::pipe::pipe().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let folder: OwnedFd = std::fs::File::open(dir.path()).unwrap().into();
    let path = dir.path().join("plain");
    std::fs::write(&path, b"x").unwrap();
    let read_only: OwnedFd = std::fs::File::open(&path).unwrap().into();
    let read_write: OwnedFd = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap().into();
    let memory = memfd(0x1000);
    for (what, fd) in [
        ("a pipe's read end", &pipe_read),
        ("a pipe's write end", &pipe_write),
        ("a directory", &folder),
        ("a read-only file", &read_only),
        ("a writable file", &read_write),
        ("a memfd", &memory),
    ] {
        assert_eq!(
            set_irqs(&mut c, TRIGGER_WITH_EVENTFD, PCI_MSIX_IRQ_INDEX, 0, 1, &[fd]),
            Some(errno::EINVAL),
            "{what}"
        );
    }
    // One bad descriptor among good ones refuses the whole request, and none is taken.
    let good = eventfd(0, EventfdFlags::NONBLOCK).unwrap();
    assert_eq!(
        set_irqs(&mut c, TRIGGER_WITH_EVENTFD, PCI_MSIX_IRQ_INDEX, 0, 2, &[&good, &pipe_read]),
        Some(errno::EINVAL)
    );
    let state: serde_json::Value = serde_json::from_slice(&c.ok(Command::RigState, &[], &[])).unwrap();
    assert_eq!(state["interrupt_eventfds"], 0, "{state}");
    // A usable eventfd is taken and signalled.
    assert_eq!(set_irqs(&mut c, TRIGGER_WITH_EVENTFD, PCI_MSIX_IRQ_INDEX, 0, 1, &[&good]), None);
    assert_eq!(set_irqs(&mut c, TRIGGER_NOW, PCI_MSIX_IRQ_INDEX, 0, 1, &[]), None);
    let mut count = [0u8; 8];
    rustix::io::read(&good, &mut count).unwrap();
    assert_eq!(u64::from_ne_bytes(count), 1);
}

#[test]
fn a_second_server_on_the_same_socket_refuses_and_leaves_the_first_unharmed() {
    let mut first = Server::start(&[]);
    let out = Process::new(env!("CARGO_BIN_EXE_bnxt-model"))
        .args(["serve", "--mac", MAC, "--socket"])
        .arg(&first.socket)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("another server is listening"), "{stderr}");
    std::thread::sleep(Duration::from_millis(100));
    assert!(first.running(), "the first server is still running");
    assert!(first.socket.exists(), "and its socket is still there");
    let mut c = Raw::negotiated(&first.socket);
    assert_eq!(config_read16(&mut c, 2), 0x1760);
    drop(c);
    let (status, log) = first.wait_exit(WAIT);
    assert!(status.success() && log.contains("client gone"), "{status}: {log}");
}

#[test]
fn dma_map_refuses_a_wrong_argsz_and_unknown_flags() {
    let server = Server::start(&[]);
    let mut c = Raw::negotiated(&server.socket);
    let ram = memfd(0x1000);
    let good =
        DmaMap { argsz: 32, flags: DMA_MAP_FLAG_READ | DMA_MAP_FLAG_WRITE, offset: 0, address: 0x10000, size: 0x1000 };
    for (m, what) in [
        (DmaMap { argsz: 0, ..good }, "argsz 0"),
        (DmaMap { argsz: 31, ..good }, "argsz shorter than the structure"),
        (DmaMap { argsz: 64, ..good }, "argsz longer than the payload"),
        (DmaMap { flags: good.flags | 1 << 7, ..good }, "an unknown flag"),
        (DmaMap { flags: good.flags | 1 << 31, ..good }, "the top flag"),
    ] {
        assert_eq!(c.refused(Command::DmaMap as u16, &[m.as_bytes()], &[fd_of(&ram)]), errno::EINVAL, "{what}");
    }
    c.ok(Command::DmaMap, &[good.as_bytes()], &[fd_of(&ram)]);
}

#[test]
fn version_refuses_capabilities_that_are_not_an_object_of_numbers() {
    let server = Server::start(&["--persist"]);
    for caps in [
        &b"[1,2,3]\0"[..],
        b"42\0",
        b"\"capabilities\"\0",
        b"{\"capabilities\":[]}\0",
        b"{\"capabilities\":{\"max_data_xfer_size\":\"1048576\"}}\0",
        b"{\"capabilities\":{\"max_data_xfer_size\":-1}}\0",
        b"{\"capabilities\":{\"max_data_xfer_size\":0}}\0",
        b"{\"capabilities\":{\"max_msg_fds\":1.5}}\0",
        b"{\"capabilities\":{\"pgsizes\":\"4096\"}}\0",
    ] {
        let mut c = Raw::connect(&server.socket);
        let shown = String::from_utf8_lossy(caps);
        assert_eq!(
            c.refused(Command::Version as u16, &[Version::default().as_bytes(), caps], &[]),
            errno::EINVAL,
            "{shown}"
        );
        // Still not negotiated: a second try with good capabilities is taken.
        let good = b"{\"capabilities\":{\"max_msg_fds\":8,\"max_data_xfer_size\":65536}}\0";
        c.ok(Command::Version, &[Version::default().as_bytes(), good], &[]);
    }
}

#[test]
fn a_flood_of_refused_commands_logs_a_few_warnings_and_counts_the_rest() {
    let mut server = Server::start(&[]);
    let mut c = Raw::negotiated(&server.socket);
    for _ in 0..3000 {
        assert_eq!(c.refused(0x4242, &[], &[]), errno::ENOSYS);
    }
    drop(c);
    let (status, log) = server.wait_exit(WAIT);
    assert!(status.success(), "{status}");
    let warnings = log.lines().filter(|l| l.contains("unknown command 16962")).count();
    assert!((1..=100).contains(&warnings), "{warnings} warnings for 3000 refusals");
    let suppressed: u64 =
        log.lines().filter_map(|l| l.split("suppressed ").nth(1)?.split_whitespace().next()?.parse::<u64>().ok()).sum();
    assert_eq!(suppressed + warnings as u64, 3000, "every refusal is logged or counted as suppressed: {log}");
}

#[test]
fn serve_replaces_links_at_its_hwrm_log_and_pcap_and_leaves_their_targets_alone() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, b"precious").unwrap();
    let log = dir.path().join("hwrm.log");
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    let pcap = dir.path().join("nic.pcap");
    std::fs::hard_link(&victim, &pcap).unwrap();
    let hub_socket = dir.path().join("hub.sock");
    let mut hub = Process::new(env!("CARGO_BIN_EXE_bnxt-model"))
        .args(["segment", "--socket"])
        .arg(&hub_socket)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + WAIT;
    while !hub_socket.exists() {
        assert!(Instant::now() < deadline, "the hub did not listen");
        std::thread::sleep(Duration::from_millis(10));
    }
    let socket = dir.path().join("nic.sock");
    let mut serve = Process::new(env!("CARGO_BIN_EXE_bnxt-model"))
        .args(["serve", "--mac", MAC, "--socket"])
        .arg(&socket)
        .arg("--hwrm-log")
        .arg(&log)
        .arg("--segment")
        .arg(&hub_socket)
        .arg("--pcap")
        .arg(&pcap)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while !socket.exists() {
        assert!(Instant::now() < deadline, "the server did not listen");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut c = Raw::negotiated(&socket);
    let ram = send_ver_get(&mut c, 5);
    assert!(wait_response(&ram, 0x100, 5, WAIT).is_some());
    drop(c);
    assert!(serve.wait().unwrap().success());
    rustix::process::kill_process(rustix::process::Pid::from_child(&hub), rustix::process::Signal::TERM).unwrap();
    hub.wait().unwrap();
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "nothing was written through the links");
    for path in [&log, &pcap] {
        assert!(std::fs::symlink_metadata(path).unwrap().file_type().is_file(), "{}", path.display());
    }
    assert!(std::fs::read_to_string(&log).unwrap().contains("VER_GET"), "the log is in its own file");
    let magic = u32::from_le_bytes(std::fs::read(&pcap).unwrap()[..4].try_into().unwrap());
    assert!([0xa1b2_c3d4, 0xa1b2_3c4d].contains(&magic), "the pcap is in its own file: magic 0x{magic:08x}");
}

#[test]
fn a_fault_armed_with_the_extension_command_meets_the_next_request_and_bad_ones_are_refused() {
    let mut server = Server::start(&[]);
    let mut c = Raw::negotiated(&server.socket);
    for bad in [
        "not json",
        r#"{"target":{"hwrm":0},"action":{"roce":"no-response"}}"#,
        r#"{"target":{"hwrm":0},"nth":0,"action":{"hwrm":"no-response"}}"#,
        r#"{"target":{"hwrm":0},"count":0,"action":{"hwrm":"no-response"}}"#,
        r#"{"target":{"hwrm":0},"action":{"hwrm":{"delay":{"secs":3601,"nanos":0}}}}"#,
        r#"{"target":{"hwrm":0},"action":{"hwrm":{"delay":{"secs":18446744073709551615,"nanos":999999999}}}}"#,
        r#"{"target":{"roce":1},"action":{"roce":{"error":0}}}"#,
        r#"{"target":{"hwrm":0},"action":{"hwrm":"no-response"},"extra":1}"#,
    ] {
        assert_eq!(c.refused(Command::RigArm as u16, &[bad.as_bytes()], &[]), errno::EINVAL, "{bad}");
    }
    // Armed after nothing: the next VER_GET (the first) is answered with its seq_id + 1.
    let reply = c.ok(Command::RigArm, &[br#"{"target":{"hwrm":0},"nth":1,"action":{"hwrm":"wrong-seq-id"}}"#], &[]);
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&reply).unwrap(), serde_json::json!({"id": 1}));
    let ram = send_ver_get(&mut c, 7);
    assert!(wait_response(&ram, 0x100, 7, Duration::from_millis(300)).is_none(), "no answer to seq 7");
    let mut head = [0u8; 8];
    rustix::io::pread(&ram, &mut head, 0x100).unwrap();
    assert_eq!(u16::from_le_bytes([head[4], head[5]]), 8, "answered as seq 8");
    let state: serde_json::Value = serde_json::from_slice(&c.ok(Command::RigState, &[], &[])).unwrap();
    assert_eq!(state["nic"]["armed_faults"][0]["fired"], 1, "{state}");
    still_answers(&mut c);
    assert!(server.running());
}
