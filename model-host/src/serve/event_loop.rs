//! The loop itself (see the module documentation of [`crate::serve`]).

use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use bnxt_vfio_user::transport::{Receiver, TransportError, send_message};
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;

use super::ServeOptions;
use super::clock::ExecClock;
use super::ctl::protocol::{ListedFault, Reply, Request};
use super::ctl::server::ControlServer;
use super::hwrm_log::HwrmLog;
use super::signals::StopSignals;
use super::socket::{Listener, SocketError};
use crate::pcap::PcapTap;
use crate::stream::{FrameDecoder, Outbox, READS_A_TURN};
use crate::vfio_user::nic::ServedNic;
use crate::vfio_user::protocol::{MAX_MESSAGE, Protocol};

/// How long sending a reply may wait for a client that does not read.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The socket could not be set up.
    #[error(transparent)]
    Socket(#[from] SocketError),
    /// The HWRM log could not be created or written.
    #[error("HWRM log {path}: {source}")]
    HwrmLog {
        /// Its path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Signal handlers could not be installed.
    #[error("cannot catch SIGTERM/SIGINT: {0}")]
    Signals(std::io::Error),
    /// Waiting for input failed.
    #[error("poll failed: {0}")]
    Poll(std::io::Error),
    /// The segment hub could not be joined.
    #[error("cannot join the segment at {path}: {source}")]
    Segment {
        /// The hub's socket.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The pcap file could not be written.
    #[error("pcap: {0}")]
    Pcap(String),
    /// The fault plan cannot apply to the served NIC.
    #[error("fault plan: {0}")]
    Faults(#[from] bnxt_model::faults::WirePlanError),
    /// A fault to arm from the start does not hold together.
    #[error("fault {index} of the fault file: {why}")]
    Armed {
        /// Its position (0-based).
        index: usize,
        /// Why.
        why: String,
    },
}

/// Why the server stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The client disconnected (or was disconnected for breaking the protocol).
    ClientGone,
    /// SIGTERM or SIGINT.
    Signal,
}

/// What a run of the server did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeSummary {
    /// Why it stopped.
    pub stop: StopReason,
    /// Clients served.
    pub clients: u64,
    /// Commands handled.
    pub commands: u64,
    /// Commands refused.
    pub refused: u64,
    /// Connections closed because the client broke the protocol's framing.
    pub broken_connections: u64,
    /// Lines written to the HWRM log.
    pub hwrm_lines: u64,
    /// Frames that came from the segment.
    pub segment_frames_in: u64,
    /// Frames sent to the segment.
    pub segment_frames_out: u64,
    /// Frames for the segment dropped because the hub did not read them.
    pub segment_frames_dropped: u64,
    /// Stores the client made to the doorbell BAR.
    pub doorbell_stores: u64,
}

/// One connected client.
struct Client {
    stream: UnixStream,
    rx: Receiver,
    protocol: Protocol,
    /// Messages received so far: a connection that closes before its first is not a client
    /// (a liveness probe, such as a second server's on the same path) and ends nothing.
    messages: u64,
    /// Whether the last turn stopped at [`MESSAGES_A_TURN`]: messages may be waiting in the
    /// receiver, which the socket's readiness does not show, so the loop does not sleep.
    more: bool,
}

/// How a client's turn ended.
enum ClientTurn {
    /// Still connected.
    Open,
    /// Gone; the reason for the log, and whether it broke the protocol.
    Gone(String, bool),
    /// Closed before sending anything.
    Probe,
}

/// Serve `options` until the client leaves (or, with `persist`, until a signal).
pub fn serve(options: &ServeOptions) -> Result<ServeSummary, ServeError> {
    // The NIC's deadlines are microseconds apart (a frame crosses its switch in 1 µs): the
    // loop's poll must wake when they fall due, not the default 50 µs later.
    bnxt_pci::precise_timers();
    // Handlers first: a client may signal the server as soon as its socket exists. Then the
    // control socket: once the vfio-user socket appears, a client can count on both.
    let mut signals = StopSignals::install(options.catch_signals).map_err(ServeError::Signals)?;
    let mut control = ControlServer::listen(options.control.as_deref())?;
    let listener = Listener::bind(&options.socket)?;
    let mut hwrm = match &options.hwrm_log {
        Some(path) => Some(HwrmLog::create(path).map_err(|source| ServeError::HwrmLog { path: path.clone(), source })?),
        None => None,
    };
    let mut nic = ServedNic::with_firmware(options.mac, options.seed, options.faults.clone(), options.firmware)?;
    for (index, spec) in options.armed.iter().enumerate() {
        let (target, action) = spec.resolve().map_err(|e| ServeError::Armed { index, why: e.to_string() })?;
        nic.arm_fault(Duration::ZERO, target, spec.nth, spec.count, action)
            .map_err(|e| ServeError::Armed { index, why: e.to_string() })?;
    }

    let mac = options.mac.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
    tracing::info!(socket = %listener.path().display(), %mac, seed = options.seed, faults = options.faults.firmware.len(), firmware = ?options.firmware, "serving a BCM57608 model over vfio-user");

    let mut clock = ExecClock::new();
    let mut client: Option<Client> = None;
    let mut summary = ServeSummary {
        stop: StopReason::ClientGone,
        clients: 0,
        commands: 0,
        refused: 0,
        broken_connections: 0,
        hwrm_lines: 0,
        segment_frames_in: 0,
        segment_frames_out: 0,
        segment_frames_dropped: 0,
        doorbell_stores: 0,
    };
    let mut segment = match &options.segment {
        Some(path) => {
            nic.attach_segment();
            Some(SegmentLink::join(path, options.pcap.as_deref())?)
        }
        None => None,
    };
    let stop = loop {
        super::log_limit::report_suppressed();
        // Work due within `super::clock::RUN_AHEAD` is done now (see its documentation).
        let ahead = clock.ahead();
        nic.advance_to(ahead);
        log_events(&mut nic, &mut hwrm, options)?;
        if let Some(link) = segment.as_mut() {
            link.send(clock.wall(), ahead, &mut nic, &mut summary);
        }

        let due = nic.next_deadline();
        // Messages left in the receiver by a turn that stopped at its bound: look, do not sleep.
        let more = client.as_ref().is_some_and(|c| c.more);
        let timeout = if more { Some(Duration::ZERO) } else { clock.timeout(due) };
        let (listen_ready, signal_ready, client_ready, segment_ready, control_ready) =
            wait(&listener, &signals, client.as_ref(), segment.as_ref(), control.as_ref(), timeout)?;
        let stall = clock.after_wait(due);
        if stall > Duration::ZERO {
            tracing::debug!(?stall, "the host did not run the server for a while; the NIC's clock skips it");
        }
        if let Some(ctl) = control.as_mut()
            && control_ready.iter().any(|&r| r)
        {
            let clients = ctl.clients();
            let now = clock.now();
            ctl.serve(&control_ready, &mut |request| control_request(request, &mut nic, now, clients));
            log_events(&mut nic, &mut hwrm, options)?;
        }
        // What came in while the server waited is taken now, or before the deadline it waited for
        // when that passed (see `ExecClock::input_time`).
        let at = clock.input_time(due);
        if signal_ready && signals.arrived() {
            tracing::info!("SIGTERM or SIGINT: stopping");
            break StopReason::Signal;
        }
        // The client's input first: a client that has just gone is gone before a new one is
        // accepted in its place.
        if (client_ready || more)
            && let Some(c) = client.as_mut()
        {
            let turn = serve_messages(c, &mut nic, at, &mut hwrm, options)?;
            if let ClientTurn::Probe = turn {
                tracing::info!(
                    "a connection closed before sending anything (a liveness probe); still waiting for a client"
                );
                client = None;
            } else if let ClientTurn::Gone(why, broken) = turn {
                summary.clients += 1;
                let stats = c.protocol.stats();
                summary.commands += stats.commands;
                summary.refused += stats.refused;
                summary.broken_connections += u64::from(broken);
                if broken {
                    tracing::error!("closing the connection: {why}");
                } else {
                    tracing::info!("client gone: {why}");
                }
                client = None;
                nic.client_gone();
                if !options.persist {
                    break StopReason::ClientGone;
                }
            }
        }
        // Frames from the segment after the client's messages: a store the client made before
        // a frame was even sent (a receive posted before the send its peer answers) is in
        // before the frame, as on a machine where the store reaches the device first.
        if segment_ready
            && let Some(link) = segment.as_mut()
            && let Err(why) = link.drain(clock.wall(), at, &mut nic, &mut summary).and_then(|()| link.flush(&mut nic))
        {
            tracing::warn!("left the segment: {why}");
            segment = None;
        }
        if listen_ready {
            accept(&listener, &mut client, &mut summary);
        }
    };
    if let Some(c) = &client {
        summary.clients += u64::from(c.messages > 0);
        let stats = c.protocol.stats();
        summary.commands += stats.commands;
        summary.refused += stats.refused;
    }
    nic.client_gone();
    log_events(&mut nic, &mut hwrm, options)?;
    if let Some(link) = segment {
        link.finish()?;
    }
    super::log_limit::report_all_suppressed();
    summary.stop = stop;
    summary.hwrm_lines = hwrm.as_ref().map_or(0, HwrmLog::lines);
    summary.doorbell_stores = nic.doorbell_stores();
    Ok(summary)
}

/// Carry out a request of the control channel at executor time `now`.
fn control_request(request: Request, nic: &mut ServedNic, now: Duration, clients: usize) -> Reply {
    match request {
        Request::FaultAdd { fault } => {
            let armed = fault.resolve().map_err(|e| e.to_string()).and_then(|(target, action)| {
                nic.arm_fault(now, target, fault.nth, fault.count, action)
                    .map_err(|e| format!("request `{}`: {e}", fault.request))
            });
            match armed {
                Ok(id) => {
                    tracing::info!(id, request = %fault.request, action = ?fault.action, nth = ?fault.nth, count = ?fault.count, "fault armed");
                    Reply { id: Some(id), ..Reply::ok() }
                }
                Err(why) => Reply::refused(why),
            }
        }
        Request::FaultClear { id } => {
            let cleared = nic.clear_faults(id);
            match id {
                Some(id) if cleared == 0 => Reply::refused(format!("no fault {id} is armed")),
                _ => Reply { cleared: Some(cleared), ..Reply::ok() },
            }
        }
        Request::FaultList {} => {
            Reply { faults: Some(nic.armed_faults().iter().map(ListedFault::from).collect()), ..Reply::ok() }
        }
        Request::State {} => {
            let removed = nic.removed();
            let mut state = serde_json::to_value(nic.state()).unwrap_or_default();
            if let Some(o) = state.as_object_mut() {
                o.insert("removed".into(), removed.into());
                o.insert("control_clients".into(), clients.into());
            }
            Reply { state: Some(state), ..Reply::ok() }
        }
        Request::Link { up } => {
            if nic.removed() {
                return Reply::refused("the card was removed");
            }
            let changed = nic.set_peer(now, up);
            tracing::info!(up, changed, "link peer changed");
            Reply { link_changed: Some(changed), ..Reply::ok() }
        }
        Request::FwReset { fatal } => {
            if nic.removed() {
                return Reply::refused("the card was removed");
            }
            let started = nic.fw_reset(now, fatal);
            tracing::info!(fatal, started, "firmware reset");
            Reply { reset_started: Some(started), ..Reply::ok() }
        }
        Request::PcieSurpriseRemoval {} => {
            if !nic.removed() {
                nic.surprise_removal(now);
            }
            Reply::ok()
        }
    }
}

/// What [`wait`] found ready: the listener, a signal, the client, the segment (frames from the
/// hub, or room for frames waiting for it), and the control socket's descriptors (listener
/// first, then its clients).
type Ready = (bool, bool, bool, bool, Vec<bool>);

/// Wait for input or the deadline.
fn wait(
    listener: &Listener,
    signals: &StopSignals,
    client: Option<&Client>,
    segment: Option<&SegmentLink>,
    control: Option<&ControlServer>,
    timeout: Option<Duration>,
) -> Result<Ready, ServeError> {
    // While a client is served, the listener is not polled: a second client waits in the
    // backlog until the first is gone.
    let mut fds = vec![PollFd::from_borrowed_fd(signals.fd(), PollFlags::IN)];
    match client {
        Some(c) => fds.push(PollFd::new(&c.stream, PollFlags::IN)),
        None => fds.push(PollFd::new(listener.listener(), PollFlags::IN)),
    }
    if let Some(link) = segment {
        // Writable matters only while frames wait for the hub to take them.
        let flags = if link.outbox.is_empty() { PollFlags::IN } else { PollFlags::IN | PollFlags::OUT };
        fds.push(PollFd::new(&link.stream, flags));
    }
    let control_at = fds.len();
    if let Some(ctl) = control {
        fds.extend(ctl.poll_fds());
    }
    let ts = timeout.map(|t| Timespec::try_from(t).unwrap_or(Timespec { tv_sec: i64::MAX, tv_nsec: 0 }));
    match poll(&mut fds, ts.as_ref()) {
        Ok(_) | Err(Errno::INTR) => {}
        Err(e) => return Err(ServeError::Poll(e.into())),
    }
    let ready = |f: &PollFd<'_>| !f.revents().is_empty();
    let other = ready(&fds[1]);
    let segment_ready = segment.is_some() && fds.get(2).is_some_and(ready);
    let control_ready = fds[control_at..].iter().map(ready).collect();
    Ok((client.is_none() && other, ready(&fds[0]), client.is_some() && other, segment_ready, control_ready))
}

/// Accept one client (the loop only listens while it has none).
fn accept(listener: &Listener, client: &mut Option<Client>, summary: &mut ServeSummary) {
    loop {
        match listener.listener().accept() {
            Ok((stream, _)) => {
                if let Err(e) = stream.set_nonblocking(true) {
                    tracing::error!(error = %e, "cannot make the client's socket non-blocking; closing it");
                    continue;
                }
                tracing::info!(client = summary.clients + 1, "client connected");
                *client = Some(Client {
                    stream,
                    rx: Receiver::new(MAX_MESSAGE),
                    protocol: Protocol::new(),
                    messages: 0,
                    more: false,
                });
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                return;
            }
        }
    }
}

/// Messages of the client one turn of the loop handles at most: a client that never stops
/// sending (posted stores from a tight loop) does not hold the loop, so the NIC's timers, the
/// segment and the control socket still get their turns; the rest is handled next turn.
const MESSAGES_A_TURN: usize = 1024;

/// Handle the whole messages the client has sent (at most [`MESSAGES_A_TURN`]), at executor
/// time `at`.
fn serve_messages(
    c: &mut Client,
    nic: &mut ServedNic,
    at: Duration,
    hwrm: &mut Option<HwrmLog>,
    options: &ServeOptions,
) -> Result<ClientTurn, ServeError> {
    c.more = true;
    for _ in 0..MESSAGES_A_TURN {
        let msg = match c.rx.receive(c.stream.as_fd()) {
            Ok(Some(msg)) => msg,
            Ok(None) => {
                c.more = false;
                return Ok(ClientTurn::Open);
            }
            Err(TransportError::Closed { mid_message: false }) if c.messages == 0 => return Ok(ClientTurn::Probe),
            Err(TransportError::Closed { mid_message: false }) => {
                return Ok(ClientTurn::Gone("disconnected".into(), false));
            }
            Err(e @ TransportError::Closed { .. }) => return Ok(ClientTurn::Gone(e.to_string(), false)),
            Err(e) => return Ok(ClientTurn::Gone(e.to_string(), true)),
        };
        c.messages += 1;
        let reply = c.protocol.handle(at, msg, nic);
        log_events(nic, hwrm, options)?;
        if let Some(bytes) = reply
            && let Err(e) = send_message(c.stream.as_fd(), &bytes, &[], SEND_TIMEOUT)
        {
            return Ok(ClientTurn::Gone(format!("cannot send a reply: {e}"), false));
        }
    }
    tracing::debug!(messages = MESSAGES_A_TURN, "a turn took its bound of client messages; the rest wait for the next");
    Ok(ClientTurn::Open)
}

fn log_events(nic: &mut ServedNic, hwrm: &mut Option<HwrmLog>, options: &ServeOptions) -> Result<(), ServeError> {
    for event in nic.take_events() {
        tracing::debug!("{event}");
        if let Some(log) = hwrm {
            log.record(&event)
                .map_err(|source| ServeError::HwrmLog { path: options.hwrm_log.clone().unwrap_or_default(), source })?;
        }
    }
    Ok(())
}

/// The server's connection to a segment hub: frames from the hub enter the NIC's segment at its
/// external port (through the switch, as any frame), frames the segment forwards out go to the
/// hub; the pcap, if any, records both as they cross the link.
struct SegmentLink {
    stream: UnixStream,
    decoder: FrameDecoder,
    tap: Option<PcapTap>,
    outbox: Outbox,
}

impl SegmentLink {
    fn join(path: &std::path::Path, pcap: Option<&std::path::Path>) -> Result<SegmentLink, ServeError> {
        let err = |source| ServeError::Segment { path: path.to_path_buf(), source };
        let stream = UnixStream::connect(path).map_err(err)?;
        stream.set_nonblocking(true).map_err(err)?;
        let tap = pcap.map(PcapTap::create).transpose().map_err(|e| ServeError::Pcap(e.to_string()))?;
        tracing::info!(segment = %path.display(), "joined the segment");
        Ok(SegmentLink { stream, decoder: FrameDecoder::new(), tap, outbox: Outbox::new(super::segment::MAX_BACKLOG) })
    }

    /// Take what the hub sent into the NIC's segment at executor time `at` (the pcap records
    /// them at `wall`, the real time); `Err` when the hub is gone or sent garbage.
    fn drain(
        &mut self,
        wall: Duration,
        at: Duration,
        nic: &mut ServedNic,
        summary: &mut ServeSummary,
    ) -> Result<(), String> {
        // Bounded (see READS_A_TURN): what the hub sent beyond is read next turn.
        for _ in 0..READS_A_TURN {
            match self.decoder.read_from(&self.stream) {
                Ok(0) => return Err("the hub closed the connection".into()),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.to_string()),
            }
            while let Some(frame) = self.decoder.next_frame_with(|| nic.frame_buffer()).map_err(|e| e.to_string())? {
                summary.segment_frames_in += 1;
                if let Some(tap) = &mut self.tap {
                    tap.record(wall, &frame);
                }
                nic.incoming(at, frame);
            }
        }
        Ok(())
    }

    /// Send the frames the NIC's segment forwards out (a hub that does not read loses frames
    /// beyond [`super::segment::MAX_BACKLOG`] bytes, counted); what the hub does not take now
    /// is written when its socket has room (the loop polls for it). `ahead` is the executor's
    /// time, `now` the real one the pcap records.
    fn send(&mut self, now: Duration, ahead: Duration, nic: &mut ServedNic, summary: &mut ServeSummary) {
        for frame in nic.take_outgoing(ahead) {
            if let Err(frame) = self.outbox.push(frame) {
                summary.segment_frames_dropped += 1;
                nic.recycle_frame(frame);
                continue;
            }
            if let (Some(tap), Some(frame)) = (&mut self.tap, self.outbox.last()) {
                tap.record(now, frame);
            }
            summary.segment_frames_out += 1;
        }
        // A hub that is gone is found when its socket is next read.
        let _ = self.flush(nic);
    }

    /// Write what waits for the hub, as much as it takes now; the buffers of the frames
    /// written go back to the NIC.
    fn flush(&mut self, nic: &mut ServedNic) -> Result<(), String> {
        self.outbox
            .write_to(&self.stream, |frame| nic.recycle_frame(frame))
            .map_err(|e| format!("cannot write to the hub: {e}"))
    }

    /// Close the pcap, if any.
    fn finish(self) -> Result<(), ServeError> {
        if let Some(tap) = self.tap {
            let frames = tap.finish().map_err(|e| ServeError::Pcap(e.to_string()))?;
            tracing::info!(frames, "pcap written");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use bnxt_model::faults::FaultPlan;
    use bnxt_model::firmware::options::FirmwareOptions;
    use bnxt_vfio_user::header::{Command, FLAG_NO_REPLY, TYPE_COMMAND};
    use bnxt_vfio_user::message::encode;
    use bnxt_vfio_user::payload::{RegionAccess, Version};
    use zerocopy::IntoBytes;

    use super::*;

    fn options() -> ServeOptions {
        ServeOptions {
            socket: PathBuf::new(),
            mac: [0x02, 0x57, 0x60, 0x80, 0x00, 0x01],
            seed: 1,
            faults: FaultPlan::default(),
            firmware: FirmwareOptions::default(),
            armed: Vec::new(),
            control: None,
            hwrm_log: None,
            persist: false,
            segment: None,
            pcap: None,
            catch_signals: false,
        }
    }

    #[test]
    fn a_turn_takes_at_most_its_bound_of_messages_and_the_next_takes_the_rest() {
        let (client, server) = UnixStream::pair().unwrap();
        server.set_nonblocking(true).unwrap();
        let caps = b"{\"capabilities\":{\"max_msg_fds\":8}}\0";
        let mut bytes = encode(0, Command::Version as u16, TYPE_COMMAND, 0, &[Version::default().as_bytes(), caps]);
        // Posted stores into the HWRM request window, more than one turn takes.
        let stores = MESSAGES_A_TURN + 500;
        let req = RegionAccess { offset: 0x40, region: 0, count: 4 };
        for id in 1..=stores {
            let flags = TYPE_COMMAND | FLAG_NO_REPLY;
            bytes.extend(encode(id as u16, Command::RegionWrite as u16, flags, 0, &[req.as_bytes(), &[0u8; 4]]));
        }
        send_message(client.as_fd(), &bytes, &[], Duration::from_secs(5)).unwrap();

        let options = options();
        let mut nic =
            ServedNic::with_firmware(options.mac, options.seed, FaultPlan::default(), FirmwareOptions::default())
                .unwrap();
        let mut c = Client {
            stream: server,
            rx: Receiver::new(MAX_MESSAGE),
            protocol: Protocol::new(),
            messages: 0,
            more: false,
        };
        let turn = serve_messages(&mut c, &mut nic, Duration::ZERO, &mut None, &options).unwrap();
        assert!(matches!(turn, ClientTurn::Open));
        assert_eq!(c.messages, MESSAGES_A_TURN as u64, "one turn takes its bound");
        assert!(c.more, "and says more may be waiting");
        let turn = serve_messages(&mut c, &mut nic, Duration::ZERO, &mut None, &options).unwrap();
        assert!(matches!(turn, ClientTurn::Open));
        assert_eq!(c.messages, 1 + stores as u64, "the next takes the rest");
        assert!(!c.more, "and finds the socket empty");
    }
}
