//! `bnxt-model segment`: peers joining over the socket in QEMU's stream-netdev framing get each
//! other's frames (learned unicast, flooded broadcast), a peer sending garbage is dropped while
//! the others carry on, the pcap holds what entered the segment, and a `serve --segment` process
//! joins it (frames reach its NIC's segment through the world's external port). SIGTERM ends the
//! hub with status 0.

mod peers_support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bnxt_model_host::stream::{FrameDecoder, encode_frame};
use bnxt_model_host::world::{World, WorldConfig};
use peers_support::{frame, receive, wait_socket};

#[test]
fn peers_exchange_frames_garbage_is_dropped_and_the_pcap_holds_the_traffic() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("seg.sock");
    let pcap = dir.path().join("seg.pcap");
    let mut hub = Command::new(env!("CARGO_BIN_EXE_bnxt-model"))
        .args(["segment", "--socket"])
        .arg(&sock)
        .arg("--pcap")
        .arg(&pcap)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_socket(&mut hub, &sock);
    let connect = || {
        let s = UnixStream::connect(&sock).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        (s, FrameDecoder::new())
    };
    let (mut a, mut da) = connect();
    let (mut b, mut db) = connect();
    let (mut c, mut dc) = connect();
    let (ma, mb) = ([2, 0, 0, 0, 0, 0xa], [2, 0, 0, 0, 0, 0xb]);
    // A broadcast from a reaches b and c; then b answers a by unicast, which c does not see.
    a.write_all(&encode_frame(&frame([0xff; 6], ma, 1))).unwrap();
    assert_eq!(receive(&mut b, &mut db).unwrap(), frame([0xff; 6], ma, 1));
    assert_eq!(receive(&mut c, &mut dc).unwrap(), frame([0xff; 6], ma, 1));
    b.write_all(&encode_frame(&frame(ma, mb, 2))).unwrap();
    assert_eq!(receive(&mut a, &mut da).unwrap(), frame(ma, mb, 2));
    // Garbage from c (a zero length) gets c disconnected; a and b carry on.
    c.write_all(&[0, 0, 0, 0, 1, 2, 3]).unwrap();
    let mut buf = [0u8; 16];
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(c.read(&mut buf).unwrap_or(0), 0, "c was disconnected");
    a.write_all(&encode_frame(&frame(mb, ma, 3))).unwrap();
    assert_eq!(receive(&mut b, &mut db).unwrap(), frame(mb, ma, 3));

    // A model process joins; its frames-dropped count shows frames reached it.
    let mut serve = Command::new(env!("CARGO_BIN_EXE_bnxt-model"))
        .args(["serve", "--mac", "02:57:60:80:00:01", "--socket"])
        .arg(dir.path().join("nic.sock"))
        .arg("--segment")
        .arg(&sock)
        .arg("--pcap")
        .arg(dir.path().join("nic.pcap"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_socket(&mut serve, &dir.path().join("nic.sock"));
    std::thread::sleep(Duration::from_millis(200));
    a.write_all(&encode_frame(&frame([0xff; 6], ma, 4))).unwrap();
    assert_eq!(receive(&mut b, &mut db).unwrap(), frame([0xff; 6], ma, 4));
    std::thread::sleep(Duration::from_millis(200));
    let term = |child: &Child| {
        rustix::process::kill_process(rustix::process::Pid::from_child(child), rustix::process::Signal::TERM).unwrap()
    };
    term(&serve);
    let out = serve.wait_with_output().unwrap();
    assert!(out.status.success());
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("joined the segment") && log.contains("segment_frames_in: 1"), "{log}");
    let mut reader =
        pcap_file::pcap::PcapReader::new(std::fs::File::open(dir.path().join("nic.pcap")).unwrap()).unwrap();
    let seen = reader.next_packet().expect("the NIC's pcap holds the frame that reached it").unwrap();
    assert_eq!(seen.data.into_owned(), frame([0xff; 6], ma, 4));

    term(&hub);
    let out = hub.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("not a frame stream"), "{log}");
    let mut reader = pcap_file::pcap::PcapReader::new(std::fs::File::open(&pcap).unwrap()).unwrap();
    let mut frames = Vec::new();
    while let Some(p) = reader.next_packet() {
        frames.push(p.unwrap().data.into_owned());
    }
    assert_eq!(frames, vec![frame([0xff; 6], ma, 1), frame(ma, mb, 2), frame(mb, ma, 3), frame([0xff; 6], ma, 4)]);
}

#[test]
fn the_world_switches_frames_between_its_external_ports_and_its_nics() {
    let mut world = World::new(WorldConfig { nics: 1, seed: 1, ..WorldConfig::default() });
    let (a, b) = (world.add_external_port(), world.add_external_port());
    let (ma, mb) = ([2, 0, 0, 0, 0, 0xa], [2, 0, 0, 0, 0, 0xb]);
    world.send_external(a, frame([0xff; 6], ma, 1)).unwrap();
    world.advance(Duration::from_millis(1));
    assert_eq!(world.take_external_frames(b), vec![frame([0xff; 6], ma, 1)], "a broadcast floods to the other port");
    assert!(world.take_external_frames(a).is_empty(), "not back to where it came from");
    assert!(world.take_external_frames(b).is_empty(), "taken once");
    world.send_external(b, frame(ma, mb, 2)).unwrap();
    world.advance(Duration::from_millis(1));
    assert_eq!(world.take_external_frames(a), vec![frame(ma, mb, 2)], "unicast to the port a's MAC was learned on");
    assert!(world.send_external(a, vec![1, 2, 3]).is_err(), "a runt is refused");
}
