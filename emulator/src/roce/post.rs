//! What the engine posts to the host, for commands and the data path alike: CQEs (and the CQ
//! notification an armed CQ then owes, on its NQ), SRQ limit events, asynchronous QP and CQ
//! error events on the CREQ, and the MSI-X vectors the NQs raise.

use std::time::Duration;

use bnxt_hsi::roce::cqe::CQE_BYTES;
use bnxt_hsi::roce::layouts::{CreqCqErrorNotification as CqErr, CreqQpErrorNotification as QpErr, NqSrqEvent};
use bnxt_hsi::roce::qp::QpState;
use bnxt_hsi::roce::rcfw::{CREQ_TYPE_QP_EVENT, cq_err_reason};
use zerocopy::{FromZeros, IntoBytes};

use crate::events::{EventKind, Recorder};

use super::cq::CqeOutcome;
use super::engine::Env;
use super::nq::Posted;
use super::shared::Shared;

/// A CQE to write.
#[derive(Debug, Clone, Copy)]
pub(super) struct CqeWrite {
    /// The CQ.
    pub(super) cq: u32,
    /// The QP it completes for (0 for a CUT_OFF CQE).
    pub(super) qp: u32,
    /// The CQE.
    pub(super) bytes: [u8; CQE_BYTES],
    /// Whether it is a requester's (for the CQ overflow's reason and the event).
    pub(super) requester: bool,
    /// Its status (for the event).
    pub(super) status: u8,
    /// Whether it is solicited (or an error), for a CQ armed for solicited CQEs.
    pub(super) solicited: bool,
}

impl Shared {
    /// Move raised vectors from the NQs to the report, recording each.
    #[inline]
    pub(super) fn collect_irqs(&mut self, now: Duration, rec: &mut Recorder) {
        if self.nqs.has_irqs() {
            self.move_irqs(now, rec);
        }
    }

    /// [`Shared::collect_irqs`] when there are vectors to move (apart, so that the usual call,
    /// with none, costs only the check).
    #[inline(never)]
    fn move_irqs(&mut self, now: Duration, rec: &mut Recorder) {
        for v in self.nqs.take_irqs() {
            self.report.counters.interrupts += 1;
            rec.record(now, EventKind::Interrupt { vector: v });
            self.report.irqs.push(v);
        }
    }

    /// Post a CQ notification to NQ `nq`.
    pub(super) fn notify(&mut self, now: Duration, cq: u32, nq: u16, toggle: u8, cn: [u8; 16], env: &mut Env<'_>) {
        self.report.counters.notifications += 1;
        env.rec.record(now, EventKind::CqNotification { cq, nq, toggle });
        if let p @ (Posted::NoRing | Posted::Overflow | Posted::DmaFailed) = self.nqs.post(nq, cn, env.fw, env.mem) {
            self.report.warn_once(format!("CQ notification lost: {p:?}"));
        }
    }

    /// Write a CQE; a full CQ raises its overflow error once.
    pub(super) fn write_cqe(&mut self, now: Duration, w: CqeWrite, env: &mut Env<'_>) {
        let Some(cq) = self.st.cqs.get_mut(&w.cq) else { return };
        let index = cq.producer().0;
        match cq.write(env.mem, w.bytes, w.solicited) {
            CqeOutcome::Written(notification) => {
                self.report.counters.cqes += 1;
                if self.report.data_path_events {
                    let (qp, requester, status) = (w.qp, w.requester, w.status);
                    env.rec.record(now, EventKind::Cqe { cq: w.cq, qp, requester, status, index });
                }
                if let Some(cn) = notification {
                    let (nq, toggle) = (cq.nq, cq.toggle());
                    self.notify(now, w.cq, nq, toggle, cn, env);
                }
            }
            CqeOutcome::DmaFailed => {
                self.report.counters.dma_errors += 1;
                self.report.warn_once(format!("CQ {}: a CQE could not be written (DMA refused)", w.cq));
            }
            CqeOutcome::Overflow { first } => {
                self.report.counters.cq_overflows += 1;
                if first {
                    env.rec.record(now, EventKind::CqOverflow { cq: w.cq });
                    self.report.warn_once(format!("CQ {} overflowed", w.cq));
                    let reason =
                        if w.requester { cq_err_reason::REQ_CQ_OVERFLOW } else { cq_err_reason::RES_CQ_OVERFLOW };
                    let mut e = CqErr::new_zeroed();
                    e.type_ = CREQ_TYPE_QP_EVENT;
                    e.cq_err_reason = reason;
                    e.xid = w.cq.into();
                    e.event = CqErr::EVENT_CQ_ERROR_NOTIFICATION;
                    self.async_event(now, e.as_bytes().try_into().expect("16 bytes"), e.event, w.cq, reason, env);
                }
            }
        }
    }

    /// A QP error notification for QP `qpn` on the CREQ, with the requester's and the
    /// responder's reasons.
    pub(super) fn qp_error_event(&mut self, now: Duration, qpn: u32, req: u8, res: u8, env: &mut Env<'_>) {
        let Some(qp) = self.st.qps.get(&qpn) else { return };
        let mut e = QpErr::new_zeroed();
        e.type_ = CREQ_TYPE_QP_EVENT;
        e.req_slow_path_state = QpState::Err.field();
        e.req_err_state_reason = req;
        e.xid = qpn.into();
        e.event = QpErr::EVENT_QP_ERROR_NOTIFICATION;
        e.res_slow_path_state = QpState::Err.field();
        e.res_err_state_reason = res;
        e.sq_cons_idx = ((qp.sq.wqes % u64::from(qp.sq.size)) as u16).into();
        e.rq_cons_idx = (qp.rq.taken.index as u16).into();
        let reason = if req != 0 { req } else { res };
        self.async_event(now, e.as_bytes().try_into().expect("16 bytes"), e.event, qpn, reason, env);
    }

    fn async_event(&mut self, now: Duration, bytes: [u8; 16], event: u8, xid: u32, reason: u8, env: &mut Env<'_>) {
        self.report.counters.async_events += 1;
        env.rec.record(now, EventKind::RoceAsyncEvent { event, xid, reason });
        self.creq.queue(now, bytes, String::new());
    }

    /// Post SRQ `srq`'s limit event if it is due (roce_hsi.h `nq_srq_event`; bnxt_re qplib_fp.c
    /// `bnxt_qplib_service_nq` hands it to the SRQ's handler).
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
        self.report.counters.srq_limit_events += 1;
        tracing::debug!(srq, nq, limit = s.limit, "SRQ limit event");
        let entry: [u8; 16] = e.as_bytes().try_into().expect("16 bytes");
        if let p @ (Posted::NoRing | Posted::Overflow | Posted::DmaFailed) = self.nqs.post(nq, entry, env.fw, env.mem) {
            self.report.warn_once(format!("SRQ limit event lost: {p:?}"));
        }
        self.collect_irqs(now, env.rec);
    }
}
