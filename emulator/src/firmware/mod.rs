//! The HWRM firmware: takes requests from the BAR0 mailbox, acts on them, and DMAs responses
//! back after a fixed virtual latency.
//!
//! A trigger queues a *fetch* at the trigger's time; the executor runs it straight away (with the
//! function's DMA view): the firmware reads the request (from the window, or from host memory
//! for a short command), counts it for the fault plan, records it, acts on it, and queues the
//! response [`identity::HWRM_LATENCY`] later (plus any injected delay). When the response falls
//! due it is written to `resp_addr` in two DMA writes, everything but the last byte first, then
//! the valid byte, so a driver polling the valid byte never sees a partial response
//! (hardware-map §2.2 step 5).
//!
//! Faults ([`crate::faults::FaultPlan`]): NoResponse takes the request and neither acts nor
//! answers; ActsNoResponse acts on it and never answers; Error(code) answers with that code
//! without acting; Delay(d) acts and answers d later than usual; WrongRespLen, WrongSeqId and
//! NoValidByte act and answer with a malformed response (`resp_len` 16 bytes too long, `seq_id`
//! off by one, the valid byte never written). Each fires a [`crate::events::EventKind::FaultFired`] event.
//!
//! Nothing here panics on what a driver sends: bad lengths, fields and page tables are refused
//! with an HWRM error; memory the firmware cannot reach is a counted, logged DMA error.

pub mod async_events;
pub mod backing_store;
pub mod caps;
pub mod coalescing;
pub mod context_mem;
pub mod dispatch;
pub mod driver_reg;
pub mod faults;
pub mod func;
pub mod func_cfg;
pub mod fw_time;
pub mod identity;
pub mod l2_config;
pub mod l2_filter;
pub mod nvm;
pub mod options;
pub mod page_table;
pub mod placement;
pub mod port;
pub mod port_cfg;
pub mod port_stats;
pub mod qos_caps;
pub mod queue;
pub mod recovery;
pub mod reservation;
pub mod reset;
pub mod response;
pub mod rings;
pub mod selftest;
pub mod state;
pub mod stats;
pub mod submission;
pub mod thermal;
pub mod ver;
pub mod vnic;

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::time::Duration;

use bnxt_hsi::hwrm::{ErrorCode, NO_CMPL_RING};

use crate::events::{EventKind, Recorder, SubmitForm};
use crate::faults::FirmwareAction;
use crate::host_memory::HostMemory;
use crate::regs::bar0::WINDOW_LEN;

use faults::FaultInjector;
use identity::{HWRM_LATENCY, MAX_EXT_REQ_LEN, NicIdentity};
use l2_config::Notice;
use options::FirmwareOptions;
use response::Response;
use state::FwState;
use submission::{SubmitError, window_req_type};

/// What a handler works with.
pub struct Ctx<'a> {
    /// The function's DMA view of host memory.
    pub mem: &'a dyn HostMemory,
    /// The firmware's state.
    pub state: &'a mut FwState,
    /// Who the NIC is.
    pub id: &'a NicIdentity,
    /// What it advertises beyond its defaults.
    pub opts: &'a FirmwareOptions,
}

/// Work the firmware has queued.
#[derive(Debug, Clone)]
enum Job {
    /// Take the request a trigger submitted.
    Fetch(Box<[u8; WINDOW_LEN]>),
    /// Restart after a reset ([`reset`]).
    Restart,
    /// Write a response.
    Respond {
        /// Where.
        resp_addr: u64,
        /// The request's `cmpl_ring`: an L2 completion ring to tell with an HWRM_DONE
        /// completion once the response is written, or 0xffff.
        cmpl_ring: u16,
        /// What.
        response: Response,
        /// Echoed `req_type`.
        req_type: u16,
        /// Echoed `seq_id`.
        seq_id: u16,
        /// Why the request was refused (empty on success).
        reason: String,
        /// How the response is malformed on purpose (an injected fault), if it is.
        malformed: Option<Malformed>,
    },
}

/// How an injected fault spoils a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Malformed {
    /// `resp_len` 16 bytes longer than what is written.
    RespLen,
    /// `seq_id` one more than the request's.
    SeqId,
    /// Everything but the valid byte is written.
    NoValidByte,
}

/// How much longer than the response a `WrongRespLen` fault's `resp_len` says it is.
pub const WRONG_RESP_LEN_EXTRA: u16 = 16;

/// Spoil `response` as `how` says; whether its valid byte is still to be written.
fn spoil(response: &mut Response, how: Malformed) -> bool {
    // The common header: error_code 0..2, req_type 2..4, seq_id 4..6, resp_len 6..8 (bnxt_hsi.h
    // `struct output`).
    let field = |r: &mut Response, at: usize, f: fn(u16) -> u16| {
        let v = u16::from_le_bytes([r.bytes[at], r.bytes[at + 1]]);
        r.bytes[at..at + 2].copy_from_slice(&f(v).to_le_bytes());
    };
    match how {
        Malformed::RespLen => field(response, 6, |len| len.wrapping_add(WRONG_RESP_LEN_EXTRA)),
        Malformed::SeqId => field(response, 4, |seq| seq.wrapping_add(1)),
        Malformed::NoValidByte => return false,
    }
    true
}

/// The heartbeat of a live firmware at `now`: tenths of a second (wrapping).
fn heartbeat_at(now: Duration) -> u32 {
    (now.as_millis() / 100) as u32
}

/// Counters of what went wrong, for the NIC's outside view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FwCounters {
    /// Requests taken from the mailbox.
    pub requests: u64,
    /// Responses written.
    pub responses: u64,
    /// DMA accesses that failed (requests that could not be read, responses that could not be
    /// written).
    pub dma_errors: u64,
    /// Requests that asked for something not implemented.
    pub unimplemented_features: u64,
}

/// The firmware of one NIC.
#[derive(Debug, Clone)]
pub struct Firmware {
    id: NicIdentity,
    opts: FirmwareOptions,
    state: FwState,
    jobs: BTreeMap<(Duration, u64), Job>,
    next_job: u64,
    faults: FaultInjector,
    unsupported: BTreeMap<u16, u64>,
    counters: FwCounters,
    /// A fatal reset took the firmware down: it takes no request until it restarts.
    dead: bool,
    /// The firmware restarted since the last [`Firmware::take_restarted`].
    restarted: bool,
    /// A reset is under way (notice given, restart due).
    resetting: bool,
    /// The reset under way waits for the driver's FUNC_DRV_UNRGTR to restart ([`reset`]).
    awaiting_unregister: bool,
    /// Firmware restarts since the NIC was made (the reset-counter register).
    restarts: u32,
    /// The heartbeat register's value since the firmware went down (it stops while it is).
    frozen_heartbeat: Option<u32>,
}

impl Firmware {
    /// Firmware for the NIC `id`, applying `faults`.
    pub fn new(id: NicIdentity, faults: FaultInjector) -> Firmware {
        Firmware {
            id,
            opts: FirmwareOptions::default(),
            state: FwState::default(),
            jobs: BTreeMap::new(),
            next_job: 0,
            faults,
            unsupported: BTreeMap::new(),
            counters: FwCounters::default(),
            dead: false,
            restarted: false,
            resetting: false,
            awaiting_unregister: false,
            restarts: 0,
            frozen_heartbeat: None,
        }
    }

    /// The same firmware advertising `opts`.
    pub fn with_options(mut self, opts: FirmwareOptions) -> Firmware {
        self.opts = opts;
        self
    }

    /// What it advertises beyond its defaults.
    pub fn options(&self) -> FirmwareOptions {
        self.opts
    }

    /// The HWRM trigger was written at `now` with `window` in the request window.
    pub fn submit(&mut self, now: Duration, window: Box<[u8; WINDOW_LEN]>) {
        self.schedule(now, Job::Fetch(window));
    }

    fn schedule(&mut self, at: Duration, job: Job) {
        self.jobs.insert((at, self.next_job), job);
        self.next_job += 1;
    }

    /// When the firmware next has work, if it has any.
    #[inline]
    pub fn next_deadline(&self) -> Option<Duration> {
        self.jobs.keys().next().map(|&(at, _)| at)
    }

    /// Run every job due at or before `now`, in time order (then submission order).
    pub fn advance(&mut self, now: Duration, mem: &dyn HostMemory, rec: &mut Recorder) {
        while let Some(entry) = self.jobs.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((at, _), job) = entry.remove_entry();
            match job {
                Job::Restart => self.restart(at, rec),
                Job::Fetch(window) if self.dead => {
                    self.counters.requests += 1;
                    let req_type = window_req_type(&window);
                    rec.record(at, EventKind::RequestToDeadFirmware { req_type });
                }
                Job::Fetch(window) => self.fetch(at, &window, mem, rec),
                Job::Respond { resp_addr, cmpl_ring, mut response, req_type, seq_id, reason, malformed } => {
                    let whole = match malformed {
                        Some(m) => spoil(&mut response, m),
                        None => true,
                    };
                    let written =
                        self.respond(at, resp_addr, &response, req_type, seq_id, reason, whole, mem, rec) && whole;
                    if written && cmpl_ring != NO_CMPL_RING {
                        // The driver waits for HWRM_DONE on that ring (bnxt_hwrm.c `__hwrm_send`
                        // with a completion ring; bnxt.c `bnxt_hwrm_handler`).
                        self.state.l2.notify(Notice::HwrmDone { cmpl_ring, seq_id });
                    }
                    if self.awaiting_unregister
                        && req_type == dispatch::FUNC_DRV_UNRGTR
                        && self.state.registration.is_none()
                    {
                        // The driver closed: the reset waited for nothing else ([`reset`]).
                        self.awaiting_unregister = false;
                        self.jobs.retain(|_, j| !matches!(j, Job::Restart));
                        self.schedule(at, Job::Restart);
                    }
                }
            }
        }
    }

    /// Function-level reset: forget everything about the function, drop queued work. Fault
    /// occurrence counts and the unsupported-request counts are kept (they count since the NIC
    /// was made).
    pub fn reset(&mut self) {
        let (next_ring_serial, resets) = (self.state.next_ring_serial, self.state.resets + 1);
        let peer_down = self.state.l2.phy.peer_down;
        self.state = FwState { next_ring_serial, resets, ..FwState::default() };
        self.state.l2.phy.peer_down = peer_down;
        // A firmware reset under way goes on: its restart is the firmware's, not the function's.
        self.jobs.retain(|_, j| matches!(j, Job::Restart));
    }

    /// The firmware's state.
    pub fn state(&self) -> &FwState {
        &self.state
    }

    /// Requests answered CMD_NOT_SUPPORTED, by `req_type`.
    pub fn unsupported(&self) -> Vec<(u16, u64)> {
        self.unsupported.iter().map(|(&t, &n)| (t, n)).collect()
    }

    /// Counters.
    pub fn counters(&self) -> FwCounters {
        self.counters
    }

    /// Responses queued and not yet written.
    pub fn pending_responses(&self) -> usize {
        self.jobs.values().filter(|j| matches!(j, Job::Respond { .. })).count()
    }

    fn fetch(&mut self, now: Duration, window: &[u8; WINDOW_LEN], mem: &dyn HostMemory, rec: &mut Recorder) {
        self.counters.requests += 1;
        let window_type = window_req_type(window);
        let (nth, action) = self.faults.on_request(window_type);
        let (header, form, request) = match submission::take(window, mem, MAX_EXT_REQ_LEN.into()) {
            Ok(sub) => (sub.header, sub.form, Ok(sub.bytes)),
            Err(SubmitError::Unreadable(error)) => {
                self.counters.dma_errors += 1;
                tracing::warn!(req_type = window_type, %error, "cannot read a short-command request; it is not answered");
                rec.record(now, EventKind::DmaFailed { during: "reading a short-command request", error });
                return;
            }
            Err(SubmitError::Refused { header, reject }) => (header, SubmitForm::Short, Err(reject)),
        };
        let req_type = header.req_type;
        let (len, summary) = match &request {
            Ok(bytes) => (bytes.len(), dispatch::summary(req_type, bytes)),
            Err(_) => (0, String::new()),
        };
        rec.record(now, EventKind::HwrmRequest { req_type, seq_id: header.seq_id, form, len, summary });
        // Saturating: a delay from a plan built in code is not bounded by `faults::MAX_DELAY`.
        let mut due = now.saturating_add(HWRM_LATENCY);
        let mut silent = false;
        let mut malformed = None;
        if let Some(action) = action {
            rec.record(now, EventKind::FaultFired { req_type: window_type, nth, action: action.clone() });
            match action {
                FirmwareAction::NoResponse => return,
                FirmwareAction::ActsNoResponse => silent = true,
                FirmwareAction::Error(code) => {
                    let reason = format!("injected fault: {}", ErrorCode::from_value(code));
                    let response = response::failure(code, 0, req_type, header.seq_id);
                    self.queue_response(due, header, response, reason, None);
                    return;
                }
                FirmwareAction::Delay(d) => due = due.saturating_add(d),
                FirmwareAction::WrongRespLen => malformed = Some(Malformed::RespLen),
                FirmwareAction::WrongSeqId => malformed = Some(Malformed::SeqId),
                FirmwareAction::NoValidByte => malformed = Some(Malformed::NoValidByte),
            }
        }
        let (response, reason) = match request {
            Err(reject) => {
                (response::failure(reject.code.value(), reject.cmd_err, req_type, header.seq_id), reject.reason)
            }
            Ok(bytes) => self.handle(now, req_type, header.seq_id, &bytes, mem, rec),
        };
        if silent {
            tracing::debug!(req_type, seq_id = header.seq_id, %reason, "acted on; the answer is withheld (injected fault)");
            return;
        }
        self.queue_response(due, header, response, reason, malformed);
    }

    fn handle(
        &mut self,
        now: Duration,
        req_type: u16,
        seq_id: u16,
        bytes: &[u8],
        mem: &dyn HostMemory,
        rec: &mut Recorder,
    ) -> (Response, String) {
        let mut ctx = Ctx { mem, state: &mut self.state, id: &self.id, opts: &self.opts };
        match dispatch::dispatch(req_type, bytes, &mut ctx) {
            Some(Ok(body)) => (response::success(body, req_type, seq_id), String::new()),
            Some(Err(reject)) => {
                (response::failure(reject.code.value(), reject.cmd_err, req_type, seq_id), reject.reason)
            }
            None => {
                let count = match self.unsupported.entry(req_type) {
                    Entry::Occupied(mut e) => {
                        *e.get_mut() += 1;
                        *e.get()
                    }
                    Entry::Vacant(e) => *e.insert(1),
                };
                if count == 1 {
                    tracing::warn!(req_type, name = %crate::events::req_label(req_type), "unsupported hwrm request, answered CMD_NOT_SUPPORTED");
                }
                rec.record(now, EventKind::UnsupportedRequest { req_type });
                let code = ErrorCode::CmdNotSupported.value();
                (response::failure(code, 0, req_type, seq_id), "not implemented by the model".to_string())
            }
        }
    }

    fn queue_response(
        &mut self,
        due: Duration,
        header: submission::Header,
        response: Response,
        reason: String,
        malformed: Option<Malformed>,
    ) {
        let job = Job::Respond {
            malformed,
            resp_addr: header.resp_addr,
            cmpl_ring: header.cmpl_ring,
            response,
            req_type: header.req_type,
            seq_id: header.seq_id,
            reason,
        };
        self.schedule(due, job);
    }

    #[allow(clippy::too_many_arguments)]
    fn respond(
        &mut self,
        now: Duration,
        resp_addr: u64,
        response: &Response,
        req_type: u16,
        seq_id: u16,
        reason: String,
        with_valid: bool,
        mem: &dyn HostMemory,
        rec: &mut Recorder,
    ) -> bool {
        let (body, valid) = response.bytes.split_at(response.bytes.len() - 1);
        let written = match resp_addr.checked_add(body.len() as u64) {
            Some(_) if !with_valid => mem.write(resp_addr, body),
            Some(valid_addr) => mem.write(resp_addr, body).and_then(|()| mem.write(valid_addr, valid)),
            None => Err(crate::host_memory::DmaError::Unmapped {
                kind: "write",
                addr: resp_addr,
                len: response.bytes.len(),
            }),
        };
        match written {
            Ok(()) => {
                self.counters.responses += 1;
                rec.record(now, EventKind::HwrmResponse { req_type, seq_id, error_code: response.error_code, reason });
                true
            }
            Err(error) => {
                self.counters.dma_errors += 1;
                tracing::warn!(req_type, seq_id, %error, "cannot write an hwrm response");
                rec.record(now, EventKind::DmaFailed { during: "writing an hwrm response", error });
                false
            }
        }
    }

    /// Reset the firmware at `now` as [`reset`] describes; false (nothing done) while a reset is
    /// already under way.
    pub fn fw_reset(&mut self, now: Duration, kind: reset::ResetKind, rec: &mut Recorder) -> bool {
        if self.resetting {
            return false;
        }
        use async_events::{RESET_DRIVER_STOP_TX_QUEUE, RESET_NOTIFY, RESET_REASON_FATAL, RESET_REASON_MANAGEMENT};
        let reason = match kind {
            reset::ResetKind::Solicited => RESET_REASON_MANAGEMENT,
            reset::ResetKind::Fatal => RESET_REASON_FATAL,
        };
        let timestamp = (reset::MIN_WAIT_DSECS, reset::MAX_WAIT_DSECS);
        let sent =
            async_events::send_timed(&mut self.state, RESET_NOTIFY, RESET_DRIVER_STOP_TX_QUEUE | reason, 0, timestamp);
        rec.record(now, EventKind::FirmwareReset { fatal: kind == reset::ResetKind::Fatal, notified: sent });
        if kind == reset::ResetKind::Fatal {
            self.dead = true;
            self.frozen_heartbeat = Some(heartbeat_at(now));
            // Responses not yet written are lost with the firmware.
            self.jobs.retain(|_, j| !matches!(j, Job::Respond { .. }));
        }
        self.resetting = true;
        self.awaiting_unregister = kind == reset::ResetKind::Solicited && sent && self.state.registration.is_some();
        self.schedule(reset::restart_at(now, self.awaiting_unregister), Job::Restart);
        true
    }

    fn restart(&mut self, now: Duration, rec: &mut Recorder) {
        let (next_ring_serial, resets) = (self.state.next_ring_serial, self.state.resets + 1);
        let peer_down = self.state.l2.phy.peer_down;
        self.state = FwState { next_ring_serial, resets, hot_reset_done: true, ..FwState::default() };
        self.state.l2.phy.peer_down = peer_down;
        self.jobs.retain(|_, j| !matches!(j, Job::Respond { .. }));
        self.dead = false;
        self.frozen_heartbeat = None;
        self.restarts = self.restarts.wrapping_add(1);
        self.resetting = false;
        self.awaiting_unregister = false;
        self.restarted = true;
        rec.record(now, EventKind::FirmwareRestarted);
        tracing::info!("firmware restarted after a reset");
    }

    /// Whether the firmware restarted since the last call (the device then resets the engines
    /// whose state the firmware kept).
    pub fn take_restarted(&mut self) -> bool {
        std::mem::take(&mut self.restarted)
    }

    /// What the firmware status register reads (hcomm_status `fw_status_loc`, BAR0 0x520).
    pub fn status(&self) -> u32 {
        if self.dead { reset::DEAD_STATUS } else { bnxt_hsi::fw_status::CODE_READY }
    }

    /// What the heartbeat register reads at `now` ([`recovery`]): tenths of a second of the
    /// firmware's life, stopped while it is down.
    pub fn heartbeat(&self, now: Duration) -> u32 {
        self.frozen_heartbeat.unwrap_or_else(|| heartbeat_at(now))
    }

    /// What the reset-counter register reads ([`recovery`]): firmware restarts so far.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// The port's peer comes or goes (`link up` / `link down`); whether the link state changed.
    pub fn set_peer(&mut self, present: bool) -> bool {
        port_cfg::set_peer(&mut self.state, present)
    }

    /// The fault injector (to arm, clear and list faults while the firmware runs).
    pub fn faults_mut(&mut self) -> &mut FaultInjector {
        &mut self.faults
    }

    /// The fault injector.
    pub fn faults(&self) -> &FaultInjector {
        &self.faults
    }

    /// Whether work for the L2 engine is waiting ([`Firmware::take_notices`]).
    pub fn has_notices(&self) -> bool {
        !self.state.l2.notices.is_empty()
    }

    /// Work the firmware left for the L2 engine (HWRM_DONE completions, async events), oldest
    /// first.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.state.l2.notices)
    }

    /// The L2 engine's port counters, for PORT_QSTATS and the statistics the firmware reports.
    pub fn set_port_counters(&mut self, counters: l2_config::PortCounters) {
        self.state.l2.port_counters = counters;
    }

    /// The statistics contexts' counters, from the L2 engine (read by STAT_CTX_QUERY).
    pub fn set_ring_stats(&mut self, stats: BTreeMap<u32, bnxt_hsi::hwrm::layouts::CtxHwStats>) {
        self.state.l2.ring_stats = stats;
    }
}
