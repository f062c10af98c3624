//! `bnxt-model segment`: a virtual Ethernet segment other processes join over a UNIX socket, in
//! QEMU's stream-netdev framing ([`crate::stream`]): `bnxt-model serve --segment PATH`
//! processes and QEMU guests' own NICs (`-netdev stream,server=off,addr.type=unix,addr.path=PATH`)
//! alike. Each connection is a port of the model's learning switch ([`bnxt_model::net::switch`]),
//! which forwards each frame to the port its destination was learned on, or floods it; `--pcap`
//! records every frame that enters the switch.
//!
//! A peer whose stream is not frames (a length of 0 or above the largest frame) is disconnected
//! with a message; a peer that does not read loses frames once [`MAX_BACKLOG`] bytes wait for it
//! (counted), rather than stalling the others. The hub runs until SIGTERM or SIGINT (exit 0).
//!
//! The backlog limit is far above what a peer that reads ever has waiting: a model NIC sends a
//! message of megabytes in one burst (its frames fall due at 400 Gb/s, faster than a process
//! forwards them), and a frame lost to a full backlog would be a loss on a wire that has no
//! faults. What waits is written as the peer takes it, without copying the rest.

use std::collections::HashMap;
use std::io::{ErrorKind, Read};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};

use super::ServeError;
use super::clock::ExecClock;
use super::signals::{StopSignals, Stopper};
use super::socket::Listener;
use crate::pcap::PcapTap;
use crate::stream::{FrameDecoder, Outbox};
use bnxt_model::net::switch::{LinkTiming, PortId, Switch};

/// Most bytes kept waiting for a peer that does not read; frames beyond are dropped.
pub const MAX_BACKLOG: usize = 256 << 20;

/// Bytes read from a peer's socket at a time.
pub const READ_CHUNK: usize = 1 << 16;

/// What the hub does.
#[derive(Debug, Clone)]
pub struct SegmentOptions {
    /// Where peers connect.
    pub socket: PathBuf,
    /// Where to record the frames, if anywhere.
    pub pcap: Option<PathBuf>,
    /// Stop on SIGTERM/SIGINT (off when run from a thread of a program with its own handlers).
    pub catch_signals: bool,
}

/// What a run of the hub did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SegmentSummary {
    /// Peers that connected.
    pub peers: u64,
    /// Frames received from peers.
    pub frames_in: u64,
    /// Frames written to peers.
    pub frames_out: u64,
    /// Frames dropped: too short for Ethernet, or for a peer that did not read.
    pub dropped: u64,
    /// Peers disconnected for sending something other than frames.
    pub garbage_peers: u64,
}

struct Peer {
    stream: UnixStream,
    decoder: FrameDecoder,
    outbox: Outbox,
}

/// Run the hub until a signal.
pub fn segment(options: &SegmentOptions) -> Result<SegmentSummary, ServeError> {
    Hub::bind(options)?.run()
}

/// A hub listening, not yet running: [`Hub::stopper`] gives a handle that stops it from another
/// thread (a test's), [`Hub::run`] runs it.
pub struct Hub {
    listener: Listener,
    signals: StopSignals,
    switch: Switch,
    tap: Option<PcapTap>,
}

impl Hub {
    /// Listen at `options.socket` (mode 0600) and open the pcap, if any.
    pub fn bind(options: &SegmentOptions) -> Result<Hub, ServeError> {
        let listener = Listener::bind(&options.socket)?;
        let signals = StopSignals::install(options.catch_signals).map_err(ServeError::Signals)?;
        let mut switch = Switch::new(LinkTiming::default());
        let tap = match &options.pcap {
            Some(path) => {
                switch.start_capture();
                Some(PcapTap::create(path).map_err(|e| ServeError::Pcap(e.to_string()))?)
            }
            None => None,
        };
        Ok(Hub { listener, signals, switch, tap })
    }

    /// A handle that stops [`Hub::run`] as SIGTERM would.
    pub fn stopper(&self) -> Result<Stopper, ServeError> {
        self.signals.stopper().map_err(ServeError::Signals)
    }

    /// Run until a signal (or the [`Hub::stopper`]); the pcap is finished on the way out.
    pub fn run(self) -> Result<SegmentSummary, ServeError> {
        let Hub { listener, mut signals, mut switch, mut tap } = self;
        run_hub(&listener, &mut signals, &mut switch, &mut tap)
    }
}

fn run_hub(
    listener: &Listener,
    signals: &mut StopSignals,
    switch: &mut Switch,
    tap: &mut Option<PcapTap>,
) -> Result<SegmentSummary, ServeError> {
    tracing::info!(socket = %listener.path().display(), "segment hub listening");
    // A frame is due at the other port 1 µs after it came in: wake then, not 50 µs later.
    bnxt_pci::precise_timers();
    let clock = ExecClock::new();
    let mut peers: HashMap<PortId, Peer> = HashMap::new();
    let mut summary = SegmentSummary::default();
    let mut buf = vec![0u8; READ_CHUNK];
    let mut captured = Vec::new();
    loop {
        super::log_limit::report_suppressed();
        // The switch's time is the executor clock's, run ahead (`super::clock::RUN_AHEAD`).
        let timeout = clock.timeout(switch.next_deadline());
        let ids: Vec<PortId> = peers.keys().copied().collect();
        let mut fds = vec![
            PollFd::from_borrowed_fd(signals.fd(), PollFlags::IN),
            PollFd::new(listener.listener(), PollFlags::IN),
        ];
        for id in &ids {
            let p = &peers[id];
            let flags = if p.outbox.is_empty() { PollFlags::IN } else { PollFlags::IN | PollFlags::OUT };
            fds.push(PollFd::from_borrowed_fd(p.stream.as_fd(), flags));
        }
        let ts = timeout.map(|t| Timespec::try_from(t).unwrap_or(Timespec { tv_sec: i64::MAX, tv_nsec: 0 }));
        match poll(&mut fds, ts.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(ServeError::Poll(e.into())),
        }
        let ready: Vec<bool> = fds.iter().map(|f| !f.revents().is_empty()).collect();
        drop(fds);
        let now = clock.ahead();
        if ready[0] && signals.arrived() {
            break;
        }
        if ready[1] {
            while let Ok((stream, _)) = listener.listener().accept() {
                if stream.set_nonblocking(true).is_err() {
                    continue;
                }
                let port = switch.add_port();
                summary.peers += 1;
                tracing::info!(%port, "peer joined the segment");
                peers.insert(port, Peer { stream, decoder: FrameDecoder::new(), outbox: Outbox::new(MAX_BACKLOG) });
            }
        }
        for (i, id) in ids.iter().enumerate() {
            if !ready[i + 2] {
                continue;
            }
            let gone = match peers.get_mut(id) {
                Some(peer) => read_peer(*id, peer, switch, now, &mut summary, &mut buf).err(),
                None => None,
            };
            if let Some(why) = gone {
                tracing::info!(port = %id, "peer left the segment: {why}");
                peers.remove(id);
                switch.remove_port(*id);
            } else if let Some(peer) = peers.get_mut(id) {
                flush(peer);
            }
        }
        // Every frame due goes into its peer's backlog, then each backlog is written at once.
        let mut written = Vec::new();
        for d in switch.poll(now) {
            let Some(peer) = peers.get_mut(&d.port) else { continue };
            if !peer.outbox.push(&d.frame) {
                summary.dropped += 1;
                continue;
            }
            summary.frames_out += 1;
            if !written.contains(&d.port) {
                written.push(d.port);
            }
        }
        for port in written {
            if let Some(peer) = peers.get_mut(&port) {
                flush(peer);
            }
        }
        if let Some(tap) = tap.as_mut() {
            switch.drain_captured(&mut captured);
            tap.record_captured(&mut captured);
        }
    }
    if let Some(tap) = tap.take() {
        let frames = tap.finish().map_err(|e| ServeError::Pcap(e.to_string()))?;
        tracing::info!(frames, "pcap written");
    }
    super::log_limit::report_all_suppressed();
    tracing::info!(?summary, "segment hub stopped");
    Ok(summary)
}

/// Read what `peer` sent; `Err(why)` when it is gone or sent garbage.
fn read_peer(
    id: PortId,
    peer: &mut Peer,
    switch: &mut Switch,
    now: Duration,
    summary: &mut SegmentSummary,
    buf: &mut [u8],
) -> Result<(), String> {
    loop {
        match peer.stream.read(buf) {
            Ok(0) => return Err("disconnected".into()),
            Ok(n) => peer.decoder.push(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    loop {
        match peer.decoder.next_frame() {
            Ok(Some(frame)) => {
                summary.frames_in += 1;
                if let Err(e) = switch.send(now, id, frame) {
                    summary.dropped += 1;
                    tracing::warn!("frame dropped: {e}");
                }
            }
            Ok(None) => return Ok(()),
            Err(e) => {
                summary.garbage_peers += 1;
                tracing::error!(port = %id, "not a frame stream, disconnecting: {e}");
                return Err(e.to_string());
            }
        }
    }
}

/// Write as much of the peer's backlog as it takes now (a peer whose socket fails is found gone
/// when it is next read).
fn flush(peer: &mut Peer) {
    let _ = peer.outbox.write_to(&peer.stream);
}
