//! The data path of shared receive queues: a QP created with `SRQ_USED` has no RQ of its own;
//! when a request that takes a receive WQE arrives for it and it has none, the next WQE of its
//! SRQ is read (in ring order: the SRQ is shared by every QP on it) and posted to the QP, so the
//! receive CQE carries that WQE's `wr_id` (the driver's SRQ table index, bnxt_re qplib_fp.c
//! `bnxt_qplib_cq_process_res_rc`, rdma-core providers/bnxt_re verbs.c
//! `bnxt_re_poll_success_rcqe`). An empty SRQ leaves the QP with no receive, and the responder
//! answers RNR NAK as for an empty RQ (IBA §9.7.5.2.8).
//!
//! A WQE that cannot be read or is not a receive WQE moves the QP that took it to the error
//! state with a WQE format error, as a bad RQ WQE does ([`super::datapath`]); the SRQ itself
//! stays usable for the other QPs (what the hardware does to the SRQ is not public).
//!
//! After each WQE taken the limit is checked: an armed SRQ with fewer WQEs left than its limit
//! posts `nq_srq_event` (SRQ_THRESHOLD_EVENT, with `srq_handle`) to its NQ (roce_hsi.h
//! `nq_srq_event`; bnxt_re qplib_fp.c `bnxt_qplib_service_nq` hands it to the SRQ's handler).

use std::time::Duration;

use bnxt_hsi::roce::layouts::{CreqQpErrorNotification as QpErr, NqSrqEvent};
use bnxt_hsi::roce::qp::QpState;
use zerocopy::{FromZeros, IntoBytes};

use crate::events::EventKind;
use crate::roce::transport::RecvWqe;

use super::datapath::Done;
use super::engine::{Env, RoceEngine};
use super::wqe::read_rq_wqe;

impl RoceEngine {
    /// Take SRQ `srq`'s next WQE for QP `qpn`, if one is posted.
    pub(super) fn take_from_srq(&mut self, now: Duration, qpn: u32, srq: u32, env: &mut Env<'_>) {
        let Some(s) = self.st.srqs.get_mut(&srq) else { return };
        let Some(index) = s.take() else { return };
        self.counters.wqes += 1;
        let read = read_rq_wqe(&s.ring.mem, env.mem, index, s.ring.stride_slots, s.ring.max_sge);
        let Some(qp) = self.st.qps.get_mut(&qpn) else { return };
        let Some(t) = qp.transport.as_mut() else { return };
        match read {
            Ok(w) => t.post_recv(RecvWqe { id: u64::from(w.wr_id), sges: w.sges }),
            Err(e) => {
                self.counters.bad_wqes += 1;
                let reason = format!("SRQ {srq} WQE {index}: {e}");
                env.rec.record(now, EventKind::WqeRefused { qp: qpn, reason: reason.clone() });
                tracing::debug!(qpn, %reason, "SRQ WQE refused");
                t.set_error();
                if qp.state != QpState::Err {
                    qp.state = QpState::Err;
                    self.pending_qp_error.push((qpn, 0, QpErr::RES_ERR_STATE_REASON_RES_WQE_FORMAT_ERROR));
                }
                self.complete(now, qpn, Done::Refused { send: false, id: u64::from(index) }, env);
                self.st.dirty.insert(qpn);
            }
        }
        self.srq_limit_check(now, srq, env);
    }

    /// Post the SRQ limit event if it is due.
    pub(super) fn srq_limit_check(&mut self, now: Duration, srq: u32, env: &mut Env<'_>) {
        let Some(s) = self.st.srqs.get_mut(&srq) else { return };
        if !s.limit_reached() {
            return;
        }
        let mut e = NqSrqEvent::new_zeroed();
        e.type_ = NqSrqEvent::TYPE_SRQ_EVENT;
        e.event = NqSrqEvent::EVENT_SRQ_THRESHOLD_EVENT;
        e.srq_handle_low = (s.handle as u32).into();
        e.srq_handle_high = ((s.handle >> 32) as u32).into();
        let nq = s.nq;
        self.counters.srq_limit_events += 1;
        tracing::debug!(srq, nq, limit = s.limit, "SRQ limit event");
        let entry: [u8; 16] = e.as_bytes().try_into().expect("16 bytes");
        if let p @ (super::nq::Posted::NoRing | super::nq::Posted::Overflow | super::nq::Posted::DmaFailed) =
            self.nqs.post(nq, entry, env.fw, env.mem)
        {
            self.warn_once(format!("SRQ limit event lost: {p:?}"));
        }
        self.collect_irqs(now, env.rec);
    }
}
