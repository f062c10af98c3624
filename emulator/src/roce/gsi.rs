//! The GSI QP's (QP1's) data path, which the model does not carry out: sending and receiving MADs
//! needs UD send WQEs with address vectors (roce_hsi.h `sq_send` with `avid`, `q_key`, `dst_qp`),
//! UD receive completions (`cq_res_ud`) and the GRH/IP headers ib_mad expects in front of a
//! received MAD. UD QPs have those ([`super::ud`]); QP1 is not wired to them, and how the
//! firmware treats QP1's MADs beyond that (P_Key and Q_Key handling of the GSI) is not modelled.
//! What it does instead, loudly:
//!
//! - Receive WQEs posted to QP1 stay in its RQ, unread: the hardware consumes a receive WQE only
//!   when a MAD arrives, and none is delivered. (A QP1 in ERR leaves them there too; bnxt_re
//!   completes a kernel QP's posted receives as flushed itself: qplib_fp.c `__flush_rq`.)
//! - A send WQE rung on QP1 in RTS is taken from the ring, logged (warning) and counted
//!   ([`RoceCounters::gsi_unmodelled`](super::counters::RoceCounters::gsi_unmodelled)), and
//!   completed with LOCAL_QP_OPERATION_ERR after everything before it; the QP moves to ERR with a
//!   QP error notification, as for any WQE the engine cannot carry out ([`super::datapath`]). The
//!   MAD is not sent: a success would claim it was. In ERR, send WQEs complete flushed, as every
//!   QP's do.
//! - A RoCE frame for QP 1 from the wire (a MAD from a peer) is dropped, logged and counted the
//!   same way.

use std::time::Duration;

use bnxt_hsi::roce::layouts::CreqQpErrorNotification as QpErr;
use bnxt_hsi::roce::qp::QpState;

use crate::events::EventKind;
use crate::roce::transport::{ReqStatus, SendCompletion, SendOp};

use super::datapath::Done;
use super::engine::{Env, RoceEngine};
use super::wqe::STATIC_WQE_SLOTS;

impl RoceEngine {
    /// Take the send WQEs posted to GSI QP `qpn` (in RTS or ERR) off its ring: refused in RTS,
    /// flushed in ERR.
    pub(super) fn gsi_sends(&mut self, now: Duration, qpn: u32, env: &mut Env<'_>, done: &mut Vec<Done>) {
        let Some(qp) = self.st.qps.get_mut(&qpn) else { return };
        if !matches!(qp.state, QpState::Rts | QpState::Err) {
            return;
        }
        let mut refused = 0u64;
        while qp.sq.taken != qp.sq.prod {
            let slot = qp.sq.next_slot();
            let avail = qp.sq.taken.distance(qp.sq.prod, qp.sq.size) as u32;
            // The WQE's extent: a WQE index in static mode, its `wqe_size` slots in variable mode
            // (when that cannot be read or makes no sense, everything posted).
            let owned = if qp.sq.variable {
                let mut head = [0u8; 16];
                match qp.sq.mem.read(env.mem, u64::from(slot) * 16, &mut head) {
                    Ok(()) if (2..=avail).contains(&u32::from(head[2])) => u32::from(head[2]),
                    _ => avail,
                }
            } else {
                STATIC_WQE_SLOTS
            };
            let step = if qp.sq.variable { owned } else { 1 };
            let seq = qp.sq.wqes;
            qp.sq.taken = qp.sq.taken.advance(step, qp.sq.size);
            qp.sq.wqes += 1;
            qp.in_flight.push_back((seq, (slot, owned)));
            self.counters.wqes += 1;
            if qp.state == QpState::Err {
                let status = ReqStatus::Flushed;
                done.push(Done::Send(SendCompletion { id: seq, status, op: SendOp::Send { imm: None }, bytes: 0 }));
                continue;
            }
            refused += 1;
            done.push(Done::Refused { send: true, id: seq });
        }
        if refused == 0 {
            return;
        }
        self.counters.gsi_unmodelled += refused;
        let reason =
            format!("QP {qpn} (GSI): {refused} send WQE(s) refused, the UD/GSI data path (MADs) is not modelled");
        tracing::warn!("{reason}");
        env.rec.record(now, EventKind::WqeRefused { qp: qpn, reason });
        if qp.state != QpState::Err {
            qp.state = QpState::Err;
            self.pending_qp_error.push((qpn, QpErr::REQ_ERR_STATE_REASON_REQ_WQE_FORMAT_ERROR, 0));
        }
    }

    /// A RoCE frame for GSI QP `qpn` from the wire: dropped, logged and counted.
    pub(super) fn gsi_frame(&mut self, now: Duration, qpn: u32, env: &mut Env<'_>) {
        self.counters.gsi_unmodelled += 1;
        let reason = format!("QP {qpn} (GSI): a MAD arrived; the UD/GSI data path is not modelled");
        self.warn_once(reason.clone());
        env.rec.record(now, EventKind::FrameDropped { reason });
    }
}
