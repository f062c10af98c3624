//! Work-queue entries as bnxt_re writes them in static mode (qplib_fp.c `bnxt_qplib_post_send`,
//! `bnxt_qplib_post_recv`, `bnxt_qplib_put_sges`, `_calculate_wqe_byte`; roce_hsi.h `sq_send`,
//! `sq_rdma`, `rq_wqe`, `sq_sge`; hardware-map §5.2).
//!
//! A send-queue WQE takes 128 bytes (eight 16-byte slots) whatever it carries: slot 0 the
//! header, slot 1 the extended header (the remote address of an RDMA request; zero for an RC
//! SEND), then the SGEs. Its `wqe_size` counts the slots it uses (2 + SGEs). A receive-queue WQE
//! is its header, a reserved slot and its SGEs, `wr_id` carrying the entry's ring index, which
//! the responder CQE returns.

use bnxt_hsi::roce::layouts::{RqWqeHdr, SqRdmaHdr, SqSendHdr, SqSge};
use zerocopy::{FromZeros, IntoBytes};

use crate::region::Sge;

/// Bytes of one slot (`sizeof(struct sq_sge)`).
pub(crate) const SLOT_BYTES: usize = 16;
/// Bytes of a static send-queue WQE (`sizeof(struct sq_send)`).
pub(crate) const SQ_WQE_BYTES: usize = 128;
/// Slots of a static send-queue WQE; the SQ doorbell's index counts WQEs, the producer slots
/// (`_set_sq_max_slot`).
pub(crate) const SQ_WQE_SLOTS: u32 = (SQ_WQE_BYTES / SLOT_BYTES) as u32;
/// Slots of the headers every WQE starts with.
const HEADER_SLOTS: u8 = 2;
/// Bytes of the largest receive-queue WQE this driver writes (its headers and the most SGEs a
/// static WQE holds).
pub(crate) const RQ_WQE_MAX_BYTES: usize = (HEADER_SLOTS as usize + super::core::STATIC_MAX_SGE as usize) * SLOT_BYTES;

fn sge(s: &Sge) -> SqSge {
    SqSge { va_or_pa: s.va.into(), l_key: s.key.into(), size: s.len.into() }
}

fn place(wqe: &mut [u8], header: &[u8], sges: &[Sge]) {
    wqe[..header.len()].copy_from_slice(header);
    for (i, s) in sges.iter().enumerate() {
        let at = (usize::from(HEADER_SLOTS) + i) * SLOT_BYTES;
        wqe[at..at + SLOT_BYTES].copy_from_slice(sge(s).as_bytes());
    }
}

/// An RC SEND of the bytes `local` names, asking for a completion.
pub(crate) fn send(local: &Sge) -> [u8; SQ_WQE_BYTES] {
    let hdr = SqSendHdr {
        wqe_type: SqSendHdr::WQE_TYPE_SEND,
        flags: SqSendHdr::FLAGS_SIGNAL_COMP,
        wqe_size: HEADER_SLOTS + 1,
        length: local.len.into(),
        ..FromZeros::new_zeroed()
    };
    let mut wqe = [0u8; SQ_WQE_BYTES];
    place(&mut wqe, hdr.as_bytes(), std::slice::from_ref(local));
    wqe
}

/// An RDMA READ of `local.len` bytes at `remote_va` (key `rkey`) into what `local` names.
pub(crate) fn read(local: &Sge, remote_va: u64, rkey: u32) -> [u8; SQ_WQE_BYTES] {
    let hdr = SqRdmaHdr {
        wqe_type: SqRdmaHdr::WQE_TYPE_READ_WQE,
        flags: SqRdmaHdr::FLAGS_SIGNAL_COMP,
        wqe_size: HEADER_SLOTS + 1,
        length: local.len.into(),
        remote_va: remote_va.into(),
        remote_key: rkey.into(),
        ..FromZeros::new_zeroed()
    };
    let mut wqe = [0u8; SQ_WQE_BYTES];
    place(&mut wqe, hdr.as_bytes(), std::slice::from_ref(local));
    wqe
}

/// A receive into what `local` names (a zero-length receive carries one SGE of size 0, as
/// bnxt_re writes one), its `wr_id` the entry's ring `index`: the WQE in the first bytes (as
/// many as the queue pair's RQ WQEs take, at most [`RQ_WQE_MAX_BYTES`]), zeroes after.
pub(crate) fn receive(local: &Sge, index: u32) -> [u8; RQ_WQE_MAX_BYTES] {
    let mut hdr = RqWqeHdr { wqe_type: RqWqeHdr::WQE_TYPE_RCV, wqe_size: HEADER_SLOTS + 1, ..FromZeros::new_zeroed() };
    hdr.wr_id[0] = (index & RqWqeHdr::WR_ID_MASK).into();
    let mut wqe = [0u8; RQ_WQE_MAX_BYTES];
    place(&mut wqe, hdr.as_bytes(), std::slice::from_ref(local));
    wqe
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::FromBytes;

    const LOCAL: Sge = Sge { va: 0x1_0000_2000, key: 0x1234, len: 4097 };

    #[test]
    fn a_send_is_header_empty_extension_and_one_sge() {
        let w = send(&LOCAL);
        let hdr = SqSendHdr::read_from_bytes(&w[..32]).unwrap();
        assert_eq!((hdr.wqe_type, hdr.flags, hdr.wqe_size, hdr.length.get()), (0, 1, 3, 4097));
        assert!(w[16..32].iter().all(|b| *b == 0), "no UD extension for RC");
        let sge = SqSge::read_from_bytes(&w[32..48]).unwrap();
        assert_eq!((sge.va_or_pa.get(), sge.l_key.get(), sge.size.get()), (0x1_0000_2000, 0x1234, 4097));
        assert!(w[48..].iter().all(|b| *b == 0));
    }

    #[test]
    fn a_read_names_the_remote_address_and_key_in_its_extension() {
        let w = read(&LOCAL, 0xdead_b000, 0x99);
        let hdr = SqRdmaHdr::read_from_bytes(&w[..32]).unwrap();
        assert_eq!((hdr.wqe_type, hdr.flags, hdr.wqe_size, hdr.length.get()), (6, 1, 3, 4097));
        assert_eq!((hdr.remote_va.get(), hdr.remote_key.get()), (0xdead_b000, 0x99));
        assert_eq!(SqSge::read_from_bytes(&w[32..48]).unwrap().l_key.get(), 0x1234);
    }

    #[test]
    fn a_receive_carries_its_ring_index() {
        let w = receive(&Sge { len: 0, ..LOCAL }, 4095);
        assert_eq!(w.len(), 128);
        let hdr = RqWqeHdr::read_from_bytes(&w[..32]).unwrap();
        assert_eq!((hdr.wqe_type, hdr.wqe_size, hdr.wr_id[0].get()), (0x80, 3, 4095));
        assert_eq!(SqSge::read_from_bytes(&w[32..48]).unwrap().size.get(), 0);
    }
}
