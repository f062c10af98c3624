//! The per-QP data path ([`DataPath`]): WQEs from the rings to the QP's transport, the
//! transport's frames to the wire and its completions to CQEs, frames from the wire to the right
//! QP, and the transport's timers. RC QPs go through the [`super::transport`], datagram QPs (UD
//! and the GSI QP) through [`super::ud`], one service for both; its methods borrow what the
//! command channel shares with it ([`Shared`]: the objects, the NQs and CREQ, the report).
//!
//! * Send WQEs are read when the QP is in RTS (or ERR and SQE, where they complete flushed; in SQD
//!   they wait in the ring) and handed to the transport in ring order, each numbered; a WQE the engine cannot carry out completes with
//!   LOCAL_QP_OPERATION_ERR after everything before it, and moves the QP to the error state with a
//!   QP error notification on the CREQ. Receive WQEs are read from RTR on, where the transport
//!   is already a responder.
//! * The MSN table entry of each WQE (P7 host-MSN retransmission) is read and compared with the
//!   WQE's start slot and PSN range; disagreements are counted and logged (the model's
//!   transport keeps its own retransmission state, so a wrong table changes nothing else).
//! * Requester CQEs (`cq_req`) carry `sq_cons_idx`: for a success, the number of the WQE after
//!   the completed one modulo `sq_size` (bnxt_re and rdma-core compare it with their software
//!   queue index: qplib_fp.c `bnxt_qplib_cq_process_req`, verbs.c `bnxt_re_poll_success_scqe`);
//!   for an error in variable WQE mode, the start slot of the failed WQE
//!   (`bnxt_qplib_get_cqe_sq_cons`). Responder CQEs (`cq_res_rc`) carry the RQ WQE's `wr_id`.
//! * Frames to one of the NIC's own MACs (a QP connected to another QP of the same NIC) do not go
//!   on the wire: the NIC loops them back to itself [`LOOPBACK_LATENCY`] later, as a NIC's
//!   internal switch does (the hardware's own hairpin timing is not public).
//! * Datagram QPs (UD, and the GSI QP, QP1) have no transport: their WQEs and frames go to
//!   [`super::ud`]; their receive WQEs wait in the QP's queue of early receives until a packet
//!   takes them.
//! * When the transport enters the error state on its own (retry exceeded, a NAK, a local
//!   protection error), the QP moves to ERR and a QP error notification goes to the CREQ.

use std::collections::VecDeque;
use std::time::Duration;

use bnxt_hsi::roce::cqe::{CQE_BYTES, CqeType, type_toggle};
use bnxt_hsi::roce::layouts::{CqReq, CqResRc, CreqQpErrorNotification as QpErr, SqBase};
use bnxt_hsi::roce::msn::MsnEntry;
use bnxt_hsi::roce::qp::QpState;
use zerocopy::{FromZeros, IntoBytes};

use crate::events::EventKind;
use crate::net::pool::FramePool;
use crate::net::sealed::WireFrame;
use crate::net::{RoceFrame, WireError};
use crate::roce::transport::{
    QpState as TState, RecvCompletion, RecvKind, RecvWqe, ReqStatus, RespStatus, SendCompletion, SendOp, SendWqe, Sge,
};

use super::caps::LOOPBACK_LATENCY;
use super::counters::RoceCounters;
use super::engine::Env;
use super::gid::GidTable;
use super::l2_gate::{self, Admission};
use super::memory::{INLINE_LKEY, QpMemory};
use super::post::CqeWrite;
use super::qp::Qp;
use super::shared::Shared;
use super::state::RoceState;
use super::timers::QpTimers;
use super::wqe::{SqWqe, read_rq_wqe};

/// A completion waiting to become a CQE.
#[derive(Debug, Clone)]
pub(super) enum Done {
    Send(SendCompletion),
    Recv(RecvCompletion),
    /// A UD QP's receive completion, with the sender ([`super::ud`]).
    UdRecv(super::ud::UdRecv),
    /// A WQE the engine refused: its number (or the RQ wr_id) and whether it was a send.
    Refused {
        send: bool,
        id: u64,
    },
}

/// The data path's own state: what it sends, what it loops back, its timers and its lists.
/// It acts on the objects and posts to the host through [`Shared`], which every method borrows.
#[derive(Debug, Clone)]
pub(super) struct DataPath {
    /// The NIC's MAC (frames to it, or to a MAC of its GIDs, are looped back).
    mac: [u8; 6],
    /// The QPs' transport deadlines.
    timers: QpTimers,
    /// Frames for the wire, oldest first.
    frames: Vec<WireFrame>,
    /// Buffers the transport builds frames in (see [`super::RoceEngine::frame_pool`]).
    pool: FramePool,
    /// Frames to the NIC itself, due back at a time.
    loopback: VecDeque<(Duration, WireFrame)>,
    /// Completions a QP's service collected, waiting to become CQEs (kept between calls for
    /// its capacity; empty between them).
    done: Vec<Done>,
    /// QP error notifications to post once the completions before them are written:
    /// (QP, requester reason, responder reason).
    pending_qp_error: Vec<(u32, u8, u8)>,
    /// The L2 filters' gate, with its last decision.
    gate: l2_gate::Gate,
}

impl DataPath {
    /// The data path of the NIC with MAC `mac`.
    pub(super) fn new(mac: [u8; 6]) -> DataPath {
        DataPath {
            mac,
            timers: QpTimers::default(),
            frames: Vec::new(),
            pool: FramePool::new(),
            loopback: VecDeque::new(),
            done: Vec::new(),
            pending_qp_error: Vec::new(),
            gate: l2_gate::Gate::default(),
        }
    }

    /// Function reset: the timers and the frames not yet delivered go.
    pub(super) fn reset(&mut self) {
        self.timers.clear();
        self.frames.clear();
        self.loopback.clear();
    }

    /// When the data path next has work of its own (a looped-back frame, a QP's timer).
    pub(super) fn next_deadline(&self) -> Option<Duration> {
        crate::device::earliest(self.loopback.front().map(|(t, _)| *t), self.timers.next())
    }

    /// The buffers frames are built in.
    pub(super) fn pool(&mut self) -> &mut FramePool {
        &mut self.pool
    }

    /// Move the frames for the wire to the end of `out`.
    #[inline]
    pub(super) fn drain_frames(&mut self, out: &mut Vec<WireFrame>) {
        out.append(&mut self.frames);
    }

    /// Everything due at or before `now`: looped-back frames arrive, QP timers fire, and every
    /// QP with something to look at is serviced.
    pub(super) fn advance(&mut self, sh: &mut Shared, now: Duration, env: &mut Env<'_>) {
        while self.loopback.front().is_some_and(|(t, _)| *t <= now) {
            let (at, frame) = self.loopback.pop_front().expect("checked");
            self.receive_wire(sh, at, &frame, env);
            self.pool.give(frame.into_vec());
        }
        while let Some(qpn) = self.timers.pop_due(now) {
            if let Some(tr) = sh.st.qps.get_mut(&qpn).and_then(|q| q.transport.as_mut()) {
                tr.on_timer(now);
            }
            sh.st.dirty.insert(qpn);
        }
        self.service_dirty(sh, now, env);
    }

    /// A frame the NIC sent at `now`: looped back when it is for the NIC itself (its MAC or a
    /// MAC of its GIDs), to the wire otherwise.
    pub(super) fn route(&mut self, gids: &GidTable, counters: &mut RoceCounters, now: Duration, frame: WireFrame) {
        let dst: [u8; 6] = frame.bytes()[..6].try_into().expect("a frame has an Ethernet header");
        if dst == self.mac || gids.has_mac(&dst) {
            counters.frames_looped += 1;
            self.loopback.push_back((now + LOOPBACK_LATENCY, frame));
        } else {
            self.frames.push(frame);
        }
    }

    /// QP `qpn` entered the error state: its notification (with the requester's and the
    /// responder's reasons) goes to the CREQ once the completions before it are written.
    pub(super) fn queue_qp_error(&mut self, qpn: u32, req: u8, res: u8) {
        self.pending_qp_error.push((qpn, req, res));
    }

    /// Post the QP error notifications waiting for the completions before them.
    pub(super) fn post_qp_errors(&mut self, sh: &mut Shared, now: Duration, env: &mut Env<'_>) {
        for (q, req, res) in self.pending_qp_error.drain(..) {
            sh.qp_error_event(now, q, req, res, env);
        }
    }

    /// Service every QP with something to look at.
    pub(super) fn service_dirty(&mut self, sh: &mut Shared, now: Duration, env: &mut Env<'_>) {
        while let Some(qpn) = sh.st.dirty.pop_first() {
            self.service_qp(sh, now, qpn, env);
        }
    }

    fn service_qp(&mut self, sh: &mut Shared, now: Duration, qpn: u32, env: &mut Env<'_>) {
        // One list for every call (it is empty between calls).
        let mut done = std::mem::take(&mut self.done);
        self.read_rq(sh, now, qpn, env, &mut done);
        self.read_sq(sh, now, qpn, env, &mut done);
        self.pump(sh, now, qpn, env, &mut done);
        done.clear();
        self.done = done;
    }

    /// Read newly posted receive WQEs (from RTR on; in SQE too, where a datagram QP's receive
    /// queue still works, IBA Vol 1 §10.3.1).
    fn read_rq(&mut self, sh: &mut Shared, now: Duration, qpn: u32, env: &mut Env<'_>, done: &mut Vec<Done>) {
        let Some(qp) = sh.st.qps.get_mut(&qpn) else { return };
        if !matches!(qp.state, QpState::Rtr | QpState::Rts | QpState::Sqe | QpState::Err) {
            return;
        }
        while qp.rq.taken != qp.rq.prod {
            let index = qp.rq.taken.index;
            qp.rq.taken = qp.rq.taken.advance(1, qp.rq.size);
            sh.report.counters.wqes += 1;
            match read_rq_wqe(&qp.rq.mem, env.mem, index, qp.rq.stride_slots, qp.rq.max_sge) {
                Ok(w) => {
                    let wqe = RecvWqe { id: u64::from(w.wr_id), sges: w.sges };
                    match qp.transport.as_mut() {
                        Some(t) => t.post_recv(wqe),
                        None if qp.state == QpState::Err => done.push(Done::Recv(flushed_recv(wqe.id))),
                        None => qp.early_recvs.push_back(wqe),
                    }
                }
                Err(e) => {
                    sh.report.counters.bad_wqes += 1;
                    let reason = format!("RQ WQE {index}: {e}");
                    env.rec.record(now, EventKind::WqeRefused { qp: qpn, reason });
                    // The wr_id is unknown when the header cannot be read; the index stands in.
                    let id = read_wr_id(qp, env, index).unwrap_or(index);
                    match qp.transport.as_mut() {
                        Some(t) => t.set_error(),
                        None => done.extend(qp.early_recvs.drain(..).map(|w| Done::Recv(flushed_recv(w.id)))),
                    }
                    done.push(Done::Refused { send: false, id: u64::from(id) });
                    if qp.state != QpState::Err {
                        qp.state = QpState::Err;
                        let reason = QpErr::RES_ERR_STATE_REASON_RES_WQE_FORMAT_ERROR;
                        self.queue_qp_error(qpn, 0, reason);
                    }
                    // WQEs after it complete flushed, after it: the next pass reads them.
                    sh.st.dirty.insert(qpn);
                    return;
                }
            }
        }
        if let (Some(t), false) = (qp.transport.as_mut(), qp.early_recvs.is_empty()) {
            for w in qp.early_recvs.drain(..) {
                t.post_recv(w);
            }
        }
    }

    /// Read newly posted send WQEs (a datagram QP's: [`super::ud`]).
    fn read_sq(&mut self, sh: &mut Shared, now: Duration, qpn: u32, env: &mut Env<'_>, done: &mut Vec<Done>) {
        let Some(qp) = sh.st.qps.get_mut(&qpn) else { return };
        if qp.kind.is_datagram() {
            return self.ud_sends(sh, now, qpn, env, done);
        }
        if !matches!(qp.state, QpState::Rts | QpState::Err) {
            return;
        }
        let force = qp.flags & bnxt_hsi::roce::layouts::CmdqCreateQp::QP_FLAGS_FORCE_COMPLETION != 0;
        while let Some(taken) = qp.take_send_wqe(env.mem) {
            sh.report.counters.wqes += 1;
            match taken {
                Ok((seq, slot, w)) => {
                    if let Some(m) = check_msn(qp, env, &w, slot) {
                        sh.report.counters.msn_mismatches += 1;
                        let msg = format!("QP {qpn}: MSN table entry disagrees with WQE {seq}: {m}");
                        if sh.report.first_time(format!("msn {qpn}")) {
                            tracing::warn!("{msg}");
                        }
                    }
                    let wqe = send_wqe(seq, w, force, &mut qp.inline);
                    if wqe.op.is_read() && qp.orrq_addr == 0 && sh.report.first_time(format!("no orrq {qpn}")) {
                        tracing::warn!(
                            "QP {qpn} was created without an ORRQ: its RDMA READ completes with \
                             LOCAL_QP_OPERATION_ERR (a guess: what P7 firmware does is not public)"
                        );
                    }
                    match qp.transport.as_mut() {
                        Some(t) => t.post_send(wqe),
                        None => done.push(Done::Send(SendCompletion {
                            id: seq,
                            status: ReqStatus::Flushed,
                            op: wqe.op,
                            bytes: wqe.length,
                        })),
                    }
                }
                Err((seq, slot, e)) => {
                    sh.report.counters.bad_wqes += 1;
                    let reason = format!("SQ WQE at slot {slot}: {e}");
                    env.rec.record(now, EventKind::WqeRefused { qp: qpn, reason });
                    if let Some(t) = qp.transport.as_mut() {
                        t.set_error();
                    }
                    done.push(Done::Refused { send: true, id: seq });
                    if qp.state != QpState::Err {
                        qp.state = QpState::Err;
                        self.queue_qp_error(qpn, QpErr::REQ_ERR_STATE_REASON_REQ_WQE_FORMAT_ERROR, 0);
                    }
                    // WQEs after it complete flushed, after it: the next pass reads them.
                    sh.st.dirty.insert(qpn);
                    return;
                }
            }
        }
    }

    /// Frames out, completions to CQEs, the timer, and the error state.
    fn pump(&mut self, sh: &mut Shared, now: Duration, qpn: u32, env: &mut Env<'_>, done: &mut Vec<Done>) {
        let RoceState { qps, keys, gids, .. } = &mut sh.st;
        let Some(qp) = qps.get_mut(&qpn) else { return };
        let mut became_error = None;
        let mut dma_errors = 0;
        if let Some(t) = qp.transport.as_mut() {
            let mut mem = QpMemory { keys, mem: env.mem, pd: qp.pd, inline: &qp.inline, dma_errors: 0 };
            // Frames are built in recycled buffers (each taken by the frame built in it).
            let mut buf = self.pool.take();
            // Refused WQEs complete after everything the transport flushes for them.
            let refused: Vec<Done> = if done.is_empty() { Vec::new() } else { std::mem::take(done) };
            while let Some(sealed) = t.poll_transmit_sealed(now, &mut mem, &mut buf) {
                buf = self.pool.take();
                sh.report.counters.frames_sent += 1;
                let bytes = sealed.bytes();
                if sh.report.data_path_events
                    && let Some(b) = crate::net::roce::peek_bth(bytes)
                {
                    let aeth = crate::net::roce::peek_aeth(bytes).map(|a| a.syndrome);
                    let sent =
                        EventKind::FrameSent { qp: qpn, opcode: b.opcode(), psn: b.psn(), len: bytes.len(), aeth };
                    env.rec.record(now, sent);
                }
                self.route(gids, &mut sh.report.counters, now, WireFrame::Sealed(sealed));
            }
            self.pool.give(buf);
            dma_errors = mem.dma_errors;
            while let Some(c) = t.pop_send_completion() {
                if !c.status.is_ok() && became_error.is_none() {
                    became_error = Some(req_reason(c.status));
                }
                done.push(Done::Send(c));
            }
            while let Some(c) = t.pop_recv_completion() {
                if !c.status.is_ok() && c.status != RespStatus::Flushed && became_error.is_none() {
                    became_error = Some((0, res_reason(c.status)));
                }
                done.push(Done::Recv(c));
            }
            done.extend(refused);
            if t.send_queue_drained() && qp.attrs.sqd_async_notify && sh.report.first_time(format!("sqd {qpn}")) {
                // IBA §10.3.1 has the CI told once the send queue has drained in SQD; roce_hsi.h
                // defines no CREQ event for it.
                sh.report.counters.unimplemented_features += 1;
                tracing::warn!(
                    "QP {qpn}: send queue drained in SQD; the notification EN_SQD_ASYNC_NOTIFY asked for is not \
                     sent (no CREQ event for it is public)"
                );
            }
            let entered_error = t.state() == TState::Error && qp.state != QpState::Err;
            if entered_error {
                qp.state = QpState::Err;
                let (req, res) = became_error.unwrap_or((0, 0));
                self.queue_qp_error(qpn, req, res);
            }
            self.timers.set(qpn, t.next_deadline());
        }
        sh.report.counters.dma_errors += dma_errors;
        for d in done.drain(..) {
            complete(sh, now, qpn, d, env);
        }
        self.post_qp_errors(sh, now, env);
    }

    /// A frame from the wire at `now`, sealed or plain as the switch delivered it.
    pub(super) fn receive_wire(&mut self, sh: &mut Shared, now: Duration, frame: &WireFrame, env: &mut Env<'_>) {
        self.take_in(sh, now, RoceFrame::parse_wire(frame), frame.bytes().len(), env);
    }

    /// A received frame, parsed (its ICRC checked unless sealed), of `len` bytes.
    fn take_in(
        &mut self,
        sh: &mut Shared,
        now: Duration,
        parsed: Result<RoceFrame<'_>, WireError>,
        len: usize,
        env: &mut Env<'_>,
    ) {
        let parsed = match parsed {
            Ok(p) => p,
            Err(e) => {
                sh.report.counters.rx_drops.count(&e);
                env.rec.record(now, EventKind::FrameDropped { reason: e.to_string() });
                return;
            }
        };
        let dst_mac = parsed.eth.dst.0;
        match self.gate.admit(&env.fw.l2, &dst_mac, len) {
            Admission::Admitted { unsourced: Some(why), .. } => sh.report.warn_once(why),
            Admission::Admitted { unsourced: None, .. } => {}
            Admission::Dropped(why) => {
                sh.report.counters.rx_no_l2_filter += 1;
                env.rec.record(now, EventKind::FrameDropped { reason: format!("RoCE: {why} (rx_no_l2_filter)") });
                return;
            }
        }
        let dst_ip = parsed.ip.dst.octets();
        if !sh.st.gids.accepts(self.mac, dst_mac, dst_ip) {
            sh.report.counters.rx_not_ours += 1;
            return;
        }
        let qpn = parsed.transport.bth.dest_qp;
        if sh.st.qps.get(&qpn).is_some_and(|q| q.kind.is_datagram()) {
            return self.ud_frame(sh, now, qpn, &parsed, env);
        }
        if let Some(q) = sh.st.qps.get(&qpn)
            && let (Some(srq), Some(t)) = (q.srq, q.transport.as_ref())
            && t.needs_receive(&parsed)
        {
            self.take_from_srq(sh, now, qpn, srq, env);
        }
        let RoceState { qps, keys, dirty, .. } = &mut sh.st;
        let Some(Qp { transport: Some(t), inline, pd, .. }) = qps.get_mut(&qpn) else {
            sh.report.counters.rx_no_qp += 1;
            env.rec.record(now, EventKind::FrameDropped { reason: format!("no QP {qpn} ready to receive (RTR)") });
            return;
        };
        let pd = *pd;
        sh.report.counters.frames_received += 1;
        if sh.report.data_path_events {
            let b = &parsed.transport.bth;
            env.rec.record(now, EventKind::FrameReceived { qp: qpn, opcode: b.opcode.code(), psn: b.psn, len });
        }
        let mut mem = QpMemory { keys, mem: env.mem, pd, inline, dma_errors: 0 };
        t.handle_frame(now, &parsed, &mut mem);
        sh.report.counters.dma_errors += mem.dma_errors;
        dirty.insert(qpn);
        self.service_dirty(sh, now, env);
        sh.collect_irqs(now, env.rec);
    }
}

/// Write one completion as a CQE.
pub(super) fn complete(sh: &mut Shared, now: Duration, qpn: u32, d: Done, env: &mut Env<'_>) {
    let Some(qp) = sh.st.qps.get_mut(&qpn) else { return };
    let (cq, cqe, requester, status, solicited) = match d {
        Done::Send(c) => {
            let (cqe, status) = req_cqe(qp, c.id, c.status.code());
            (qp.scq, cqe, true, status, !c.status.is_ok())
        }
        Done::Refused { send: true, id } => {
            let (cqe, status) = req_cqe(qp, id, ReqStatus::LocalQpOperation.code());
            (qp.scq, cqe, true, status, true)
        }
        Done::UdRecv(u) => {
            let c = &u.common;
            let cqe = super::ud::ud_cqe(qp.handle, c, Some((u.src_qp, u.src_mac)));
            (qp.rcq, cqe, false, c.status.code(), c.solicited || !c.status.is_ok())
        }
        Done::Recv(c) if qp.kind.is_datagram() => {
            let cqe = super::ud::ud_cqe(qp.handle, &c, None);
            (qp.rcq, cqe, false, c.status.code(), c.solicited || !c.status.is_ok())
        }
        Done::Recv(c) => {
            let cqe = res_cqe(qp.handle, &c);
            (qp.rcq, cqe, false, c.status.code(), c.solicited || !c.status.is_ok())
        }
        Done::Refused { send: false, id } => {
            let c = RecvCompletion {
                id,
                status: RespStatus::LocalQpOperation,
                kind: RecvKind::Send,
                bytes: 0,
                imm: None,
                solicited: false,
            };
            let cqe =
                if qp.kind.is_datagram() { super::ud::ud_cqe(qp.handle, &c, None) } else { res_cqe(qp.handle, &c) };
            (qp.rcq, cqe, false, c.status.code(), true)
        }
    };
    sh.write_cqe(now, CqeWrite { cq, qp: qpn, bytes: cqe, requester, status, solicited }, env);
}

/// The RQ WQE's wr_id at `index`, if its header can be read.
fn read_wr_id(qp: &Qp, env: &Env<'_>, index: u32) -> Option<u32> {
    let mut b = [0u8; 12];
    let at = u64::from(index) * u64::from(qp.rq.stride_slots) * 16;
    qp.rq.mem.read(env.mem, at, &mut b).ok()?;
    Some(u32::from_le_bytes([b[8], b[9], b[10], b[11]]) & 0xf_ffff)
}

/// Compare the MSN table entry of the next WQE with the WQE; a description of the difference.
fn check_msn(qp: &mut Qp, env: &Env<'_>, w: &SqWqe, slot: u32) -> Option<String> {
    if qp.sq.msn_entries == 0 {
        return None;
    }
    let i = qp.sq.msn_next;
    qp.sq.msn_next = (i + 1) % qp.sq.msn_entries;
    let mut b = [0u8; 8];
    if let Err(e) = qp.sq.mem.read(env.mem, qp.sq.msn_offset(i), &mut b) {
        return Some(format!("entry {i} unreadable: {e}"));
    }
    let e = MsnEntry::decode(u64::from_le_bytes(b));
    let mtu = 256u32 << qp.attrs.path_mtu;
    let packets = w.length.div_ceil(mtu).max(1);
    let span = e.next_psn.wrapping_sub(e.start_psn) & 0xff_ffff;
    if u32::from(e.start_slot) != slot || span != packets {
        return Some(format!(
            "entry {i}: start slot {} (WQE at {slot}), PSN span {span} (WQE takes {packets})",
            e.start_slot
        ));
    }
    None
}

/// The transport's view of a send WQE numbered `seq`.
fn send_wqe(seq: u64, w: SqWqe, force: bool, inline: &mut std::collections::BTreeMap<u64, Vec<u8>>) -> SendWqe {
    let op = match w.wqe_type {
        SqBase::WQE_TYPE_SEND => SendOp::Send { imm: None },
        SqBase::WQE_TYPE_SEND_W_IMMEAD => SendOp::Send { imm: Some(w.imm) },
        SqBase::WQE_TYPE_WRITE_WQE => SendOp::RdmaWrite { va: w.remote_va, rkey: w.remote_key, imm: None },
        SqBase::WQE_TYPE_WRITE_W_IMMEAD => SendOp::RdmaWrite { va: w.remote_va, rkey: w.remote_key, imm: Some(w.imm) },
        SqBase::WQE_TYPE_ATOMIC_CS => {
            SendOp::CompareSwap { va: w.remote_va, rkey: w.remote_key, compare: w.compare, swap: w.swap }
        }
        SqBase::WQE_TYPE_ATOMIC_FA => SendOp::FetchAdd { va: w.remote_va, rkey: w.remote_key, add: w.swap },
        _ => SendOp::RdmaRead { va: w.remote_va, rkey: w.remote_key },
    };
    let (signaled, solicited) = (w.signaled() || force, w.solicited());
    let sges = match w.inline {
        Some(data) => {
            let sge = Sge { addr: seq, lkey: INLINE_LKEY, len: data.len() as u32 };
            inline.insert(seq, data);
            smallvec::smallvec![sge]
        }
        None => w.sges,
    };
    SendWqe { id: seq, op, sges, length: w.length, signaled, solicited }
}

/// A requester CQE for WQE `seq` with `status`; forgets what the WQEs up to it held.
fn req_cqe(qp: &mut Qp, seq: u64, status: u8) -> ([u8; CQE_BYTES], u8) {
    // WQEs complete in order: the completed one is nearly always the oldest in flight.
    let start = match qp.in_flight.front() {
        Some(&(n, (slot, _))) if n == seq => slot,
        _ => qp.in_flight.binary_search_by_key(&seq, |&(n, _)| n).map_or(0, |i| qp.in_flight[i].1.0),
    };
    while qp.in_flight.front().is_some_and(|&(n, _)| n <= seq) {
        qp.in_flight.pop_front();
    }
    while qp.inline.first_key_value().is_some_and(|(&n, _)| n <= seq) {
        qp.inline.pop_first();
    }
    let size = u64::from(qp.sq.size);
    let cons = if status != ReqStatus::Ok.code() && qp.sq.variable { u64::from(start) } else { (seq + 1) % size };
    let mut c = CqReq::new_zeroed();
    c.qp_handle = qp.handle.into();
    c.sq_cons_idx = (cons as u16).into();
    c.cqe_type_toggle = type_toggle(CqeType::Req, false);
    c.status = status;
    (c.as_bytes().try_into().expect("32 bytes"), status)
}

/// A responder CQE.
fn res_cqe(handle: u64, c: &RecvCompletion) -> [u8; CQE_BYTES] {
    let mut r = CqResRc::new_zeroed();
    r.length = c.bytes.into();
    r.imm_data_or_inv_r_key = c.imm.unwrap_or(0).into();
    r.qp_handle = handle.into();
    r.cqe_type_toggle = type_toggle(CqeType::ResRc, false);
    r.status = c.status.code();
    let mut flags = 0;
    if c.imm.is_some() {
        flags |= CqResRc::FLAGS_IMM;
    }
    if c.kind == RecvKind::RdmaWriteImm {
        flags |= CqResRc::FLAGS_RDMA_RDMA_WRITE;
    }
    r.flags = flags.into();
    r.srq_or_rq_wr_id = ((c.id as u32) & CqResRc::SRQ_OR_RQ_WR_ID_MASK).into();
    r.as_bytes().try_into().expect("32 bytes")
}

/// A flushed receive completion for wr_id `id`.
pub(super) fn flushed_recv(id: u64) -> RecvCompletion {
    RecvCompletion { id, status: RespStatus::Flushed, kind: RecvKind::Send, bytes: 0, imm: None, solicited: false }
}

/// The QP error notification's requester reason for a send completion status.
fn req_reason(s: ReqStatus) -> (u8, u8) {
    let r = match s {
        ReqStatus::RetryExceeded => QpErr::REQ_ERR_STATE_REASON_REQ_TIMEOUT_RETRY_LIMIT,
        ReqStatus::RnrRetryExceeded => QpErr::REQ_ERR_STATE_REASON_REQ_RNR_TIMEOUT_RETRY_LIMIT,
        ReqStatus::RemoteInvalidRequest => QpErr::REQ_ERR_STATE_REASON_REQ_NAK_ARRIVAL_1,
        ReqStatus::RemoteAccess => QpErr::REQ_ERR_STATE_REASON_REQ_NAK_ARRIVAL_2,
        ReqStatus::RemoteOperation => QpErr::REQ_ERR_STATE_REASON_REQ_NAK_ARRIVAL_3,
        ReqStatus::LocalProtection => QpErr::REQ_ERR_STATE_REASON_REQ_TX_MEMORY_ERROR,
        ReqStatus::BadResponse => QpErr::REQ_ERR_STATE_REASON_REQ_INVALID_READ_RESP,
        ReqStatus::LocalLength => QpErr::REQ_ERR_STATE_REASON_REQ_WQE_FORMAT_ERROR,
        _ => QpErr::REQ_ERR_STATE_REASON_NO_ERROR,
    };
    (r, 0)
}

/// The QP error notification's responder reason for a receive completion status.
fn res_reason(s: RespStatus) -> u8 {
    match s {
        RespStatus::LocalLength => QpErr::RES_ERR_STATE_REASON_RES_EXCEEDS_WQE,
        RespStatus::LocalProtection | RespStatus::LocalAccess => QpErr::RES_ERR_STATE_REASON_RES_MEMORY_ERROR,
        RespStatus::RemoteInvalidRequest => QpErr::RES_ERR_STATE_REASON_RES_OPCODE_ERROR,
        _ => QpErr::RES_ERR_STATE_REASON_NO_ERROR,
    }
}
