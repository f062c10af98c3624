//! The InfiniBand Base Transport Header (IBA Vol 1 §9.2), 12 bytes, as RoCE v2 carries it after
//! the UDP header (Annex A17).
//!
//! ```text
//! byte 0      OpCode
//! byte 1      SE(7) M(6) PadCnt(5:4) TVer(3:0)
//! bytes 2-3   P_Key
//! byte 4      F(7) B(6) reserved(5:0)   -- "resv8a" in rdma_rxe; variant, masked in the ICRC
//! bytes 5-7   DestQP
//! byte 8      A(7) reserved(6:0)
//! bytes 9-11  PSN
//! ```

use super::bytes::{be16, be24, put16, put24};
use super::error::{Layer, WireError, need};
use super::opcode::Opcode;

/// Bytes of a BTH.
pub const HEADER_LEN: usize = 12;
/// The default (full-membership) partition key, which RoCE v2 RC traffic carries (Linux
/// `IB_DEFAULT_PKEY_FULL`; rdma_rxe rxe_req.c `init_req_packet`).
pub const DEFAULT_PKEY: u16 = 0xffff;
/// Mask of a 24-bit PSN or QP number.
pub const MASK_24: u32 = 0x00ff_ffff;
/// Offset of the variant byte (F, B, reserved) masked in the ICRC.
pub(crate) const VARIANT_BYTE: usize = 4;

mod field {
    pub(super) const OPCODE: usize = 0;
    pub(super) const FLAGS: usize = 1;
    pub(super) const PKEY: usize = 2;
    pub(super) const FECN_BECN: usize = 4;
    pub(super) const DEST_QP: usize = 5;
    pub(super) const ACK_REQ: usize = 8;
    pub(super) const PSN: usize = 9;
}

/// A view of a BTH at the start of a buffer.
#[derive(Debug, Clone)]
pub struct BthPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> BthPacket<T> {
    /// A view without checks; accessors panic on a buffer shorter than [`HEADER_LEN`].
    pub const fn new_unchecked(buffer: T) -> Self {
        BthPacket { buffer }
    }

    /// A view of a buffer holding at least a whole BTH.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        need(Layer::Bth, 0, buffer.as_ref(), HEADER_LEN)?;
        Ok(BthPacket { buffer })
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The opcode byte.
    pub fn opcode(&self) -> u8 {
        self.buffer.as_ref()[field::OPCODE]
    }

    /// Solicited event (SE).
    pub fn solicited(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & 0x80 != 0
    }

    /// Migration request (M).
    pub fn migreq(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & 0x40 != 0
    }

    /// Pad count: bytes (0-3) added after the payload to align it to 4 bytes.
    pub fn pad_count(&self) -> u8 {
        (self.buffer.as_ref()[field::FLAGS] >> 4) & 0x3
    }

    /// Transport header version (TVer).
    pub fn tver(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS] & 0x0f
    }

    /// Partition key.
    pub fn pkey(&self) -> u16 {
        be16(self.buffer.as_ref(), field::PKEY)
    }

    /// Forward explicit congestion notification (F).
    pub fn fecn(&self) -> bool {
        self.buffer.as_ref()[field::FECN_BECN] & 0x80 != 0
    }

    /// Backward explicit congestion notification (B).
    pub fn becn(&self) -> bool {
        self.buffer.as_ref()[field::FECN_BECN] & 0x40 != 0
    }

    /// Destination QP number (24 bits).
    pub fn dest_qp(&self) -> u32 {
        be24(self.buffer.as_ref(), field::DEST_QP)
    }

    /// Acknowledge request (A).
    pub fn ack_req(&self) -> bool {
        self.buffer.as_ref()[field::ACK_REQ] & 0x80 != 0
    }

    /// Packet sequence number (24 bits).
    pub fn psn(&self) -> u32 {
        be24(self.buffer.as_ref(), field::PSN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> BthPacket<T> {
    /// Set the opcode byte.
    pub fn set_opcode(&mut self, code: u8) {
        self.buffer.as_mut()[field::OPCODE] = code;
    }

    /// Set SE, M, PadCnt (0-3) and TVer (0-15).
    pub fn set_flags(&mut self, solicited: bool, migreq: bool, pad_count: u8, tver: u8) {
        self.buffer.as_mut()[field::FLAGS] =
            (u8::from(solicited) << 7) | (u8::from(migreq) << 6) | ((pad_count & 3) << 4) | (tver & 0x0f);
    }

    /// Set the partition key.
    pub fn set_pkey(&mut self, pkey: u16) {
        put16(self.buffer.as_mut(), field::PKEY, pkey);
    }

    /// Set F and B; the reserved bits of the byte are zero.
    pub fn set_fecn_becn(&mut self, fecn: bool, becn: bool) {
        self.buffer.as_mut()[field::FECN_BECN] = (u8::from(fecn) << 7) | (u8::from(becn) << 6);
    }

    /// Set the destination QP (low 24 bits).
    pub fn set_dest_qp(&mut self, qp: u32) {
        put24(self.buffer.as_mut(), field::DEST_QP, qp & MASK_24);
    }

    /// Set A; the reserved bits of the byte are zero.
    pub fn set_ack_req(&mut self, ack_req: bool) {
        self.buffer.as_mut()[field::ACK_REQ] = u8::from(ack_req) << 7;
    }

    /// Set the PSN (low 24 bits).
    pub fn set_psn(&mut self, psn: u32) {
        put24(self.buffer.as_mut(), field::PSN, psn & MASK_24);
    }
}

/// The fields of a BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BthRepr {
    /// Opcode.
    pub opcode: Opcode,
    /// Solicited event.
    pub solicited: bool,
    /// Migration request (rdma_rxe sends 0).
    pub migreq: bool,
    /// Pad count (0-3); the frame builder sets it from the payload length.
    pub pad_count: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward ECN.
    pub fecn: bool,
    /// Backward ECN.
    pub becn: bool,
    /// Destination QP (24 bits).
    pub dest_qp: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// PSN (24 bits).
    pub psn: u32,
}

impl BthRepr {
    /// A BTH with the defaults RoCE v2 RC traffic uses: P_Key 0xffff, SE, M, F, B and A clear, pad
    /// count 0.
    pub fn new(opcode: Opcode, dest_qp: u32, psn: u32) -> BthRepr {
        BthRepr {
            opcode,
            solicited: false,
            migreq: false,
            pad_count: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp: dest_qp & MASK_24,
            ack_req: false,
            psn: psn & MASK_24,
        }
    }

    /// Read a checked BTH: the opcode must be one of [`Opcode`] and TVer 0 (IBA §9.2.5: a receiver
    /// drops packets of another transport version).
    pub fn parse<T: AsRef<[u8]>>(p: &BthPacket<T>) -> Result<BthRepr, WireError> {
        let opcode = Opcode::try_from(p.opcode())?;
        if p.tver() != 0 {
            return Err(WireError::Unsupported {
                layer: Layer::Bth,
                field: "TVer",
                value: p.tver().into(),
                why: "transport header version must be 0",
            });
        }
        Ok(BthRepr {
            opcode,
            solicited: p.solicited(),
            migreq: p.migreq(),
            pad_count: p.pad_count(),
            pkey: p.pkey(),
            fecn: p.fecn(),
            becn: p.becn(),
            dest_qp: p.dest_qp(),
            ack_req: p.ack_req(),
            psn: p.psn(),
        })
    }

    /// Write the BTH into a buffer of at least [`HEADER_LEN`] bytes (reserved bits zero, TVer 0).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut BthPacket<T>) {
        p.set_opcode(self.opcode.code());
        p.set_flags(self.solicited, self.migreq, self.pad_count, 0);
        p.set_pkey(self.pkey);
        p.set_fecn_becn(self.fecn, self.becn);
        p.set_dest_qp(self.dest_qp);
        p.set_ack_req(self.ack_req);
        p.set_psn(self.psn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_sit_where_the_spec_puts_them() {
        let mut r = BthRepr::new(Opcode::SendLast, 0xab_cdef, 0x12_3456);
        r.solicited = true;
        r.pad_count = 3;
        r.becn = true;
        r.ack_req = true;
        let mut buf = [0u8; 12];
        r.emit(&mut BthPacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, [0x02, 0xb0, 0xff, 0xff, 0x40, 0xab, 0xcd, 0xef, 0x80, 0x12, 0x34, 0x56]);
        let p = BthPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(BthRepr::parse(&p).unwrap(), r);
    }

    #[test]
    fn reads_the_bth_of_a_captured_cnp() {
        // BTH of the ConnectX-4 Lx CNP in scapy's test/contrib/roce.uts (opcode 0x81 is a CNP,
        // which the view reads but BthRepr refuses: it is not an RC opcode).
        let buf = [0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00];
        let p = BthPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(
            (p.opcode(), p.pkey(), p.becn(), p.fecn(), p.dest_qp(), p.psn()),
            (0x81, 0xffff, true, false, 0x118, 0)
        );
        assert!(BthRepr::parse(&p).is_err());
    }

    #[test]
    fn other_transport_versions_and_short_buffers_are_refused() {
        let mut buf = [0u8; 12];
        BthRepr::new(Opcode::SendOnly, 1, 1).emit(&mut BthPacket::new_unchecked(&mut buf[..]));
        buf[1] |= 0x01;
        let p = BthPacket::new_checked(&buf[..]).unwrap();
        assert!(matches!(BthRepr::parse(&p), Err(WireError::Unsupported { field: "TVer", .. })));
        assert!(BthPacket::new_checked(&buf[..11]).is_err());
    }
}
