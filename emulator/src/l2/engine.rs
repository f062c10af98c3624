//! The L2 engine of one NIC: the rings bnxt_en allocates (TX, RX, L2 completion rings, NQs),
//! their doorbells, notifications and interrupts, the firmware's notices (HWRM_DONE
//! completions, async events) and ring statistics. Transmit is in `l2::tx`, receive in
//! `l2::rx`.
//!
//! Inputs: L2-path doorbell stores ([`L2Engine::doorbell`]), the firmware's notices and the
//! passage of time ([`L2Engine::advance`]), frames from the wire ([`L2Engine::receive`]).
//! Doorbells are queued with their time and carried out by the next `advance` (the executor runs
//! it at once). Outputs: DMA through the view it is given, frames ([`L2Engine::drain_wire_frames`]),
//! MSI-X vectors ([`L2Engine::drain_interrupts`]), events, the port counters, and the time of its
//! next work.
//!
//! Ring state is kept per firmware ring id and started afresh whenever the firmware's ring of
//! that id is a different allocation (its serial changed); a ring the firmware freed is
//! forgotten. Nothing here panics on what a driver writes: bad doorbells are ignored and counted,
//! bad descriptors complete with an error, memory the device cannot reach is a counted DMA error.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use bnxt_hsi::hwrm::layouts::{HwrmAsyncEventCmpl, HwrmCmpl};
use zerocopy::{FromZeros, IntoBytes};

use crate::events::{EventKind, Recorder};
use crate::firmware::l2_config::{Notice, PortCounters};
use crate::firmware::state::{FwState, Ring, RingType};
use crate::host_memory::HostMemory;
use crate::net::sealed::WireFrame;
use crate::roce::doorbell::KERNEL_DB_OFFSET;
use crate::roce::pages::PageList;

use super::counters::L2Counters;
use super::descriptors::ENTRY_BYTES;
use super::doorbell::{L2DbKind, L2Doorbell};
use super::queues::{ArmError, L2Cq, L2Nq, NqPost};
use super::ring::{BdRing, CmplRing};
use super::stats::StatsContexts;

/// What the engine needs from the device for one call.
pub struct Env<'a> {
    /// The function's DMA view.
    pub mem: &'a dyn HostMemory,
    /// The HWRM firmware's state.
    pub fw: &'a FwState,
    /// Where events go.
    pub rec: &'a mut Recorder,
}

/// A TX ring's state.
#[derive(Debug, Clone)]
pub struct TxRing {
    /// Which RING_ALLOC this is.
    pub serial: u64,
    /// The descriptors.
    pub bds: BdRing,
    /// The completion ring (`cmpl_ring_id`).
    pub cmpl: Option<u16>,
    /// The statistics context.
    pub stat: Option<u32>,
}

/// An RX ring's state.
#[derive(Debug, Clone)]
pub struct RxRing {
    /// Which RING_ALLOC this is.
    pub serial: u64,
    /// The buffers.
    pub bds: BdRing,
    /// The statistics context.
    pub stat: Option<u32>,
}

/// One ring the engine works on.
#[derive(Debug, Clone)]
pub enum L2Ring {
    /// A notification queue.
    Nq(L2Nq),
    /// An L2 completion ring.
    Cq(L2Cq),
    /// A transmit ring.
    Tx(TxRing),
    /// A receive or aggregation ring.
    Rx(RxRing),
}

impl L2Ring {
    fn serial(&self) -> u64 {
        match self {
            L2Ring::Nq(r) => r.serial,
            L2Ring::Cq(r) => r.serial,
            L2Ring::Tx(r) => r.serial,
            L2Ring::Rx(r) => r.serial,
        }
    }

    /// Fresh state for the firmware's ring `r`.
    fn start(r: &Ring) -> Option<L2Ring> {
        let len = u64::from(r.length) * ENTRY_BYTES as u64;
        let mem = PageList::from_pages(r.pages.clone(), r.page_size, len)?;
        Some(match r.ty {
            RingType::Nq => L2Ring::Nq(L2Nq::new(r.serial, CmplRing::new(mem, r.length), r.logical_id)),
            RingType::L2Cmpl => {
                L2Ring::Cq(L2Cq::new(r.serial, CmplRing::new(mem, r.length), r.nq_ring_id, r.cq_handle))
            }
            RingType::Tx => L2Ring::Tx(TxRing {
                serial: r.serial,
                bds: BdRing::new(mem, r.length),
                cmpl: r.cmpl_ring_id,
                stat: r.stat_ctx_id,
            }),
            RingType::Rx | RingType::RxAgg => {
                L2Ring::Rx(RxRing { serial: r.serial, bds: BdRing::new(mem, r.length), stat: r.stat_ctx_id })
            }
        })
    }
}

/// The L2 engine.
#[derive(Debug, Clone)]
pub struct L2Engine {
    pub(super) rings: BTreeMap<u16, L2Ring>,
    inputs: VecDeque<(Duration, u64, u64)>,
    pub(super) frames: Vec<Vec<u8>>,
    irqs: Vec<u16>,
    pub(super) counters: L2Counters,
    pub(super) port: PortCounters,
    pub(super) stats: StatsContexts,
    /// TX rings that stopped for want of completion room, retried when room appears.
    pub(super) blocked_tx: BTreeSet<u16>,
    resets_seen: Option<u64>,
    /// The firmware's ring table as the last advance followed it ([`rings_stamp`]), kept only
    /// when no completion ring of the engine then could time (see `L2Cq::may_time`) and it has
    /// started no ring and written no completion since: while the table keeps that stamp and nothing is queued, an advance has nothing
    /// to follow, carry out or time.
    quiet: Option<(u64, usize)>,
    warned: BTreeSet<String>,
    data_path_events: bool,
}

/// What changes whenever the firmware allocates, frees or clears rings: the serial the next
/// allocation takes (every allocation takes a new one) and how many rings there are.
fn rings_stamp(fw: &FwState) -> (u64, usize) {
    (fw.next_ring_serial, fw.rings.len())
}

impl Default for L2Engine {
    fn default() -> L2Engine {
        L2Engine::new()
    }
}

impl L2Engine {
    /// An engine with no rings.
    pub fn new() -> L2Engine {
        L2Engine {
            rings: BTreeMap::new(),
            inputs: VecDeque::new(),
            frames: Vec::new(),
            irqs: Vec::new(),
            counters: L2Counters::default(),
            port: PortCounters::default(),
            stats: StatsContexts::default(),
            blocked_tx: BTreeSet::new(),
            resets_seen: None,
            quiet: None,
            warned: BTreeSet::new(),
            data_path_events: true,
        }
    }

    /// Function reset: every ring and queued store goes; counters stay.
    pub fn reset(&mut self) {
        self.rings.clear();
        self.inputs.clear();
        self.frames.clear();
        self.stats.clear();
        self.blocked_tx.clear();
    }

    /// Record per-doorbell and per-frame events or not (on by default).
    pub fn set_data_path_events(&mut self, on: bool) {
        self.data_path_events = on;
    }

    /// A 64-bit store of `value` at BAR2 `offset` at `now` (the device routes L2-path doorbells
    /// here); carried out by the next [`L2Engine::advance`].
    pub fn doorbell(&mut self, now: Duration, offset: u64, value: u64) {
        self.inputs.push_back((now, offset, value));
    }

    /// When the engine next has work.
    #[inline]
    pub fn next_deadline(&self, fw: &FwState) -> Option<Duration> {
        let queued = self.inputs.front().map(|(t, _, _)| *t);
        if self.stats.is_empty() && (self.rings.is_empty() || self.quiet == Some(rings_stamp(fw))) {
            // The usual case on a RoCE-only function: only queued doorbells.
            return queued;
        }
        self.timed_deadline(queued, fw)
    }

    /// [`L2Engine::next_deadline`] with rings or statistics contexts to look at.
    #[inline(never)]
    fn timed_deadline(&self, queued: Option<Duration>, fw: &FwState) -> Option<Duration> {
        use crate::device::earliest;
        let cq = self
            .rings
            .iter()
            .filter_map(|(id, r)| match r {
                L2Ring::Cq(c) => c.deadline(fw.l2.coalescing.get(id)),
                _ => None,
            })
            .min();
        earliest(earliest(queued, cq), self.stats.next_due())
    }

    /// Move the MSI-X vectors raised, in order, to the end of `out`.
    pub fn drain_interrupts(&mut self, out: &mut Vec<u16>) {
        out.append(&mut self.irqs);
    }

    /// Move the frames sent since the last call to the end of `out`, oldest first, each as a
    /// plain frame.
    #[inline]
    pub fn drain_wire_frames(&mut self, out: &mut Vec<WireFrame>) {
        if !self.frames.is_empty() {
            out.extend(self.frames.drain(..).map(WireFrame::Plain));
        }
    }

    /// Counters.
    pub fn counters(&self) -> &L2Counters {
        &self.counters
    }

    /// The port's counters (for the firmware's PORT_QSTATS).
    pub fn port_counters(&self) -> PortCounters {
        self.port
    }

    /// The counters of every statistics context the engine counts into that the firmware `fw`
    /// still has (for STAT_CTX_QUERY).
    pub fn ring_stats(&self, fw: &FwState) -> BTreeMap<u32, bnxt_hsi::hwrm::layouts::CtxHwStats> {
        self.stats.snapshot(fw)
    }

    /// The rings the engine has state for (for inspection).
    pub fn rings(&self) -> &BTreeMap<u16, L2Ring> {
        &self.rings
    }

    pub(super) fn warn_once(&mut self, msg: String) {
        if self.warned.insert(msg.clone()) {
            tracing::warn!("{msg}");
        }
    }

    /// Forget everything when the firmware freed the function's resources (FUNC_RESET), and
    /// rings the firmware no longer has.
    fn follow_firmware(&mut self, fw: &FwState) {
        match self.resets_seen {
            Some(n) if n != fw.resets => {
                self.reset();
                self.resets_seen = Some(fw.resets);
            }
            None => self.resets_seen = Some(fw.resets),
            _ => {}
        }
        if !self.rings.is_empty() {
            self.rings.retain(|id, r| fw.rings.get(id).is_some_and(|f| f.serial == r.serial()));
        }
    }

    /// The engine's state of ring `id`, started if the firmware has it and the engine does not
    /// (or has an older allocation of it).
    pub(super) fn ring(&mut self, id: u16, fw: &FwState) -> Option<&mut L2Ring> {
        let Some(f) = fw.rings.get(&id) else {
            self.rings.remove(&id);
            return None;
        };
        if self.rings.get(&id).is_none_or(|r| r.serial() != f.serial) {
            let fresh = L2Ring::start(f)?;
            self.quiet = None;
            self.rings.insert(id, fresh);
        }
        self.rings.get_mut(&id)
    }

    /// Run everything due at or before `now`: queued doorbells, the firmware's `notices`,
    /// coalescing timers and statistics.
    #[inline]
    pub fn advance(&mut self, now: Duration, notices: Vec<Notice>, env: &mut Env<'_>) {
        if notices.is_empty()
            && self.inputs.is_empty()
            && self.stats.is_empty()
            && self.resets_seen == Some(env.fw.resets)
            && (self.rings.is_empty() || self.quiet == Some(rings_stamp(env.fw)))
        {
            // Nothing to follow, carry out or time: every step below would do nothing.
            return;
        }
        self.advance_work(now, notices, env);
    }

    /// [`L2Engine::advance`] with something to do.
    #[inline(never)]
    fn advance_work(&mut self, now: Duration, notices: Vec<Notice>, env: &mut Env<'_>) {
        self.follow_firmware(env.fw);
        for n in notices {
            self.notice(now, n, env);
        }
        while self.inputs.front().is_some_and(|(t, _, _)| *t <= now) {
            let (at, offset, value) = self.inputs.pop_front().expect("checked");
            self.apply_doorbell(at, offset, value, env);
        }
        self.run_timers(now, env);
        let (written, errors) = self.stats.write_due(now, env.fw, env.mem);
        self.counters.stats_writes += written;
        for e in errors {
            self.counters.dma_errors += 1;
            env.rec.record(now, EventKind::DmaFailed { during: "writing ring statistics", error: e });
        }
        let timers = self.rings.values().any(|r| matches!(r, L2Ring::Cq(cq) if cq.may_time()));
        self.quiet = (!timers).then(|| rings_stamp(env.fw));
    }

    fn run_timers(&mut self, now: Duration, env: &mut Env<'_>) {
        if self.rings.is_empty() {
            return;
        }
        // The notifications are posted after the walk (posting needs the engine); a Vec holding
        // none does not allocate.
        let mut fired = Vec::new();
        for (id, ring) in &mut self.rings {
            if let L2Ring::Cq(cq) = ring
                && let Some(cn) = cq.timer(now, env.fw.l2.coalescing.get(id))
            {
                fired.push((cq.nq, cn));
            }
        }
        for (nq, cn) in fired {
            self.notify(now, nq, cn, env);
        }
    }

    fn ignore(&mut self, now: Duration, offset: u64, value: u64, reason: String, env: &mut Env<'_>) {
        self.counters.ignored(&reason);
        self.warn_once(format!("L2 doorbell ignored: {reason}"));
        env.rec.record(now, EventKind::DoorbellIgnored { offset, value, reason });
    }

    /// Carry out one queued doorbell.
    fn apply_doorbell(&mut self, now: Duration, offset: u64, value: u64, env: &mut Env<'_>) {
        let db = match L2Doorbell::decode(value) {
            Ok(d) => d,
            Err(e) => return self.ignore(now, offset, value, e.to_string(), env),
        };
        if !db.valid {
            return self.ignore(now, offset, value, "valid bit (58) clear: P7 ignores such doorbells".into(), env);
        }
        if offset != KERNEL_DB_OFFSET {
            let why = format!("L2 doorbell at BAR2 0x{offset:x}, not at db_offset 0x{KERNEL_DB_OFFSET:x}");
            return self.ignore(now, offset, value, why, env);
        }
        let kind_name = format!("{:?}", db.kind);
        let result: Result<(), String> = match db.kind {
            L2DbKind::Null => Ok(()),
            L2DbKind::Other(t) => {
                self.counters.unimplemented_doorbells += 1;
                self.warn_once(format!("L2 doorbell type 0x{t:x} is not carried out on the L2 path"));
                env.rec.record(
                    now,
                    EventKind::DoorbellIgnored {
                        offset,
                        value,
                        reason: format!("not implemented: L2 doorbell type 0x{t:x}"),
                    },
                );
                return;
            }
            L2DbKind::Sq => self.tx_doorbell(now, &db, env),
            L2DbKind::Srq => self.rx_doorbell(&db, env.fw),
            L2DbKind::Cq | L2DbKind::CqArmAll | L2DbKind::CqArmSe | L2DbKind::CqArmEna => {
                self.cq_doorbell(now, &db, env)
            }
            L2DbKind::Nq | L2DbKind::NqArm | L2DbKind::NqMask => self.nq_doorbell(&db, env),
        };
        match result {
            Ok(()) => {
                self.counters.doorbells += 1;
                if self.data_path_events {
                    env.rec.record(
                        now,
                        EventKind::Doorbell { ty: l2_type_name(db.kind), xid: db.xid.into(), index: db.index },
                    );
                }
            }
            Err(reason) => self.ignore(now, offset, value, format!("{kind_name} for ring {}: {reason}", db.xid), env),
        }
    }

    fn rx_doorbell(&mut self, db: &L2Doorbell, fw: &FwState) -> Result<(), String> {
        match self.ring(db.xid, fw) {
            Some(L2Ring::Rx(rx)) => rx.bds.set_producer(db.index, db.epoch).map_err(|e| e.to_string()),
            Some(_) => Err("not an RX ring".into()),
            None => Err("no such ring".into()),
        }
    }

    fn cq_doorbell(&mut self, now: Duration, db: &L2Doorbell, env: &mut Env<'_>) -> Result<(), String> {
        let cq = match self.ring(db.xid, env.fw) {
            Some(L2Ring::Cq(cq)) => cq,
            Some(_) => return Err("not an L2 completion ring".into()),
            None => return Err("no such ring".into()),
        };
        let nq = cq.nq;
        let cn = match db.kind {
            L2DbKind::Cq | L2DbKind::CqArmEna => {
                cq.consumed(db.index, db.epoch).map(|()| None).map_err(|e| e.to_string())?
            }
            _ => match cq.arm(db.index, db.epoch, db.toggle) {
                Ok(cn) => cn,
                Err(e @ ArmError::StaleToggle { .. }) => return Err(e.to_string()),
                Err(e) => return Err(e.to_string()),
            },
        };
        if let Some(cn) = cn {
            self.notify(now, nq, cn, env);
        }
        // Room may have appeared for TX rings that stopped on this ring.
        let blocked: Vec<u16> = std::mem::take(&mut self.blocked_tx).into_iter().collect();
        for tx in blocked {
            self.service_tx(now, tx, env);
        }
        Ok(())
    }

    fn nq_doorbell(&mut self, db: &L2Doorbell, env: &mut Env<'_>) -> Result<(), String> {
        let arm = match db.kind {
            L2DbKind::NqArm => Some(true),
            L2DbKind::NqMask => Some(false),
            _ => None,
        };
        let nq = match self.ring(db.xid, env.fw) {
            Some(L2Ring::Nq(nq)) => nq,
            Some(_) => return Err("not an NQ".into()),
            None => return Err("no such ring".into()),
        };
        let (irq, failed) = nq.doorbell(env.mem, db.index, db.epoch, arm).map_err(|e| e.to_string())?;
        let vector = nq.vector;
        self.counters.nq_lost += failed as u64;
        if irq {
            self.raise(vector);
        }
        Ok(())
    }

    fn raise(&mut self, vector: u16) {
        self.counters.interrupts += 1;
        self.irqs.push(vector);
    }

    /// Post a CQ notification to NQ `nq`.
    pub(super) fn notify(&mut self, now: Duration, nq: Option<u16>, cn: [u8; ENTRY_BYTES], env: &mut Env<'_>) {
        let Some(nq) = nq else { return };
        self.counters.notifications += 1;
        self.post_nq(now, nq, cn, env);
    }

    /// Write `entry` to NQ `id`, raising its vector when armed.
    fn post_nq(&mut self, now: Duration, id: u16, entry: [u8; ENTRY_BYTES], env: &mut Env<'_>) {
        let post = match self.ring(id, env.fw) {
            Some(L2Ring::Nq(nq)) => (nq.post(env.mem, entry), nq.vector),
            _ => {
                self.counters.nq_lost += 1;
                self.warn_once(format!("NQ entry for ring {id}, which is not an allocated NQ, lost"));
                return;
            }
        };
        match post {
            (NqPost::Written { irq: true }, vector) => self.raise(vector),
            (NqPost::Written { irq: false } | NqPost::Queued, _) => {}
            (NqPost::Lost, _) => {
                self.counters.nq_lost += 1;
                self.warn_once(format!("NQ {id}: backlog full, entries lost"));
            }
            (NqPost::DmaFailed(e), _) => {
                self.counters.nq_lost += 1;
                self.counters.dma_errors += 1;
                self.warn_once(format!("NQ {id}: entry not written: {e}"));
                if let crate::roce::pages::PagesError::Dma(error) = e {
                    env.rec.record(now, EventKind::DmaFailed { during: "writing an NQ entry", error });
                }
            }
        }
    }

    /// Write a completion record to completion ring `id` (its notification goes out when due);
    /// false when it could not be written.
    pub(super) fn write_cq(
        &mut self,
        now: Duration,
        id: u16,
        entries: &[[u8; ENTRY_BYTES]],
        env: &mut Env<'_>,
    ) -> bool {
        // Pending completions may start a coalescing timer.
        self.quiet = None;
        let coal = env.fw.l2.coalescing.get(&id).copied();
        let cq = match self.ring(id, env.fw) {
            Some(L2Ring::Cq(cq)) => cq,
            _ => {
                self.counters.cmpl_lost += 1;
                self.warn_once(format!("completion for ring {id}, which is not an allocated L2 completion ring, lost"));
                return false;
            }
        };
        if cq.ring.room() < entries.len() as u32 {
            self.counters.cmpl_lost += 1;
            self.warn_once(format!("completion ring {id} full: completion lost"));
            return false;
        }
        let nq = cq.nq;
        match cq.write(env.mem, now, entries, coal.as_ref()) {
            Ok(cn) => {
                if let Some(cn) = cn {
                    self.notify(now, nq, cn, env);
                }
                true
            }
            Err(e) => {
                self.counters.cmpl_lost += 1;
                self.counters.dma_errors += 1;
                self.warn_once(format!("completion ring {id}: completion not written: {e}"));
                false
            }
        }
    }

    /// Room left in completion ring `id` (0 if it is not one).
    pub(super) fn cq_room(&mut self, id: u16, fw: &FwState) -> u32 {
        match self.ring(id, fw) {
            Some(L2Ring::Cq(cq)) => cq.ring.room(),
            _ => 0,
        }
    }

    /// Carry out a firmware notice.
    fn notice(&mut self, now: Duration, n: Notice, env: &mut Env<'_>) {
        match n {
            Notice::HwrmDone { cmpl_ring, seq_id } => {
                let mut c = HwrmCmpl::new_zeroed();
                c.type_ = HwrmCmpl::TYPE_HWRM_DONE.into();
                c.sequence_id = seq_id.into();
                let entry: [u8; ENTRY_BYTES] = c.as_bytes().try_into().expect("16 bytes");
                if self.write_cq(now, cmpl_ring, &[entry], env) {
                    self.counters.hwrm_done += 1;
                }
            }
            Notice::ClearPortCounters => self.port = PortCounters::default(),
            Notice::ClearStatCtx { id } => self.stats.zero(id),
            Notice::Async { event_id, data1, data2, timestamp } => {
                let Some(cr) = env.fw.l2.async_event_cr else { return };
                let mut c = HwrmAsyncEventCmpl::new_zeroed();
                c.type_ = HwrmAsyncEventCmpl::TYPE_HWRM_ASYNC_EVENT.into();
                c.event_id = event_id.into();
                c.event_data1 = data1.into();
                c.event_data2 = data2.into();
                c.timestamp_lo = timestamp.0;
                c.timestamp_hi = timestamp.1.into();
                let entry: [u8; ENTRY_BYTES] = c.as_bytes().try_into().expect("16 bytes");
                let is_nq = env.fw.rings.get(&cr).is_some_and(|r| r.ty == RingType::Nq);
                if is_nq {
                    self.post_nq(now, cr, entry, env);
                    self.counters.async_events += 1;
                } else if self.write_cq(now, cr, &[entry], env) {
                    self.counters.async_events += 1;
                }
                tracing::debug!(event_id, data1, data2, "async event sent");
            }
        }
    }
}

/// The header's name of an L2 doorbell type, for events.
fn l2_type_name(k: L2DbKind) -> &'static str {
    match k {
        L2DbKind::Sq => "SQ",
        L2DbKind::Srq => "SRQ",
        L2DbKind::Cq => "CQ",
        L2DbKind::CqArmAll => "CQ_ARMALL",
        L2DbKind::CqArmSe => "CQ_ARMSE",
        L2DbKind::CqArmEna => "CQ_ARMENA",
        L2DbKind::Nq => "NQ",
        L2DbKind::NqArm => "NQ_ARM",
        L2DbKind::NqMask => "NQ_MASK",
        L2DbKind::Null => "NULL",
        L2DbKind::Other(_) => "OTHER",
    }
}
