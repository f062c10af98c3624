//! The stream reassemblers that read sockets a peer controls: the vfio-user `Receiver` (the
//! model's server reads every client through it, the driver's client every server) over a real
//! socket pair, and the segment's `FrameDecoder` (the hub and the serve processes). Input: what
//! the peer does, in order: writes of bytes, sends of bytes with descriptors, reads between them.
//!
//! Invariants: no panic and no hang; the messages handed out are exactly those a reference parse
//! of every byte written finds, in order, and the receiver fails only where the reference finds a
//! header it must refuse; a message handed out with descriptors overlaps the bytes they were sent
//! with; no descriptor is handed out twice or invented. The frames are exactly a reference split
//! of the stream, and the decoder fails only where the reference finds an impossible length.
#![no_main]

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use arbitrary::Arbitrary;
use bnxt_model_host::stream::{FrameDecoder, MAX_FRAME, PREFIX};
use bnxt_vfio_user::header::{HEADER_SIZE, Header};
use bnxt_vfio_user::transport::{Receiver, TransportError, send_message};
use libfuzzer_sys::fuzz_target;
use zerocopy::FromBytes;

/// The receiver's limit on a message (small, so that the limit is met).
const MAX_MESSAGE: usize = 4096;
/// Bytes an input may write to the socket, and writes it may make: well inside the socket's
/// buffer, which the kernel charges for each write's own overhead too (about a kilobyte), so a
/// write never waits for a read the input did not ask for.
const MAX_WRITTEN: usize = 32 * 1024;
const MAX_WRITES: usize = 64;

#[derive(Debug, Arbitrary)]
enum Op {
    /// Plain bytes.
    Write(Vec<u8>),
    /// Bytes with 1 to 3 descriptors on their first byte (one `sendmsg`).
    SendWithFds(Vec<u8>, u8),
    /// Up to this many calls of `receive`.
    Receive(u8),
}

#[derive(Debug, Arbitrary)]
enum Input {
    VfioUser(Vec<Op>),
    /// Frame-stream bytes, and the sizes of the pieces they arrive in.
    Frames(Vec<u8>, Vec<u16>),
}

/// How a reference parse of a vfio-user stream ends.
#[derive(Debug, PartialEq)]
enum End {
    /// The bytes ran out (in a message, or between two).
    Short,
    /// A header the receiver must refuse, at this message.
    Refused,
}

/// Every whole message in `bytes`: (offset, header, body), and how the parse ended.
fn reference_messages(bytes: &[u8]) -> (Vec<(usize, Header, Vec<u8>)>, End) {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let Some(head) = bytes.get(at..at + HEADER_SIZE) else { return (out, End::Short) };
        let header = Header::read_from_bytes(head).expect("16 bytes");
        let size = header.message_size as usize;
        if size < HEADER_SIZE || size > MAX_MESSAGE || !(header.is_command() || header.is_reply()) {
            return (out, End::Refused);
        }
        let Some(body) = bytes.get(at + HEADER_SIZE..at + size) else { return (out, End::Short) };
        out.push((at, header, body.to_vec()));
        at += size;
    }
}

fn vfio_user(ops: Vec<Op>) {
    let (a, b) = UnixStream::pair().expect("a socket pair");
    b.set_nonblocking(true).expect("non-blocking");
    // Were the bounds above wrong, a write fails (and the input is reported) instead of hanging.
    a.set_write_timeout(Some(Duration::from_secs(2))).expect("a write timeout");
    let mut writes = 0;
    let mut rx = Receiver::new(MAX_MESSAGE);
    let mut written = Vec::new();
    // Where each send with descriptors put its bytes, and how many it sent.
    let mut fd_sends: Vec<(usize, usize, usize)> = Vec::new();
    let mut got = Vec::new();
    let mut failed = None;
    let take = |rx: &mut Receiver, got: &mut Vec<_>, failed: &mut Option<TransportError>| {
        if failed.is_some() {
            return false;
        }
        match rx.receive(b.as_fd()) {
            Ok(Some(m)) => {
                got.push(m);
                true
            }
            Ok(None) => false,
            Err(e) => {
                *failed = Some(e);
                false
            }
        }
    };
    for op in ops {
        match op {
            Op::Write(bytes) | Op::SendWithFds(bytes, _)
                if written.len() + bytes.len() > MAX_WRITTEN || writes == MAX_WRITES =>
            {
                break;
            }
            Op::Write(bytes) => {
                writes += 1;
                (&a).write_all(&bytes).expect("room in the socket");
                written.extend_from_slice(&bytes);
            }
            Op::SendWithFds(bytes, n) => {
                if bytes.is_empty() {
                    continue;
                }
                writes += 1;
                let n = 1 + usize::from(n % 3);
                let fds: Vec<OwnedFd> =
                    (0..n).map(|_| rustix::io::dup(std::io::stderr().as_fd()).expect("a descriptor")).collect();
                let borrowed: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
                send_message(a.as_fd(), &bytes, &borrowed, Duration::from_secs(1)).expect("room in the socket");
                fd_sends.push((written.len(), written.len() + bytes.len(), n));
                written.extend_from_slice(&bytes);
            }
            Op::Receive(n) => {
                for _ in 0..n {
                    if !take(&mut rx, &mut got, &mut failed) {
                        break;
                    }
                }
            }
        }
    }
    while take(&mut rx, &mut got, &mut failed) {}

    let (want, end) = reference_messages(&written);
    assert!(got.len() <= want.len(), "{} messages handed out, {} in the bytes", got.len(), want.len());
    let mut handed = 0;
    for (m, (at, header, body)) in got.iter().zip(&want) {
        assert_eq!(&m.header, header, "message at byte {at}: header");
        assert_eq!(&m.body, body, "message at byte {at}: body");
        if !m.fds.is_empty() {
            let end_at = at + HEADER_SIZE + body.len();
            assert!(
                fd_sends.iter().any(|&(s, e, n)| s < end_at && *at < e && m.fds.len() <= n),
                "message at byte {at}..{end_at} got {} descriptors that came with none of its bytes ({fd_sends:?})",
                m.fds.len()
            );
            handed += m.fds.len();
        }
    }
    let sent: usize = fd_sends.iter().map(|s| s.2).sum();
    assert!(handed + rx.stray_fds() as usize <= sent, "{handed} handed out and {} closed of {sent}", rx.stray_fds());
    match failed {
        Some(TransportError::TooSmall { .. } | TransportError::TooLarge { .. } | TransportError::BadType { .. }) => {
            assert_eq!(end, End::Refused, "refused a header the reference takes");
            assert_eq!(got.len(), want.len(), "refused before the last good message");
        }
        Some(e) => panic!("an error no peer's bytes can cause here: {e}"),
        None => {
            assert_eq!(got.len(), want.len(), "a whole message was left in the receiver");
            if end == End::Refused {
                // The header to refuse is there: the receiver refuses it when it reaches it.
                let e = rx.receive(b.as_fd()).expect_err("a header to refuse");
                assert!(
                    matches!(
                        e,
                        TransportError::TooSmall { .. } | TransportError::TooLarge { .. } | TransportError::BadType { .. }
                    ),
                    "{e}"
                );
            }
        }
    }
}

fn frames(bytes: Vec<u8>, pieces: Vec<u16>) {
    // The reference: length-prefixed frames up to the first impossible length.
    let mut want = Vec::new();
    let mut refused = false;
    let mut at = 0;
    while let Some(prefix) = bytes.get(at..at + PREFIX) {
        let len = u32::from_be_bytes(prefix.try_into().expect("4 bytes")) as usize;
        if len == 0 || len > MAX_FRAME {
            refused = true;
            break;
        }
        let Some(frame) = bytes.get(at + PREFIX..at + PREFIX + len) else { break };
        want.push(frame.to_vec());
        at += PREFIX + len;
    }
    let mut d = FrameDecoder::new();
    let mut got = Vec::new();
    let mut failed = false;
    let mut rest = &bytes[..];
    let mut sizes = pieces.iter().map(|&p| usize::from(p).max(1)).cycle();
    while !rest.is_empty() && !failed {
        let n = if pieces.is_empty() { rest.len() } else { sizes.next().unwrap_or(1).min(rest.len()) };
        // Alternate the two ways bytes come in: pushed, and read from a stream.
        if got.len() % 2 == 0 {
            d.push(&rest[..n]);
        } else {
            let mut piece = &rest[..n];
            while !piece.is_empty() {
                let read = d.read_from(&mut piece).expect("a slice reads");
                assert!(read > 0, "a read of a non-empty slice gives bytes");
            }
        }
        rest = &rest[n..];
        loop {
            match d.next_frame_with(|| vec![0xee; 7]) {
                Ok(Some(f)) => got.push(f),
                Ok(None) => break,
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
    }
    assert_eq!(got, want, "frames");
    assert_eq!(failed, refused, "the decoder fails where the reference finds an impossible length");
}

fuzz_target!(|input: Input| match input {
    Input::VfioUser(ops) => vfio_user(ops),
    Input::Frames(bytes, pieces) => frames(bytes, pieces),
});
