//! The event log: what happened on each NIC, with virtual timestamps.
//!
//! Events are cheap records (a few integers and a short string at most) that feed transcripts
//! and let tests and scenarios check what the model saw: HWRM requests and responses, faults
//! that fired, accesses the model does not implement, DMA that failed, and config-space writes
//! of note. [`crate::world::World::take_events`] drains them in the order they happened.

use std::fmt;
use std::time::Duration;

use crate::faults::FirmwareAction;
use crate::host_memory::DmaError;

/// One thing that happened on one NIC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Virtual time of the event.
    pub at: Duration,
    /// Index of the NIC in the machine.
    pub nic: usize,
    /// What happened.
    pub kind: EventKind,
}

/// How an HWRM request reached the firmware.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitForm {
    /// The request itself was written into the BAR0 window.
    Direct,
    /// The window held a `hwrm_short_input` naming the request in host memory.
    Short,
}

/// Which BAR region an access the model does not implement touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AccessKind {
    /// A load.
    Read,
    /// A store.
    Write,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// The firmware took an HWRM request from the mailbox.
    HwrmRequest {
        /// `req_type`.
        req_type: u16,
        /// `seq_id` the driver gave it.
        seq_id: u16,
        /// How it was submitted.
        form: SubmitForm,
        /// Length of the request as received, in bytes.
        len: usize,
        /// Key fields, `name=value` separated by spaces (empty when there are none worth naming).
        summary: String,
    },
    /// The firmware wrote an HWRM response (its valid byte included).
    HwrmResponse {
        /// `req_type` echoed.
        req_type: u16,
        /// `seq_id` echoed.
        seq_id: u16,
        /// `error_code` (0 for success).
        error_code: u16,
        /// Why the request was refused, when it was (empty on success).
        reason: String,
    },
    /// An injected fault changed what the firmware did with a request.
    FaultFired {
        /// `req_type` of the request.
        req_type: u16,
        /// Which occurrence of that `req_type` it was (1-based).
        nth: u32,
        /// What the fault did.
        action: FirmwareAction,
    },
    /// A request the model's firmware does not implement (answered CMD_NOT_SUPPORTED).
    UnsupportedRequest {
        /// Its `req_type`.
        req_type: u16,
    },
    /// A register access the model does not implement.
    UnimplementedAccess {
        /// BAR index.
        bar: u8,
        /// Offset into the BAR.
        offset: u64,
        /// Load or store.
        access: AccessKind,
        /// Value stored (0 for loads).
        value: u64,
        /// What the offset is, as far as the model knows (`KONG mailbox`, `doorbell`, ...).
        what: &'static str,
    },
    /// A BAR access while the command register's memory-space enable was off.
    MemoryDisabledAccess {
        /// BAR index.
        bar: u8,
        /// Offset into the BAR.
        offset: u64,
        /// Load or store.
        access: AccessKind,
    },
    /// A DMA the firmware attempted failed.
    DmaFailed {
        /// What the firmware was doing (`reading a short request`, `writing a response`, ...).
        during: &'static str,
        /// The refusal.
        error: DmaError,
    },
    /// A feature a request asked for that the model does not implement (the request is
    /// otherwise handled).
    UnimplementedFeature {
        /// `req_type` of the request.
        req_type: u16,
        /// What is missing.
        what: &'static str,
    },
    /// A submission the firmware could not make sense of and could not answer.
    MalformedSubmission {
        /// What was wrong.
        reason: String,
    },
    /// The command register changed.
    CommandChanged {
        /// Memory-space enable after the write.
        memory: bool,
        /// Bus-master enable after the write.
        bus_master: bool,
    },
    /// PCIe Device Control relaxed ordering changed.
    RelaxedOrderingChanged {
        /// The new value.
        enabled: bool,
    },
    /// A function-level reset was initiated (Device Control bit 15).
    FunctionLevelReset,
}

impl fmt::Display for SubmitForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SubmitForm::Direct => "direct",
            SubmitForm::Short => "short",
        })
    }
}

/// The name of a `req_type` for logs, `0x....` when the interface does not define it.
pub fn req_label(req_type: u16) -> String {
    match bnxt_hsi::hwrm::req_name(req_type) {
        Some(name) => name.to_string(),
        None => format!("0x{req_type:04x}"),
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventKind::HwrmRequest { req_type, seq_id, form, len, summary } => {
                write!(f, "hwrm request {} seq={seq_id} ({form}, {len} B)", req_label(*req_type))?;
                if !summary.is_empty() {
                    write!(f, " {summary}")?;
                }
                Ok(())
            }
            EventKind::HwrmResponse { req_type, seq_id, error_code, reason } => {
                let code = bnxt_hsi::hwrm::ErrorCode::from_value(*error_code);
                write!(f, "hwrm response {} seq={seq_id} {code}", req_label(*req_type))?;
                if !reason.is_empty() {
                    write!(f, ": {reason}")?;
                }
                Ok(())
            }
            EventKind::FaultFired { req_type, nth, action } => {
                write!(f, "fault on {} #{nth}: {action:?}", req_label(*req_type))
            }
            EventKind::UnsupportedRequest { req_type } => {
                write!(f, "unsupported hwrm request {}", req_label(*req_type))
            }
            EventKind::UnimplementedAccess { bar, offset, access, value, what } => match access {
                AccessKind::Read => write!(f, "unimplemented read of BAR{bar}+0x{offset:x} ({what})"),
                AccessKind::Write => {
                    write!(f, "unimplemented write of 0x{value:x} to BAR{bar}+0x{offset:x} ({what})")
                }
            },
            EventKind::MemoryDisabledAccess { bar, offset, access } => {
                write!(f, "{access:?} of BAR{bar}+0x{offset:x} with memory space disabled")
            }
            EventKind::DmaFailed { during, error } => write!(f, "DMA failed while {during}: {error}"),
            EventKind::UnimplementedFeature { req_type, what } => {
                write!(f, "{} asks for something not implemented: {what}", req_label(*req_type))
            }
            EventKind::MalformedSubmission { reason } => write!(f, "malformed hwrm submission: {reason}"),
            EventKind::CommandChanged { memory, bus_master } => {
                write!(f, "command register: memory={memory} bus_master={bus_master}")
            }
            EventKind::RelaxedOrderingChanged { enabled } => write!(f, "relaxed ordering {}", on_off(*enabled)),
            EventKind::FunctionLevelReset => f.write_str("function-level reset"),
        }
    }
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{:>12.6}s nic{}] {}", self.at.as_secs_f64(), self.nic, self.kind)
    }
}

/// Where one NIC records its events until the executor collects them.
#[derive(Debug, Default)]
pub struct Recorder {
    nic: usize,
    events: Vec<Event>,
}

impl Recorder {
    /// A recorder for NIC `nic`.
    pub fn new(nic: usize) -> Recorder {
        Recorder { nic, events: Vec::new() }
    }

    /// Record `kind` at `at`.
    pub fn record(&mut self, at: Duration, kind: EventKind) {
        self.events.push(Event { at, nic: self.nic, kind });
    }

    /// Move every recorded event to the end of `out`, oldest first.
    pub fn drain_into(&mut self, out: &mut Vec<Event>) {
        out.append(&mut self.events);
    }

    /// Events recorded and not yet drained.
    pub fn pending(&self) -> &[Event] {
        &self.events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_render_with_request_names_and_codes() {
        let mut rec = Recorder::new(1);
        rec.record(
            Duration::from_micros(20),
            EventKind::HwrmResponse { req_type: 0x1d, seq_id: 7, error_code: 2, reason: "no".into() },
        );
        rec.record(Duration::ZERO, EventKind::UnsupportedRequest { req_type: 0x7777 });
        let mut out = Vec::new();
        rec.drain_into(&mut out);
        assert!(rec.pending().is_empty());
        assert_eq!(out[0].nic, 1);
        let text = out[0].to_string();
        assert!(text.contains("FUNC_DRV_RGTR seq=7 INVALID_PARAMS: no"), "{text}");
        assert!(out[1].to_string().contains("0x7777"));
    }
}
