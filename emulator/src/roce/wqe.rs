//! Reading work-queue entries out of SQ and RQ memory (hardware-map §5.2; roce_hsi.h
//! `sq_send_hdr`, `sq_rdma_hdr`, `sq_sge`, `rq_wqe_hdr`; bnxt_re qplib_fp.c
//! `bnxt_qplib_post_send`, `bnxt_qplib_put_sges`, `bnxt_qplib_put_inline`,
//! `bnxt_qplib_post_recv`).
//!
//! An SQ WQE is a 16-byte base header, a 16-byte extended header, then `wqe_size - 2` slots of
//! SGEs (`va`, `lkey`, `size`) or of inline data. Slots are 16 bytes and wrap at the end of the
//! ring (`% depth`). In static mode every WQE owns 8 slots (128 bytes) whatever its `wqe_size`;
//! in variable mode it owns exactly `wqe_size` slots. An RQ WQE is `rq_wqe_hdr` (type 0x80,
//! `wqe_size`, `wr_id[0]` bits 19:0), a reserved 16-byte header, then SGEs.
//!
//! Everything here is checked against the ring: a WQE's size against its mode's limits and the
//! slots the doorbell made available, its SGE count against the QP's, its type against what
//! the engine carries out (SEND, SEND with immediate, RDMA WRITE with or without immediate, RDMA
//! READ, atomic compare-and-swap and fetch-and-add). Anything else is a [`WqeError`], which the
//! engine completes with a local QP-operation error and reports as a QP error.
//!
//! An atomic WQE is `sq_atomic_hdr` (remote_key at 0x04, remote_va at 0x08, swap_data at 0x10,
//! cmp_data at 0x18) then its SGE (qplib_fp.c `bnxt_qplib_post_send`, libbnxt_re verbs.c
//! `bnxt_re_build_cns_sqe`, `bnxt_re_build_fna_sqe`). It has no length field: the operand is 8
//! bytes. libbnxt_re writes its slot count in `wqe_size`; bnxt_re's kernel path leaves the byte
//! 0 (`sq_atomic_hdr` has `reserved16` there), so 0 reads as the two header slots and one SGE,
//! the size bnxt_re reserves for it (`_calculate_wqe_byte`: header plus `num_sge`, one for an
//! atomic).

use bnxt_hsi::roce::layouts::{RqWqeHdr, SqAtomicHdr, SqBase, SqSendHdr, SqSge};

use crate::roce::transport::ATOMIC_BYTES;
use zerocopy::FromBytes;

use crate::host_memory::HostMemory;
use crate::roce::transport::{Sge, SgeList};

use super::pages::PageList;

/// Bytes of one slot.
pub(crate) const SLOT_BYTES: u64 = 16;
/// Slots a static-mode WQE owns (`sizeof(struct sq_send) / sizeof(struct sq_sge)`).
pub(crate) const STATIC_WQE_SLOTS: u32 = 8;

/// A send WQE as read from the ring, before the transport sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqWqe {
    /// `wqe_type`.
    pub wqe_type: u8,
    /// `flags`.
    pub flags: u8,
    /// `wqe_size` in slots.
    pub wqe_size: u8,
    /// Immediate data (SEND/WRITE with immediate).
    pub imm: u32,
    /// `length`.
    pub length: u32,
    /// RDMA: remote address.
    pub remote_va: u64,
    /// RDMA: remote key.
    pub remote_key: u32,
    /// UD SEND: the Q_Key for the DETH (`sq_send.q_key`).
    pub q_key: u32,
    /// UD SEND: the destination QP (`sq_send.dst_qp`, 24 bits).
    pub dst_qp: u32,
    /// UD SEND: the address vector (`sq_send.avid`, 20 bits).
    pub avid: u32,
    /// Atomic: swap data (compare-and-swap) or add data (fetch-and-add).
    pub swap: u64,
    /// Atomic: compare data.
    pub compare: u64,
    /// The SGEs (va, lkey, size), as the transport takes them.
    pub sges: SgeList,
    /// Inline data (when `flags` has INLINE).
    pub inline: Option<Vec<u8>>,
}

impl SqWqe {
    /// Whether completion is asked for (`SIGNAL_COMP`).
    pub fn signaled(&self) -> bool {
        self.flags & SqSendHdr::FLAGS_SIGNAL_COMP != 0
    }

    /// Whether the solicited-event bit is set.
    pub fn solicited(&self) -> bool {
        self.flags & SqSendHdr::FLAGS_SE != 0
    }
}

/// A receive WQE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RqWqe {
    /// `wr_id[0]` bits 19:0, returned in the CQE.
    pub wr_id: u32,
    /// The SGEs (va, lkey, size), as the transport takes them.
    pub sges: SgeList,
}

/// Why a WQE cannot be carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WqeError {
    /// The WQE type is not one the engine carries out.
    #[error(
        "WQE type 0x{0:x} is not supported (SEND, SEND with immediate, RDMA WRITE (with immediate), READ and atomics are)"
    )]
    Unsupported(u8),
    /// `wqe_size` is outside what the mode and the slots available allow.
    #[error("wqe_size {size} slots: {why}")]
    BadSize {
        /// `wqe_size`.
        size: u8,
        /// What is wrong.
        why: String,
    },
    /// More SGEs than the QP was created with.
    #[error("{sges} SGEs, more than the QP's {max}")]
    TooManySges {
        /// SGEs in the WQE.
        sges: u32,
        /// The QP's maximum.
        max: u32,
    },
    /// Inline data longer than the slots hold or than `length`.
    #[error("inline length {length} does not fit the WQE's {slots} data slots")]
    BadInline {
        /// `length`.
        length: u32,
        /// Data slots.
        slots: u32,
    },
    /// An RQ WQE with the wrong type.
    #[error("RQ WQE type 0x{0:x} is not RCV (0x80)")]
    NotReceive(u8),
    /// The ring memory could not be read.
    #[error("WQE memory: {0}")]
    Unreadable(String),
}

/// Read as many slots as `out` holds, starting at `slot` (wrapping at `depth`).
fn read_slots(ring: &PageList, mem: &dyn HostMemory, depth: u32, slot: u32, out: &mut [u8]) -> Result<(), WqeError> {
    let n = (out.len() as u64 / SLOT_BYTES) as u32;
    let first = n.min(depth - slot);
    let split = (first as u64 * SLOT_BYTES) as usize;
    ring.read(mem, u64::from(slot) * SLOT_BYTES, &mut out[..split]).map_err(|e| WqeError::Unreadable(e.to_string()))?;
    if first < n {
        ring.read(mem, 0, &mut out[split..]).map_err(|e| WqeError::Unreadable(e.to_string()))?;
    }
    Ok(())
}

/// Slots a WQE's data usually fits in (every static WQE's, and most variable ones'): read into
/// a buffer on the stack; larger ones get one on the heap.
const STACK_SLOTS: usize = 16;

/// `n` slots of zeroes to read WQE data into: `stack` when they fit, `heap` otherwise.
fn slot_buffer<'a>(
    stack: &'a mut [u8; STACK_SLOTS * SLOT_BYTES as usize],
    heap: &'a mut Vec<u8>,
    n: u32,
) -> &'a mut [u8] {
    let len = (u64::from(n) * SLOT_BYTES) as usize;
    if len <= stack.len() {
        &mut stack[..len]
    } else {
        heap.resize(len, 0);
        heap
    }
}

fn sges_of(bytes: &[u8]) -> SgeList {
    bytes
        .chunks_exact(SLOT_BYTES as usize)
        .map(|c| {
            let s = SqSge::read_from_bytes(c).expect("16-byte SGE");
            Sge { addr: s.va_or_pa.get(), lkey: s.l_key.get(), len: s.size.get() }
        })
        .collect()
}

/// Where an SQ is and how its WQEs are laid out.
#[derive(Debug, Clone, Copy)]
pub struct SqLayout {
    /// Slots in the ring.
    pub depth: u32,
    /// Variable-size WQEs.
    pub variable: bool,
    /// Most SGEs a WQE may carry.
    pub max_sge: u32,
    /// Most inline bytes a WQE may carry.
    pub max_inline: u32,
}

/// Read the SQ WQE at `slot`; `available` slots from `slot` on hold posted WQEs. Returns the WQE
/// and the slots it owns, or why it cannot be carried out and the slots it owns if they are known
/// (not when its size is unreadable or wrong in variable mode).
pub(crate) fn read_sq_wqe(
    ring: &PageList,
    mem: &dyn HostMemory,
    layout: SqLayout,
    slot: u32,
    available: u32,
) -> Result<(SqWqe, u32), (WqeError, Option<u32>)> {
    let fixed = (!layout.variable).then_some(STATIC_WQE_SLOTS);
    let mut head = [0u8; 2 * SLOT_BYTES as usize];
    read_slots(ring, mem, layout.depth, slot, &mut head).map_err(|e| (e, fixed))?;
    let size = wqe_size(&head);
    let owned = if layout.variable { u32::from(size) } else { STATIC_WQE_SLOTS };
    let size_ok = size >= 2 && owned <= available && (layout.variable || u32::from(size) <= STATIC_WQE_SLOTS);
    parse_sq_wqe(ring, mem, layout, slot, available, &head).map_err(|e| (e, if size_ok { Some(owned) } else { fixed }))
}

fn parse_sq_wqe(
    ring: &PageList,
    mem: &dyn HostMemory,
    layout: SqLayout,
    slot: u32,
    available: u32,
    head: &[u8],
) -> Result<(SqWqe, u32), WqeError> {
    let base = SqBase::read_from_bytes(&head[..8]).expect("8-byte base");
    let hdr = SqSendHdr::read_from_bytes(&head[..32]).expect("32-byte header");
    let size = wqe_size(head);
    let bad = |why: String| WqeError::BadSize { size, why };
    let owned = if layout.variable { u32::from(size) } else { STATIC_WQE_SLOTS };
    if size < 2 {
        return Err(bad("a WQE has at least its two header slots".into()));
    }
    if !layout.variable && u32::from(size) > STATIC_WQE_SLOTS {
        return Err(bad(format!("a static-mode WQE holds at most {STATIC_WQE_SLOTS}")));
    }
    if owned > available {
        return Err(bad(format!("only {available} slots were posted")));
    }
    let ty = base.wqe_type;
    match ty {
        SqBase::WQE_TYPE_SEND
        | SqBase::WQE_TYPE_SEND_W_IMMEAD
        | SqBase::WQE_TYPE_WRITE_WQE
        | SqBase::WQE_TYPE_WRITE_W_IMMEAD
        | SqBase::WQE_TYPE_READ_WQE
        | SqBase::WQE_TYPE_ATOMIC_CS
        | SqBase::WQE_TYPE_ATOMIC_FA => {}
        other => return Err(WqeError::Unsupported(other)),
    }
    let atomic = matches!(ty, SqBase::WQE_TYPE_ATOMIC_CS | SqBase::WQE_TYPE_ATOMIC_FA);
    let data_slots = u32::from(size) - 2;
    let (mut stack, mut heap) = ([0u8; STACK_SLOTS * SLOT_BYTES as usize], Vec::new());
    let data = slot_buffer(&mut stack, &mut heap, data_slots);
    read_slots(ring, mem, layout.depth, (slot + 2) % layout.depth, data)?;
    let is_rdma = atomic
        || matches!(ty, SqBase::WQE_TYPE_WRITE_WQE | SqBase::WQE_TYPE_WRITE_W_IMMEAD | SqBase::WQE_TYPE_READ_WQE);
    // A SEND's header carries the UD fields where an RDMA header carries the remote address
    // (roce_hsi.h `sq_send`: q_key at 0x0c, dst_qp at 0x10, avid at 0x14); RC QPs leave them 0.
    let (q_key, dst_qp, avid) = if is_rdma {
        (0, 0, 0)
    } else {
        use bnxt_hsi::roce::layouts::SqSend as U;
        let le = |at: usize| u32::from_le_bytes(head[at..at + 4].try_into().expect("4 bytes"));
        (le(0x0c), le(0x10) & U::DST_QP_MASK, le(0x14) & U::AVID_MASK)
    };
    let (remote_va, remote_key, swap, compare) = if atomic {
        let a = SqAtomicHdr::read_from_bytes(&head[..32]).expect("32-byte header");
        (a.remote_va.get(), a.remote_key.get(), a.swap_data.get(), a.cmp_data.get())
    } else if is_rdma {
        let r = bnxt_hsi::roce::layouts::SqRdmaHdr::read_from_bytes(&head[..32]).expect("32-byte header");
        (r.remote_va.get(), r.remote_key.get(), 0, 0)
    } else {
        (0, 0, 0, 0)
    };
    let inline_flag = hdr.flags & SqSendHdr::FLAGS_INLINE != 0 && ty != SqBase::WQE_TYPE_READ_WQE && !atomic;
    let length = if atomic { ATOMIC_BYTES } else { hdr.length.get() };
    let (sges, inline) = if inline_flag {
        let room = data_slots * SLOT_BYTES as u32;
        if length > room || length > layout.max_inline {
            return Err(WqeError::BadInline { length, slots: data_slots });
        }
        (SgeList::new(), Some(data[..length as usize].to_vec()))
    } else {
        if data_slots > layout.max_sge {
            return Err(WqeError::TooManySges { sges: data_slots, max: layout.max_sge });
        }
        (sges_of(data), None)
    };
    let wqe = SqWqe {
        wqe_type: ty,
        flags: hdr.flags,
        wqe_size: size,
        imm: hdr.inv_key_or_imm_data.get(),
        length,
        remote_va,
        remote_key,
        q_key,
        dst_qp,
        avid,
        swap,
        compare,
        sges,
        inline,
    };
    Ok((wqe, owned))
}

/// The WQE's size in slots: `wqe_size`, and for an atomic whose byte is 0 (bnxt_re's kernel
/// path leaves it so) its two header slots and one SGE.
fn wqe_size(head: &[u8]) -> u8 {
    match (head[0], head[2]) {
        (SqBase::WQE_TYPE_ATOMIC_CS | SqBase::WQE_TYPE_ATOMIC_FA, 0) => 3,
        (_, size) => size,
    }
}

/// Read the RQ WQE of index `index` (stride `stride_slots`, the ring holding `size` WQEs); it
/// may carry at most `max_sge` SGEs.
pub(crate) fn read_rq_wqe(
    ring: &PageList,
    mem: &dyn HostMemory,
    index: u32,
    stride_slots: u32,
    max_sge: u32,
) -> Result<RqWqe, WqeError> {
    // RQ WQEs never straddle the end of the ring: it is a whole number of strides.
    let at = u64::from(index) * u64::from(stride_slots) * SLOT_BYTES;
    let mut head = [0u8; 32];
    ring.read(mem, at, &mut head).map_err(|e| WqeError::Unreadable(e.to_string()))?;
    let hdr = RqWqeHdr::read_from_bytes(&head).expect("32-byte RQ header");
    if hdr.wqe_type != RqWqeHdr::WQE_TYPE_RCV {
        return Err(WqeError::NotReceive(hdr.wqe_type));
    }
    let size = hdr.wqe_size;
    if size < 2 || u32::from(size) > stride_slots {
        return Err(WqeError::BadSize { size, why: format!("an RQ WQE of this QP holds 2..={stride_slots}") });
    }
    let n = u32::from(size) - 2;
    if n > max_sge {
        return Err(WqeError::TooManySges { sges: n, max: max_sge });
    }
    let (mut stack, mut heap) = ([0u8; STACK_SLOTS * SLOT_BYTES as usize], Vec::new());
    let data = slot_buffer(&mut stack, &mut heap, n);
    ring.read(mem, at + 32, data).map_err(|e| WqeError::Unreadable(e.to_string()))?;
    Ok(RqWqe { wr_id: hdr.wr_id[0].get() & RqWqeHdr::WR_ID_MASK, sges: sges_of(data) })
}
