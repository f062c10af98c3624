//! Queue pairs as the firmware keeps them: what CREATE_QP gave (type, rings, CQs, PD, WQE mode),
//! what MODIFY_QP set, the state machine, and the rings' producer and consumer positions
//! (hardware-map §4.5, §5.1-5.3; bnxt_re qplib_fp.c `bnxt_qplib_create_qp`,
//! `bnxt_qplib_modify_qp`, `bnxt_qplib_query_qp`; ib_verbs.c `bnxt_re_modify_qp`).
//!
//! Ring positions: a doorbell's index and epoch name a position modulo twice the ring's size
//! (SQ: WQEs in static mode, 16-byte slots in variable mode; RQ: WQEs). What lies between the
//! position the engine has taken up to and the doorbell's is newly posted; a doorbell that would
//! make more than a ring's worth available is inconsistent and ignored.

use std::collections::{BTreeMap, VecDeque};

use bnxt_hsi::roce::qp::{Access, QpState};

use crate::net::MacAddr;
use crate::roce::transport::{RcQp, RecvWqe};

use super::pages::PageList;
use super::wqe::{STATIC_WQE_SLOTS, SqLayout, SqWqe, WqeError, read_sq_wqe};
use crate::host_memory::HostMemory;

/// The QP types the model keeps (roce_hsi.h `CMDQ_CREATE_QP_TYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpKind {
    /// Reliable connected (`TYPE_RC`, 2): the transport the model carries out.
    Rc,
    /// The general services interface QP, QP1 (`TYPE_GSI`, 7): on P5 and P7 bnxt_re creates
    /// ib_mad's QP1 with CREATE_QP of this type (ib_verbs.c `bnxt_re_init_qp_type`,
    /// `bnxt_re_create_qp`, "For Thor always force UD mode": `BNXT_RE_GSI_MODE_UD`), and posts
    /// UD send WQEs and reads UD receive completions on it as on any UD QP: its MADs take the
    /// UD data path ([`super::ud`]).
    Gsi,
    /// Unreliable datagram (`TYPE_UD`, 4): SEND Only packets to the address handle and QP each
    /// send WQE names ([`super::ud`]).
    Ud,
    /// Raw Ethernet (`TYPE_RAW_ETHERTYPE`, 6): upstream bnxt_re creates one for a user-space
    /// IB_QPT_RAW_PACKET QP (ib_verbs.c `__from_ib_qp_type`, since the series "RDMA/bnxt_re: Add
    /// receive flow steering support", rdma-next commit 525b4368864c7e), for the sniffer flow of
    /// RoCE mirroring. The model keeps the QP (create, modify, query, destroy) and carries no
    /// frame on it: its send and receive doorbells are counted as unimplemented.
    RawEth,
}

impl QpKind {
    /// The type code CREATE_QP and MODIFY_QP use (`CMDQ_CREATE_QP_TYPE_*`, `CMDQ_MODIFY_QP_QP_TYPE_*`).
    pub fn code(self) -> u8 {
        match self {
            QpKind::Rc => bnxt_hsi::roce::layouts::CmdqCreateQp::TYPE_RC,
            QpKind::Gsi => bnxt_hsi::roce::layouts::CmdqCreateQp::TYPE_GSI,
            QpKind::Ud => bnxt_hsi::roce::layouts::CmdqCreateQp::TYPE_UD,
            QpKind::RawEth => bnxt_hsi::roce::layouts::CmdqCreateQp::TYPE_RAW_ETHERTYPE,
        }
    }

    /// Whether the QP is a datagram QP (UD or GSI): no connection, the UD data path, and a send
    /// queue error takes it to SQE rather than ERR (IBA Vol 1 §10.3.1).
    pub fn is_datagram(self) -> bool {
        matches!(self, QpKind::Ud | QpKind::Gsi)
    }

    /// Name for messages.
    pub fn name(self) -> &'static str {
        match self {
            QpKind::Rc => "RC",
            QpKind::Gsi => "GSI",
            QpKind::Ud => "UD",
            QpKind::RawEth => "raw Ethernet",
        }
    }
}

/// A ring position: index within `size`, and the epoch bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RingPos {
    /// Index.
    pub index: u32,
    /// Epoch.
    pub epoch: bool,
}

impl RingPos {
    /// Position modulo `2 * size`.
    fn linear(self, size: u32) -> u64 {
        u64::from(self.index) + if self.epoch { u64::from(size) } else { 0 }
    }

    /// Entries from `self` to `to`, on a ring of `size`.
    pub fn distance(self, to: RingPos, size: u32) -> u64 {
        let two = 2 * u64::from(size);
        (to.linear(size) + two - self.linear(size)) % two
    }

    /// `self` moved on by `n` entries.
    pub fn advance(self, n: u32, size: u32) -> RingPos {
        let two = 2 * u64::from(size);
        let l = (self.linear(size) + u64::from(n)) % two;
        RingPos { index: (l % u64::from(size)) as u32, epoch: l >= u64::from(size) }
    }
}

/// A send queue.
#[derive(Debug, Clone)]
pub struct SendRing {
    /// Its memory (ring, then the MSN table).
    pub mem: PageList,
    /// `sq_size`: WQEs (static) or slots (variable).
    pub size: u32,
    /// Slots in the ring.
    pub depth: u32,
    /// Variable-size WQEs.
    pub variable: bool,
    /// Most SGEs per WQE.
    pub max_sge: u32,
    /// Entries of the MSN table after the ring (0: none).
    pub msn_entries: u32,
    /// The producer the driver last rang.
    pub prod: RingPos,
    /// How far the engine has read.
    pub taken: RingPos,
    /// WQEs read so far.
    pub wqes: u64,
    /// Next MSN table entry.
    pub msn_next: u32,
}

impl SendRing {
    /// The WQE layout.
    pub fn layout(&self, max_inline: u32) -> SqLayout {
        SqLayout { depth: self.depth, variable: self.variable, max_sge: self.max_sge, max_inline }
    }

    /// The slot the next WQE starts at.
    pub fn next_slot(&self) -> u32 {
        if self.variable { self.taken.index } else { self.taken.index * STATIC_WQE_SLOTS }
    }

    /// Byte offset of MSN table entry `i`: right after the ring's slots (bnxt_re
    /// `bnxt_qplib_init_psn_ptr`: the first entry is ring element `depth`).
    pub fn msn_offset(&self, i: u32) -> u64 {
        u64::from(self.depth) * 16 + u64::from(i) * 8
    }
}

/// A receive queue.
#[derive(Debug, Clone)]
pub struct RecvRing {
    /// Its memory.
    pub mem: PageList,
    /// WQEs.
    pub size: u32,
    /// Slots per WQE.
    pub stride_slots: u32,
    /// Most SGEs per WQE.
    pub max_sge: u32,
    /// The producer the driver last rang.
    pub prod: RingPos,
    /// How far the engine has read.
    pub taken: RingPos,
}

/// What MODIFY_QP set, as QUERY_QP reports it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QpAttributes {
    /// Access rights (MODIFY_QP order decoded).
    pub access: Access,
    /// `pkey`.
    pub pkey: u16,
    /// `qkey`.
    pub qkey: u32,
    /// Destination GID, wire order.
    pub dgid: [u8; 16],
    /// `flow_label`.
    pub flow_label: u32,
    /// Hardware GID index of the source GID.
    pub sgid_index: u16,
    /// `hop_limit`.
    pub hop_limit: u8,
    /// `traffic_class`.
    pub traffic_class: u8,
    /// Destination MAC, wire order.
    pub dest_mac: [u8; 6],
    /// Path MTU code (0 = 256 ... 4 = 4096).
    pub path_mtu: u8,
    /// Local ACK timeout code.
    pub timeout: u8,
    /// Retry count.
    pub retry_cnt: u8,
    /// RNR retry count.
    pub rnr_retry: u8,
    /// Minimum RNR NAK timer code.
    pub min_rnr_timer: u8,
    /// Expected PSN of the next request received.
    pub rq_psn: u32,
    /// PSN of the next request sent.
    pub sq_psn: u32,
    /// ORRQ slots as sent (ORD + 1).
    pub max_rd_atomic: u8,
    /// IRRQ slots as sent (2 IRD + 2).
    pub max_dest_rd_atomic: u8,
    /// Destination QP number.
    pub dest_qp: u32,
    /// Network type bits (7:6 of byte 0x18).
    pub network_type: u8,
    /// `tos` byte.
    pub tos: u8,
    /// `EN_SQD_ASYNC_NOTIFY`: the CI asked to be told when the send queue has drained in SQD.
    pub sqd_async_notify: bool,
}

/// One queue pair.
#[derive(Debug, Clone)]
pub struct Qp {
    /// QP number.
    pub id: u32,
    /// Type.
    pub kind: QpKind,
    /// `qp_handle`, echoed in CQEs.
    pub handle: u64,
    /// Protection domain.
    pub pd: u32,
    /// `dpi`.
    pub dpi: u32,
    /// Send CQ id.
    pub scq: u32,
    /// Receive CQ id.
    pub rcq: u32,
    /// `qp_flags` as created.
    pub flags: u32,
    /// State.
    pub state: QpState,
    /// What MODIFY_QP set.
    pub attrs: QpAttributes,
    /// Which attributes MODIFY_QP has set so far (mask bits).
    pub set_mask: u32,
    /// Send queue.
    pub sq: SendRing,
    /// Receive queue (empty, of size 0, when the QP takes receive WQEs from an SRQ).
    pub rq: RecvRing,
    /// The SRQ the QP takes receive WQEs from (`srq_cid` with `SRQ_USED`).
    pub srq: Option<u32>,
    /// `orrq_addr` as created (0: none; the requester then has no room for outstanding READs).
    pub orrq_addr: u64,
    /// `irrq_addr` as created (0: none; the responder then has no room for READs it serves).
    pub irrq_addr: u64,
    /// Source MAC frames carry (from the source GID), once at RTR.
    pub src_mac: Option<MacAddr>,
    /// The transport, from RTS on.
    pub transport: Option<RcQp>,
    /// Receives read before the transport exists (RTR), handed over at RTS.
    pub early_recvs: VecDeque<RecvWqe>,
    /// Inline payloads by WQE number, kept until the WQE completes.
    pub inline: BTreeMap<u64, Vec<u8>>,
    /// WQEs handed to the transport and not completed, in number order: (number, (start slot,
    /// slots)).
    pub in_flight: VecDeque<(u64, (u32, u32))>,
}

/// A send WQE taken off a send queue: its number and first slot, with the WQE or why it cannot be
/// carried out.
pub(crate) type TakenSendWqe = Result<(u64, u32, SqWqe), (u64, u32, WqeError)>;

impl Qp {
    /// Take the next posted send WQE off the send queue (`None` when none is posted), readable
    /// or not, and record it in flight. A WQE that cannot be read is taken as far as its extent
    /// is known; when it is not known, every posted slot goes with it (nothing after it can be
    /// found either).
    pub fn take_send_wqe(&mut self, mem: &dyn HostMemory) -> Option<TakenSendWqe> {
        use super::caps::{MAX_INLINE_DATA, MAX_INLINE_DATA_VAR_WQE};
        if self.sq.taken == self.sq.prod {
            return None;
        }
        let max_inline = if self.sq.variable { u32::from(MAX_INLINE_DATA_VAR_WQE) } else { MAX_INLINE_DATA };
        let avail = self.sq.taken.distance(self.sq.prod, self.sq.size) as u32;
        let slot = self.sq.next_slot();
        let slots_avail = if self.sq.variable { avail } else { STATIC_WQE_SLOTS };
        let seq = self.sq.wqes;
        let (taken, owned) = match read_sq_wqe(&self.sq.mem, mem, self.sq.layout(max_inline), slot, slots_avail) {
            Ok((w, owned)) => (Ok((seq, slot, w)), Some(owned)),
            Err((e, owned)) => (Err((seq, slot, e)), owned),
        };
        match owned {
            Some(n) => self.sq.taken = self.sq.taken.advance(if self.sq.variable { n } else { 1 }, self.sq.size),
            None => self.sq.taken = self.sq.prod,
        }
        self.sq.wqes += 1;
        self.in_flight.push_back((seq, (slot, owned.unwrap_or(0))));
        Some(taken)
    }
}

/// Transitions MODIFY_QP takes, the same for every QP type (IBA Vol 1 §10.3.1, the QP state
/// diagram; Linux verbs.c `qp_state_table`, which bnxt_re's modify_qp checks a state change
/// against: RTS→SQD, SQD→SQD and SQD→RTS among them; hardware-map §4.5); the attributes each
/// requires depend on the type. SQE→RTS takes a datagram QP out of the send queue error state
/// its data path put it in (only UD and GSI QPs reach SQE here, [`super::ud`]): ib_mad asks for
/// exactly that after a failed MAD send (Linux mad.c `ib_mad_send_error`: "Send errors will
/// transition the QP to SQE", then `qp_state` RTS with `cur_qp_state` SQE). SQE itself is not a
/// MODIFY_QP target: the QP enters it on its own (IBA §10.3.1; verbs.c `qp_state_table` has no
/// transition to it).
pub(crate) fn transition_allowed(from: QpState, to: QpState) -> bool {
    use QpState::*;
    matches!(
        (from, to),
        (Reset, Init)
            | (Init, Init)
            | (Init, Rtr)
            | (Rtr, Rts)
            | (Rts, Rts)
            | (Rts, Sqd)
            | (Sqd, Sqd)
            | (Sqd, Rts)
            | (Sqe, Rts)
            | (_, Err)
            | (_, Reset)
    )
}
