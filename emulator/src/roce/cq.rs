//! Completion queues: the ring of 32-byte CQEs the engine writes, the consumer index the driver
//! rings back, and arming (hardware-map §5.4-5.6; bnxt_re qplib_fp.c `bnxt_qplib_create_cq`,
//! `bnxt_qplib_poll_cq`, `bnxt_qplib_req_notify_cq`, `bnxt_qplib_service_nq`).
//!
//! * A CQE's toggle bit (bit 0 of byte 0x18) is 1 on the producer's first pass and flips at each
//!   wrap. The engine writes the CQE with the previous pass's toggle first and the new toggle
//!   last (a second DMA of that one byte), so a driver polling the toggle never reads half a CQE.
//! * The driver returns entries with CQ doorbells carrying its consumer index and epoch. With
//!   `cq_size` entries outstanding the CQ is full; one more CQE is an overflow: the CQ stops
//!   taking CQEs and the firmware reports a CQ error on the CREQ (`creq_cq_error_notification`),
//!   unless CREATE_CQ asked for `DISABLE_CQ_OVERFLOW_DETECTION`, in which case it overwrites.
//! * Arming, as bnxt_re drives it on P7: CQ_ARMENA (after creation and after every
//!   notification, carrying the toggle of the latest notification) enables arming; CQ_ARMALL or
//!   CQ_ARMSE (carrying the consumer index and the same toggle) arms. The next CQE (ARMALL) or the
//!   next solicited or error CQE (ARMSE) produces one `nq_cn` on the CQ's NQ, whose toggle field
//!   is the CQ's notification count modulo 4, and disarms. An ARMALL while CQEs past the
//!   consumer index are waiting notifies at once. Arm doorbells whose toggle is not the latest
//!   notification's are stale and ignored (counted). The toggle's exact semantics are not
//!   documented publicly; this is the model's reading of how bnxt_re uses it.
//! * Resizing (RESIZE_CQ; bnxt_re qplib_fp.c `bnxt_qplib_resize_cq`,
//!   `bnxt_qplib_resize_cq_complete`; libbnxt_re verbs.c `bnxt_re_resize_cq`,
//!   `bnxt_re_resize_cq_complete`): the engine writes a CUT_OFF CQE (`cq_cutoff`, type 0xf, with
//!   the resize count modulo 4 in its `resize_toggle` bits) as the old ring's last entry, and the
//!   CQEs after it go to the new ring from index 0 with the toggle of a first pass: the driver
//!   polls the old ring up to the CUT_OFF CQE, then reads the new one from its start with the
//!   phase reset (`BNXT_RE_QUEUE_START_PHASE`; the kernel clears its consumer epoch). The
//!   CQ_CUTOFF_ACK doorbell that follows (carrying the resize toggle) is checked and taken. The
//!   consumer epoch the driver rings on the new ring is its own: libbnxt_re keeps its old ring's
//!   epoch and flips it when its first index on the new ring is below its last on the old one
//!   (db.c `bnxt_re_cq_resize_check`, "the ASIC ... is not aware of the CQ resize"), the kernel
//!   starts from 0; so the first consumer doorbell after a resize tells the engine which, and
//!   the rest are read with that offset. Whether the hardware holds CQEs back until the
//!   CQ_CUTOFF_ACK is not public; the model does not (both drivers read the new ring only
//!   after the CUT_OFF CQE, so nothing they see differs).

use bnxt_hsi::roce::cqe::{CQE_BYTES, CQE_TYPE_TOGGLE_OFFSET, nq_cn_type};
use bnxt_hsi::roce::layouts::{CqCutoff, NqCn};
use zerocopy::{FromZeros, IntoBytes};

use crate::host_memory::HostMemory;

use super::nq::ENTRY_BYTES;
use super::pages::PageList;

/// How a CQ is armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// Not armed.
    Off,
    /// Notify on the next CQE.
    All,
    /// Notify on the next solicited (or error) CQE.
    Solicited,
}

/// One CQ.
#[derive(Debug, Clone)]
pub struct Cq {
    /// Its id (CREATE_CQ's xid).
    pub id: u32,
    /// `cq_handle`, echoed in notifications.
    pub handle: u64,
    /// The NQ ring its notifications go to.
    pub nq: u16,
    /// Entries.
    pub size: u32,
    /// `dpi`.
    pub dpi: u32,
    /// Whether overflow detection is off (`DISABLE_CQ_OVERFLOW_DETECTION`).
    pub overflow_unchecked: bool,
    mem: PageList,
    prod: u32,
    prod_epoch: bool,
    cons: u32,
    cons_epoch: bool,
    arm: Arm,
    arm_enabled: bool,
    toggle: u8,
    /// Set once the CQ overflowed; it takes no more CQEs.
    pub overflowed: bool,
    /// CQEs written.
    pub written: u64,
    /// Notifications produced.
    pub notifications: u64,
    /// RESIZE_CQs taken; the CUT_OFF CQE's and CQ_CUTOFF_ACK's resize toggle is this modulo 4.
    pub resizes: u32,
    /// The epoch the driver's consumer doorbells carry relative to the engine's, once known:
    /// `None` from a resize until the first consumer doorbell after it.
    epoch_skew: Option<bool>,
}

/// What writing one CQE led to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CqeOutcome {
    /// Written; with a notification to post to the CQ's NQ when the CQ was armed for it.
    Written(Option<[u8; ENTRY_BYTES]>),
    /// Written, but the DMA was refused.
    DmaFailed,
    /// The CQ is full (or overflowed before): the CQE is lost. `first` is true the first time.
    Overflow {
        /// Whether this is the CQE that overflowed it.
        first: bool,
    },
}

/// Why a CQ doorbell was ignored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CqDoorbellError {
    /// The index is not below the CQ size.
    #[error("consumer index {index} is not below the CQ size {size}")]
    IndexTooLarge {
        /// Index rung.
        index: u32,
        /// CQ size.
        size: u32,
    },
    /// The consumer would pass the producer.
    #[error("consumer {index} (epoch {epoch}) is ahead of the producer {prod}")]
    AheadOfProducer {
        /// Index rung.
        index: u32,
        /// Epoch rung.
        epoch: bool,
        /// Producer.
        prod: u32,
    },
    /// An arm doorbell carried a toggle other than the latest notification's.
    #[error("arm doorbell with toggle {got}, the latest notification carried {current}")]
    StaleToggle {
        /// Toggle rung.
        got: u8,
        /// The CQ's toggle.
        current: u8,
    },
    /// CQ_ARMALL/CQ_ARMSE without CQ_ARMENA since the last notification.
    #[error("arm doorbell before CQ_ARMENA enabled arming")]
    ArmNotEnabled,
}

impl Cq {
    /// A CQ of `size` entries in `mem`, notifying NQ ring `nq`.
    pub fn new(id: u32, handle: u64, nq: u16, size: u32, dpi: u32, overflow_unchecked: bool, mem: PageList) -> Cq {
        Cq {
            id,
            handle,
            nq,
            size,
            dpi,
            overflow_unchecked,
            mem,
            prod: 0,
            prod_epoch: false,
            cons: 0,
            cons_epoch: false,
            arm: Arm::Off,
            arm_enabled: false,
            toggle: 0,
            overflowed: false,
            written: 0,
            notifications: 0,
            resizes: 0,
            epoch_skew: Some(false),
        }
    }

    /// The CUT_OFF CQE a resize writes as the old ring's last entry (its toggle bit is set by
    /// [`Cq::write`]).
    pub fn cutoff_cqe(&self) -> [u8; CQE_BYTES] {
        let mut c = CqCutoff::new_zeroed();
        let toggle = ((self.resizes + 1) & 3) as u8;
        c.cqe_type_toggle = CqCutoff::CQE_TYPE_CUT_OFF | (toggle << CqCutoff::RESIZE_TOGGLE_MASK.trailing_zeros());
        c.status = CqCutoff::STATUS_OK;
        c.as_bytes().try_into().expect("cq_cutoff is 32 bytes")
    }

    /// Move to the new ring `mem` of `size` entries (after the CUT_OFF CQE went to the old one):
    /// the producer and consumer start at index 0 on a first pass.
    pub fn switch_ring(&mut self, mem: PageList, size: u32) {
        self.mem = mem;
        self.size = size;
        self.prod = 0;
        self.prod_epoch = false;
        self.cons = 0;
        self.cons_epoch = false;
        self.overflowed = false;
        self.resizes += 1;
        self.epoch_skew = None;
    }

    /// The resize toggle the latest CUT_OFF CQE carried (0 before any resize).
    pub fn resize_toggle(&self) -> u8 {
        (self.resizes & 3) as u8
    }

    fn pos(&self, i: u32, e: bool) -> u64 {
        u64::from(i) + if e { u64::from(self.size) } else { 0 }
    }

    /// CQEs written and not yet returned by a CQ doorbell.
    pub fn outstanding(&self) -> u32 {
        let two = 2 * u64::from(self.size);
        ((self.pos(self.prod, self.prod_epoch) + two - self.pos(self.cons, self.cons_epoch)) % two) as u32
    }

    /// The producer index and toggle bit the next CQE gets.
    pub fn producer(&self) -> (u32, bool) {
        (self.prod, !self.prod_epoch)
    }

    /// How it is armed.
    pub fn arm(&self) -> Arm {
        self.arm
    }

    /// The latest notification's toggle.
    pub fn toggle(&self) -> u8 {
        self.toggle
    }

    /// Write `cqe` (its toggle bit is set here). `solicited` says whether it counts for a
    /// CQ_ARMSE (solicited events and errors do).
    pub fn write(&mut self, mem: &dyn HostMemory, mut cqe: [u8; CQE_BYTES], solicited: bool) -> CqeOutcome {
        if self.overflowed {
            return CqeOutcome::Overflow { first: false };
        }
        if self.outstanding() >= self.size && !self.overflow_unchecked {
            self.overflowed = true;
            return CqeOutcome::Overflow { first: true };
        }
        let toggle = u8::from(!self.prod_epoch);
        let off = u64::from(self.prod) * CQE_BYTES as u64;
        cqe[CQE_TYPE_TOGGLE_OFFSET] = (cqe[CQE_TYPE_TOGGLE_OFFSET] & !1) | (toggle ^ 1);
        let last = (cqe[CQE_TYPE_TOGGLE_OFFSET] & !1) | toggle;
        let ok = self
            .mem
            .write(mem, off, &cqe)
            .and_then(|()| self.mem.write(mem, off + CQE_TYPE_TOGGLE_OFFSET as u64, &[last]))
            .is_ok();
        self.prod += 1;
        if self.prod == self.size {
            self.prod = 0;
            self.prod_epoch = !self.prod_epoch;
        }
        if self.overflow_unchecked && self.outstanding() == 0 {
            // Overwrote the oldest unconsumed CQE: the consumer is now a full ring behind.
            self.cons = self.prod;
            self.cons_epoch = !self.prod_epoch;
        }
        if !ok {
            return CqeOutcome::DmaFailed;
        }
        self.written += 1;
        let fire = match self.arm {
            Arm::All => true,
            Arm::Solicited => solicited,
            Arm::Off => false,
        };
        CqeOutcome::Written(fire.then(|| self.notification()))
    }

    /// Disarm, bump the toggle and build the `nq_cn`.
    fn notification(&mut self) -> [u8; ENTRY_BYTES] {
        self.arm = Arm::Off;
        self.arm_enabled = false;
        self.toggle = (self.toggle + 1) & 3;
        self.notifications += 1;
        let mut cn = NqCn::new_zeroed();
        cn.type_ = nq_cn_type(self.toggle).into();
        cn.cq_handle_low = (self.handle as u32).into();
        cn.cq_handle_high = ((self.handle >> 32) as u32).into();
        cn.as_bytes().try_into().expect("nq_cn is 16 bytes")
    }

    fn set_consumer(&mut self, index: u32, epoch: bool) -> Result<(), CqDoorbellError> {
        if index >= self.size {
            return Err(CqDoorbellError::IndexTooLarge { index, size: self.size });
        }
        let skew = match self.epoch_skew {
            Some(skew) => skew,
            // The first consumer doorbell after a resize: the skew that puts it between the
            // consumer and the producer (the engine's own epoch first).
            None => {
                let fits = |skew: bool| self.advance_fits(index, epoch ^ skew);
                let skew = !fits(false) && fits(true);
                self.epoch_skew = Some(skew);
                skew
            }
        };
        let epoch = epoch ^ skew;
        let two = 2 * u64::from(self.size);
        let old = self.pos(self.cons, self.cons_epoch);
        let advance = (self.pos(index, epoch) + two - old) % two;
        let to_prod = (self.pos(self.prod, self.prod_epoch) + two - old) % two;
        if advance > to_prod {
            return Err(CqDoorbellError::AheadOfProducer { index, epoch, prod: self.prod });
        }
        self.cons = index;
        self.cons_epoch = epoch;
        Ok(())
    }

    fn advance_fits(&self, index: u32, epoch: bool) -> bool {
        let two = 2 * u64::from(self.size);
        let old = self.pos(self.cons, self.cons_epoch);
        (self.pos(index, epoch) + two - old) % two <= (self.pos(self.prod, self.prod_epoch) + two - old) % two
    }

    /// A CQ doorbell: the driver consumed up to `index` (with `epoch`).
    pub fn consumed(&mut self, index: u32, epoch: bool) -> Result<(), CqDoorbellError> {
        self.set_consumer(index, epoch)
    }

    /// CQ_ARMENA with `toggle`.
    pub fn arm_enable(&mut self, toggle: u8) -> Result<(), CqDoorbellError> {
        if toggle != self.toggle {
            return Err(CqDoorbellError::StaleToggle { got: toggle, current: self.toggle });
        }
        self.arm_enabled = true;
        Ok(())
    }

    /// CQ_ARMALL (`solicited` false) or CQ_ARMSE (true) with the consumer `index`, `epoch` and
    /// `toggle`. Returns a notification to post when CQEs are already waiting (ARMALL).
    pub fn arm_request(
        &mut self,
        solicited: bool,
        index: u32,
        epoch: bool,
        toggle: u8,
    ) -> Result<Option<[u8; ENTRY_BYTES]>, CqDoorbellError> {
        if toggle != self.toggle {
            return Err(CqDoorbellError::StaleToggle { got: toggle, current: self.toggle });
        }
        if !self.arm_enabled {
            return Err(CqDoorbellError::ArmNotEnabled);
        }
        self.set_consumer(index, epoch)?;
        self.arm = if solicited { Arm::Solicited } else { Arm::All };
        if !solicited && self.outstanding() > 0 {
            return Ok(Some(self.notification()));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_memory::{HeapBacking, Iommu};
    use std::sync::Arc;

    fn cq(size: u32) -> (Cq, Iommu) {
        let mem = Arc::new(HeapBacking::new(4096));
        let mut iommu = Iommu::new();
        iommu.map(0x1000, mem, 0, 4096).unwrap();
        let pl = PageList::from_pages(vec![0x1000], 4096, u64::from(size) * 32).unwrap();
        (Cq::new(3, 0xabcd_0000_1234, 7, size, 16, false, pl), iommu)
    }

    #[test]
    fn toggles_flip_per_pass_and_overflow_stops_the_cq() {
        let (mut c, iommu) = cq(4);
        let view = iommu.view(true);
        for i in 0..4 {
            assert_eq!(c.write(&view, [0u8; 32], false), CqeOutcome::Written(None));
            let mut b = [0u8; 1];
            view.read(0x1000 + i * 32 + 0x18, &mut b).unwrap();
            assert_eq!(b[0] & 1, 1, "first pass: toggle 1");
        }
        assert_eq!(c.write(&view, [0u8; 32], false), CqeOutcome::Overflow { first: true });
        assert_eq!(c.write(&view, [0u8; 32], false), CqeOutcome::Overflow { first: false });
        let (mut c, iommu) = cq(4);
        let view = iommu.view(true);
        for _ in 0..4 {
            c.write(&view, [0u8; 32], false);
        }
        c.consumed(2, false).unwrap();
        c.write(&view, [0u8; 32], false);
        let mut b = [0u8; 1];
        view.read(0x1000 + 0x18, &mut b).unwrap();
        assert_eq!(b[0] & 1, 0, "second pass: toggle 0");
        assert!(matches!(c.consumed(2, true), Err(CqDoorbellError::AheadOfProducer { .. })));
    }

    #[test]
    fn arming_needs_armena_and_the_current_toggle() {
        let (mut c, iommu) = cq(4);
        let view = iommu.view(true);
        assert_eq!(c.arm_request(false, 0, false, 0), Err(CqDoorbellError::ArmNotEnabled));
        c.arm_enable(0).unwrap();
        assert_eq!(c.arm_request(false, 0, false, 0), Ok(None));
        let CqeOutcome::Written(Some(cn)) = c.write(&view, [0u8; 32], false) else { panic!() };
        assert_eq!(u16::from_le_bytes([cn[0], cn[1]]), 0x30 | (1 << 6));
        assert_eq!(u32::from_le_bytes(cn[4..8].try_into().unwrap()), 0x1234);
        assert_eq!(u32::from_le_bytes(cn[12..16].try_into().unwrap()), 0xabcd);
        assert_eq!(c.write(&view, [0u8; 32], false), CqeOutcome::Written(None), "disarmed");
        assert_eq!(c.arm_enable(0), Err(CqDoorbellError::StaleToggle { got: 0, current: 1 }));
        c.arm_enable(1).unwrap();
        // Two CQEs wait past consumer 0: ARMALL notifies at once.
        assert!(c.arm_request(false, 0, false, 1).unwrap().is_some());
        c.arm_enable(2).unwrap();
        assert_eq!(c.arm_request(true, 2, false, 2), Ok(None));
        assert_eq!(c.write(&view, [0u8; 32], false), CqeOutcome::Written(None), "not solicited");
        assert!(matches!(c.write(&view, [0u8; 32], true), CqeOutcome::Written(Some(_))));
    }
}
