//! Frames over a stream socket in QEMU's stream-netdev framing (QEMU net/stream.c, the
//! `-netdev stream` and `-netdev socket` backends): each frame is preceded by its length as a
//! 4-byte big-endian number. A model NIC in one process, a segment hub, and a QEMU guest's own
//! `-netdev stream` NIC can exchange Ethernet frames this way.
//!
//! [`FrameDecoder`] is sans-IO: bytes in (in any pieces), whole frames out. A length of 0 or
//! above [`MAX_FRAME`] cannot be a frame; the stream is then garbage and the decoder says so
//! (the peer is dropped), without allocating what the length claimed. [`Outbox`] is the other
//! way: frames in, encoded, and written to a non-blocking stream as fast as the peer takes them.
//!
//! Both keep their bytes in one buffer with a start offset, moving what is left to the front
//! only once the consumed part is the larger: taking a frame, or writing part of a backlog,
//! costs no copy of the rest (a backlog of megabytes is written in pieces of a socket buffer).

use std::collections::VecDeque;
use std::io::{ErrorKind, IoSlice, Write};

/// Largest frame accepted: QEMU's `NET_BUFSIZE` (4096 + 65536, include/net/net.h), which covers
/// any frame a guest NIC can send with offloads off.
pub const MAX_FRAME: usize = 4096 + 65536;

/// Bytes of the length prefix.
pub const PREFIX: usize = 4;

/// Why a stream is not a frame stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A length prefix of 0.
    #[error("a frame length of 0 at byte {offset} of the stream")]
    Empty {
        /// Where in the stream.
        offset: u64,
    },
    /// A length prefix above [`MAX_FRAME`].
    #[error("a frame length of {len} bytes at byte {offset} of the stream, more than {MAX_FRAME}")]
    TooLong {
        /// The length claimed.
        len: u32,
        /// Where in the stream.
        offset: u64,
    },
}

/// Bytes a read into a [`FrameDecoder`] offers the stream at least.
pub const READ_CHUNK: usize = 1 << 16;

/// Reads of a peer's stream one turn of a loop makes at most (the hub's, a serve process's),
/// each followed by taking its frames: a peer that never stops sending neither holds the loop
/// nor piles bytes up in the decoder; the rest is read next turn.
pub const READS_A_TURN: usize = 16;

/// Reassembles frames from stream bytes.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    /// The bytes held are `buf[start..end]`; `buf` is kept initialised, so a read goes straight
    /// into it without clearing it first.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    consumed: u64,
}

impl FrameDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// Add bytes read from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        let at = self.room(bytes.len());
        self.buf[at..at + bytes.len()].copy_from_slice(bytes);
        self.end += bytes.len();
    }

    /// One read of `source` straight into the decoder, offering it at least [`READ_CHUNK`]
    /// bytes; how many it gave (0: the stream ended).
    pub fn read_from(&mut self, mut source: impl std::io::Read) -> std::io::Result<usize> {
        let at = self.room(READ_CHUNK);
        let n = source.read(&mut self.buf[at..])?;
        self.end += n;
        Ok(n)
    }

    /// Make `n` bytes of room after the held bytes (moving them to the front first when that
    /// makes it); where the room starts.
    fn room(&mut self, n: usize) -> usize {
        if self.buf.len() - self.end < n && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < n {
            self.buf.resize(self.end + n, 0);
        }
        self.end
    }

    /// Bytes held that do not yet make a whole frame.
    pub fn pending(&self) -> usize {
        self.end - self.start
    }

    /// The next whole frame, if one has arrived.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        self.next_frame_with(Vec::new)
    }

    /// The next whole frame, if one has arrived, in a buffer from `buffer` (a recycled one,
    /// whose old bytes are replaced), which is asked for only when a frame is there.
    pub fn next_frame_with(&mut self, buffer: impl FnOnce() -> Vec<u8>) -> Result<Option<Vec<u8>>, FrameError> {
        let held = &self.buf[self.start..self.end];
        let Some(prefix) = held.first_chunk::<PREFIX>() else { return Ok(None) };
        let len = u32::from_be_bytes(*prefix);
        let offset = self.consumed;
        if len == 0 {
            return Err(FrameError::Empty { offset });
        }
        if len as usize > MAX_FRAME {
            return Err(FrameError::TooLong { len, offset });
        }
        let end = PREFIX + len as usize;
        if held.len() < end {
            return Ok(None);
        }
        let mut frame = buffer();
        frame.clear();
        frame.extend_from_slice(&held[PREFIX..end]);
        self.start += end;
        self.consumed += end as u64;
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        }
        Ok(Some(frame))
    }
}

/// Frames one vectored write offers at most (two slices each: prefix and frame).
const FRAMES_A_WRITE: usize = 64;

/// Frames waiting to be written to a peer, each in its own buffer, written with their length
/// prefixes by vectored writes (nothing is copied into a backlog), with a limit on the bytes kept
/// for a peer that does not read.
#[derive(Debug)]
pub struct Outbox {
    frames: VecDeque<([u8; PREFIX], Vec<u8>)>,
    /// Bytes of the front frame, prefix included, already written.
    written: usize,
    /// Bytes waiting, prefixes included.
    bytes: usize,
    limit: usize,
}

impl Outbox {
    /// An empty outbox keeping at most `limit` bytes.
    pub fn new(limit: usize) -> Outbox {
        Outbox { frames: VecDeque::new(), written: 0, bytes: 0, limit }
    }

    /// Queue `frame`; given back (and nothing queued) when it would take the backlog past the
    /// limit.
    pub fn push(&mut self, frame: Vec<u8>) -> Result<(), Vec<u8>> {
        if self.bytes + PREFIX + frame.len() > self.limit {
            return Err(frame);
        }
        let len = u32::try_from(frame.len()).expect("frames are far below 4 GiB");
        self.bytes += PREFIX + frame.len();
        self.frames.push_back((len.to_be_bytes(), frame));
        Ok(())
    }

    /// The frame queued last, if any waits.
    pub fn last(&self) -> Option<&[u8]> {
        self.frames.back().map(|(_, frame)| frame.as_slice())
    }

    /// Bytes waiting.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Write as much as `out` takes now (a non-blocking stream: until it would block), handing
    /// each frame written whole to `sent` (whose buffer may be used again). `Err` for any other
    /// failure (the peer is gone).
    pub fn write_to(&mut self, mut out: impl Write, mut sent: impl FnMut(Vec<u8>)) -> std::io::Result<()> {
        while !self.frames.is_empty() {
            let mut slices = [IoSlice::new(&[]); 2 * FRAMES_A_WRITE];
            let mut n = 0;
            for (i, (prefix, frame)) in self.frames.iter().take(FRAMES_A_WRITE).enumerate() {
                let skip = if i == 0 { self.written } else { 0 };
                if skip < PREFIX {
                    slices[n] = IoSlice::new(&prefix[skip..]);
                    slices[n + 1] = IoSlice::new(frame);
                    n += 2;
                } else {
                    slices[n] = IoSlice::new(&frame[skip - PREFIX..]);
                    n += 1;
                }
            }
            match out.write_vectored(&slices[..n]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(k) => self.written_out(k, &mut sent),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// `k` more bytes were written: drop the frames they finish.
    fn written_out(&mut self, mut k: usize, sent: &mut impl FnMut(Vec<u8>)) {
        self.bytes -= k;
        while k > 0 {
            let Some((_, frame)) = self.frames.front() else { break };
            let left = PREFIX + frame.len() - self.written;
            if k < left {
                self.written += k;
                return;
            }
            k -= left;
            self.written = 0;
            if let Some((_, frame)) = self.frames.pop_front() {
                sent(frame);
            }
        }
    }
}

/// `frame` with its length prefix, ready to write to a stream.
pub fn encode_frame(frame: &[u8]) -> Vec<u8> {
    let len = u32::try_from(frame.len()).expect("frames are far below 4 GiB");
    let mut out = Vec::with_capacity(PREFIX + frame.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(frame);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_out_whole_however_the_bytes_are_cut() {
        let frames: Vec<Vec<u8>> = vec![vec![1; 60], vec![2; 1514], vec![3; 14]];
        let stream: Vec<u8> = frames.iter().flat_map(|f| encode_frame(f)).collect();
        assert_eq!(&stream[..4], &[0, 0, 0, 60], "big-endian length first");
        for cut in [1, 3, 4, 5, 61, 1000, stream.len()] {
            let mut d = FrameDecoder::new();
            let mut got = Vec::new();
            for piece in stream.chunks(cut) {
                d.push(piece);
                while let Some(f) = d.next_frame().unwrap() {
                    got.push(f);
                }
            }
            assert_eq!(got, frames, "cut every {cut} bytes");
            assert_eq!(d.pending(), 0);
        }
    }

    #[test]
    fn frames_read_straight_from_a_stream_come_out_whole_in_the_buffers_given() {
        // The second frame is longer than a read's chunk: it arrives over two reads.
        let frames = [vec![1u8; 60], vec![2; 69_000], vec![3; 14]];
        let stream: Vec<u8> = frames.iter().flat_map(|f| encode_frame(f)).collect();
        let mut d = FrameDecoder::new();
        let mut source = &stream[..];
        let mut got = Vec::new();
        while d.read_from(&mut source).unwrap() > 0 {
            while let Some(f) = d.next_frame_with(|| vec![0xee; 100_000]).unwrap() {
                got.push(f);
            }
        }
        assert_eq!(got, frames, "the recycled buffers' old bytes are replaced");
        assert_eq!(d.pending(), 0);
    }

    /// Takes at most `room` bytes per call, then would block.
    struct Slow {
        got: Vec<u8>,
        room: usize,
    }

    impl Write for Slow {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(self.room);
            self.got.extend_from_slice(&buf[..n]);
            self.room -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn an_outbox_writes_what_the_peer_takes_keeps_the_rest_and_refuses_past_its_limit() {
        let mut out = Outbox::new(200);
        assert!(out.push(vec![1; 60]).is_ok() && out.push(vec![2; 100]).is_ok());
        assert_eq!(out.push(vec![3; 40]), Err(vec![3; 40]), "4 + 40 more would pass 200");
        assert_eq!(out.len(), 168);
        let mut peer = Slow { got: Vec::new(), room: 50 };
        let mut sent = Vec::new();
        out.write_to(&mut peer, |f| sent.push(f.len())).unwrap();
        assert_eq!(out.len(), 118);
        assert!(sent.is_empty(), "the first frame is not written whole yet");
        assert!(out.push(vec![3; 40]).is_ok(), "room again");
        peer.room = usize::MAX;
        out.write_to(&mut peer, |f| sent.push(f.len())).unwrap();
        assert!(out.is_empty());
        assert_eq!(sent, [60, 100, 40], "each buffer is handed back once its frame is written");
        let mut d = FrameDecoder::new();
        d.push(&peer.got);
        let frames: Vec<Vec<u8>> = std::iter::from_fn(|| d.next_frame().unwrap()).collect();
        assert_eq!(frames, vec![vec![1; 60], vec![2; 100], vec![3; 40]]);
        let mut broken = Outbox::new(100);
        broken.push(vec![1; 10]).unwrap();
        struct Gone;
        impl Write for Gone {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        assert!(broken.write_to(Gone, drop).is_err());
    }

    #[test]
    fn impossible_lengths_are_errors_naming_where() {
        let mut d = FrameDecoder::new();
        d.push(&encode_frame(&[9; 20]));
        d.push(&[0, 0, 0, 0]);
        assert_eq!(d.next_frame().unwrap(), Some(vec![9; 20]));
        assert_eq!(d.next_frame(), Err(FrameError::Empty { offset: 24 }));
        let mut d = FrameDecoder::new();
        d.push(&[0xff, 0xff, 0xff, 0xff]);
        let err = d.next_frame().unwrap_err();
        assert!(err.to_string().contains("4294967295 bytes at byte 0"), "{err}");
    }
}
