//! The event log: what happened on each NIC, with virtual timestamps.
//!
//! Events are cheap records (a few integers and a short string at most) that feed transcripts
//! and let tests and scenarios check what the model saw: HWRM requests and responses, faults
//! that fired, accesses the model does not implement, DMA that failed, and config-space writes
//! of note. Each NIC records them in a [`Recorder`]; the host drains them in the order they
//! happened (`bnxt_model_host::world::World::take_events`).

use std::fmt;
use std::time::Duration;

use crate::faults::{CommandAction, FirmwareAction};
use crate::host_memory::DmaError;
use crate::net::ext::Syndrome;

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
    /// The firmware was reset (`bnxt-model ctl fw reset|fatal`); whether the driver got
    /// RESET_NOTIFY.
    FirmwareReset {
        /// A fatal exception rather than a solicited reset.
        fatal: bool,
        /// Whether RESET_NOTIFY went to a registered driver.
        notified: bool,
    },
    /// The firmware restarted after a reset.
    FirmwareRestarted,
    /// A request reached a firmware that is down (not taken, never answered).
    RequestToDeadFirmware {
        /// Its `req_type`.
        req_type: u16,
    },
    /// The card was yanked (`bnxt-model ctl pcie surprise-removal`).
    SurpriseRemoval,
    /// The port's peer came or went (`bnxt-model ctl link up|down`).
    PeerChanged {
        /// Whether it is there now.
        present: bool,
    },
    /// The RoCE firmware took a command from the CMDQ.
    RoceCommand {
        /// `opcode`.
        opcode: u8,
        /// `cookie`.
        cookie: u16,
        /// 16-byte slots it occupied.
        slots: u8,
        /// Key fields, `name=value` separated by spaces.
        summary: String,
    },
    /// The RoCE firmware wrote a command's completion to the CREQ.
    RoceCompletion {
        /// `event` (the command's opcode).
        opcode: u8,
        /// `cookie` echoed.
        cookie: u16,
        /// `status` (`CREQ_QP_EVENT_STATUS_*`).
        status: u8,
        /// `xid` (or the side buffer's size for queries).
        xid: u32,
        /// Why the command was refused (empty on success).
        reason: String,
    },
    /// An injected fault changed what the RoCE firmware did with a command.
    RoceFaultFired {
        /// `opcode` of the command.
        opcode: u8,
        /// Which occurrence of that opcode it was (1-based).
        nth: u32,
        /// What the fault did.
        action: CommandAction,
    },
    /// The RoCE command channel could not take a trigger (nothing could be answered).
    RoceChannelError {
        /// What was wrong.
        reason: String,
    },
    /// The RoCE firmware reported a QP or CQ error on the CREQ.
    RoceAsyncEvent {
        /// `event` (`0xc0` QP error, `0xc1` CQ error).
        event: u8,
        /// The QP or CQ.
        xid: u32,
        /// The reason code carried.
        reason: u8,
    },
    /// A doorbell was taken.
    Doorbell {
        /// Its type (`SQ`, `CQ_ARMALL`, ...).
        ty: &'static str,
        /// `xid`.
        xid: u32,
        /// `index`.
        index: u32,
    },
    /// A doorbell was ignored.
    DoorbellIgnored {
        /// BAR2 offset.
        offset: u64,
        /// The value stored.
        value: u64,
        /// Why.
        reason: String,
    },
    /// A WQE could not be carried out; it completes in error and its QP goes to the error state.
    WqeRefused {
        /// The QP.
        qp: u32,
        /// Why.
        reason: String,
    },
    /// A CQE was written.
    Cqe {
        /// The CQ.
        cq: u32,
        /// The QP it completes.
        qp: u32,
        /// Requester (`cq_req`) or responder (`cq_res_rc`).
        requester: bool,
        /// CQE status code.
        status: u8,
        /// Ring index written.
        index: u32,
    },
    /// A CQE was lost to a full CQ.
    CqOverflow {
        /// The CQ.
        cq: u32,
    },
    /// A CQ notification (`nq_cn`) was posted to an NQ.
    CqNotification {
        /// The CQ.
        cq: u32,
        /// The NQ ring.
        nq: u16,
        /// The toggle it carried.
        toggle: u8,
    },
    /// An MSI-X vector was raised.
    Interrupt {
        /// The vector.
        vector: u16,
    },
    /// A RoCE frame left the NIC.
    FrameSent {
        /// Sending QP.
        qp: u32,
        /// BTH opcode.
        opcode: u8,
        /// BTH PSN.
        psn: u32,
        /// Frame bytes.
        len: usize,
        /// The AETH's syndrome (ACK, RNR NAK, NAK), for an opcode that carries one.
        aeth: Option<Syndrome>,
    },
    /// A RoCE frame reached a QP.
    FrameReceived {
        /// Destination QP.
        qp: u32,
        /// BTH opcode.
        opcode: u8,
        /// BTH PSN.
        psn: u32,
        /// Frame bytes.
        len: usize,
    },
    /// A frame was dropped on receive.
    FrameDropped {
        /// Why.
        reason: String,
    },
    /// The wire's fault stage changed a frame this NIC sent.
    WireFault {
        /// What the fault stage did, to which frame, and why.
        fault: crate::net::fault::FaultEvent,
    },
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

/// The name of a RoCE command opcode for logs, `0x..` when the interface does not define it.
pub fn opcode_label(opcode: u8) -> String {
    match bnxt_hsi::roce::rcfw::opcode_name(opcode) {
        Some(name) => name.to_string(),
        None => format!("0x{opcode:02x}"),
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
            EventKind::SurpriseRemoval => f.write_str("surprise removal: the card is gone"),
            EventKind::FirmwareReset { fatal, notified } => write!(
                f,
                "firmware {} (RESET_NOTIFY {})",
                if *fatal { "fatal exception" } else { "reset" },
                if *notified { "sent" } else { "not sent: no driver registered for it" }
            ),
            EventKind::FirmwareRestarted => f.write_str("firmware restarted"),
            EventKind::RequestToDeadFirmware { req_type } => {
                write!(f, "hwrm request {} to a dead firmware: not taken", req_label(*req_type))
            }
            EventKind::PeerChanged { present: true } => f.write_str("the port's peer is back (link up)"),
            EventKind::PeerChanged { present: false } => f.write_str("the port's peer is gone (link down)"),
            EventKind::RoceCommand { opcode, cookie, slots, summary } => {
                write!(f, "roce command {} cookie=0x{cookie:04x} ({slots} slots)", opcode_label(*opcode))?;
                if !summary.is_empty() {
                    write!(f, " {summary}")?;
                }
                Ok(())
            }
            EventKind::RoceCompletion { opcode, cookie, status, xid, reason } => {
                let st = bnxt_hsi::roce::rcfw::CreqStatus::from_value(*status).map_or("?", |s| s.name());
                write!(f, "roce completion {} cookie=0x{cookie:04x} {st} xid={xid}", opcode_label(*opcode))?;
                if !reason.is_empty() {
                    write!(f, ": {reason}")?;
                }
                Ok(())
            }
            EventKind::RoceFaultFired { opcode, nth, action } => {
                write!(f, "roce fault on {} #{nth}: ", opcode_label(*opcode))?;
                match action {
                    CommandAction::NoResponse => f.write_str("no-response"),
                    CommandAction::ActsNoResponse => f.write_str("acts-no-response"),
                    CommandAction::Delay(d) => write!(f, "delay {d:?}"),
                    CommandAction::Error(s) => {
                        let name = bnxt_hsi::roce::rcfw::CreqStatus::from_value(*s).map_or("?", |s| s.name());
                        write!(f, "error {name}")
                    }
                }
            }
            EventKind::RoceChannelError { reason } => write!(f, "roce channel: {reason}"),
            EventKind::RoceAsyncEvent { event, xid, reason } => {
                let what = if *event == 0xc0 { "QP error" } else { "CQ error" };
                write!(f, "roce async {what} xid={xid} reason=0x{reason:x}")
            }
            EventKind::Doorbell { ty, xid, index } => write!(f, "doorbell {ty} xid={xid} index={index}"),
            EventKind::DoorbellIgnored { offset, value, reason } => {
                write!(f, "doorbell 0x{value:016x} at BAR2+0x{offset:x} ignored: {reason}")
            }
            EventKind::WqeRefused { qp, reason } => write!(f, "QP {qp}: WQE refused: {reason}"),
            EventKind::Cqe { cq, qp, requester, status, index } => {
                let side = if *requester { "req" } else { "res" };
                write!(f, "CQE {side} cq={cq} qp={qp} status={status} index={index}")
            }
            EventKind::CqOverflow { cq } => write!(f, "CQ {cq} overflowed"),
            EventKind::CqNotification { cq, nq, toggle } => write!(f, "CQ {cq} notified on NQ {nq} toggle={toggle}"),
            EventKind::Interrupt { vector } => write!(f, "MSI-X vector {vector} raised"),
            EventKind::FrameSent { qp, opcode, psn, len, aeth } => {
                write!(f, "frame out qp={qp} opcode=0x{opcode:02x} psn={psn} {len} B")?;
                match aeth {
                    Some(s) => write!(f, " aeth={s}"),
                    None => Ok(()),
                }
            }
            EventKind::FrameReceived { qp, opcode, psn, len } => {
                write!(f, "frame in qp={qp} opcode=0x{opcode:02x} psn={psn} {len} B")
            }
            EventKind::FrameDropped { reason } => write!(f, "frame dropped: {reason}"),
            EventKind::WireFault { fault } => write!(f, "wire fault: {fault}"),
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
#[derive(Debug, Default, Clone)]
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
    #[inline]
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
