//! Shared receive queues as the firmware keeps them: what CREATE_SRQ gave (ring, PD, DPI, the NQ
//! for its events), the ring's producer and consumer positions, and the limit and arm state the
//! SRQ_ARM doorbells set (hardware-map §5.6; bnxt_re qplib_fp.c `bnxt_qplib_create_srq`,
//! `bnxt_qplib_modify_srq`, `bnxt_qplib_post_srq_recv`; rdma-core providers/bnxt_re verbs.c
//! `bnxt_re_post_srq_recv`, db.c `bnxt_re_ring_srq_db`, `bnxt_re_ring_srq_arm`).
//!
//! An SRQ WQE has the RQ WQE's format (roce_hsi.h `rq_wqe`: 32-byte header, then SGEs); its
//! `wr_id` is the driver's index into its own table of work requests, which the receive CQE
//! carries back (`cq_res_rc.srq_or_rq_wr_id`). Receive WQEs are taken from the SRQ in ring order,
//! one for each message that needs one, whichever QP it arrives at.
//!
//! The limit: SRQ_ARM carries the limit in its index field (rdma-core `bnxt_re_ring_srq_arm`;
//! Linux bnxt_re `bnxt_qplib_srq_arm_db` passes the threshold); once armed, the SRQ posts one
//! `nq_srq_event` (SRQ_THRESHOLD_EVENT) to its NQ when the WQEs left fall below the limit, and
//! disarms (IBA §10.2.9.2, the SRQ limit event, which fires once per arming). SRQ_ARMENA, which
//! bnxt_re rings at creation when it sets a limit and libbnxt_re never rings, is taken and
//! changes nothing: an SRQ_ARM alone arms.

use super::qp::RecvRing;

/// One shared receive queue.
#[derive(Debug, Clone)]
pub struct Srq {
    /// SRQ id (`xid`).
    pub id: u32,
    /// `srq_handle`, echoed in SRQ events.
    pub handle: u64,
    /// Protection domain.
    pub pd: u32,
    /// `dpi`.
    pub dpi: u32,
    /// The NQ ring its events go to (`eventq_id`).
    pub nq: u16,
    /// The ring: WQEs, their stride and SGEs, producer and consumer.
    pub ring: RecvRing,
    /// The limit the last SRQ_ARM set (QUERY_SRQ `srq_limit`).
    pub limit: u32,
    /// Whether an SRQ_ARM is waiting for the WQEs left to fall below the limit.
    pub armed: bool,
    /// Limit events posted.
    pub events: u64,
}

impl Srq {
    /// WQEs posted and not yet taken.
    pub fn available(&self) -> u64 {
        self.ring.taken.distance(self.ring.prod, self.ring.size)
    }

    /// Take the next WQE's index, if one is posted.
    pub fn take(&mut self) -> Option<u32> {
        if self.ring.taken == self.ring.prod {
            return None;
        }
        let index = self.ring.taken.index;
        self.ring.taken = self.ring.taken.advance(1, self.ring.size);
        Some(index)
    }

    /// Whether the limit event is due now (armed, and fewer WQEs left than the limit); disarms
    /// when it is.
    pub fn limit_reached(&mut self) -> bool {
        if self.armed && self.available() < u64::from(self.limit) {
            self.armed = false;
            self.events += 1;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roce::pages::PageList;
    use crate::roce::qp::RingPos;

    fn srq(size: u32) -> Srq {
        Srq {
            id: 3,
            handle: 0x1234,
            pd: 1,
            dpi: 1,
            nq: 2,
            ring: RecvRing {
                mem: PageList::default(),
                size,
                stride_slots: 8,
                max_sge: 6,
                prod: RingPos::default(),
                taken: RingPos::default(),
            },
            limit: 0,
            armed: false,
            events: 0,
        }
    }

    #[test]
    fn wqes_are_taken_in_ring_order_across_the_wrap() {
        let mut s = srq(4);
        s.ring.prod = RingPos { index: 3, epoch: false };
        assert_eq!((s.take(), s.take(), s.take(), s.take()), (Some(0), Some(1), Some(2), None));
        s.ring.prod = RingPos { index: 1, epoch: true };
        assert_eq!(s.available(), 2);
        assert_eq!((s.take(), s.take(), s.take()), (Some(3), Some(0), None));
        assert_eq!(s.ring.taken, RingPos { index: 1, epoch: true });
    }

    #[test]
    fn the_limit_event_fires_once_per_arming_below_the_limit() {
        let mut s = srq(8);
        s.ring.prod = RingPos { index: 3, epoch: false };
        s.limit = 2;
        s.armed = true;
        s.take();
        assert!(!s.limit_reached(), "2 left is not below the limit of 2");
        s.take();
        assert!(s.limit_reached(), "1 left, below the limit of 2");
        assert!(!s.limit_reached(), "disarmed after the event");
        assert_eq!(s.events, 1);
    }
}
