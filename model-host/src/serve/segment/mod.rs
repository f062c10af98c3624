//! `bnxt-model segment`: a virtual Ethernet segment other processes join over a UNIX socket, in
//! QEMU's stream-netdev framing ([`crate::stream`]): `bnxt-model serve --segment PATH`
//! processes and QEMU guests' own NICs (`-netdev stream,server=off,addr.type=unix,addr.path=PATH`)
//! alike. Each connection is a port of the model's learning switch ([`bnxt_model::net::switch`]),
//! which forwards each frame to the port its destination was learned on, or floods it; `--pcap`
//! records every frame that enters the switch.
//!
//! With `--control SOCKET` the hub takes requests on a control channel of its own
//! ([`crate::serve::ctl::hub`], handled in `control`): a wire plan every frame entering the
//! hub passes through (the model's fault stage, between the ports and the switch, as in the
//! in-process world), a port's cable pulled and plugged back, its state.
//!
//! A peer whose stream is not frames (a length of 0 or above the largest frame) is disconnected
//! with a message; a peer that does not read loses frames once [`MAX_BACKLOG`] bytes wait for it
//! (counted), rather than stalling the others. The hub runs until SIGTERM or SIGINT (exit 0).
//!
//! The backlog limit is far above what a peer that reads ever has waiting: a model NIC sends a
//! message of megabytes in one burst (its frames fall due at 400 Gb/s, faster than a process
//! forwards them), and a frame lost to a full backlog would be a loss on a wire that has no
//! faults. What waits is written as the peer takes it, without copying the rest.

mod control;

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ServeError;
use super::clock::ExecClock;
use super::ctl::hub::{HubRequest, PortState};
use super::ctl::server::ControlServer;
use super::signals::{StopSignals, Stopper};
use super::socket::Listener;
use crate::pcap::PcapTap;
use crate::stream::{FrameDecoder, Outbox, READS_A_TURN};
use bnxt_model::faults::WirePlan;
use bnxt_model::net::pool::FramePool;
use bnxt_model::net::switch::{Delivery, LinkTiming, PortId, Switch};

/// Most bytes kept waiting for a peer that does not read; frames beyond are dropped.
pub const MAX_BACKLOG: usize = 256 << 20;

/// What the hub does.
#[derive(Debug, Clone)]
pub struct SegmentOptions {
    /// Where peers connect.
    pub socket: PathBuf,
    /// Where to record the frames, if anywhere.
    pub pcap: Option<PathBuf>,
    /// The control socket to listen on (`--control`), if any.
    pub control: Option<PathBuf>,
    /// Stop on SIGTERM/SIGINT (off when run from a thread of a program with its own handlers).
    pub catch_signals: bool,
}

/// What a run of the hub did (and, in its control channel's `state`, has done so far).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SegmentSummary {
    /// Peers that connected.
    pub peers: u64,
    /// Frames received from peers.
    pub frames_in: u64,
    /// Frames written to peers.
    pub frames_out: u64,
    /// Frames dropped: too short for Ethernet, or for a peer that did not read.
    pub dropped: u64,
    /// Frames dropped at a port whose cable was pulled (`ctl … link PORT down`).
    pub dropped_link_down: u64,
    /// Peers disconnected for sending something other than frames.
    pub garbage_peers: u64,
}

struct Peer {
    stream: UnixStream,
    decoder: FrameDecoder,
    outbox: Outbox,
    /// Its port's cable and counters (`backlog_bytes` is filled in when asked).
    port: PortState,
}

/// Run the hub until a signal.
pub fn segment(options: &SegmentOptions) -> Result<SegmentSummary, ServeError> {
    Hub::bind(options)?.run()
}

/// A hub listening, not yet running: [`Hub::stopper`] gives a handle that stops it from another
/// thread (a test's), [`Hub::run`] runs it.
pub struct Hub {
    listener: Listener,
    control: Option<ControlServer>,
    signals: StopSignals,
    state: HubCore,
}

/// What the hub holds while it runs, and what its control channel acts on.
struct HubCore {
    switch: Switch,
    tap: Option<PcapTap>,
    peers: BTreeMap<PortId, Peer>,
    summary: SegmentSummary,
    /// The wire plan frames pass through, with its seed.
    wire: Option<(WirePlan, u64)>,
    /// The hub's time (the executor clock, run ahead: `super::clock::RUN_AHEAD`).
    clock: ExecClock,
    /// Buffers of frames written to their peers, which frames read next are copied into.
    pool: FramePool,
    /// The deliveries of one turn (kept for its capacity).
    deliveries: Vec<Delivery>,
}

impl Hub {
    /// Listen at `options.socket` (mode 0600), and at `options.control` for control requests
    /// (bound first, so that a peer that finds the hub's socket finds its control socket too),
    /// and open the pcap, if any.
    pub fn bind(options: &SegmentOptions) -> Result<Hub, ServeError> {
        let signals = StopSignals::install(options.catch_signals).map_err(ServeError::Signals)?;
        let control = ControlServer::listen(options.control.as_deref())?;
        let listener = Listener::bind(&options.socket)?;
        let mut switch = Switch::new(LinkTiming::default());
        let tap = match &options.pcap {
            Some(path) => {
                switch.start_capture();
                Some(PcapTap::create(path).map_err(|e| ServeError::Pcap(e.to_string()))?)
            }
            None => None,
        };
        let state = HubCore {
            switch,
            tap,
            peers: BTreeMap::new(),
            summary: SegmentSummary::default(),
            wire: None,
            clock: ExecClock::new(),
            pool: FramePool::new(),
            deliveries: Vec::new(),
        };
        Ok(Hub { listener, control, signals, state })
    }

    /// A handle that stops [`Hub::run`] as SIGTERM would.
    pub fn stopper(&self) -> Result<Stopper, ServeError> {
        self.signals.stopper().map_err(ServeError::Signals)
    }

    /// Run until a signal (or the [`Hub::stopper`]); the pcap is finished on the way out.
    pub fn run(self) -> Result<SegmentSummary, ServeError> {
        let Hub { listener, mut control, mut signals, mut state } = self;
        tracing::info!(socket = %listener.path().display(), "segment hub listening");
        // A frame is due at the other port 1 µs after it came in: wake then, not 50 µs later.
        bnxt_pci::precise_timers();
        state.clock = ExecClock::new();
        loop {
            super::log_limit::report_suppressed();
            let ready = wait(&listener, &signals, &state, control.as_ref())?;
            if ready.signal && signals.arrived() {
                break;
            }
            if ready.listener {
                state.accept(&listener);
            }
            for id in ready.peers {
                state.read(id);
            }
            if let Some(ctl) = control.as_mut()
                && ready.control.iter().any(|&r| r)
            {
                let clients = ctl.clients();
                ctl.serve(&ready.control, &mut |request: HubRequest| state.handle(request, clients));
            }
            state.deliver();
        }
        state.finish()
    }
}

/// What [`wait`] found ready.
struct Ready {
    signal: bool,
    listener: bool,
    /// The peers with input (or room for their backlog).
    peers: Vec<PortId>,
    /// The control socket's descriptors (listener first, then its clients).
    control: Vec<bool>,
}

/// Wait for input, a frame falling due, or a signal.
fn wait(
    listener: &Listener,
    signals: &StopSignals,
    state: &HubCore,
    control: Option<&ControlServer>,
) -> Result<Ready, ServeError> {
    let timeout = state.clock.timeout(state.switch.next_deadline());
    let ids: Vec<PortId> = state.peers.keys().copied().collect();
    let mut fds =
        vec![PollFd::from_borrowed_fd(signals.fd(), PollFlags::IN), PollFd::new(listener.listener(), PollFlags::IN)];
    for p in state.peers.values() {
        let flags = if p.outbox.is_empty() { PollFlags::IN } else { PollFlags::IN | PollFlags::OUT };
        fds.push(PollFd::from_borrowed_fd(p.stream.as_fd(), flags));
    }
    let control_at = fds.len();
    if let Some(ctl) = control {
        fds.extend(ctl.poll_fds());
    }
    let ts = timeout.map(|t| Timespec::try_from(t).unwrap_or(Timespec { tv_sec: i64::MAX, tv_nsec: 0 }));
    match poll(&mut fds, ts.as_ref()) {
        Ok(_) | Err(rustix::io::Errno::INTR) => {}
        Err(e) => return Err(ServeError::Poll(e.into())),
    }
    let ready: Vec<bool> = fds.iter().map(|f| !f.revents().is_empty()).collect();
    Ok(Ready {
        signal: ready[0],
        listener: ready[1],
        peers: ids.iter().zip(&ready[2..control_at]).filter(|(_, r)| **r).map(|(id, _)| *id).collect(),
        control: ready[control_at..].to_vec(),
    })
}

impl HubCore {
    fn now(&self) -> Duration {
        self.clock.ahead()
    }

    /// Take every peer waiting to join.
    fn accept(&mut self, listener: &Listener) {
        while let Ok((stream, _)) = listener.listener().accept() {
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            let port = self.switch.add_port();
            self.summary.peers += 1;
            tracing::info!(%port, "peer joined the segment");
            let state = PortState { port: port.0, link_up: true, ..PortState::default() };
            self.peers.insert(
                port,
                Peer { stream, decoder: FrameDecoder::new(), outbox: Outbox::new(MAX_BACKLOG), port: state },
            );
        }
    }

    /// Read what peer `id` sent, and write what waits for it; forget it when it is gone or sent
    /// garbage.
    fn read(&mut self, id: PortId) {
        let now = self.now();
        let Some(peer) = self.peers.get_mut(&id) else { return };
        match read_peer(id, peer, &mut self.switch, now, &mut self.summary, &mut self.pool) {
            Ok(()) => flush(peer, &mut self.pool),
            Err(why) => {
                tracing::info!(port = %id, "peer left the segment: {why}");
                self.peers.remove(&id);
                self.switch.remove_port(id);
            }
        }
    }

    /// Hand the peers the frames due by now, and the pcap what entered the switch.
    fn deliver(&mut self) {
        // Every frame due goes into its peer's backlog, then each backlog is written at once.
        let mut written = Vec::new();
        let mut deliveries = std::mem::take(&mut self.deliveries);
        self.switch.poll_into(self.now(), &mut deliveries);
        for d in deliveries.drain(..) {
            let Some(peer) = self.peers.get_mut(&d.port) else { continue };
            if !peer.port.link_up {
                peer.port.dropped_link_down += 1;
                self.summary.dropped_link_down += 1;
                continue;
            }
            if let Err(frame) = peer.outbox.push(d.frame) {
                self.pool.give(frame);
                peer.port.dropped_backlog += 1;
                self.summary.dropped += 1;
                continue;
            }
            peer.port.frames_out += 1;
            self.summary.frames_out += 1;
            if !written.contains(&d.port) {
                written.push(d.port);
            }
        }
        self.deliveries = deliveries;
        for port in written {
            if let Some(peer) = self.peers.get_mut(&port) {
                flush(peer, &mut self.pool);
            }
        }
        for event in self.switch.drain_fault_events() {
            tracing::debug!("wire fault: {event}");
        }
        if let Some(tap) = self.tap.as_mut() {
            let mut captured = Vec::new();
            self.switch.drain_captured(&mut captured);
            tap.record_captured(&mut captured);
        }
    }

    /// Finish the pcap; the run's summary.
    fn finish(mut self) -> Result<SegmentSummary, ServeError> {
        if let Some(tap) = self.tap.take() {
            let frames = tap.finish().map_err(|e| ServeError::Pcap(e.to_string()))?;
            tracing::info!(frames, "pcap written");
        }
        super::log_limit::report_all_suppressed();
        tracing::info!(summary = ?self.summary, "segment hub stopped");
        Ok(self.summary)
    }
}

/// Read what `peer` sent; `Err(why)` when it is gone or sent garbage. Frames from a port whose
/// cable is out are counted and dropped.
fn read_peer(
    id: PortId,
    peer: &mut Peer,
    switch: &mut Switch,
    now: Duration,
    summary: &mut SegmentSummary,
    pool: &mut FramePool,
) -> Result<(), String> {
    // Bounded (see READS_A_TURN): what the peer sent beyond is read next turn.
    for _ in 0..READS_A_TURN {
        match peer.decoder.read_from(&peer.stream) {
            Ok(0) => return Err("disconnected".into()),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        }
        loop {
            let frame = match peer.decoder.next_frame_with(|| pool.take()) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => {
                    summary.garbage_peers += 1;
                    tracing::error!(port = %id, "not a frame stream, disconnecting: {e}");
                    return Err(e.to_string());
                }
            };
            summary.frames_in += 1;
            peer.port.frames_in += 1;
            if !peer.port.link_up {
                peer.port.dropped_link_down += 1;
                summary.dropped_link_down += 1;
            } else if let Err(e) = switch.send(now, id, frame) {
                summary.dropped += 1;
                tracing::warn!("frame dropped: {e}");
            }
        }
    }
    Ok(())
}

/// Write as much of the peer's backlog as it takes now, the buffers of the frames written going
/// back to `pool` (a peer whose socket fails is found gone when it is next read).
fn flush(peer: &mut Peer, pool: &mut FramePool) {
    let _ = peer.outbox.write_to(&peer.stream, |frame| pool.give(frame));
}
