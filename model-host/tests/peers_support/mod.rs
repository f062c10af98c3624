//! What the tests of the segment hub and of the control channels share: Ethernet frames, a peer
//! reading them off the stream framing, a socket waited for, and a control client speaking raw
//! lines.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use bnxt_model_host::stream::FrameDecoder;
use serde::de::DeserializeOwned;

/// A frame from `src` to `dst` of the IEEE local experimental EtherType, its payload `fill`.
pub fn frame(dst: [u8; 6], src: [u8; 6], fill: u8) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&0x88b5u16.to_be_bytes());
    f.extend_from_slice(&[fill; 46]);
    f
}

/// The next frame `s` receives within `within`, or `None` (the socket's read timeout must be
/// short for `within` to hold).
pub fn receive_within(s: &mut UnixStream, d: &mut FrameDecoder, within: Duration) -> Option<Vec<u8>> {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 4096];
    loop {
        if let Some(f) = d.next_frame().unwrap() {
            return Some(f);
        }
        if Instant::now() > deadline {
            return None;
        }
        match s.read(&mut buf) {
            Ok(0) => return None,
            Ok(n) => d.push(&buf[..n]),
            Err(_) => {}
        }
    }
}

/// The next frame `s` receives within 5 s.
pub fn receive(s: &mut UnixStream, d: &mut FrameDecoder) -> Option<Vec<u8>> {
    receive_within(s, d, Duration::from_secs(5))
}

/// Wait until `child` listens at `path`.
pub fn wait_socket(child: &mut Child, path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(child.try_wait().unwrap().is_none(), "exited before listening");
        assert!(Instant::now() < deadline, "no socket");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Two bad clients of the control socket at `path`: one that goes away in the middle of a line
/// (`partial`), and one that sends a line too long, which must be told so.
pub fn leave_mid_line_and_send_a_line_too_long(path: &Path, partial: &[u8]) {
    let mut gone = UnixStream::connect(path).unwrap();
    gone.write_all(partial).unwrap();
    drop(gone);
    let mut long = UnixStream::connect(path).unwrap();
    long.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = long.write_all(&vec![b'x'; 70 * 1024]);
    let mut reply = String::new();
    let _ = BufReader::new(&long).read_line(&mut reply);
    assert!(reply.contains("longer than"), "{reply}");
}

/// Send `lines` to the control socket at `path` on one connection and read one reply line per
/// request line.
pub fn exchange<R: DeserializeOwned>(path: &Path, lines: &[&str]) -> Vec<R> {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    lines
        .iter()
        .map(|l| {
            s.write_all(format!("{l}\n").as_bytes()).unwrap();
            let mut reply = String::new();
            r.read_line(&mut reply).unwrap();
            serde_json::from_str(&reply).unwrap_or_else(|e| panic!("{reply}: {e}"))
        })
        .collect()
}
