//! The RoCE engine of one NIC, driven by the device: two sides that a reader can open apart.
//!
//! * The command channel ([`super::channel`] reads the CMDQ, [`super::commands`] carries each
//!   command out and answers it on the CREQ [`super::caps::RCFW_LATENCY`] later, in command
//!   order, subject to the CREQ's flow control).
//! * The per-QP data path ([`super::datapath`]): WQEs from the rings, frames to and from the
//!   wire, completions to CQEs, timers; RC QPs through the [`super::transport`], datagram QPs
//!   (UD and the GSI QP, QP1) through [`super::ud`], shared receive queues through
//!   [`super::srq_path`].
//!
//! Both act on what they share ([`super::shared`]: the objects, the NQs, the CREQ entries due and
//! what the engine reports) and post to the host through it ([`super::post`]); doorbells
//! ([`super::doorbell`]) move ring positions and arm CQs, SRQs and NQs on the same objects, and the
//! data path then services the QPs they named.
//!
//! Inputs: CMDQ triggers ([`RoceEngine::trigger`]), doorbell stores
//! ([`RoceEngine::doorbell`]), frames from the wire ([`RoceEngine::receive_wire`]) and the passage
//! of time ([`RoceEngine::advance`]). Triggers and doorbells are queued with their time and taken
//! by the next `advance` (the executor runs it at once: [`RoceEngine::next_deadline`] is then
//! the store's time), so they are handled in the order they were stored. Outputs: DMA through
//! the view `advance` and `receive_wire` are given, frames ([`RoceEngine::drain_wire_frames`]),
//! MSI-X vectors ([`RoceEngine::drain_interrupts`]), events, and the time of the next work.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::device::earliest;
use crate::events::Recorder;
use crate::faults::FaultPlan;
use crate::firmware::state::FwState;
use crate::host_memory::HostMemory;
use crate::net::pool::FramePool;
use crate::net::sealed::WireFrame;

use super::channel::Channel;
use super::cmd::faults::CommandFaults;
use super::counters::RoceCounters;
use super::datapath::DataPath;
use super::doorbell;
use super::nq::NqSet;
use super::shared::Shared;
use super::state::RoceState;

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
enum Input {
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

/// The RoCE engine: the command channel and the data path, with what they share.
#[derive(Debug, Clone)]
pub struct RoceEngine {
    /// Stores (CMDQ triggers, doorbells) waiting for the next `advance`, in the order they came.
    inputs: VecDeque<(Duration, Input)>,
    /// The command channel: the CMDQ, the faults injected into its commands
    /// ([`super::channel`]), and how commands are carried out and answered
    /// ([`super::commands`]).
    channel: Channel,
    /// The per-QP data path, RC, UD and GSI ([`super::datapath`]).
    data: DataPath,
    /// What both act on: the objects, the NQs and the CREQ entries due, and the report
    /// ([`super::shared`]).
    shared: Shared,
    /// The HWRM firmware's function-reset count the engine last followed.
    resets_seen: Option<u64>,
}

impl RoceEngine {
    /// The engine of the NIC with MAC `mac`.
    pub fn new(mac: [u8; 6]) -> RoceEngine {
        RoceEngine {
            inputs: VecDeque::new(),
            channel: Channel::default(),
            data: DataPath::new(mac),
            shared: Shared::default(),
            resets_seen: None,
        }
    }

    /// The engine, applying the RoCE command faults of `plan` that name NIC `nic` (an engine made
    /// by [`RoceEngine::new`] injects none).
    pub fn with_command_faults(mut self, nic: usize, plan: Arc<FaultPlan>) -> RoceEngine {
        self.channel.faults = CommandFaults::new(nic, plan);
        self
    }

    /// The engine's command faults (to arm, clear and list faults while it runs).
    pub fn command_faults_mut(&mut self) -> &mut CommandFaults {
        &mut self.channel.faults
    }

    /// The engine's command faults.
    pub fn command_faults(&self) -> &CommandFaults {
        &self.channel.faults
    }

    /// Function reset: every object, ring and queued piece of work goes; counters stay.
    pub fn reset(&mut self) {
        self.channel.reset();
        self.shared.nqs.clear();
        self.shared.st.clear();
        self.shared.creq.clear();
        self.inputs.clear();
        self.data.reset();
    }

    /// Record per-doorbell, per-CQE and per-frame events (on by default; a benchmark turns
    /// them off).
    pub fn set_data_path_events(&mut self, on: bool) {
        self.shared.report.data_path_events = on;
    }

    /// The CMDQ trigger was written at `now` with the mailbox holding `mailbox`.
    pub fn trigger(&mut self, now: Duration, mailbox: [u8; 16]) {
        self.inputs.push_back((now, Input::Trigger(mailbox)));
    }

    /// A store of `len` bytes (`value`) at BAR2 `offset` at time `now`: a doorbell, queued,
    /// unless it is not where or what a doorbell is ([`super::doorbell`]).
    pub fn doorbell(&mut self, now: Duration, offset: u64, len: usize, value: u64, rec: &mut Recorder) {
        match doorbell::misplaced(offset, len) {
            Some(reason) => doorbell::ignored(&mut self.shared.report, now, offset, value, reason, rec),
            None => self.inputs.push_back((now, Input::Doorbell { offset, value })),
        }
    }

    /// When the engine next has work.
    #[inline]
    pub fn next_deadline(&self) -> Option<Duration> {
        let input = self.inputs.front().map(|(t, _)| *t);
        earliest(earliest(input, self.shared.creq.next_due()), self.data.next_deadline())
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
        self.data.pool()
    }

    /// Move the frames to put on the wire to the end of `out`, oldest first, sealed when the
    /// transport built them (see [`crate::net::sealed`]).
    #[inline]
    pub fn drain_wire_frames(&mut self, out: &mut Vec<WireFrame>) {
        self.data.drain_frames(out);
    }

    /// Move the MSI-X vectors raised, in order, to the end of `out`.
    pub fn drain_interrupts(&mut self, out: &mut Vec<u16>) {
        out.append(&mut self.shared.report.irqs);
    }

    /// Counters.
    pub fn counters(&self) -> &RoceCounters {
        &self.shared.report.counters
    }

    /// The objects (for inspection).
    pub fn state(&self) -> &RoceState {
        &self.shared.st
    }

    /// The command channel (for inspection).
    pub fn channel(&self) -> &Channel {
        &self.channel
    }

    /// The NQ rings (for inspection).
    pub fn nqs(&self) -> &NqSet {
        &self.shared.nqs
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

    /// Run everything due at or before `now`: stores in the order they came, CREQ entries due,
    /// then the data path's looped-back frames, timers and QP services.
    pub fn advance(&mut self, now: Duration, env: &mut Env<'_>) {
        self.follow_resets(env.fw);
        let sh = &mut self.shared;
        while self.inputs.front().is_some_and(|(t, _)| *t <= now) {
            let (at, input) = self.inputs.pop_front().expect("checked");
            match input {
                Input::Trigger(mailbox) => self.channel.take_commands(sh, at, &mailbox, env),
                Input::Doorbell { offset, value } => doorbell::apply(sh, at, offset, value, env),
            }
        }
        while let Some((at, e)) = sh.creq.pop_due(now) {
            self.channel.post_creq(sh, at, e, env);
        }
        self.data.advance(sh, now, env);
        sh.collect_irqs(now, env.rec);
    }

    /// A frame from the wire at `now`, sealed or plain as the switch delivered it.
    pub fn receive_wire(&mut self, now: Duration, frame: &WireFrame, env: &mut Env<'_>) {
        self.data.receive_wire(&mut self.shared, now, frame, env);
    }
}
