//! A client that misbehaves leaves `bnxt-model serve` running or exiting cleanly with a message,
//! never crashed, and never writing outside the memory it was lent: garbage, oversized and
//! truncated messages, commands out of order, bad region accesses, overlapping and unsafe DMA
//! maps, disconnects, signals, and a socket path that is not a socket.

mod vfio_user_support;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use bnxt_vfio_user::header::Command;
use bnxt_vfio_user::linux::{DMA_MAP_FLAG_READ, DMA_MAP_FLAG_WRITE, PCI_CONFIG_REGION_INDEX, errno};
use bnxt_vfio_user::payload::{DmaMap, RegionAccess};
use vfio_user_support::{Raw, Server, fd_of, memfd, peek, ver_get, wait_response};
use zerocopy::IntoBytes;

const WAIT: Duration = Duration::from_secs(10);

fn map(address: u64, size: u64, offset: u64) -> DmaMap {
    DmaMap { argsz: 32, flags: DMA_MAP_FLAG_READ | DMA_MAP_FLAG_WRITE, offset, address, size }
}

/// The server answers a fresh client: it is alive and well.
fn answers(server: &Server) {
    let mut c = Raw::negotiated(&server.socket);
    let req = RegionAccess { offset: 0, region: PCI_CONFIG_REGION_INDEX, count: 2 };
    let body = c.ok(Command::RegionRead, &[req.as_bytes()], &[]);
    assert_eq!(&body[16..], &0x14e4u16.to_le_bytes());
}

#[test]
fn garbage_closes_the_connection_and_the_server_exits_cleanly() {
    let mut server = Server::start(&[]);
    let mut s = UnixStream::connect(&server.socket).unwrap();
    // A header claiming 4 bytes (less than itself), then noise.
    s.write_all(&[0xde, 0xad, 0x01, 0x00, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]).unwrap();
    let (status, log) = server.wait_exit(WAIT);
    assert!(status.success(), "{status}: {log}");
    assert!(log.contains("less than its own 16-byte header"), "{log}");
    assert!(log.contains("closing the connection"), "{log}");
}

#[test]
fn with_persist_the_server_outlives_garbage_oversized_truncated_and_silent_clients() {
    let mut server = Server::start(&["--persist"]);
    // Oversized: a message claiming 1 GiB is refused before anything is read or allocated.
    let mut s = UnixStream::connect(&server.socket).unwrap();
    let mut h = [0u8; 16];
    h[2] = 10;
    h[4..8].copy_from_slice(&(1u32 << 30).to_ne_bytes());
    s.write_all(&h).unwrap();
    drop(s);
    answers(&server);
    // A bad type field.
    let mut s = UnixStream::connect(&server.socket).unwrap();
    let mut h = [0u8; 16];
    h[4] = 16;
    h[8] = 7;
    s.write_all(&h).unwrap();
    drop(s);
    answers(&server);
    // Truncated: half a header, then half a body, then gone.
    let mut s = UnixStream::connect(&server.socket).unwrap();
    s.write_all(&[0, 0, 9, 0, 32]).unwrap();
    drop(s);
    let mut c = Raw::negotiated(&server.socket);
    let bytes =
        bnxt_vfio_user::message::encode(9, 9, 0, 0, &[RegionAccess { offset: 0, region: 7, count: 4 }.as_bytes()]);
    c.send_bytes(&bytes[..20], &[]);
    drop(c);
    answers(&server);
    // A second client while one is served waits until the first is gone; the first carries on
    // undisturbed.
    let mut first = Raw::negotiated(&server.socket);
    let mut second = Raw::connect(&server.socket);
    second.stream.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let version = bnxt_vfio_user::message::encode(0, Command::Version as u16, 0, 0, &[&[0, 0, 0, 0]]);
    second.send_bytes(&version, &[]);
    assert!(second.receive().is_none(), "the second client is not served yet");
    let req = RegionAccess { offset: 2, region: PCI_CONFIG_REGION_INDEX, count: 2 };
    assert_eq!(&first.ok(Command::RegionRead, &[req.as_bytes()], &[])[16..], &0x1760u16.to_le_bytes());
    drop(first);
    second.stream.set_read_timeout(Some(WAIT)).unwrap();
    let reply = second.receive().expect("served once the first client is gone");
    assert!(reply.header.is_reply() && !reply.header.is_error());
    drop(second);
    answers(&server);
    // Random bytes.
    let mut s = UnixStream::connect(&server.socket).unwrap();
    let noise: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let _ = s.write_all(&noise);
    drop(s);
    answers(&server);
    assert!(server.running());
}

#[test]
fn bad_commands_get_error_replies_and_the_connection_stays_usable() {
    let server = Server::start(&[]);
    let mut c = Raw::connect(&server.socket);
    let read = RegionAccess { offset: 0, region: PCI_CONFIG_REGION_INDEX, count: 4 };
    assert_eq!(c.refused(Command::RegionRead as u16, &[read.as_bytes()], &[]), errno::EINVAL, "before VERSION");
    drop(c);
    let server = Server::start(&[]);
    let mut c = Raw::negotiated(&server.socket);
    assert_eq!(c.refused(Command::Version as u16, &[&[0, 0, 0, 0]], &[]), errno::EINVAL, "VERSION twice");
    assert_eq!(c.refused(0x4242, &[], &[]), errno::ENOSYS, "unknown command");
    assert_eq!(c.refused(Command::DeviceFeature as u16, &[&[0; 8]], &[]), errno::ENOTSUP);
    assert_eq!(c.refused(Command::RegionRead as u16, &[&[1, 2, 3]], &[]), errno::EINVAL, "truncated payload");
    let past = RegionAccess { offset: 4094, region: PCI_CONFIG_REGION_INDEX, count: 4 };
    assert_eq!(
        c.refused(Command::RegionRead as u16, &[past.as_bytes()], &[]),
        errno::EINVAL,
        "past the end of config space"
    );
    let huge = RegionAccess { offset: 0, region: 2, count: 8 << 20 };
    assert_eq!(c.refused(Command::RegionRead as u16, &[huge.as_bytes()], &[]), errno::E2BIG);
    let absent = RegionAccess { offset: 0, region: 8, count: 4 };
    assert_eq!(c.refused(Command::RegionRead as u16, &[absent.as_bytes()], &[]), errno::EINVAL, "VGA region");
    let short_write = RegionAccess { offset: 0, region: 0, count: 8 };
    assert_eq!(c.refused(Command::RegionWrite as u16, &[short_write.as_bytes(), &[1, 2]], &[]), errno::EINVAL);
    assert_eq!(c.refused(Command::RigRestart as u16, &[b"{\"seed\": \"x\"}"], &[]), errno::EINVAL);
    let ram = memfd(0x1000);
    assert_eq!(
        c.refused(Command::RegionRead as u16, &[read.as_bytes()], &[fd_of(&ram)]),
        errno::EINVAL,
        "descriptors where none belong"
    );
    let body = c.ok(Command::RegionRead, &[read.as_bytes()], &[]);
    assert_eq!(&body[16..20], &0x1760_14e4u32.to_le_bytes(), "still usable");
}

#[test]
fn dma_maps_that_overlap_or_reach_past_their_file_are_refused_and_dma_stays_inside_what_was_lent() {
    let mut server = Server::start(&[]);
    let mut c = Raw::negotiated(&server.socket);
    // Three pages of "guest RAM"; only the middle one is lent, at 0x10000.
    let ram = memfd(0x3000);
    c.ok(Command::DmaMap, &[map(0x10000, 0x1000, 0x1000).as_bytes()], &[fd_of(&ram)]);
    let cases = [
        (map(0x10000, 0x1000, 0), errno::EEXIST),
        (map(0xf000, 0x2000, 0), errno::EEXIST),
        (map(0x20000, 0x1000, 0x3000), errno::EINVAL),
        (map(0x20000, 0x4000, 0), errno::EINVAL),
        (map(!0xfff, 0x2000, 0), errno::EINVAL),
    ];
    for (m, want) in cases {
        assert_eq!(c.refused(Command::DmaMap as u16, &[m.as_bytes()], &[fd_of(&ram)]), want, "{m:?}");
    }
    assert_eq!(
        c.refused(Command::DmaMap as u16, &[map(0x20000, 0x1000, 0).as_bytes()], &[]),
        errno::ENOTSUP,
        "no descriptor"
    );
    let (pipe, _) = rustix::pipe::pipe().unwrap();
    assert_eq!(
        c.refused(Command::DmaMap as u16, &[map(0x20000, 0x1000, 0).as_bytes()], &[fd_of(&pipe)]),
        errno::EINVAL,
        "a pipe is not a file"
    );

    // An HWRM response aimed across the end of the lent page is not written at all.
    let write = |c: &mut Raw, region, offset, data: &[u8]| {
        let req = RegionAccess { offset, region, count: data.len() as u32 };
        c.ok(Command::RegionWrite, &[req.as_bytes(), data], &[]);
    };
    write(&mut c, PCI_CONFIG_REGION_INDEX, 4, &0x0006u16.to_le_bytes());
    let mut window = [0u8; 128];
    let req = ver_get(1, 0x10000 + 0x1000 - 64);
    window[..req.len()].copy_from_slice(&req);
    write(&mut c, 0, 0, &window);
    write(&mut c, 0, 0x100, &1u32.to_le_bytes());
    let_the_firmware_take_it();
    // And one aimed inside it is.
    let req = ver_get(2, 0x10000 + 0x100);
    window[..req.len()].copy_from_slice(&req);
    write(&mut c, 0, 0, &window);
    write(&mut c, 0, 0x100, &1u32.to_le_bytes());
    assert!(wait_response(&ram, 0x1100, 2, WAIT).is_some(), "the response inside the lent page arrives");
    assert_eq!(peek(&ram, 0x1fc0, 64), vec![0; 64], "the overflowing response was not written even in part");
    assert_eq!(peek(&ram, 0, 0x1000), vec![0; 0x1000], "the page before is untouched");
    assert_eq!(peek(&ram, 0x2000, 0x1000), vec![0; 0x1000], "the page after is untouched");
    drop(c);
    let (status, _) = server.wait_exit(WAIT);
    assert!(status.success());
    let log = std::fs::read_to_string(&server.hwrm_log).unwrap();
    assert!(log.contains("VER_GET 0x0000 seq=1 RESPONSE_NOT_WRITTEN"), "{log}");
    assert!(log.contains("VER_GET 0x0000 seq=2 SUCCESS 0x0000"), "{log}");
}

/// Wait until the firmware has surely taken the request just rung in, when its answer cannot be
/// seen (aimed outside the mapped memory, or at memory taken back). The firmware reads the
/// request window when it takes the request, as real firmware may, so a request written before
/// the last one was taken tears it (a driver waits for each answer first); the server takes a
/// request within microseconds of its doorbell, so this is ample.
fn let_the_firmware_take_it() {
    std::thread::sleep(Duration::from_millis(200));
}

/// Send a VER_GET through the BAR0 window with its response aimed at `resp_addr`.
fn ver_get_at(c: &mut Raw, seq: u16, resp_addr: u64) {
    let mut window = [0u8; 128];
    let req = ver_get(seq, resp_addr);
    window[..req.len()].copy_from_slice(&req);
    for (offset, data) in [(0u64, &window[..]), (0x100, &1u32.to_le_bytes()[..])] {
        let r = RegionAccess { offset, region: 0, count: data.len() as u32 };
        c.ok(Command::RegionWrite, &[r.as_bytes(), data], &[]);
    }
}

#[test]
fn a_client_that_shrinks_unsealed_guest_memory_loses_it_and_the_server_lives_on() {
    let mut server = Server::start(&["--persist"]);
    let mut c = Raw::negotiated(&server.socket);
    let cmd = RegionAccess { offset: 4, region: PCI_CONFIG_REGION_INDEX, count: 2 };
    c.ok(Command::RegionWrite, &[cmd.as_bytes(), &0x0006u16.to_le_bytes()], &[]);
    // Guest memory QEMU sends with `seal=off`: an unsealed memfd, taken as it is.
    let unsealed = rustix::fs::memfd_create("unsealed", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&unsealed, 0x2000).unwrap();
    c.ok(Command::DmaMap, &[map(0x40000, 0x2000, 0).as_bytes()], &[fd_of(&unsealed)]);
    let sealed = memfd(0x1000);
    c.ok(Command::DmaMap, &[map(0x60000, 0x1000, 0).as_bytes()], &[fd_of(&sealed)]);
    ver_get_at(&mut c, 1, 0x41100);
    assert!(wait_response(&unsealed, 0x1100, 1, WAIT).is_some(), "DMA into the unsealed memfd");
    // The client truncates it under the mapping: the firmware's next response there runs into
    // the cut (SIGBUS, caught), is not written, and the server goes on.
    rustix::fs::ftruncate(&unsealed, 0).unwrap();
    ver_get_at(&mut c, 2, 0x41100);
    let_the_firmware_take_it();
    ver_get_at(&mut c, 3, 0x60100);
    assert!(wait_response(&sealed, 0x100, 3, WAIT).is_some(), "the other region still works");
    assert!(server.running());
    c.ok(
        Command::DmaUnmap,
        &[bnxt_vfio_user::payload::DmaUnmap { argsz: 24, flags: 0, address: 0x40000, size: 0x2000 }.as_bytes()],
        &[],
    );
    drop(c);
    answers(&server);
    let log = std::fs::read_to_string(&server.hwrm_log).unwrap();
    assert!(log.contains("VER_GET 0x0000 seq=2 RESPONSE_NOT_WRITTEN"), "{log}");
    assert!(log.contains("VER_GET 0x0000 seq=3 SUCCESS 0x0000"), "{log}");
    rustix::process::kill_process(rustix::process::Pid::from_child(&server.child), rustix::process::Signal::TERM)
        .unwrap();
    let (status, err) = server.wait_exit(WAIT);
    assert!(status.success(), "{status}: {err}");
    assert!(err.contains("took back"), "the model logs why the DMA failed: {err}");
}

#[test]
fn sigterm_and_disconnect_end_the_server_with_status_0_and_the_socket_is_private() {
    let mut server = Server::start(&[]);
    let mode = std::fs::metadata(&server.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    rustix::process::kill_process(rustix::process::Pid::from_child(&server.child), rustix::process::Signal::TERM)
        .unwrap();
    let (status, log) = server.wait_exit(WAIT);
    assert!(status.success(), "{status}: {log}");
    assert!(log.contains("SIGTERM"), "{log}");
    assert!(!server.socket.exists(), "the socket file is removed");

    let mut server = Server::start(&[]);
    drop(Raw::negotiated(&server.socket));
    let (status, log) = server.wait_exit(WAIT);
    assert!(status.success(), "{status}: {log}");
    assert!(log.contains("client gone"), "{log}");
}

#[test]
fn a_path_that_is_not_a_socket_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let precious = dir.path().join("precious.txt");
    std::fs::write(&precious, "data").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bnxt-model"))
        .args(["serve", "--mac", "02:00:00:00:00:01", "--socket"])
        .arg(&precious)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a socket"));
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "data");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bnxt-model"))
        .args(["serve", "--mac", "01:00:00:00:00:01", "--socket"])
        .arg(dir.path().join("x.sock"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a multicast MAC is a bad command line");
}
