//! Frames over a stream socket in QEMU's stream-netdev framing (QEMU net/stream.c, the
//! `-netdev stream` and `-netdev socket` backends): each frame is preceded by its length as a
//! 4-byte big-endian number. A model NIC in one process, a segment hub, and a QEMU guest's own
//! `-netdev stream` NIC can exchange Ethernet frames this way.
//!
//! [`FrameDecoder`] is sans-IO: bytes in (in any pieces), whole frames out. A length of 0 or
//! above [`MAX_FRAME`] cannot be a frame; the stream is then garbage and the decoder says so
//! (the peer is dropped), without allocating what the length claimed.

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

/// Reassembles frames from stream bytes.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    consumed: u64,
}

impl FrameDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// Add bytes read from the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes held that do not yet make a whole frame.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The next whole frame, if one has arrived.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let Some(prefix) = self.buf.first_chunk::<PREFIX>() else { return Ok(None) };
        let len = u32::from_be_bytes(*prefix);
        let offset = self.consumed;
        if len == 0 {
            return Err(FrameError::Empty { offset });
        }
        if len as usize > MAX_FRAME {
            return Err(FrameError::TooLong { len, offset });
        }
        let end = PREFIX + len as usize;
        if self.buf.len() < end {
            return Ok(None);
        }
        let frame = self.buf[PREFIX..end].to_vec();
        self.buf.drain(..end);
        self.consumed += end as u64;
        Ok(Some(frame))
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
