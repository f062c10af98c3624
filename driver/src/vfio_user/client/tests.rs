//! The client against a scripted server on the other end of a socket pair: negotiation and device
//! discovery, refusals that leave the connection usable, replies that break it, silence, and the
//! DMA memory it lends (sealed memfds, unmapped when dropped).

use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bnxt_vfio_user::Message;
use bnxt_vfio_user::header::{Command, FLAG_NO_REPLY};
use bnxt_vfio_user::linux::{DEVICE_FLAGS_PCI, DEVICE_FLAGS_RESET, errno};
use bnxt_vfio_user::message::{error_reply, reply};
use bnxt_vfio_user::payload::{DeviceInfo, DmaMap, DmaUnmap, RegionAccess, RegionInfo, Version};
use bnxt_vfio_user::transport::{Receiver, send_message};
use rustix::fs::SealFlags;
use zerocopy::{FromBytes, IntoBytes};

use super::{Client, ClientError};
use crate::vfio_user::memory::allocate;
use bnxt_pci::IovaAllocator;

/// What the scripted server does with a message after the device discovery.
enum Act {
    Reply(Vec<u8>),
    Silent,
}

/// What the scripted server saw: command number, payload, number of descriptors.
type Seen = Arc<Mutex<Vec<(u16, Vec<u8>, usize)>>>;

/// A server that answers version, device info and region info as a 9-region PCI device, and
/// hands every other message to `script`; the messages it saw (after discovery) are recorded.
fn server(flags: u32, script: impl Fn(&Message) -> Act + Send + 'static) -> (UnixStream, Seen, JoinHandle<()>) {
    let (client_end, server_end) = UnixStream::pair().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let thread = std::thread::spawn(move || {
        let mut rx = Receiver::new(1 << 21);
        while let Ok(Some(msg)) = rx.receive(server_end.as_fd()) {
            let h = msg.header;
            let act = match Command::from_number(h.command) {
                Some(Command::Version) => {
                    Act::Reply(reply(&h, &[Version::default().as_bytes(), b"{\"capabilities\":{}}\0"]))
                }
                Some(Command::DeviceGetInfo) => {
                    let info = DeviceInfo { argsz: 16, flags, num_regions: 9, num_irqs: 5 };
                    Act::Reply(reply(&h, &[info.as_bytes()]))
                }
                Some(Command::DeviceGetRegionInfo) => {
                    let (req, _) = msg.payload::<RegionInfo>("region info").unwrap();
                    let size = if req.index == 7 { 4096 } else { 0x10000 };
                    Act::Reply(reply(&h, &[RegionInfo { size, index: req.index, argsz: 32, ..req }.as_bytes()]))
                }
                _ => {
                    log.lock().unwrap().push((h.command, msg.body.clone(), msg.fds.len()));
                    if let Some(fd) = msg.fds.first() {
                        let seals = rustix::fs::fcntl_get_seals(fd).unwrap();
                        assert!(seals.contains(SealFlags::SHRINK | SealFlags::GROW), "DMA memory is sealed");
                    }
                    script(&msg)
                }
            };
            if let Act::Reply(bytes) = act {
                send_message(server_end.as_fd(), &bytes, &[], Duration::from_secs(1)).unwrap();
            }
        }
    });
    (client_end, seen, thread)
}

/// Connect over `stream`, as the only test of this module running: a posted-store flush sends
/// every connection's held stores, so a test that looks at what is held must not share the
/// process's connections with another test running beside it (`cargo test` runs them in threads).
fn connect(stream: UnixStream, timeout: Duration) -> Result<Client, ClientError> {
    Client::over(stream, Path::new("test.sock"), timeout)
}

/// Taken for the whole of each test (see [`connect`]).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Wait up to a second for the server to have seen `n` messages.
fn until_seen(seen: &Seen, n: usize) -> Vec<(u16, Vec<u8>, usize)> {
    for _ in 0..1000 {
        let got = seen.lock().unwrap().clone();
        if got.len() >= n {
            return got;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    seen.lock().unwrap().clone()
}

#[test]
fn posted_stores_are_held_then_sent_in_order_before_any_command_of_any_connection() {
    let _alone = alone();
    let answer = |msg: &Message| {
        if msg.header.flags & FLAG_NO_REPLY != 0 {
            Act::Silent
        } else {
            Act::Reply(reply(&msg.header, &[RegionAccess::default().as_bytes()]))
        }
    };
    let (sa, seen_a, ta) = server(DEVICE_FLAGS_PCI, answer);
    let (sb, seen_b, tb) = server(DEVICE_FLAGS_PCI, answer);
    let a = connect(sa, Duration::from_secs(5)).unwrap();
    let b = connect(sb, Duration::from_secs(5)).unwrap();
    for v in 0..3u64 {
        a.region_write_posted(4, 8 * v, &v.to_le_bytes()).unwrap();
    }
    b.region_write_posted(4, 0, &9u64.to_le_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(seen_a.lock().unwrap().is_empty(), "stores are held until a flush");
    assert!(seen_b.lock().unwrap().is_empty(), "stores are held until a flush");

    // A command on one connection: every connection's held stores go first.
    a.region_write(7, 0, &[1, 2, 3, 4]).unwrap();
    let got = until_seen(&seen_a, 4);
    let offsets: Vec<(u16, u64)> =
        got.iter().map(|(c, body, _)| (*c, RegionAccess::read_from_prefix(body).unwrap().0.offset)).collect();
    let write = Command::RegionWrite as u16;
    assert_eq!(offsets, [(write, 0), (write, 8), (write, 16), (write, 0)]);
    assert_eq!(got[3].1.len(), 16 + 4, "the command came last");
    assert_eq!(until_seen(&seen_b, 1).len(), 1, "the other connection's store went too");

    // The flush the function makes before the driver reads a completion queue.
    b.region_write_posted(4, 8, &10u64.to_le_bytes()).unwrap();
    super::posted::send_all();
    assert_eq!(until_seen(&seen_b, 2).len(), 2);
    drop((a, b));
    ta.join().unwrap();
    tb.join().unwrap();
}

#[test]
fn stores_held_when_the_connection_closes_still_reach_the_server() {
    let _alone = alone();
    let (stream, seen, thread) = server(DEVICE_FLAGS_PCI, |_| Act::Silent);
    let client = connect(stream, Duration::from_secs(5)).unwrap();
    client.region_write_posted(4, 0, &1u64.to_le_bytes()).unwrap();
    drop(client);
    thread.join().unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn discovery_reads_every_region_and_refusals_leave_the_connection_usable() {
    let _alone = alone();
    let (stream, seen, thread) = server(DEVICE_FLAGS_PCI | DEVICE_FLAGS_RESET, |msg| {
        let (req, _) = msg.payload::<RegionAccess>("access").unwrap();
        if req.region == 1 {
            return Act::Reply(error_reply(&msg.header, errno::EINVAL));
        }
        let mut data = req.as_bytes().to_vec();
        data.extend((0..req.count).map(|i| i as u8 + 0x10));
        Act::Reply(reply(&msg.header, &[&data]))
    });
    let client = connect(stream, Duration::from_secs(5)).unwrap();
    assert_eq!(client.device_info().num_regions, 9);
    assert_eq!(client.region(7).unwrap().size, 4096);
    assert_eq!(client.region(0).unwrap().size, 0x10000);
    let mut b = [0u8; 4];
    let err = client.region_read(1, 0, &mut b).unwrap_err();
    assert!(matches!(err, ClientError::Refused { errno: 22, .. }), "{err}");
    assert!(err.to_string().contains("VFIO_USER_REGION_READ refused by the server: errno 22"), "{err}");
    client.region_read(7, 8, &mut b).unwrap();
    assert_eq!(b, [0x10, 0x11, 0x12, 0x13]);
    drop(client);
    thread.join().unwrap();
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[test]
fn a_reply_to_the_wrong_message_breaks_the_connection_and_later_calls_say_so() {
    let _alone = alone();
    let (stream, _, thread) = server(DEVICE_FLAGS_PCI, |msg| {
        let mut h = msg.header;
        h.message_id = h.message_id.wrapping_add(7);
        Act::Reply(reply(&h, &[RegionAccess::default().as_bytes()]))
    });
    let client = connect(stream, Duration::from_secs(5)).unwrap();
    let err = client.region_write(0, 0, &[1, 2, 3, 4]).unwrap_err();
    assert!(matches!(err, ClientError::BadReply { .. }), "{err}");
    let err = client.region_write(0, 0, &[1, 2, 3, 4]).unwrap_err();
    assert!(matches!(err, ClientError::Broken(_)), "{err}");
    drop(client);
    thread.join().unwrap();
}

/// Whether `thread` ends within five seconds.
fn finishes(thread: &JoinHandle<()>) -> bool {
    for _ in 0..5000 {
        if thread.is_finished() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

#[test]
fn a_flush_that_finds_another_sending_waits_for_it_so_every_held_store_is_out_when_it_returns() {
    use std::sync::mpsc;
    let _alone = alone();
    // Connection X's server stops reading at the first store until released; the client's end
    // of X has the smallest send buffer, so a flush of X's held stores blocks in the write.
    let (started_tx, started) = mpsc::channel::<()>();
    let (release, gate) = mpsc::channel::<()>();
    let (started_tx, gate) = (Mutex::new(started_tx), Mutex::new(gate));
    let (sx, _, tx) = server(DEVICE_FLAGS_PCI, move |msg| {
        if msg.header.flags & FLAG_NO_REPLY != 0 {
            let _ = started_tx.lock().unwrap().send(());
            let _ = gate.lock().unwrap().recv();
            return Act::Silent;
        }
        Act::Reply(reply(&msg.header, &[RegionAccess::default().as_bytes()]))
    });
    rustix::net::sockopt::set_socket_send_buffer_size(&sx, 4096).unwrap();
    let (sz, seen_z, tz) = server(DEVICE_FLAGS_PCI, |_| Act::Silent);
    let x = connect(sx, Duration::from_secs(10)).unwrap();
    let z = connect(sz, Duration::from_secs(10)).unwrap();
    let block = [0x5au8; 4096];
    for i in 0..14u64 {
        x.region_write_posted(4, i * 4096, &block).unwrap();
    }
    z.region_write_posted(4, 0, &1u64.to_le_bytes()).unwrap();

    // Another thread's flush takes every held store and blocks sending X's (X comes first).
    let other = std::thread::spawn(super::posted::send_all);
    started.recv_timeout(Duration::from_secs(5)).expect("the other thread's flush reached X's server");
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        let _ = release.send(());
    });
    // This thread's flush: it must not return while Z's store, which the other flush took, is
    // still held.
    super::posted::send_all();
    assert!(z.conn.lock().unwrap().posted.is_empty(), "Z's store was sent before send_all returned");
    other.join().unwrap();
    releaser.join().unwrap();
    assert_eq!(until_seen(&seen_z, 1).len(), 1);
    drop((x, z));
    tx.join().unwrap();
    tz.join().unwrap();
}

#[test]
fn a_silent_server_times_out_and_a_non_pci_device_is_refused() {
    let _alone = alone();
    let (stream, _, thread) = server(DEVICE_FLAGS_PCI, |_| Act::Silent);
    let client = connect(stream, Duration::from_millis(100)).unwrap();
    let err = client.reset().unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
    // The broken connection is shut, not left open: the server sees it end while the client
    // still exists (and would not get a half-sent message's rest, or anything else, on it).
    assert!(finishes(&thread), "the server saw the connection end after the timeout");
    assert!(matches!(client.reset().unwrap_err(), ClientError::Broken(_)));
    drop(client);
    thread.join().unwrap();

    let (stream, _, thread) = server(0, |_| Act::Silent);
    let err = connect(stream, Duration::from_secs(5)).unwrap_err();
    assert!(err.to_string().contains("not a PCI device"), "{err}");
    thread.join().unwrap();
}

#[test]
fn dma_memory_is_a_sealed_memfd_lent_with_dma_map_and_taken_back_on_drop() {
    let _alone = alone();
    let (stream, seen, thread) = server(DEVICE_FLAGS_PCI, |msg| {
        if msg.header.command == Command::DmaUnmap as u16 {
            let (req, _) = msg.payload::<DmaUnmap>("unmap").unwrap();
            return Act::Reply(reply(&msg.header, &[req.as_bytes()]));
        }
        Act::Reply(reply(&msg.header, &[]))
    });
    let client = Arc::new(connect(stream, Duration::from_secs(5)).unwrap());
    let iovas = std::sync::Arc::new(IovaAllocator::default());
    let a = allocate(&client, &iovas, 100).unwrap();
    let b = allocate(&client, &iovas, 8192).unwrap();
    assert_eq!((a.len(), b.len()), (4096, 8192));
    assert!(b.iova() >= a.iova() + 8192, "a guard page between allocations");
    a.write_u32(16, 0xdead_beef);
    assert_eq!(a.read_u32(16), 0xdead_beef);
    let (a_iova, b_iova) = (a.iova(), b.iova());
    drop(a);
    drop(b);
    drop(client);
    thread.join().unwrap();
    let seen = seen.lock().unwrap();
    let maps: Vec<DmaMap> = seen
        .iter()
        .filter(|(c, _, _)| *c == Command::DmaMap as u16)
        .map(|(_, body, fds)| {
            assert_eq!(*fds, 1, "each map carries its memfd");
            DmaMap::read_from_bytes(body).unwrap()
        })
        .collect();
    assert_eq!(maps.iter().map(|m| (m.address, m.size)).collect::<Vec<_>>(), vec![(a_iova, 4096), (b_iova, 8192)]);
    let unmaps: Vec<(u64, u64)> = seen
        .iter()
        .filter(|(c, _, _)| *c == Command::DmaUnmap as u16)
        .map(|(_, body, _)| {
            let u = DmaUnmap::read_from_bytes(body).unwrap();
            (u.address, u.size)
        })
        .collect();
    assert_eq!(unmaps, vec![(a_iova, 4096), (b_iova, 8192)]);
}
