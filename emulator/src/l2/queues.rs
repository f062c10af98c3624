//! Notification queues and L2 completion rings as the device drives them on a P5/P7 (bnxt.c
//! `bnxt_poll_p5`, `__bnxt_poll_cqs_done`, `bnxt_enable_int`, `bnxt_disable_int`; bnxt.h
//! `struct nqe_cn`, `BNXT_NQ_HDL_*`).
//!
//! * A completion ring (L2_CMPL) receives TX completions, RX completions (two entries), HWRM_DONE
//!   completions and, when it is the async event ring, async events. Armed (CQ_ARMALL, carrying
//!   the toggle of the ring's latest notification), it produces one `nqe_cn` on its NQ when a
//!   completion arrives, then disarms; an ARMALL while completions past the rung consumer are
//!   waiting notifies at once; an ARMALL with a stale toggle is ignored (and counted by the
//!   engine). The notification's toggle field (bits 7:6 of `type`) is the ring's notification
//!   count modulo 4, and bnxt_en echoes it in its next ARMALL. With coalescing settings
//!   (RING_CMPL_RING_CFG_AGGINT_PARAMS) an armed ring notifies once `num_cmpl_aggr_int`
//!   completions have gathered or `int_lat_tmr_max` after the first, whichever comes first.
//! * An NQ receives notifications and async events. Armed (NQ_ARM), the next entry raises its
//!   MSI-X vector (`logical_id`) and disarms it; an NQ_ARM while entries are waiting raises it at
//!   once; NQ_MASK disarms. Entries beyond the ring's room wait, in order, until the driver frees
//!   room.

use std::collections::VecDeque;
use std::time::Duration;

use bnxt_hsi::roce::cqe::nq_cn_type;
use bnxt_hsi::roce::layouts::NqCn;
use zerocopy::{FromZeros, IntoBytes};

use crate::firmware::l2_config::Coalescing;
use crate::host_memory::HostMemory;
use crate::roce::pages::PagesError;

use super::descriptors::ENTRY_BYTES;
use super::ring::{CmplRing, IndexError};

/// Most entries an NQ keeps waiting for room; beyond that entries are lost (and counted).
pub const MAX_NQ_BACKLOG: usize = 4096;

/// One NQ.
#[derive(Debug, Clone)]
pub struct L2Nq {
    /// Which RING_ALLOC this is.
    pub serial: u64,
    /// The ring.
    pub ring: CmplRing,
    /// MSI-X vector (`logical_id`).
    pub vector: u16,
    /// Whether the next entry raises the vector.
    pub armed: bool,
    backlog: VecDeque<[u8; ENTRY_BYTES]>,
}

/// What happened to an NQ entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NqPost {
    /// Written; `irq` says whether the vector was raised.
    Written {
        /// The vector was raised.
        irq: bool,
    },
    /// Waiting for room.
    Queued,
    /// Lost: the backlog is full.
    Lost,
    /// The DMA failed.
    DmaFailed(PagesError),
}

impl L2Nq {
    /// A fresh NQ.
    pub fn new(serial: u64, ring: CmplRing, vector: u16) -> L2Nq {
        L2Nq { serial, ring, vector, armed: false, backlog: VecDeque::new() }
    }

    /// Entries waiting for room.
    pub fn backlog(&self) -> usize {
        self.backlog.len()
    }

    /// Write `entry`, or keep it until there is room.
    pub fn post(&mut self, mem: &dyn HostMemory, entry: [u8; ENTRY_BYTES]) -> NqPost {
        if !self.backlog.is_empty() || self.ring.room() == 0 {
            if self.backlog.len() >= MAX_NQ_BACKLOG {
                return NqPost::Lost;
            }
            self.backlog.push_back(entry);
            return NqPost::Queued;
        }
        if let Err(e) = self.ring.write(mem, &[entry]) {
            return NqPost::DmaFailed(e);
        }
        let irq = std::mem::take(&mut self.armed);
        NqPost::Written { irq }
    }

    /// An NQ doorbell: consumer at `index`/`epoch`; `arm` Some(true) arms (NQ_ARM), Some(false)
    /// masks (NQ_MASK), None leaves arming as it is (NQ). Returns whether the vector is raised
    /// (armed with entries waiting), and entries written from the backlog that failed to DMA.
    pub fn doorbell(
        &mut self,
        mem: &dyn HostMemory,
        index: u32,
        epoch: bool,
        arm: Option<bool>,
    ) -> Result<(bool, usize), IndexError> {
        self.ring.set_consumer(index, epoch)?;
        let mut failed = 0;
        while self.ring.room() > 0 {
            let Some(e) = self.backlog.pop_front() else { break };
            if self.ring.write(mem, &[e]).is_err() {
                failed += 1;
            }
        }
        if let Some(a) = arm {
            self.armed = a;
        }
        let irq = self.armed && self.ring.outstanding() > 0;
        if irq {
            self.armed = false;
        }
        Ok((irq, failed))
    }
}

/// One L2 completion ring.
#[derive(Debug, Clone)]
pub struct L2Cq {
    /// Which RING_ALLOC this is.
    pub serial: u64,
    /// The ring.
    pub ring: CmplRing,
    /// The NQ its notifications go to.
    pub nq: Option<u16>,
    /// `cq_handle`, echoed in notifications.
    pub handle: u64,
    /// Armed for a notification.
    pub armed: bool,
    /// The latest notification's toggle.
    pub toggle: u8,
    /// Completions written since the ring was armed and not yet notified.
    pub pending: u16,
    /// When the first of them was written (the coalescing timer's start).
    pub pending_since: Option<Duration>,
}

/// Why a CQ arm doorbell was ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ArmError {
    /// The consumer index was refused.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The toggle is not the latest notification's.
    #[error("arm with toggle {got}, the latest notification carried {current}")]
    StaleToggle {
        /// Toggle rung.
        got: u8,
        /// The ring's toggle.
        current: u8,
    },
}

impl L2Cq {
    /// A fresh completion ring.
    pub fn new(serial: u64, ring: CmplRing, nq: Option<u16>, handle: u64) -> L2Cq {
        L2Cq { serial, ring, nq, handle, armed: false, toggle: 0, pending: 0, pending_since: None }
    }

    /// Write one record (1 or 2 entries) at `now`; returns the notification to post now, if
    /// any. The caller checked the room.
    pub fn write(
        &mut self,
        mem: &dyn HostMemory,
        now: Duration,
        entries: &[[u8; ENTRY_BYTES]],
        coal: Option<&Coalescing>,
    ) -> Result<Option<[u8; ENTRY_BYTES]>, PagesError> {
        self.ring.write(mem, entries)?;
        if !self.armed {
            return Ok(None);
        }
        self.pending = self.pending.saturating_add(1);
        self.pending_since.get_or_insert(now);
        let threshold = coal.map_or(1, Coalescing::count_threshold);
        let timed = coal.and_then(Coalescing::max_latency).is_some();
        if self.pending >= threshold || !timed {
            return Ok(Some(self.notification()));
        }
        Ok(None)
    }

    /// When the coalescing timer of the waiting completions runs out, if one runs.
    pub fn deadline(&self, coal: Option<&Coalescing>) -> Option<Duration> {
        let latency = coal.and_then(Coalescing::max_latency)?;
        (self.armed && self.pending > 0).then_some(self.pending_since? + latency)
    }

    /// Whether a coalescing timer could run on this ring as it is (armed, completions pending),
    /// whatever the coalescing settings: without, [`L2Cq::deadline`] is `None` under any.
    pub fn may_time(&self) -> bool {
        self.armed && self.pending > 0
    }

    /// The coalescing timer ran out at `now`: the notification, if one is due.
    pub fn timer(&mut self, now: Duration, coal: Option<&Coalescing>) -> Option<[u8; ENTRY_BYTES]> {
        let due = self.deadline(coal)?;
        (due <= now).then(|| self.notification())
    }

    /// A CQ doorbell (no arming).
    pub fn consumed(&mut self, index: u32, epoch: bool) -> Result<(), IndexError> {
        self.ring.set_consumer(index, epoch)
    }

    /// CQ_ARMALL with the consumer `index`/`epoch` and `toggle`: the notification to post now if
    /// completions are already waiting.
    pub fn arm(&mut self, index: u32, epoch: bool, toggle: u8) -> Result<Option<[u8; ENTRY_BYTES]>, ArmError> {
        if toggle != self.toggle {
            return Err(ArmError::StaleToggle { got: toggle, current: self.toggle });
        }
        self.ring.set_consumer(index, epoch)?;
        self.armed = true;
        self.pending = 0;
        self.pending_since = None;
        Ok((self.ring.outstanding() > 0).then(|| self.notification()))
    }

    /// Disarm, move the toggle on and build the `nqe_cn`.
    fn notification(&mut self) -> [u8; ENTRY_BYTES] {
        self.armed = false;
        self.pending = 0;
        self.pending_since = None;
        self.toggle = (self.toggle + 1) & 3;
        let mut cn = NqCn::new_zeroed();
        cn.type_ = nq_cn_type(self.toggle).into();
        cn.cq_handle_low = (self.handle as u32).into();
        cn.cq_handle_high = ((self.handle >> 32) as u32).into();
        cn.as_bytes().try_into().expect("nqe_cn is 16 bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_memory::{HeapBacking, Iommu};
    use crate::roce::pages::PageList;
    use std::sync::Arc;

    fn ring(len: u32) -> (Iommu, CmplRing) {
        let mut iommu = Iommu::new();
        iommu.map(0x20000, Arc::new(HeapBacking::new(4096)), 0, 4096).unwrap();
        let pages = PageList::from_pages(vec![0x20000], 4096, u64::from(len) * 16).unwrap();
        (iommu, CmplRing::new(pages, len))
    }

    #[test]
    fn an_armed_nq_interrupts_once_masked_never_and_waiting_entries_interrupt_on_arm() {
        let (iommu, r) = ring(4);
        let mem = iommu.view(true);
        let mut nq = L2Nq::new(0, r, 7);
        assert_eq!(nq.post(&mem, [1; 16]), NqPost::Written { irq: false }, "not armed yet");
        assert_eq!(nq.doorbell(&mem, 0, false, Some(true)), Ok((true, 0)), "armed with an entry waiting");
        assert_eq!(nq.post(&mem, [2; 16]), NqPost::Written { irq: false }, "disarmed by that interrupt");
        assert_eq!(nq.doorbell(&mem, 2, false, Some(true)), Ok((false, 0)), "nothing waiting");
        assert_eq!(nq.post(&mem, [3; 16]), NqPost::Written { irq: true });
        assert_eq!(nq.doorbell(&mem, 3, false, Some(false)), Ok((false, 0)), "NQ_MASK");
        assert_eq!(nq.post(&mem, [4; 16]), NqPost::Written { irq: false });
    }

    #[test]
    fn a_full_nq_keeps_entries_in_order_until_given_room() {
        let (iommu, r) = ring(2);
        let mem = iommu.view(true);
        let mut nq = L2Nq::new(0, r, 0);
        for i in 0..4u8 {
            let p = nq.post(&mem, [i; 16]);
            assert_eq!(p == NqPost::Queued, i >= 2, "entry {i}");
        }
        assert_eq!(nq.backlog(), 2);
        assert_eq!(nq.doorbell(&mem, 0, true, None), Ok((false, 0)), "consumed both");
        assert_eq!(nq.backlog(), 0);
        let mut e = [0u8; 16];
        mem.read(0x20000, &mut e).unwrap();
        assert_eq!((e[0], e[8] & 1), (2, 0), "third entry in slot 0, second pass");
    }

    #[test]
    fn a_cq_notifies_once_per_arm_with_a_moving_toggle_and_refuses_stale_arms() {
        let (iommu, r) = ring(8);
        let mem = iommu.view(true);
        let mut cq = L2Cq::new(0, r, Some(3), 0x0100_0002);
        let now = Duration::ZERO;
        assert_eq!(cq.write(&mem, now, &[[0; 16]], None), Ok(None), "not armed");
        let cn = cq.arm(0, false, 0).unwrap().expect("armed with a completion waiting");
        assert_eq!(u16::from_le_bytes([cn[0], cn[1]]), 0x30 | (1 << 6), "CQ notification, toggle 1");
        assert_eq!(u32::from_le_bytes(cn[4..8].try_into().unwrap()), 0x0100_0002, "handle");
        assert_eq!(cq.write(&mem, now, &[[0; 16]], None), Ok(None), "disarmed by the notification");
        assert_eq!(cq.arm(2, false, 0), Err(ArmError::StaleToggle { got: 0, current: 1 }));
        assert_eq!(cq.arm(2, false, 1), Ok(None));
        assert!(cq.write(&mem, now, &[[0; 16], [0; 16]], None).unwrap().is_some(), "a two-entry record notifies once");
    }

    #[test]
    fn coalescing_waits_for_the_count_or_the_timer() {
        let (iommu, r) = ring(16);
        let mem = iommu.view(true);
        let mut cq = L2Cq::new(0, r, Some(0), 0);
        let coal = Coalescing { num_cmpl_aggr_int: 3, int_lat_tmr_max: 1000, ..Coalescing::default() };
        cq.arm(0, false, 0).unwrap();
        let t0 = Duration::from_micros(5);
        assert_eq!(cq.write(&mem, t0, &[[0; 16]], Some(&coal)), Ok(None));
        assert_eq!(cq.deadline(Some(&coal)), Some(t0 + Duration::from_micros(80)), "1000 x 80 ns");
        assert_eq!(cq.timer(t0 + Duration::from_micros(79), Some(&coal)), None);
        assert!(cq.timer(t0 + Duration::from_micros(80), Some(&coal)).is_some());
        cq.arm(1, false, 1).unwrap();
        assert_eq!(cq.write(&mem, t0, &[[0; 16]], Some(&coal)), Ok(None));
        assert_eq!(cq.write(&mem, t0, &[[0; 16]], Some(&coal)), Ok(None));
        assert!(cq.write(&mem, t0, &[[0; 16]], Some(&coal)).unwrap().is_some(), "third completion");
        assert_eq!(cq.deadline(Some(&coal)), None);
    }
}
