//! Extended transport headers: DETH of UD packets (IBA Vol 1 §9.3.2), RETH (§9.3.3), AtomicETH
//! (§9.3.4), AETH (§9.3.5), AtomicAckETH (§9.3.6) and immediate data (ImmDt, §9.3.7).

use std::fmt;
use std::time::Duration;

use super::bytes::{be32, be64, put32, put64};
use super::error::{Layer, WireError, need};

/// Bytes of a DETH: Q_Key (4), reserved (1), source QP (3).
pub const DETH_LEN: usize = 8;
/// Bytes of a RETH: virtual address (8), R_Key (4), DMA length (4).
pub const RETH_LEN: usize = 16;
/// Bytes of an AETH: syndrome (1), MSN (3).
pub const AETH_LEN: usize = 4;
/// Bytes of immediate data.
pub const IMMDT_LEN: usize = 4;
/// Bytes of an AtomicETH: virtual address (8), R_Key (4), swap or add data (8), compare data (8).
pub const ATOMIC_ETH_LEN: usize = 28;
/// Bytes of an AtomicAckETH: the original remote data (8).
pub const ATOMIC_ACK_ETH_LEN: usize = 8;

/// The fields of an AtomicETH (IBA §9.3.4; rdma_rxe rxe_hdr.h `struct rxe_atmeth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicEthRepr {
    /// Virtual address of the 8 bytes at the responder (naturally aligned, §9.4.5).
    pub va: u64,
    /// Remote key of the region.
    pub rkey: u32,
    /// Swap data (CompareSwap) or add data (FetchAdd).
    pub swap_add: u64,
    /// Compare data (CompareSwap; FetchAdd ignores it).
    pub compare: u64,
}

impl AtomicEthRepr {
    /// Read an AtomicETH from the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<AtomicEthRepr, WireError> {
        need(Layer::AtomicEth, 0, buf, ATOMIC_ETH_LEN)?;
        Ok(AtomicEthRepr { va: be64(buf, 0), rkey: be32(buf, 8), swap_add: be64(buf, 12), compare: be64(buf, 20) })
    }

    /// Write the AtomicETH at the start of `buf` (at least [`ATOMIC_ETH_LEN`] bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        put64(buf, 0, self.va);
        put32(buf, 8, self.rkey);
        put64(buf, 12, self.swap_add);
        put64(buf, 20, self.compare);
    }
}

/// Read an AtomicAckETH (the original remote data) from the start of `buf`.
pub fn parse_atomic_ack(buf: &[u8]) -> Result<u64, WireError> {
    need(Layer::AtomicAckEth, 0, buf, ATOMIC_ACK_ETH_LEN)?;
    Ok(be64(buf, 0))
}

/// Write an AtomicAckETH at the start of `buf` (at least [`ATOMIC_ACK_ETH_LEN`] bytes).
pub fn emit_atomic_ack(orig: u64, buf: &mut [u8]) {
    put64(buf, 0, orig);
}

/// The fields of a DETH (IBA §9.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DethRepr {
    /// Queue key the receiving QP checks (§10.2.4).
    pub qkey: u32,
    /// The sending QP (24 bits).
    pub src_qp: u32,
}

impl DethRepr {
    /// Read a DETH from the start of `buf` (the reserved byte is ignored).
    pub fn parse(buf: &[u8]) -> Result<DethRepr, WireError> {
        need(Layer::Deth, 0, buf, DETH_LEN)?;
        Ok(DethRepr { qkey: be32(buf, 0), src_qp: be32(buf, 4) & 0xff_ffff })
    }

    /// Write the DETH at the start of `buf` (at least [`DETH_LEN`] bytes; the reserved byte 0).
    pub fn emit(&self, buf: &mut [u8]) {
        put32(buf, 0, self.qkey);
        put32(buf, 4, self.src_qp & 0xff_ffff);
    }
}

/// The fields of a RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RethRepr {
    /// Virtual address at the responder.
    pub va: u64,
    /// Remote key of the region.
    pub rkey: u32,
    /// Length of the whole transfer in bytes.
    pub dma_len: u32,
}

impl RethRepr {
    /// Read a RETH from the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<RethRepr, WireError> {
        need(Layer::Reth, 0, buf, RETH_LEN)?;
        Ok(RethRepr { va: be64(buf, 0), rkey: be32(buf, 8), dma_len: be32(buf, 12) })
    }

    /// Write the RETH at the start of `buf` (at least [`RETH_LEN`] bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        put64(buf, 0, self.va);
        put32(buf, 8, self.rkey);
        put32(buf, 12, self.dma_len);
    }
}

/// A NAK code (AETH syndrome class `11`, the code in bits 4-0; IBA Vol 1 §9.3.5; rdma_rxe
/// rxe_hdr.h `AETH_NAK_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// PSN sequence error (0).
    PsnSequenceError,
    /// Invalid request (1).
    InvalidRequest,
    /// Remote access error (2).
    RemoteAccessError,
    /// Remote operational error (3).
    RemoteOperationalError,
    /// Invalid RD request (4); not used on RC but a valid code on the wire.
    InvalidRdRequest,
}

impl NakCode {
    fn code(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
        }
    }
}

impl NakCode {
    /// A short name, for transcripts.
    pub fn label(self) -> &'static str {
        match self {
            NakCode::PsnSequenceError => "psn-sequence-error",
            NakCode::InvalidRequest => "invalid-request",
            NakCode::RemoteAccessError => "remote-access-error",
            NakCode::RemoteOperationalError => "remote-operational-error",
            NakCode::InvalidRdRequest => "invalid-rd-request",
        }
    }
}

/// The AETH syndrome (IBA §9.3.5; bits 6-5: 00 ACK, 01 RNR NAK, 11 NAK; bit 7 reserved).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// ACK, with the credit count (bits 4-0; 0x1f means "no credit count", the value for QPs
    /// without end-to-end flow control).
    Ack {
        /// Credit count field, 0-31.
        credits: u8,
    },
    /// Receiver not ready, with the encoded minimum RNR NAK timer (bits 4-0; see
    /// [`rnr_timer_delay`]).
    RnrNak {
        /// Timer field, 0-31.
        timer: u8,
    },
    /// Negative acknowledgement.
    Nak(NakCode),
}

/// Credit field of an ACK that carries no credit count (rdma_rxe rxe_hdr.h `AETH_ACK_UNLIMITED`).
pub const ACK_NO_CREDITS: u8 = 0x1f;

impl fmt::Display for Syndrome {
    /// `ack`, `rnr-nak`, or `nak-` and the NAK code's label.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Syndrome::Ack { .. } => f.write_str("ack"),
            Syndrome::RnrNak { .. } => f.write_str("rnr-nak"),
            Syndrome::Nak(code) => write!(f, "nak-{}", code.label()),
        }
    }
}

impl Syndrome {
    /// Whether it is a NAK (RNR or other), not an ACK.
    pub fn is_nak(self) -> bool {
        !matches!(self, Syndrome::Ack { .. })
    }

    /// The syndrome byte.
    pub fn to_byte(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1f,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak(code) => 0x60 | code.code(),
        }
    }

    /// Decode a syndrome byte; reserved encodings are refused.
    pub fn from_byte(b: u8) -> Result<Syndrome, WireError> {
        let bad = |why| WireError::Unsupported { layer: Layer::Aeth, field: "syndrome", value: b.into(), why };
        if b & 0x80 != 0 {
            return Err(bad("reserved bit 7 set"));
        }
        let low = b & 0x1f;
        match (b >> 5) & 3 {
            0 => Ok(Syndrome::Ack { credits: low }),
            1 => Ok(Syndrome::RnrNak { timer: low }),
            3 => Ok(Syndrome::Nak(match low {
                0 => NakCode::PsnSequenceError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccessError,
                3 => NakCode::RemoteOperationalError,
                4 => NakCode::InvalidRdRequest,
                _ => return Err(bad("reserved NAK code")),
            })),
            _ => Err(bad("reserved syndrome class 10")),
        }
    }
}

/// The delay an RNR NAK timer field (0-31) asks for (IBA Vol 1, the encoding
/// table of the AETH RNR NAK timer field; the same table as Linux include/rdma/ib_verbs.h `IB_RNR_TIMER_*`). Values past 31
/// read as 31.
pub fn rnr_timer_delay(timer: u8) -> Duration {
    // Microseconds, indexed by the field: 0 is 655.36 ms, then 0.01 ms ... 491.52 ms.
    const US: [u64; 32] = [
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840, 5_120, 7_680,
        10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760, 327_680, 491_520,
    ];
    Duration::from_micros(US[usize::from(timer.min(31))])
}

/// The fields of an AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AethRepr {
    /// Syndrome.
    pub syndrome: Syndrome,
    /// Message sequence number (24 bits).
    pub msn: u32,
}

impl AethRepr {
    /// Read an AETH from the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<AethRepr, WireError> {
        need(Layer::Aeth, 0, buf, AETH_LEN)?;
        let word = be32(buf, 0);
        Ok(AethRepr { syndrome: Syndrome::from_byte((word >> 24) as u8)?, msn: word & 0x00ff_ffff })
    }

    /// Write the AETH at the start of `buf` (at least [`AETH_LEN`] bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        put32(buf, 0, (u32::from(self.syndrome.to_byte()) << 24) | (self.msn & 0x00ff_ffff));
    }
}

/// Read immediate data (4 bytes, big-endian as carried) from the start of `buf`.
pub fn parse_immdt(buf: &[u8]) -> Result<u32, WireError> {
    need(Layer::ImmDt, 0, buf, IMMDT_LEN)?;
    Ok(be32(buf, 0))
}

/// Write immediate data at the start of `buf`.
pub fn emit_immdt(imm: u32, buf: &mut [u8]) {
    put32(buf, 0, imm);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deth_round_trips_and_keeps_the_reserved_byte_zero() {
        let d = DethRepr { qkey: 0x1122_3344, src_qp: 0x00ab_cdef };
        let mut b = [0xffu8; DETH_LEN];
        d.emit(&mut b);
        assert_eq!(b, [0x11, 0x22, 0x33, 0x44, 0, 0xab, 0xcd, 0xef]);
        assert_eq!(DethRepr::parse(&b).unwrap(), d);
        assert!(DethRepr::parse(&b[..7]).is_err());
    }

    #[test]
    fn reth_round_trips_in_network_order() {
        let r = RethRepr { va: 0x0011_2233_4455_6677, rkey: 0x8899_aabb, dma_len: 0x0010_0000 };
        let mut buf = [0u8; 16];
        r.emit(&mut buf);
        assert_eq!(buf, [0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0, 0x10, 0, 0]);
        assert_eq!(RethRepr::parse(&buf).unwrap(), r);
        assert!(RethRepr::parse(&buf[..15]).is_err());
    }

    #[test]
    fn syndromes_encode_as_rdma_rxe_defines_them() {
        // rxe_hdr.h: AETH_ACK_UNLIMITED 0x1f, AETH_RNR_NAK 0x20, AETH_NAK_PSN_SEQ_ERROR 0x60,
        // AETH_NAK_INVALID_REQ 0x61, AETH_NAK_REM_ACC_ERR 0x62, AETH_NAK_REM_OP_ERR 0x63.
        let cases = [
            (Syndrome::Ack { credits: ACK_NO_CREDITS }, 0x1f),
            (Syndrome::Ack { credits: 0 }, 0x00),
            (Syndrome::RnrNak { timer: 14 }, 0x2e),
            (Syndrome::Nak(NakCode::PsnSequenceError), 0x60),
            (Syndrome::Nak(NakCode::InvalidRequest), 0x61),
            (Syndrome::Nak(NakCode::RemoteAccessError), 0x62),
            (Syndrome::Nak(NakCode::RemoteOperationalError), 0x63),
            (Syndrome::Nak(NakCode::InvalidRdRequest), 0x64),
        ];
        for (s, byte) in cases {
            assert_eq!(s.to_byte(), byte, "{s:?}");
            assert_eq!(Syndrome::from_byte(byte).unwrap(), s);
        }
        for reserved in [0x40u8, 0x5f, 0x65, 0x7f, 0x80, 0xff] {
            assert!(Syndrome::from_byte(reserved).is_err(), "{reserved:#x}");
        }
    }

    #[test]
    fn aeth_round_trips() {
        let a = AethRepr { syndrome: Syndrome::RnrNak { timer: 1 }, msn: 0xabcdef };
        let mut buf = [0u8; 4];
        a.emit(&mut buf);
        assert_eq!(buf, [0x21, 0xab, 0xcd, 0xef]);
        assert_eq!(AethRepr::parse(&buf).unwrap(), a);
    }

    #[test]
    fn rnr_timer_table_ends() {
        assert_eq!(rnr_timer_delay(0), Duration::from_micros(655_360));
        assert_eq!(rnr_timer_delay(1), Duration::from_micros(10));
        assert_eq!(rnr_timer_delay(14), Duration::from_micros(1_280));
        assert_eq!(rnr_timer_delay(31), Duration::from_micros(491_520));
        assert_eq!(rnr_timer_delay(200), Duration::from_micros(491_520));
    }
}
