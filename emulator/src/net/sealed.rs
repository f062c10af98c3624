//! Frames whose ICRC is known to be right without computing it again: a shortcut of the model,
//! not something hardware does, and taken only where it cannot change what anyone observes.
//!
//! A [`SealedFrame`] is a frame a builder of [`roce`](super::roce) wrote in this process: the
//! builder computed its ICRC over exactly its bytes, and from then on the bytes cannot change
//! (they can be read, or taken back as a plain `Vec`, which ends the seal). The switch keeps a
//! frame sealed only when its fault stage is transparent, so nothing between the sender's ICRC
//! computation and the receiver could have altered a bit
//! ([`Switch::send_sealed`](super::switch::Switch::send_sealed)); with any fault configured
//! (drop, duplicate, reorder, corrupt, delay, or a rule) every frame arrives plain and is
//! checked for real. [`RoceFrame::parse_sealed`] then makes every check
//! [`RoceFrame::parse`] makes, in the same order, except computing the ICRC again; as the
//! bytes are the ones the carried ICRC was computed over, that check could only pass, so the
//! result is the same. Debug builds (every test) compute and compare the ICRC all the same,
//! when sealing and when parsing, and fail loudly if it ever differed.
//!
//! What it saves: one of the two CRC passes per payload byte (see `docs/performance.md`).

use super::error::WireError;
use super::icrc;
use super::roce::{IPV4_OFFSET, Outer, RoceFrame};

/// A frame built in this process, its ICRC computed over exactly these bytes, which cannot change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedFrame {
    bytes: Vec<u8>,
}

impl SealedFrame {
    /// Seal a frame that one of the builders of [`roce`](super::roce) has just written, and that
    /// nothing has touched since. Only code that can show that may call this (the transport's
    /// [`poll_transmit_sealed`](crate::roce::transport::RcQp::poll_transmit_sealed)). Debug
    /// builds check the frame parses with its ICRC.
    pub(crate) fn of_built(bytes: Vec<u8>) -> SealedFrame {
        debug_assert_eq!(RoceFrame::parse(&bytes).err(), None, "only a good frame just built may be sealed");
        SealedFrame { bytes }
    }

    /// The frame's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The bytes back as a buffer (to reuse, or to change: the seal ends).
    pub fn into_vec(self) -> Vec<u8> {
        self.bytes
    }
}

/// A frame as the switch delivers it: plain (checked for real by the receiver), or still sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireFrame {
    /// Bytes that may have been changed since their ICRC was computed (or came from elsewhere).
    Plain(Vec<u8>),
    /// A frame that provably nothing changed since it was built.
    Sealed(SealedFrame),
}

impl WireFrame {
    /// The frame's bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            WireFrame::Plain(b) => b,
            WireFrame::Sealed(s) => s.bytes(),
        }
    }

    /// The bytes back as a buffer (to reuse).
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            WireFrame::Plain(b) => b,
            WireFrame::Sealed(s) => s.into_vec(),
        }
    }

    /// Whether the frame is still sealed.
    pub fn is_sealed(&self) -> bool {
        matches!(self, WireFrame::Sealed(_))
    }
}

impl<'a> RoceFrame<'a> {
    /// As [`RoceFrame::parse`] (every check, in the same order, with the same result), without
    /// computing the ICRC again: the frame is sealed, so the carried ICRC is the one computed
    /// over these bytes. Debug builds compute it and compare all the same.
    pub fn parse_sealed(frame: &'a SealedFrame) -> Result<RoceFrame<'a>, WireError> {
        let bytes = frame.bytes();
        let outer = Outer::parse(bytes)?;
        debug_assert_eq!(icrc::verify(&bytes[IPV4_OFFSET..outer.ip_end]), Ok(icrc::IcrcCheck::Good));
        RoceFrame::parse_transport(bytes, outer)
    }

    /// [`RoceFrame::parse_sealed`] for a sealed frame, [`RoceFrame::parse`] for a plain one.
    pub fn parse_wire(frame: &'a WireFrame) -> Result<RoceFrame<'a>, WireError> {
        match frame {
            WireFrame::Plain(b) => RoceFrame::parse(b),
            WireFrame::Sealed(s) => RoceFrame::parse_sealed(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::bth::BthRepr;
    use crate::net::ethernet::MacAddr;
    use crate::net::opcode::Opcode;
    use crate::net::roce::{Path, Transport, build_frame};

    fn frame(op: Opcode, len: usize) -> Vec<u8> {
        let path = Path::between(MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]), 0x10);
        let mut f = Vec::new();
        build_frame(&path, &Transport::bth(BthRepr::new(op, 0x10, 9)), &vec![0x77; len], &mut f).unwrap();
        f
    }

    #[test]
    fn a_sealed_frame_parses_as_the_plain_one_does() {
        for (op, len) in [(Opcode::SendOnly, 0), (Opcode::SendMiddle, 4096), (Opcode::SendLast, 3)] {
            let plain = frame(op, len);
            let sealed = SealedFrame::of_built(plain.clone());
            assert_eq!(sealed.bytes(), &plain[..]);
            assert_eq!(RoceFrame::parse_sealed(&sealed), RoceFrame::parse(&plain));
            let wire = WireFrame::Sealed(sealed.clone());
            assert!(wire.is_sealed());
            assert_eq!(RoceFrame::parse_wire(&wire), RoceFrame::parse(&plain));
            assert_eq!(wire.into_vec(), plain);
            assert_eq!(RoceFrame::parse_wire(&WireFrame::Plain(plain.clone())), RoceFrame::parse(&plain));
        }
    }

    #[test]
    fn a_plain_frame_is_checked_for_real() {
        let mut bad = frame(Opcode::SendOnly, 40);
        bad[60] ^= 1;
        assert!(matches!(RoceFrame::parse_wire(&WireFrame::Plain(bad)), Err(WireError::Icrc { .. })));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "only a good frame just built may be sealed")]
    fn sealing_a_frame_with_a_wrong_icrc_fails_loudly_in_debug_builds() {
        let mut bad = frame(Opcode::SendOnly, 40);
        bad[60] ^= 1;
        let _ = SealedFrame::of_built(bad);
    }
}
