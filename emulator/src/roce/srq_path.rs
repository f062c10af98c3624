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
//! posts `nq_srq_event` (SRQ_THRESHOLD_EVENT, with `srq_handle`) to its NQ
//! ([`super::shared::Shared::srq_limit_check`]).

use std::time::Duration;

use bnxt_hsi::roce::layouts::CreqQpErrorNotification as QpErr;
use bnxt_hsi::roce::qp::QpState;

use crate::events::EventKind;
use crate::roce::transport::RecvWqe;

use super::datapath::{DataPath, Done, complete};
use super::engine::Env;
use super::shared::Shared;
use super::wqe::read_rq_wqe;

impl DataPath {
    /// Take SRQ `srq`'s next WQE for QP `qpn`, if one is posted.
    pub(super) fn take_from_srq(&mut self, sh: &mut Shared, now: Duration, qpn: u32, srq: u32, env: &mut Env<'_>) {
        let Some(s) = sh.st.srqs.get_mut(&srq) else { return };
        let Some(index) = s.take() else { return };
        sh.report.counters.wqes += 1;
        let read = read_rq_wqe(&s.ring.mem, env.mem, index, s.ring.stride_slots, s.ring.max_sge);
        let Some(qp) = sh.st.qps.get_mut(&qpn) else { return };
        let Some(t) = qp.transport.as_mut() else { return };
        match read {
            Ok(w) => t.post_recv(RecvWqe { id: u64::from(w.wr_id), sges: w.sges }),
            Err(e) => {
                sh.report.counters.bad_wqes += 1;
                let reason = format!("SRQ {srq} WQE {index}: {e}");
                env.rec.record(now, EventKind::WqeRefused { qp: qpn, reason });
                t.set_error();
                if qp.state != QpState::Err {
                    qp.state = QpState::Err;
                    self.queue_qp_error(qpn, 0, QpErr::RES_ERR_STATE_REASON_RES_WQE_FORMAT_ERROR);
                }
                complete(sh, now, qpn, Done::Refused { send: false, id: u64::from(index) }, env);
                sh.st.dirty.insert(qpn);
            }
        }
        sh.srq_limit_check(now, srq, env);
    }
}
