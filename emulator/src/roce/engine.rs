//! The RoCE engine of one NIC: the command channel, the notification queues, the RoCE objects
//! and the data path, driven by the device.
//!
//! Inputs: CMDQ triggers ([`RoceEngine::trigger`]), doorbell stores
//! ([`RoceEngine::doorbell`]), frames from the wire ([`RoceEngine::receive`]) and the passage of
//! time ([`RoceEngine::advance`]). Triggers and doorbells are queued with their time and taken
//! by the next `advance` (the executor runs it at once: [`RoceEngine::next_deadline`] is then
//! the store's time), so they are handled in the order they were stored. Outputs: DMA through
//! the view `advance` and `receive` are given, frames ([`RoceEngine::drain_wire_frames`]), MSI-X
//! vectors ([`RoceEngine::drain_interrupts`]), events, and the time of the next work.
//!
//! Commands act when they are taken; their completions reach the CREQ
//! [`RCFW_LATENCY`] later, in command order, subject to the CREQ's
//! flow control.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use bnxt_hsi::roce::rcfw::{CREQ_TYPE_QP_EVENT, CreqStatus};
use tracing::warn;

use crate::events::{EventKind, Recorder};
use crate::firmware::state::FwState;
use crate::host_memory::HostMemory;
use crate::net::pool::FramePool;
use crate::net::sealed::WireFrame;

use super::caps::RCFW_LATENCY;
use super::channel::Channel;
use super::cmd::faults::Injected;
use super::cmd::{self, Cmd, CmdCtx, Support};
use super::counters::RoceCounters;
use super::nq::{NqSet, Posted};
use super::state::RoceState;
use super::timers::QpTimers;

/// What the engine needs from the device for one call.
pub struct Env<'a> {
    /// The function's DMA view.
    pub mem: &'a dyn HostMemory,
    /// The HWRM firmware's state.
    pub fw: &'a FwState,
    /// Where events go.
    pub rec: &'a mut Recorder,
}

/// A store waiting for the next `advance`.
#[derive(Debug, Clone)]
pub(super) enum Input {
    /// The CMDQ trigger, with the mailbox as it stood.
    Trigger([u8; 16]),
    /// A 64-bit doorbell at a BAR2 offset.
    Doorbell {
        /// BAR2 offset.
        offset: u64,
        /// Value.
        value: u64,
    },
}

/// A CREQ entry due at a time.
#[derive(Debug, Clone)]
pub(super) struct CreqEntry {
    pub(super) bytes: [u8; 16],
    pub(super) reason: String,
}

/// The RoCE engine.
#[derive(Debug, Clone)]
pub struct RoceEngine {
    pub(super) mac: [u8; 6],
    pub(super) channel: Channel,
    pub(super) nqs: NqSet,
    pub(super) st: RoceState,
    pub(super) resets_seen: Option<u64>,
    pub(super) inputs: VecDeque<(Duration, Input)>,
    pub(super) creq_due: BTreeMap<(Duration, u64), CreqEntry>,
    pub(super) seq: u64,
    /// The QPs' transport deadlines.
    pub(super) timers: QpTimers,
    pub(super) frames: Vec<WireFrame>,
    /// Buffers the transport builds frames in (see [`RoceEngine::frame_pool`]).
    pub(super) pool: FramePool,
    /// Frames to the NIC itself, due back at a time.
    pub(super) loopback: VecDeque<(Duration, WireFrame)>,
    pub(super) irqs: Vec<u16>,
    /// Completions a QP's service collected, waiting to become CQEs (kept between calls).
    pub(super) done: Vec<super::datapath::Done>,
    pub(super) counters: RoceCounters,
    pub(super) data_path_events: bool,
    pub(super) warned: BTreeSet<String>,
    /// QP error notifications to post once the completions before them are written:
    /// (QP, requester reason, responder reason).
    pub(super) pending_qp_error: Vec<(u32, u8, u8)>,
}

impl RoceEngine {
    /// The engine of the NIC with MAC `mac`.
    pub fn new(mac: [u8; 6]) -> RoceEngine {
        RoceEngine {
            mac,
            channel: Channel::default(),
            nqs: NqSet::default(),
            st: RoceState::default(),
            resets_seen: None,
            inputs: VecDeque::new(),
            creq_due: BTreeMap::new(),
            seq: 0,
            timers: QpTimers::default(),
            frames: Vec::new(),
            pool: FramePool::new(),
            loopback: VecDeque::new(),
            irqs: Vec::new(),
            done: Vec::new(),
            counters: RoceCounters::default(),
            data_path_events: true,
            warned: BTreeSet::new(),
            pending_qp_error: Vec::new(),
        }
    }

    /// Function reset: every object, ring and queued piece of work goes; counters stay.
    pub fn reset(&mut self) {
        self.channel.reset();
        self.nqs.clear();
        self.st.clear();
        self.inputs.clear();
        self.creq_due.clear();
        self.timers.clear();
        self.frames.clear();
        self.loopback.clear();
    }

    /// Record per-doorbell, per-CQE and per-frame events (on by default; a benchmark turns
    /// them off).
    pub fn set_data_path_events(&mut self, on: bool) {
        self.data_path_events = on;
    }

    /// The CMDQ trigger was written at `now` with the mailbox holding `mailbox`.
    pub fn trigger(&mut self, now: Duration, mailbox: [u8; 16]) {
        self.inputs.push_back((now, Input::Trigger(mailbox)));
    }

    /// When the engine next has work.
    pub fn next_deadline(&self) -> Option<Duration> {
        use crate::device::earliest;
        let queued = earliest(self.inputs.front().map(|(t, _)| *t), self.loopback.front().map(|(t, _)| *t));
        earliest(earliest(queued, self.creq_due.keys().next().map(|(t, _)| *t)), self.timers.next())
    }

    /// Whether a queued input (a doorbell or a command trigger) is due at or before `now`.
    pub fn has_input_due(&self, now: Duration) -> bool {
        self.inputs.front().is_some_and(|(t, _)| *t <= now)
    }

    /// The buffers the engine builds frames in. The executor gives back the buffers of frames
    /// it delivered ([`FramePool::give`]), so that the next frames are built without allocating
    /// and zero-filling new ones; it may also lend one pool to every NIC in turn
    /// (`std::mem::swap`), since on a segment the frames one NIC sends arrive at another.
    pub fn frame_pool(&mut self) -> &mut FramePool {
        &mut self.pool
    }

    /// Move the frames to put on the wire to the end of `out`, oldest first, sealed when the
    /// transport built them (see [`crate::net::sealed`]).
    pub fn drain_wire_frames(&mut self, out: &mut Vec<WireFrame>) {
        out.append(&mut self.frames);
    }

    /// Move the MSI-X vectors raised, in order, to the end of `out`.
    pub fn drain_interrupts(&mut self, out: &mut Vec<u16>) {
        out.append(&mut self.irqs);
    }

    /// Counters.
    pub fn counters(&self) -> &RoceCounters {
        &self.counters
    }

    /// The objects (for inspection).
    pub fn state(&self) -> &RoceState {
        &self.st
    }

    /// The command channel (for inspection).
    pub fn channel(&self) -> &Channel {
        &self.channel
    }

    /// The NQ rings (for inspection).
    pub fn nqs(&self) -> &NqSet {
        &self.nqs
    }

    /// Warn once per distinct message.
    pub(super) fn warn_once(&mut self, msg: String) {
        if self.warned.insert(msg.clone()) {
            warn!("{msg}");
        }
    }

    /// Drop everything when the HWRM firmware freed the function's resources (FUNC_RESET).
    fn follow_resets(&mut self, fw: &FwState) {
        match self.resets_seen {
            Some(n) if n != fw.resets => {
                self.reset();
                self.resets_seen = Some(fw.resets);
            }
            None => self.resets_seen = Some(fw.resets),
            _ => {}
        }
    }

    /// Run everything due at or before `now`.
    pub fn advance(&mut self, now: Duration, env: &mut Env<'_>) {
        self.follow_resets(env.fw);
        while self.inputs.front().is_some_and(|(t, _)| *t <= now) {
            let (at, input) = self.inputs.pop_front().expect("checked");
            match input {
                Input::Trigger(mailbox) => self.take_commands(at, &mailbox, env),
                Input::Doorbell { offset, value } => self.apply_doorbell(at, offset, value, env),
            }
        }
        while let Some(entry) = self.creq_due.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((at, _), e) = entry.remove_entry();
            self.post_creq(at, e, env);
        }
        while self.loopback.front().is_some_and(|(t, _)| *t <= now) {
            let (at, frame) = self.loopback.pop_front().expect("checked");
            self.receive_wire(at, &frame, env);
            self.pool.give(frame.into_vec());
        }
        while let Some(qpn) = self.timers.pop_due(now) {
            if let Some(tr) = self.st.qps.get_mut(&qpn).and_then(|q| q.transport.as_mut()) {
                tr.on_timer(now);
            }
            self.st.dirty.insert(qpn);
        }
        self.service_dirty(now, env);
        self.collect_irqs(now, env.rec);
    }

    /// Move raised vectors from the NQs to the output, recording each.
    #[inline]
    pub(super) fn collect_irqs(&mut self, now: Duration, rec: &mut Recorder) {
        if self.nqs.has_irqs() {
            self.move_irqs(now, rec);
        }
    }

    /// [`RoceEngine::collect_irqs`] when there are vectors to move (apart, so that the usual
    /// call, with none, costs only the check).
    #[inline(never)]
    fn move_irqs(&mut self, now: Duration, rec: &mut Recorder) {
        for v in self.nqs.take_irqs() {
            self.counters.interrupts += 1;
            rec.record(now, EventKind::Interrupt { vector: v });
            self.irqs.push(v);
        }
    }

    /// A trigger: take every command the producer names, act on each, queue its completion.
    fn take_commands(&mut self, now: Duration, mailbox: &[u8; 16], env: &mut Env<'_>) {
        let cmds = match self.channel.trigger(mailbox, env.mem, env.fw) {
            Ok(c) => c,
            Err(e) => {
                self.counters.channel_errors += 1;
                self.warn_once(format!("RoCE command channel: {e}"));
                env.rec.record(now, EventKind::RoceChannelError { reason: e.to_string() });
                return;
            }
        };
        let cx_limits = env.fw.context.limits();
        for raw in cmds {
            self.counters.commands += 1;
            let mut summary = raw.bytes.as_ref().map(|b| cmd::summary(raw.opcode, b)).unwrap_or_default();
            if raw.tlv.is_some() {
                summary.insert_str(0, "tlv ");
            }
            env.rec.record(
                now,
                EventKind::RoceCommand { opcode: raw.opcode, cookie: raw.cookie, slots: raw.slots, summary },
            );
            // An injected fault (cmd::faults) may swallow, refuse, delay or withhold the answer.
            let injected = self.channel.faults.on_command(now, raw.opcode, env.rec);
            let outcome = match (&injected, &raw.bytes) {
                (Injected::Swallow, _) => continue,
                (Injected::Refuse(r), _) => Err(r.clone()),
                (_, Err(why)) => Err(cmd::Refusal::invalid(why.clone())),
                (_, Ok(bytes)) => {
                    let c = Cmd { opcode: raw.opcode, cookie: raw.cookie, bytes, tlv: raw.tlv };
                    let cx = CmdCtx { mem: env.mem, fw: env.fw, limits: cx_limits };
                    cmd::execute(&mut self.st, &c, &cx)
                }
            };
            for (cq, mem, size) in std::mem::take(&mut self.st.cq_resizes) {
                let Some(cutoff) = self.st.cqs.get(&cq).map(|c| c.cutoff_cqe()) else { continue };
                self.write_cqe(now, cq, 0, cutoff, false, 0, false, env);
                if let Some(c) = self.st.cqs.get_mut(&cq) {
                    c.switch_ring(mem, size);
                }
            }
            for what in std::mem::take(&mut self.st.unsourced) {
                self.counters.accepted_without_source += 1;
                self.warn_once(what);
            }
            let (mut bytes, status, reason) = match outcome {
                Ok(b) => (b, CreqStatus::Success, String::new()),
                Err(r) => {
                    if !matches!(injected, Injected::Refuse(_)) {
                        self.note_refusal(raw.opcode, &r);
                    }
                    ([0u8; 16], r.status, r.reason)
                }
            };
            bytes[0] = CREQ_TYPE_QP_EVENT;
            bytes[1] = status.value();
            bytes[2..4].copy_from_slice(&raw.cookie.to_le_bytes());
            bytes[9] = raw.opcode;
            if injected == Injected::ActSilently {
                tracing::debug!(
                    opcode = raw.opcode,
                    cookie = raw.cookie,
                    "acted on; the completion is withheld (injected fault)"
                );
                continue;
            }
            self.queue_creq(now.saturating_add(RCFW_LATENCY).saturating_add(injected.delay()), bytes, reason);
        }
    }

    fn note_refusal(&mut self, opcode: u8, r: &cmd::Refusal) {
        let name = crate::events::opcode_label(opcode);
        match r.status {
            CreqStatus::NotImplemented | CreqStatus::InvalidCmd if cmd::support(opcode) != Support::Implemented => {
                *self.counters.unimplemented_commands.entry(opcode).or_insert(0) += 1;
                self.warn_once(format!("RoCE command {name} is not implemented by the model ({})", r.status.name()));
            }
            CreqStatus::NotImplemented => {
                self.counters.unimplemented_features += 1;
                self.warn_once(format!("RoCE command {name}: {}", r.reason));
            }
            _ => tracing::debug!(opcode, status = r.status.name(), reason = %r.reason, "RoCE command refused"),
        }
    }

    /// Queue a CREQ entry for `at`.
    pub(super) fn queue_creq(&mut self, at: Duration, bytes: [u8; 16], reason: String) {
        self.seq += 1;
        self.creq_due.insert((at, self.seq), CreqEntry { bytes, reason });
    }

    /// Write a CREQ entry now.
    fn post_creq(&mut self, now: Duration, e: CreqEntry, env: &mut Env<'_>) {
        let Some(ring) = self.channel.creq_ring() else {
            self.counters.creq_lost += 1;
            return;
        };
        let b = e.bytes;
        match self.nqs.post(ring, b, env.fw, env.mem) {
            Posted::Written | Posted::Queued => {}
            lost => {
                self.counters.creq_lost += 1;
                if lost == Posted::DmaFailed {
                    self.counters.dma_errors += 1;
                }
                self.warn_once(format!("CREQ entry lost: {lost:?}"));
            }
        }
        if b[9] >= 0xc0 && b[0] & 0x3f == CREQ_TYPE_QP_EVENT {
            return;
        }
        let status = b[1];
        if let Some(slot) = self.counters.completions_by_status.get_mut(usize::from(status)) {
            *slot += 1;
        }
        let xid = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        let cookie = u16::from_le_bytes([b[2], b[3]]);
        env.rec.record(now, EventKind::RoceCompletion { opcode: b[9], cookie, status, xid, reason: e.reason });
    }
}
