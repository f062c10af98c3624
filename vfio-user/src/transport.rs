//! Sending and receiving vfio-user messages over a UNIX stream socket, with the file descriptors
//! a message carries as `SCM_RIGHTS` ancillary data.
//!
//! [`Receiver`] is incremental: it reads what the socket has, keeps a partial message between
//! calls, and hands out whole messages. On a non-blocking socket it never waits, so a peer that
//! sends half a message cannot stall its reader. It checks a message's size before reading its
//! body: fewer than 16 bytes, more than the limit the reader set, or a type that is neither
//! command nor reply is an error after which the stream cannot be trusted (the caller closes it).
//!
//! File descriptors: a sender passes them with the first byte of the message (one `sendmsg`), so
//! the receiver collects those that arrive while the message's header is read. Descriptors that
//! arrive while a body is read belong to no message the receiver can name; they are closed (as
//! [`OwnedFd`]s are on drop) and counted.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer, SendAncillaryMessage,
    SendFlags, recvmsg, sendmsg,
};
use zerocopy::FromBytes;

use crate::header::{HEADER_SIZE, Header, command_label};
use crate::message::Message;

/// Most file descriptors one message may carry (QEMU's `VFIO_USER_MAX_MAX_FDS`).
pub const MAX_FDS: usize = 16;

/// Why a message could not be sent or received.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The socket failed.
    #[error("socket error while {during}: {source}")]
    Io {
        /// "receiving" or "sending".
        during: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// The peer closed the connection.
    #[error("the peer closed the connection{}", if *.mid_message { " in the middle of a message" } else { "" })]
    Closed {
        /// Whether part of a message had arrived.
        mid_message: bool,
    },
    /// A header gave a size smaller than a header.
    #[error("{command} message claims {size} bytes, less than its own 16-byte header")]
    TooSmall {
        /// The command's name.
        command: String,
        /// The size it claimed.
        size: u32,
    },
    /// A header gave a size larger than the receiver accepts.
    #[error("{command} message claims {size} bytes, more than the {max} this end accepts")]
    TooLarge {
        /// The command's name.
        command: String,
        /// The size it claimed.
        size: u32,
        /// The limit.
        max: usize,
    },
    /// The header's type bits are neither command nor reply.
    #[error("{command} message has type {kind} (flags 0x{flags:x}), neither command (0) nor reply (1)")]
    BadType {
        /// The command's name.
        command: String,
        /// The type field.
        kind: u32,
        /// All flags.
        flags: u32,
    },
    /// More descriptors came than the receiver has room for; the kernel dropped some.
    #[error("a message came with more than {MAX_FDS} file descriptors; some were lost")]
    TooManyFds,
    /// Sending did not complete in time (the peer does not read).
    #[error("sending timed out after {0:?}: the peer does not read")]
    SendTimeout(Duration),
}

enum Phase {
    Header { buf: [u8; HEADER_SIZE], have: usize },
    Body { header: Header, body: Vec<u8>, have: usize },
}

/// Reassembles messages from a stream socket.
pub struct Receiver {
    max_size: usize,
    phase: Phase,
    fds: Vec<OwnedFd>,
    stray_fds: u64,
}

/// What one read gave.
enum Got {
    Bytes(usize),
    WouldBlock,
}

impl Receiver {
    /// A receiver that refuses messages larger than `max_size` bytes (header included).
    pub fn new(max_size: usize) -> Receiver {
        Receiver { max_size, phase: Phase::Header { buf: [0; HEADER_SIZE], have: 0 }, fds: Vec::new(), stray_fds: 0 }
    }

    /// Whether part of a message has arrived and the rest has not.
    pub fn mid_message(&self) -> bool {
        !matches!(self.phase, Phase::Header { have: 0, .. })
    }

    /// File descriptors that arrived outside a message's header and were closed.
    pub fn stray_fds(&self) -> u64 {
        self.stray_fds
    }

    /// Read from `sock` until a whole message is in (`Ok(Some)`), or the socket has nothing more
    /// for now (`Ok(None)`, only on a non-blocking socket or one with a receive timeout).
    pub fn receive(&mut self, sock: BorrowedFd<'_>) -> Result<Option<Message>, TransportError> {
        loop {
            match &mut self.phase {
                Phase::Header { buf, have } => {
                    let got = read_some(sock, &mut buf[*have..], &mut self.fds)?;
                    let n = match got {
                        Got::WouldBlock => return Ok(None),
                        Got::Bytes(0) => return Err(TransportError::Closed { mid_message: *have > 0 }),
                        Got::Bytes(n) => n,
                    };
                    *have += n;
                    if *have < HEADER_SIZE {
                        continue;
                    }
                    let header = Header::read_from_bytes(&buf[..]).expect("16 bytes make a header");
                    self.check(&header)?;
                    let body = vec![0; header.message_size as usize - HEADER_SIZE];
                    self.phase = Phase::Body { header, body, have: 0 };
                }
                Phase::Body { header, body, have } => {
                    if *have < body.len() {
                        let mut stray = Vec::new();
                        let got = read_some(sock, &mut body[*have..], &mut stray)?;
                        self.stray_fds += stray.len() as u64;
                        match got {
                            Got::WouldBlock => return Ok(None),
                            Got::Bytes(0) => return Err(TransportError::Closed { mid_message: true }),
                            Got::Bytes(n) => *have += n,
                        }
                        continue;
                    }
                    let message =
                        Message { header: *header, body: std::mem::take(body), fds: std::mem::take(&mut self.fds) };
                    self.phase = Phase::Header { buf: [0; HEADER_SIZE], have: 0 };
                    return Ok(Some(message));
                }
            }
        }
    }

    fn check(&mut self, header: &Header) -> Result<(), TransportError> {
        let command = || command_label(header.command);
        let size = header.message_size;
        if (size as usize) < HEADER_SIZE {
            return Err(TransportError::TooSmall { command: command(), size });
        }
        if size as usize > self.max_size {
            return Err(TransportError::TooLarge { command: command(), size, max: self.max_size });
        }
        if !(header.is_command() || header.is_reply()) {
            return Err(TransportError::BadType { command: command(), kind: header.flags & 0xf, flags: header.flags });
        }
        Ok(())
    }
}

/// One `recvmsg` into `buf`, collecting descriptors into `fds`.
fn read_some(sock: BorrowedFd<'_>, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> Result<Got, TransportError> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let result = loop {
        match recvmsg(sock, &mut [IoSliceMut::new(buf)], &mut control, RecvFlags::CMSG_CLOEXEC) {
            Err(Errno::INTR) => continue,
            other => break other,
        }
    };
    let msg = match result {
        Ok(msg) => msg,
        Err(e) if e == Errno::AGAIN || e == Errno::WOULDBLOCK => return Ok(Got::WouldBlock),
        Err(e) => return Err(TransportError::Io { during: "receiving", source: e.into() }),
    };
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = m {
            fds.extend(received);
        }
    }
    if msg.flags.contains(ReturnFlags::CTRUNC) {
        return Err(TransportError::TooManyFds);
    }
    Ok(Got::Bytes(msg.bytes))
}

/// Send `bytes` (one whole message) with `fds` attached to its first byte. On a non-blocking
/// socket, waits up to `timeout` for room when the peer's buffer is full.
pub fn send_message(
    sock: BorrowedFd<'_>,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
    timeout: Duration,
) -> Result<(), TransportError> {
    let mut sent = 0;
    let mut first = true;
    while sent < bytes.len() {
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if first && !fds.is_empty() {
            let pushed = control.push(SendAncillaryMessage::ScmRights(fds));
            assert!(pushed, "at most {MAX_FDS} descriptors per message");
        }
        match sendmsg(sock, &[IoSlice::new(&bytes[sent..])], &mut control, SendFlags::NOSIGNAL) {
            Ok(n) => {
                sent += n;
                first = false;
            }
            Err(Errno::INTR) => {}
            Err(e) if e == Errno::AGAIN || e == Errno::WOULDBLOCK => wait_writable(sock, timeout)?,
            Err(e) => return Err(TransportError::Io { during: "sending", source: e.into() }),
        }
    }
    Ok(())
}

fn wait_writable(sock: BorrowedFd<'_>, timeout: Duration) -> Result<(), TransportError> {
    let mut fds = [PollFd::new(&sock, PollFlags::OUT)];
    let ts = Timespec::try_from(timeout).unwrap_or(Timespec { tv_sec: i64::MAX, tv_nsec: 0 });
    match poll(&mut fds, Some(&ts)) {
        Ok(0) => Err(TransportError::SendTimeout(timeout)),
        Ok(_) | Err(Errno::INTR) => Ok(()),
        Err(e) => Err(TransportError::Io { during: "sending", source: e.into() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::command;
    use crate::payload::RegionAccess;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn messages_arrive_whole_with_their_descriptors_even_when_split() {
        let (a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        let mut rx = Receiver::new(1 << 20);
        assert!(rx.receive(b.as_fd()).unwrap().is_none());
        let bytes = command(1, 10, 0, &RegionAccess { offset: 0, region: 0, count: 4 }, &[9, 9, 9, 9]);
        let (extra, _keep) = UnixStream::pair().unwrap();
        send_message(a.as_fd(), &bytes[..10], &[extra.as_fd()], Duration::from_secs(1)).unwrap();
        assert!(rx.receive(b.as_fd()).unwrap().is_none());
        assert!(rx.mid_message());
        (&a).write_all(&bytes[10..]).unwrap();
        let msg = rx.receive(b.as_fd()).unwrap().unwrap();
        assert_eq!(msg.header.command, 10);
        assert_eq!(msg.body.len(), 20);
        assert_eq!(msg.fds.len(), 1);
        assert!(!rx.mid_message());
    }

    #[rstest::rstest]
    #[case::shorter_than_a_header(8, 0, "less than")]
    #[case::longer_than_the_limit(4096, 0, "more than")]
    #[case::neither_command_nor_reply(16, 7, "neither")]
    fn a_bad_header_is_an_error(#[case] size: u32, #[case] flags: u32, #[case] want: &str) {
        let (a, b) = UnixStream::pair().unwrap();
        let mut h = [0u8; 16];
        h[4..8].copy_from_slice(&size.to_ne_bytes());
        h[8..12].copy_from_slice(&flags.to_ne_bytes());
        (&a).write_all(&h).unwrap();
        let err = Receiver::new(1024).receive(b.as_fd()).unwrap_err();
        assert!(err.to_string().contains(want), "{err}");
    }

    #[test]
    fn a_close_mid_message_is_an_error() {
        let (a, b) = UnixStream::pair().unwrap();
        (&a).write_all(&[1, 2, 3]).unwrap();
        drop(a);
        let err = Receiver::new(1024).receive(b.as_fd()).unwrap_err();
        assert!(matches!(err, TransportError::Closed { mid_message: true }), "{err}");
    }
}
