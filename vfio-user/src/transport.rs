//! Sending and receiving vfio-user messages over a UNIX stream socket, with the file descriptors
//! a message carries as `SCM_RIGHTS` ancillary data.
//!
//! [`Receiver`] is incremental: it reads what the socket has, keeps a partial message between
//! calls, and hands out whole messages. On a non-blocking socket it never waits, so a peer that
//! sends half a message cannot stall its reader. It checks a message's size before reading its
//! body: fewer than 16 bytes, more than the limit the reader set, or a type that is neither
//! command nor reply is an error after which the stream cannot be trusted (the caller closes it).
//!
//! It reads in chunks, so a run of small messages costs one `recvmsg`, not two each.
//!
//! File descriptors: a sender passes them with the first byte of the message (one `sendmsg`), and
//! the kernel ends a read with the bytes they came with, so they belong to the last message that
//! starts in that read. Descriptors that arrive in a read where no message starts belong to no
//! message the receiver can name; they are closed (as [`OwnedFd`]s are on drop) and counted.

use std::collections::VecDeque;
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

/// Bytes read at a time (more when one message needs more). A run of small messages, such as a
/// client's posted doorbell stores, is taken in one `recvmsg` instead of two a message.
const READ_CHUNK: usize = 64 * 1024;

/// Reassembles messages from a stream socket.
pub struct Receiver {
    max_size: usize,
    /// Bytes read and not yet handed out are `buf[start..end]`; `buf` is kept initialised.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// Descriptors waiting for the message that starts at the stream offset beside them.
    fds: VecDeque<(u64, Vec<OwnedFd>)>,
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
        Receiver { max_size, buf: Vec::new(), start: 0, end: 0, base: 0, fds: VecDeque::new(), stray_fds: 0 }
    }

    /// Whether part of a message has arrived and the rest has not.
    pub fn mid_message(&self) -> bool {
        self.end > self.start
    }

    /// File descriptors that arrived with no message to belong to, and were closed.
    pub fn stray_fds(&self) -> u64 {
        self.stray_fds
    }

    /// Hand out the next whole message already read, or read from `sock` until one is in
    /// (`Ok(Some)`) or the socket has nothing more for now (`Ok(None)`, only on a non-blocking
    /// socket or one with a receive timeout). Messages already read are handed out without
    /// touching the socket, so a caller drains the receiver until `Ok(None)` before it waits
    /// for the socket to be readable again.
    pub fn receive(&mut self, sock: BorrowedFd<'_>) -> Result<Option<Message>, TransportError> {
        loop {
            if let Some(message) = self.take_message()? {
                return Ok(Some(message));
            }
            let read_from = self.make_room();
            let mut fds = Vec::new();
            match read_some(sock, &mut self.buf[read_from..], &mut fds)? {
                Got::WouldBlock => return Ok(None),
                Got::Bytes(0) => return Err(TransportError::Closed { mid_message: self.mid_message() }),
                Got::Bytes(n) => {
                    self.end += n;
                    self.place_fds(read_from, fds);
                }
            }
        }
    }

    /// The next message if all of it has been read; an error if its header is bad.
    fn take_message(&mut self) -> Result<Option<Message>, TransportError> {
        let Some(header) = self.header_at(self.start) else { return Ok(None) };
        self.check(&header)?;
        let size = header.message_size as usize;
        if self.end - self.start < size {
            return Ok(None);
        }
        let at = self.base + self.start as u64;
        let body = self.buf[self.start + HEADER_SIZE..self.start + size].to_vec();
        self.start += size;
        Ok(Some(Message { header, body, fds: self.fds_of(at) }))
    }

    /// The header of the message starting at `buf[at]`, if all 16 bytes of it have been read.
    fn header_at(&self, at: usize) -> Option<Header> {
        let bytes = self.buf.get(at..self.end)?.get(..HEADER_SIZE)?;
        Some(Header::read_from_bytes(bytes).expect("16 bytes make a header"))
    }

    /// Room to read into after `end`: a chunk, and at least the rest of the message being read
    /// (its size trusted only within the limit). Returns where the read goes.
    fn make_room(&mut self) -> usize {
        let pending = self.end - self.start;
        let message = self
            .header_at(self.start)
            .map(|h| h.message_size as usize)
            .filter(|&size| size <= self.max_size)
            .unwrap_or(0);
        let need = pending.max(message) + READ_CHUNK;
        if self.start > 0 && self.start + need > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            (self.start, self.end) = (0, pending);
        }
        if need > self.buf.len() {
            self.buf.resize(need, 0);
        }
        self.end
    }

    /// Place the descriptors a read of the bytes from `buf[read_from]` to `end` brought. The
    /// kernel hands a UNIX stream socket's descriptors out with the first of the bytes sent
    /// with them and ends that read with those bytes (Linux net/unix/af_unix.c,
    /// `unix_stream_read_generic`), and a sender passes a message's descriptors with its first
    /// byte: so they belong to the last message that starts in what this read gave. When no
    /// message starts there, they belong to none and are closed.
    fn place_fds(&mut self, read_from: usize, fds: Vec<OwnedFd>) {
        if fds.is_empty() {
            return;
        }
        let mut last = None;
        let mut at = self.start;
        while at < self.end {
            if at >= read_from {
                last = Some(at);
            }
            match self.header_at(at) {
                Some(h) if h.message_size as usize >= HEADER_SIZE => at += h.message_size as usize,
                _ => break,
            }
        }
        match last {
            Some(at) => self.fds.push_back((self.base + at as u64, fds)),
            None => self.stray_fds += fds.len() as u64,
        }
    }

    /// The descriptors of the message that starts at stream offset `at` (none when none came);
    /// any waiting for an earlier message, which cannot now be handed out, are closed.
    fn fds_of(&mut self, at: u64) -> Vec<OwnedFd> {
        while let Some((offset, fds)) = self.fds.pop_front() {
            if offset == at {
                return fds;
            }
            if offset > at {
                self.fds.push_front((offset, fds));
                break;
            }
            self.stray_fds += fds.len() as u64;
        }
        Vec::new()
    }

    fn check(&self, header: &Header) -> Result<(), TransportError> {
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

    #[test]
    fn many_small_messages_are_taken_in_one_read_each_with_its_own_descriptors() {
        let (a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        let store = |id: u16| command(id, 8, 0, &RegionAccess { offset: 0, region: 1, count: 8 }, &[id as u8; 8]);
        for id in 0..100 {
            send_message(a.as_fd(), &store(id), &[], Duration::from_secs(1)).unwrap();
        }
        // A message with a descriptor after the run: the kernel ends a read with it.
        let (extra, _keep) = UnixStream::pair().unwrap();
        send_message(a.as_fd(), &store(100), &[extra.as_fd()], Duration::from_secs(1)).unwrap();
        send_message(a.as_fd(), &store(101), &[], Duration::from_secs(1)).unwrap();
        let mut rx = Receiver::new(1 << 20);
        for id in 0..102u16 {
            let msg = rx.receive(b.as_fd()).unwrap().unwrap();
            assert_eq!(msg.header.message_id, id);
            assert_eq!(msg.body[16..], [id as u8; 8]);
            assert_eq!(msg.fds.len(), usize::from(id == 100), "message {id}");
        }
        assert!(rx.receive(b.as_fd()).unwrap().is_none());
        assert!(!rx.mid_message());
        assert_eq!(rx.stray_fds(), 0);
    }

    #[test]
    fn descriptors_sent_in_the_middle_of_a_body_are_closed_and_counted() {
        let (a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        let bytes = command(3, 8, 0, &RegionAccess { offset: 0, region: 1, count: 64 }, &[7; 64]);
        let mut rx = Receiver::new(1 << 20);
        (&a).write_all(&bytes[..40]).unwrap();
        assert!(rx.receive(b.as_fd()).unwrap().is_none());
        let (extra, _keep) = UnixStream::pair().unwrap();
        send_message(a.as_fd(), &bytes[40..], &[extra.as_fd()], Duration::from_secs(1)).unwrap();
        let msg = rx.receive(b.as_fd()).unwrap().unwrap();
        assert!(msg.fds.is_empty());
        assert_eq!(rx.stray_fds(), 1);
    }

    #[test]
    fn a_message_larger_than_a_chunk_arrives_whole() {
        let (a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
        let bytes = command(9, 8, 0, &RegionAccess { offset: 0, region: 1, count: data.len() as u32 }, &data);
        let mut rx = Receiver::new(1 << 20);
        let writer = std::thread::spawn(move || (&a).write_all(&bytes).unwrap());
        let msg = loop {
            if let Some(msg) = rx.receive(b.as_fd()).unwrap() {
                break msg;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        writer.join().unwrap();
        assert_eq!(msg.body[16..], data[..]);
    }

    /// Random runs of messages (any size up to 3 KiB, a quarter of them with one or two
    /// descriptors), written whole or in random pieces, read by one receiver: each comes out
    /// whole, in order, with its own descriptors; then random bytes, which give an error or
    /// nothing, never a panic.
    #[test]
    fn random_runs_of_messages_come_out_whole_in_order_with_their_descriptors() {
        use rand::{Rng, SeedableRng};
        for seed in 0..64u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let (a, b) = UnixStream::pair().unwrap();
            b.set_nonblocking(true).unwrap();
            let mut rx = Receiver::new(4096);
            let mut sent = Vec::new();
            for id in 0..rng.random_range(1..60u16) {
                let len = rng.random_range(0..3000usize);
                let body: Vec<u8> = (0..len).map(|_| rng.random()).collect();
                let bytes = command(id, 8, 0, &RegionAccess { offset: 0, region: 1, count: len as u32 }, &body);
                let fds = if rng.random_range(0..4) == 0 { rng.random_range(1..3usize) } else { 0 };
                let pairs: Vec<(UnixStream, UnixStream)> = (0..fds).map(|_| UnixStream::pair().unwrap()).collect();
                let borrowed: Vec<_> = pairs.iter().map(|(x, _)| x.as_fd()).collect();
                if fds == 0 && rng.random() {
                    let cut = rng.random_range(0..bytes.len());
                    (&a).write_all(&bytes[..cut]).unwrap();
                    (&a).write_all(&bytes[cut..]).unwrap();
                } else {
                    send_message(a.as_fd(), &bytes, &borrowed, Duration::from_secs(1)).unwrap();
                }
                sent.push((id, bytes.len() - HEADER_SIZE, fds));
                // Read now and then, so that reads end in the middle of messages too.
                while rng.random_range(0..3) == 0 {
                    if let Some(m) = rx.receive(b.as_fd()).unwrap() {
                        let (id, len, fds) = sent.remove(0);
                        assert_eq!((m.header.message_id, m.body.len(), m.fds.len()), (id, len, fds), "seed {seed}");
                    }
                }
            }
            while let Some(m) = rx.receive(b.as_fd()).unwrap() {
                let (id, len, fds) = sent.remove(0);
                assert_eq!((m.header.message_id, m.body.len(), m.fds.len()), (id, len, fds), "seed {seed}");
            }
            assert!(sent.is_empty(), "seed {seed}: {} messages never came", sent.len());
            assert_eq!(rx.stray_fds(), 0, "seed {seed}");
            let garbage: Vec<u8> = (0..rng.random_range(1..200)).map(|_| rng.random()).collect();
            (&a).write_all(&garbage).unwrap();
            for _ in 0..4 {
                match rx.receive(b.as_fd()) {
                    Ok(Some(_)) | Ok(None) => {}
                    Err(_) => break,
                }
            }
        }
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
