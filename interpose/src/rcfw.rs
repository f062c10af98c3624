//! RoCE firmware commands as the layer sees them. The device is given a command queue (CMDQ) and
//! a completion ring (CREQ) of the layer's own in place of the driver's: the layer copies into
//! its CMDQ the commands it passes on, and copies from its CREQ into the driver's the
//! completions it hands over, so that it can drop a command, complete one itself, or hold back
//! or withhold the device's completion of one, while the device runs the rest as ever.
//!
//! As bnxt_re drives the channel (qplib_rcfw.c `bnxt_qplib_start_rcfw`, `__send_message`,
//! `bnxt_qplib_service_creq`; main.c `bnxt_re_dev_init`; hardware-map §4.1-§4.3):
//! - the CREQ is the first NQ-type ring HWRM_RING_ALLOC makes after a reset (bnxt_re allocates
//!   it before any NQ of its own), except while the function opens its L2 side: from
//!   FUNC_DRV_IF_CHANGE up to the CFA_L2_FILTER_ALLOC that ends it, NQ-type rings are the L2
//!   side's (bnxt.c `bnxt_open` sends the up, then `__bnxt_open_nic` allocates its NQs and rings
//!   and `bnxt_init_chip` ends with the default VNIC's filter); the CREQ's page table is read and
//!   a ring of the same shape given instead;
//! - `cmdq_init` (BAR0 0x600-0x60f: the CMDQ's address, size and level, the CREQ's ring id, a
//!   producer) is held and passed on naming the layer's CMDQ when the first command is;
//! - each producer store (0x60c; bit 31 on the first) and trigger (0x700) makes the layer read
//!   the new commands from the driver's CMDQ (`cmd_size` slots each, or a TLV's `total_size`);
//! - completions are CREQ entries with a valid bit that flips each pass; the layer consumes the
//!   device's entries and produces the driver's with the driver ring's own valid bits, and a
//!   CREQ doorbell the driver rings names the layer's consumer instead of the driver's.

use std::time::Duration;

use bnxt_hsi::bar0::{RCFW_CMDQ_PROD, RCFW_CMDQ_TRIG, RCFW_COMM_BASE, TRIGGER_VALUE};
use bnxt_hsi::hwrm::layouts::HwrmRingAllocInput;
use bnxt_hsi::roce::cqe::is_new;
use bnxt_hsi::roce::doorbell::{DbPath, DbType, Doorbell};
use bnxt_hsi::roce::layouts::{CmdqBase, CmdqInit, CreqQpEvent};
use bnxt_hsi::roce::rcfw::{
    CMD_DISCR_TLV_ENCAP, CMDQ_INIT_SIZE_SHIFT, CMDQ_PROD_MASK, CMDQE_BYTES, CREQ_TYPE_QP_EVENT, CREQE_BYTES,
    EVENT_CQ_ERROR_NOTIFICATION, EVENT_QP_ERROR_NOTIFICATION, FIRMWARE_FIRST_FLAG, TLV_TOTAL_SIZE_BYTE,
};
use bnxt_pci::{DmaBuffer, PAGE_SIZE, PciFunction};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::hwrm::Fate;
use crate::memory::{Memory, Place};

/// Bytes of the BAR0 mailbox `cmdq_init` is written to.
const MAILBOX: usize = 16;
/// The valid bit's byte in a CREQ entry, and its bit.
const CREQ_V: usize = 8;
/// The event byte (`creq_base.event`).
const CREQ_EVENT: usize = 9;
/// Bits of a page-table entry that are flags, not address.
const PTE_FLAGS: u64 = PAGE_SIZE as u64 - 1;
/// `page_size` of a RING_ALLOC page table of 4-KiB pages (`BNXT_PAGE_SHIFT`).
const PAGE_SHIFT_4K: u8 = 12;

/// An index into a ring and the pass it is on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Cursor {
    index: u32,
    epoch: bool,
}

impl Cursor {
    fn advance(&mut self, depth: u32) {
        self.index += 1;
        if self.index == depth {
            self.index = 0;
            self.epoch = !self.epoch;
        }
    }
}

/// The CREQ the device writes, and the driver's it is copied into.
struct Creq {
    ring: DmaBuffer,
    _table: Option<DmaBuffer>,
    entries: u32,
    /// The driver's ring, a place per 4-KiB page.
    driver: Vec<Place>,
    /// The layer's consumer in its ring.
    cons: Cursor,
    /// The layer's producer in the driver's.
    prod: Cursor,
    /// The ring id the firmware gave it (from `cmdq_init`).
    ring_id: Option<u16>,
}

/// The CMDQ the device reads, and the driver's the commands come from.
struct Cmdq {
    ring: DmaBuffer,
    slots: u32,
    /// `cmdq_init` as the device is to see it (the layer's CMDQ, the driver's size, level and
    /// CREQ ring id).
    init: CmdqInit,
    driver: Place,
    /// Slots of the driver's read so far (free-running, 16 bits as its producer).
    driver_cons: u16,
    /// Slots of the layer's produced so far.
    prod: u32,
    /// `cmdq_init` and the first-producer flag are still to go with the next command passed on.
    announce: bool,
}

/// What becomes of one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Passed on; its completion handed over as the device gives it.
    PassOn,
    /// Passed on; its completion meets this fate.
    Redirect(Fate),
    /// Not passed on, never completed.
    Drop,
    /// Not passed on; completed here with this CREQ status.
    Refuse(u8),
}

/// A command read from the driver's CMDQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Command {
    /// Its opcode (the inner command's, for a TLV).
    pub opcode: u8,
    /// Its cookie.
    pub cookie: u16,
}

/// The RoCE side of one function.
pub(crate) struct Rcfw {
    mailbox: [u8; MAILBOX],
    cmdq: Option<Cmdq>,
    creq: Option<Creq>,
    /// The next NQ-type RING_ALLOC makes the CREQ.
    creq_next: bool,
    /// The function is opening its L2 side (FUNC_DRV_IF_CHANGE up seen, its L2 filter not yet):
    /// NQ-type rings now are the L2 side's, not the CREQ.
    l2_opening: bool,
    /// Commands passed on whose completion the layer decides, by cookie.
    awaited: Vec<(u16, String, Fate)>,
    /// Completions to hand over, with when.
    out: Vec<(Duration, [u8; CREQE_BYTES])>,
    /// Why the layer cannot follow the channel, once it cannot (it then passes everything on).
    lost: Option<String>,
    /// Shadows replaced while the device may still use them (until the function is reset).
    retired: Vec<DmaBuffer>,
}

impl Default for Rcfw {
    fn default() -> Rcfw {
        Rcfw {
            mailbox: [0; MAILBOX],
            cmdq: None,
            creq: None,
            creq_next: true,
            l2_opening: false,
            awaited: Vec::new(),
            out: Vec::new(),
            lost: None,
            retired: Vec::new(),
        }
    }
}

impl Rcfw {
    fn lose(&mut self, why: String) {
        tracing::error!(target: crate::TARGET, why = %why, "RoCE command faults cannot be injected on this NIC");
        self.lost.get_or_insert(why);
    }

    /// A RING_ALLOC being passed on: when it makes the CREQ, give the device a ring of the
    /// layer's instead (in `request`). Whether `request` changed.
    pub(crate) fn ring_alloc(&mut self, request: &mut [u8], memory: &Memory, function: &dyn PciFunction) -> bool {
        if self.lost.is_some() || !self.creq_next || self.l2_opening {
            return false;
        }
        let Ok((req, _)) = HwrmRingAllocInput::mut_from_prefix(request) else {
            self.lose("a RING_ALLOC shorter than its layout".into());
            return false;
        };
        if req.ring_type != HwrmRingAllocInput::RING_TYPE_NQ {
            return false;
        }
        self.creq_next = false;
        match shadow_ring(req, memory, function) {
            Ok(creq) => {
                if let Some(old) = self.creq.replace(creq) {
                    self.retired.push(old.ring);
                    self.retired.extend(old._table);
                }
                true
            }
            Err(why) => {
                self.lose(format!("the CREQ's RING_ALLOC: {why}"));
                false
            }
        }
    }

    /// FUNC_DRV_IF_CHANGE up passed on: the L2 side's rings follow, until its L2 filter.
    pub(crate) fn l2_open_begins(&mut self) {
        self.l2_opening = self.creq_next;
    }

    /// CFA_L2_FILTER_ALLOC passed on: the L2 side is open; the next NQ-type ring may be the CREQ.
    pub(crate) fn l2_open_ends(&mut self) {
        self.l2_opening = false;
    }

    /// A FUNC_RESET passed on: the firmware forgets its rings; the next NQ ring is a new CREQ.
    pub(crate) fn func_reset(&mut self) {
        self.creq_next = true;
        self.l2_opening = false;
    }

    /// A store to the mailbox (BAR0 0x600-0x60f): held.
    pub(crate) fn store(&mut self, offset: u64, value: u32) {
        let at = (offset - RCFW_COMM_BASE) as usize;
        if at + 4 <= MAILBOX {
            self.mailbox[at..at + 4].copy_from_slice(&value.to_le_bytes());
        }
    }

    /// The mailbox stores as the driver made them (while the layer cannot follow the channel).
    pub(crate) fn raw_stores(&self) -> Vec<(u64, u32)> {
        let mut stores: Vec<(u64, u32)> = self
            .mailbox
            .chunks(4)
            .enumerate()
            .map(|(i, d)| (RCFW_COMM_BASE + 4 * i as u64, u32::from_le_bytes(d.try_into().expect("4 bytes"))))
            .collect();
        stores.push((RCFW_CMDQ_TRIG, TRIGGER_VALUE));
        stores
    }

    /// A trigger: read the commands the driver produced, decide each with `decide` (which
    /// counts it), and give the stores that pass on those that go (none if none does).
    /// Completions made here are queued for `now`.
    pub(crate) fn trigger(
        &mut self,
        now: Duration,
        memory: &Memory,
        function: &dyn PciFunction,
        decide: &mut dyn FnMut(Command) -> Verdict,
    ) -> Vec<(u64, u32)> {
        if self.lost.is_some() {
            return self.raw_stores();
        }
        let prod_reg = u32::from_le_bytes(self.mailbox[12..16].try_into().expect("4 bytes"));
        if prod_reg & FIRMWARE_FIRST_FLAG != 0
            && let Err(why) = self.start(memory, function)
        {
            self.lose(format!("cmdq_init: {why}"));
            return self.raw_stores();
        }
        let Some(cmdq) = self.cmdq.as_mut() else {
            self.lose("a RoCE command before cmdq_init".into());
            return self.raw_stores();
        };
        let prod = (prod_reg & CMDQ_PROD_MASK) as u16;
        let mut passed = 0u32;
        let mut refused = Vec::new();
        while cmdq.driver_cons != prod {
            let ahead = u32::from(prod.wrapping_sub(cmdq.driver_cons));
            let Some((command, slots)) = cmdq.read_command(ahead) else {
                // A command the layer cannot read is passed on as written, for the device to
                // refuse as it would.
                passed += cmdq.copy(1);
                continue;
            };
            match decide(command) {
                Verdict::PassOn => passed += cmdq.copy(slots),
                Verdict::Redirect(fate) => {
                    passed += cmdq.copy(slots);
                    self.awaited.push((command.cookie, crate::command_name(command.opcode), fate));
                }
                Verdict::Drop => cmdq.skip(slots),
                Verdict::Refuse(status) => {
                    cmdq.skip(slots);
                    refused.push(completion(command, status));
                }
            }
        }
        self.out.extend(refused.into_iter().map(|e| (now, e)));
        if passed == 0 {
            return Vec::new();
        }
        let mut stores = Vec::new();
        let mut prod = cmdq.prod & CMDQ_PROD_MASK;
        if std::mem::take(&mut cmdq.announce) {
            for (i, d) in cmdq.init.as_bytes()[..12].chunks(4).enumerate() {
                stores.push((RCFW_COMM_BASE + 4 * i as u64, u32::from_le_bytes(d.try_into().expect("4 bytes"))));
            }
            prod |= FIRMWARE_FIRST_FLAG;
        }
        stores.push((RCFW_CMDQ_PROD, prod));
        stores.push((RCFW_CMDQ_TRIG, TRIGGER_VALUE));
        stores
    }

    /// `cmdq_init` with the first-producer flag: a CMDQ of the layer's own in the driver's
    /// shape, and the CREQ's ring id.
    fn start(&mut self, memory: &Memory, function: &dyn PciFunction) -> Result<(), String> {
        let init = CmdqInit::read_from_bytes(&self.mailbox).expect("16 bytes");
        let ring_id = init.creq_ring_id.get();
        match self.creq.as_mut() {
            Some(creq) => creq.ring_id = Some(ring_id),
            None => return Err(format!("cmdq_init names CREQ ring {ring_id}, but no CREQ was allocated")),
        }
        let size_lvl = init.cmdq_size_cmdq_lvl.get();
        let slots = u32::from((size_lvl & CmdqInit::CMDQ_SIZE_MASK) >> CMDQ_INIT_SIZE_SHIFT);
        let level = size_lvl & CmdqInit::CMDQ_LVL_MASK;
        if level != 0 {
            return Err(format!("a CMDQ behind a level-{level} page table (bnxt_re's is one contiguous buffer)"));
        }
        if slots == 0 {
            return Err("a CMDQ of 0 slots".into());
        }
        let bytes = slots as usize * CMDQE_BYTES;
        let driver = memory
            .place(init.cmdq_pbl.get())
            .filter(|p| p.read(bytes - 1, &mut [0]))
            .ok_or_else(|| format!("the CMDQ at {:#x} is in no buffer the driver holds", init.cmdq_pbl.get()))?;
        let ring = function.alloc_dma(bytes).map_err(|e| format!("no memory for a CMDQ: {e}"))?;
        let mut shown = init;
        shown.cmdq_pbl = ring.iova().into();
        shown.prod_idx = 0.into();
        if let Some(old) = self.cmdq.take() {
            self.retired.push(old.ring);
        }
        self.cmdq = Some(Cmdq { ring, slots, init: shown, driver, driver_cons: 0, prod: 0, announce: true });
        self.awaited.clear();
        self.out.clear();
        Ok(())
    }

    /// A 64-bit doorbell store: a CREQ doorbell names the layer's consumer, not the driver's.
    pub(crate) fn doorbell(&self, value: u64) -> u64 {
        let Some(creq) = self.creq.as_ref() else { return value };
        match Doorbell::decode(value) {
            Ok(db)
                if db.path == DbPath::Roce
                    && matches!(db.ty, DbType::Nq | DbType::NqArm)
                    && creq.ring_id.is_some_and(|id| u32::from(id) == db.xid) =>
            {
                Doorbell { index: creq.cons.index, epoch: creq.cons.epoch, ..db }.encode()
            }
            _ => value,
        }
    }

    /// Take what the device completed, decide each completion's fate, and hand over those
    /// whose time has come. What happened, for the log.
    pub(crate) fn pump(&mut self, now: Duration) -> Vec<String> {
        let mut said = Vec::new();
        let Some(creq) = self.creq.as_mut() else { return said };
        while let Some(entry) = creq.take() {
            let awaited = command_cookie(&entry)
                .and_then(|cookie| self.awaited.iter().position(|(c, _, _)| *c == cookie))
                .map(|i| self.awaited.remove(i));
            match awaited {
                None => self.out.push((now, entry)),
                Some((_, name, Fate::Withheld)) => {
                    said.push(format!("{name}: the firmware completed it; the completion is withheld"));
                }
                Some((_, name, Fate::Late(d))) => {
                    said.push(format!("{name}: the completion is handed over {} ms late", d.as_millis()));
                    self.out.push((now.saturating_add(d), entry));
                }
            }
        }
        self.out.sort_by_key(|(due, _)| *due);
        let due = self.out.iter().take_while(|(d, _)| *d <= now).count();
        for (_, entry) in self.out.drain(..due) {
            if !creq.give(entry) {
                said.push("a completion for a driver that let its CREQ go".into());
            }
        }
        said
    }

    /// Forget everything (the function was reset): the memory the device may have used until
    /// now, to free.
    pub(crate) fn forget(&mut self) -> Vec<DmaBuffer> {
        let mut freed = std::mem::take(&mut self.retired);
        if let Some(c) = self.cmdq.take() {
            freed.push(c.ring);
        }
        if let Some(c) = self.creq.take() {
            freed.push(c.ring);
            freed.extend(c._table);
        }
        let lost = self.lost.take();
        *self = Rcfw::default();
        if let Some(why) = lost {
            tracing::debug!(target: crate::TARGET, why = %why, "the RoCE channel is followed afresh after a reset");
        }
        freed
    }
}

impl Cmdq {
    fn slot_at(&self, k: u32) -> Option<[u8; CMDQE_BYTES]> {
        let slot = (u32::from(self.driver_cons) + k) % self.slots;
        let mut b = [0u8; CMDQE_BYTES];
        self.driver.read(slot as usize * CMDQE_BYTES, &mut b).then_some(b)
    }

    /// The command at the driver's consumer and its slots, if it can be read whole within the
    /// `ahead` slots produced.
    fn read_command(&self, ahead: u32) -> Option<(Command, u32)> {
        let head = self.slot_at(0)?;
        let tlv = u16::from_le_bytes([head[0], head[1]]) == CMD_DISCR_TLV_ENCAP;
        let (size, base) =
            if tlv { (u32::from(head[TLV_TOTAL_SIZE_BYTE]), self.slot_at(1)?) } else { (u32::from(head[1]), head) };
        if size == 0 || size > ahead || (tlv && size < 2) {
            return None;
        }
        let (base, _) = CmdqBase::read_from_prefix(&base).ok()?;
        Some((Command { opcode: base.opcode, cookie: base.cookie.get() }, size))
    }

    /// Copy `n` slots from the driver's CMDQ to the layer's; `n`.
    fn copy(&mut self, n: u32) -> u32 {
        for k in 0..n {
            let slot = self.slot_at(k).unwrap_or([0; CMDQE_BYTES]);
            let at = (self.prod % self.slots) as usize * CMDQE_BYTES;
            self.ring.write(at, &slot);
            self.prod = self.prod.wrapping_add(1);
        }
        self.driver_cons = self.driver_cons.wrapping_add(n as u16);
        n
    }

    /// Pass over `n` slots of the driver's.
    fn skip(&mut self, n: u32) {
        self.driver_cons = self.driver_cons.wrapping_add(n as u16);
    }
}

impl Creq {
    /// The next entry the device wrote to the layer's ring, if there is one.
    fn take(&mut self) -> Option<[u8; CREQE_BYTES]> {
        let at = self.cons.index as usize * CREQE_BYTES;
        if !is_new(self.ring.read_volatile_u8(at + CREQ_V) & 1 != 0, self.cons.epoch) {
            return None;
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        let mut entry = [0u8; CREQE_BYTES];
        self.ring.read(at, &mut entry);
        self.cons.advance(self.entries);
        Some(entry)
    }

    /// Write `entry` at the driver ring's producer with the valid bit its pass calls for
    /// (everything else first, the valid byte last); false when the driver's ring is gone.
    fn give(&mut self, mut entry: [u8; CREQE_BYTES]) -> bool {
        let v = [true, false].into_iter().find(|&v| is_new(v, self.prod.epoch)).expect("one bit value is new");
        entry[CREQ_V] = (entry[CREQ_V] & !1) | u8::from(v);
        let at = self.prod.index as usize * CREQE_BYTES;
        let Some(page) = self.driver.get(at / PAGE_SIZE) else { return false };
        let wrote = page.at(at % PAGE_SIZE).write_then(&entry, CREQ_V);
        self.prod.advance(self.entries);
        wrote
    }
}

/// The cookie of a command's completion (a QP_EVENT that is not an error notification).
fn command_cookie(entry: &[u8; CREQE_BYTES]) -> Option<u16> {
    let (e, _) = CreqQpEvent::read_from_prefix(entry).ok()?;
    let is_command = e.type_ & 0x3f == CREQ_TYPE_QP_EVENT
        && !matches!(e.event, EVENT_QP_ERROR_NOTIFICATION | EVENT_CQ_ERROR_NOTIFICATION);
    is_command.then(|| e.cookie.get())
}

/// The completion a firmware refusing `command` with `status` gives (the CREQ entry the model
/// and firmware write: a QP_EVENT with the status, the cookie and the opcode as its event).
fn completion(command: Command, status: u8) -> [u8; CREQE_BYTES] {
    let mut e = CreqQpEvent::new_zeroed();
    e.type_ = CREQ_TYPE_QP_EVENT;
    e.status = status;
    e.cookie = command.cookie.into();
    e.event = command.opcode;
    let mut out = [0u8; CREQE_BYTES];
    out.copy_from_slice(e.as_bytes());
    debug_assert_eq!(out[CREQ_EVENT], command.opcode);
    out
}

/// A ring of the layer's in the shape `req` asks for (its page table rewritten in `req` to
/// name it), and the driver's ring it stands for.
fn shadow_ring(req: &mut HwrmRingAllocInput, memory: &Memory, function: &dyn PciFunction) -> Result<Creq, String> {
    let entries = req.length.get();
    if entries == 0 {
        return Err("a ring of 0 entries".into());
    }
    let bytes = entries as usize * CREQE_BYTES;
    let pages = bytes.div_ceil(PAGE_SIZE);
    let root = req.page_tbl_addr.get();
    let no_memory = |e: bnxt_pci::PciError| format!("no memory for a CREQ: {e}");
    let unknown = |iova: u64| format!("{iova:#x} is in no buffer the driver holds");
    match req.page_tbl_depth {
        0 => {
            if pages != 1 {
                return Err(format!("a ring of {entries} entries without a page table"));
            }
            let driver = memory.place(root).ok_or_else(|| unknown(root))?;
            let ring = function.alloc_dma(PAGE_SIZE).map_err(no_memory)?;
            req.page_tbl_addr = ring.iova().into();
            Ok(Creq::new(ring, None, entries, vec![driver]))
        }
        1 if req.page_size == PAGE_SHIFT_4K => {
            let table = memory.read(root, pages * 8).ok_or_else(|| unknown(root))?;
            let ptes: Vec<u64> = table.chunks(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
            let driver = ptes
                .iter()
                .map(|pte| memory.place(pte & !PTE_FLAGS).ok_or_else(|| unknown(pte & !PTE_FLAGS)))
                .collect::<Result<Vec<_>, _>>()?;
            let ring = function.alloc_dma(pages * PAGE_SIZE).map_err(no_memory)?;
            let shown = function.alloc_dma(pages * 8).map_err(no_memory)?;
            for (i, pte) in ptes.iter().enumerate() {
                shown.write_u64(i * 8, ring.iova_at(i * PAGE_SIZE) | (pte & PTE_FLAGS));
            }
            req.page_tbl_addr = shown.iova().into();
            Ok(Creq::new(ring, Some(shown), entries, driver))
        }
        depth => Err(format!("a ring behind a depth-{depth} page table of page size {}", req.page_size)),
    }
}

impl Creq {
    fn new(ring: DmaBuffer, table: Option<DmaBuffer>, entries: u32, driver: Vec<Place>) -> Creq {
        Creq { ring, _table: table, entries, driver, cons: Cursor::default(), prod: Cursor::default(), ring_id: None }
    }
}
