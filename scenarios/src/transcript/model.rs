//! The model's events as transcript lines: the `nicN` lines of a run on the model, and the frames
//! the ladder diagram draws.

use std::sync::Arc;
use std::time::Duration;

use bnxt_model::events::{AccessKind, Event, EventKind, opcode_label, req_label};
use bnxt_model::faults::FirmwareAction;
use bnxt_model::net::fault::{FaultCause, FaultEvent, FaultKind};
use bnxt_transcript::Field;

use super::record::EventSource;
use super::{Line, Packet, PacketKind, Source};
use crate::scenario::opcodes::opcode_name;
use crate::scenario::values::format_duration;
use bnxt_model_host::machine::ModelMachine;

/// The BTH opcode of an RC ACKNOWLEDGE (IBA Vol 1 §9.2.1; `IB_OPCODE_RC_ACKNOWLEDGE`).
const ACKNOWLEDGE: u8 = 0x11;

/// The model's event log as an [`EventSource`].
pub struct ModelEvents(pub Arc<ModelMachine>);

impl EventSource for ModelEvents {
    fn now(&self) -> Duration {
        self.0.world().now()
    }

    fn take(&self) -> Vec<Line> {
        let events = self.0.world().take_events();
        events.iter().map(line).collect()
    }

    fn discard(&self) {
        drop(self.0.world().take_events());
    }
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

/// One model event as a transcript line.
pub fn line(event: &Event) -> Line {
    let nic = event.nic;
    let mut packet = None;
    let text = match &event.kind {
        EventKind::HwrmRequest { req_type, seq_id, form, len, summary } => {
            let mut t = format!("hwrm-request {} {} {form} {len}B", req_label(*req_type), Field::Seq.is(seq_id));
            if !summary.is_empty() {
                t.push(' ');
                t.push_str(summary);
            }
            t
        }
        EventKind::HwrmResponse { req_type, seq_id, error_code, reason } => {
            let code = bnxt_hsi::hwrm::ErrorCode::from_value(*error_code);
            let mut t = format!("hwrm-response {} {} {code}", req_label(*req_type), Field::Seq.is(seq_id));
            if !reason.is_empty() {
                t.push_str(&format!(": {reason}"));
            }
            t
        }
        EventKind::FaultFired { req_type, nth, action } => {
            let action = match action {
                FirmwareAction::NoResponse => "no-response".to_string(),
                FirmwareAction::ActsNoResponse => "acts-no-response".to_string(),
                FirmwareAction::Delay(d) => format!("delay {}", format_duration(*d)),
                FirmwareAction::Error(code) => format!("error {}", bnxt_hsi::hwrm::ErrorCode::from_value(*code)),
                FirmwareAction::WrongRespLen => "wrong-resp-len".to_string(),
                FirmwareAction::WrongSeqId => "wrong-seq-id".to_string(),
                FirmwareAction::NoValidByte => "no-valid-byte".to_string(),
            };
            format!("firmware-fault {} {} {action}", req_label(*req_type), Field::Nth.is(nth))
        }
        EventKind::UnsupportedRequest { req_type } => format!("unsupported-request {}", req_label(*req_type)),
        EventKind::UnimplementedAccess { bar, offset, access, value, what } => match access {
            AccessKind::Read => format!("unimplemented read BAR{bar}+0x{offset:x} ({what})"),
            AccessKind::Write => format!("unimplemented write BAR{bar}+0x{offset:x} value=0x{value:x} ({what})"),
        },
        EventKind::CommandChanged { memory, bus_master } => {
            format!("pci command {} {}", Field::Memory.is(on_off(*memory)), Field::BusMaster.is(on_off(*bus_master)))
        }
        EventKind::RelaxedOrderingChanged { enabled } => format!("pci {}", Field::RelaxedOrdering.is(on_off(*enabled))),
        EventKind::FunctionLevelReset => "pci function-level-reset".into(),
        EventKind::RoceCommand { opcode, cookie, summary, .. } => {
            let mut t = format!("roce-command {} {}", opcode_label(*opcode), Field::Cookie.is(cookie));
            if !summary.is_empty() {
                t.push(' ');
                t.push_str(summary);
            }
            t
        }
        EventKind::RoceCompletion { opcode, cookie, status, xid, reason } => {
            let st = bnxt_hsi::roce::rcfw::CreqStatus::from_value(*status).map_or("?", |s| s.name());
            let mut t = format!(
                "roce-completion {} {} {st} {}",
                opcode_label(*opcode),
                Field::Cookie.is(cookie),
                Field::Xid.is(xid)
            );
            if !reason.is_empty() {
                t.push_str(&format!(": {reason}"));
            }
            t
        }
        EventKind::Doorbell { ty, xid, index } => {
            format!("doorbell {ty} {} {}", Field::Xid.is(xid), Field::Index.is(index))
        }
        EventKind::Cqe { cq, qp, requester, status, index } => {
            let side = if *requester { "req" } else { "res" };
            format!(
                "cqe {side} {} {} {} {}",
                Field::Cq.is(cq),
                Field::Qp.is(qp),
                Field::Status.is(status),
                Field::Index.is(index)
            )
        }
        EventKind::CqNotification { cq, nq, toggle } => {
            format!("cq-notify {} {} {}", Field::Cq.is(cq), Field::Nq.is(nq), Field::Toggle.is(toggle))
        }
        EventKind::Interrupt { vector } => format!("msix {}", Field::Vector.is(vector)),
        EventKind::FrameSent { qp, opcode, psn, len, aeth } => {
            let mut p = frame(nic, PacketKind::Sent, *qp, *opcode, *psn, *len);
            p.nak = aeth.is_some_and(|s| s.is_nak());
            packet = Some(p);
            match aeth {
                Some(s) => format!(
                    "pkt-out {} {} {} {len}B {}",
                    Field::Qp.is(qp),
                    opcode_name(*opcode),
                    Field::Psn.is(psn),
                    Field::Aeth.is(s)
                ),
                None => format!("pkt-out {} {} {} {len}B", Field::Qp.is(qp), opcode_name(*opcode), Field::Psn.is(psn)),
            }
        }
        EventKind::FrameReceived { qp, opcode, psn, len } => {
            packet = Some(frame(nic, PacketKind::Received, *qp, *opcode, *psn, *len));
            format!("pkt-in {} {} {} {len}B", Field::Qp.is(qp), opcode_name(*opcode), Field::Psn.is(psn))
        }
        EventKind::FrameDropped { reason } => {
            packet = Some(Packet {
                nic,
                kind: PacketKind::Dropped(reason.clone()),
                opcode: None,
                psn: None,
                qp: None,
                len: 0,
                nak: false,
            });
            format!("pkt-drop {reason}")
        }
        EventKind::WireFault { fault } => {
            let (text, p) = wire_fault(nic, fault);
            packet = Some(p);
            text
        }
        other => format!("event {other}"),
    };
    Line { at: event.at, source: Source::Nic(nic), text, packet }
}

/// A frame a NIC sent or took.
fn frame(nic: usize, kind: PacketKind, qp: u32, opcode: u8, psn: u32, len: usize) -> Packet {
    Packet { nic, kind, opcode: Some(opcode), psn: Some(psn), qp: Some(qp), len, nak: false }
}

/// A wire fault as a line (`wire-fault drop frame=7 port=1 chance SEND_ONLY qp=18 psn=100`, a
/// corruption's bit and a delay's length after), and the frame it hit.
fn wire_fault(nic: usize, fault: &FaultEvent) -> (String, Packet) {
    let mut packet = Packet {
        nic,
        kind: PacketKind::Fault(fault.kind.to_string()),
        opcode: None,
        psn: None,
        qp: None,
        len: 0,
        nak: false,
    };
    let cause = match fault.cause {
        FaultCause::Rule(i) => format!("rule {i}"),
        FaultCause::Chance => "chance".to_string(),
    };
    let mut text =
        format!("wire-fault {} {} {} {cause}", fault.kind, Field::Frame.is(fault.frame), Field::Port.is(fault.port.0));
    if let Some((opcode, qp, psn)) = fault.bth {
        text.push_str(&format!(" {} {} {}", opcode_name(opcode), Field::Qp.is(qp), Field::Psn.is(psn)));
        (packet.opcode, packet.qp, packet.psn) = (Some(opcode), Some(qp), Some(psn));
    }
    match fault.kind {
        FaultKind::Corrupt => text.push_str(&format!(" bit {} of byte {}", fault.detail % 8, fault.detail / 8)),
        FaultKind::Delay => text.push_str(&format!(" by {}", format_duration(Duration::from_nanos(fault.detail)))),
        _ => {}
    }
    if packet.opcode == Some(ACKNOWLEDGE) {
        packet.len = 0;
    }
    (text, packet)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bnxt_model::net::switch::PortId;

    #[test]
    fn a_wire_fault_names_its_frame() {
        let fault = |kind, cause, bth, detail| FaultEvent {
            at: Duration::from_nanos(12_500),
            port: PortId(1),
            frame: 7,
            kind,
            cause,
            bth,
            detail,
        };
        let (text, p) = wire_fault(1, &fault(FaultKind::Drop, FaultCause::Chance, Some((4, 0x12, 100)), 0));
        assert_eq!(text, "wire-fault drop frame=7 port=1 chance SEND_ONLY qp=18 psn=100");
        assert_eq!(
            (p.nic, p.kind, p.opcode, p.qp, p.psn),
            (1, PacketKind::Fault("drop".into()), Some(4), Some(0x12), Some(100))
        );
        let (text, p) = wire_fault(0, &fault(FaultKind::Corrupt, FaultCause::Rule(0), None, 8 * 9 + 3));
        assert_eq!(text, "wire-fault corrupt frame=7 port=1 rule 0 bit 3 of byte 9");
        assert_eq!((p.kind, p.opcode), (PacketKind::Fault("corrupt".into()), None));
    }

    #[test]
    fn frames_become_packets() {
        let e = Event {
            at: Duration::from_micros(3),
            nic: 0,
            kind: EventKind::FrameSent { qp: 5, opcode: 4, psn: 9, len: 120, aeth: None },
        };
        let l = line(&e);
        assert_eq!(l.text, "pkt-out qp=5 SEND_ONLY psn=9 120B");
        assert_eq!(l.packet.unwrap().kind, PacketKind::Sent);
    }

    #[test]
    fn an_acknowledge_says_what_its_aeth_says_and_naks_are_marked() {
        use bnxt_model::net::ext::{NakCode, Syndrome};
        let ack = |aeth| Event {
            at: Duration::from_micros(3),
            nic: 1,
            kind: EventKind::FrameSent { qp: 7, opcode: 0x11, psn: 40, len: 62, aeth: Some(aeth) },
        };
        let l = line(&ack(Syndrome::Ack { credits: 0x1f }));
        assert_eq!(l.text, "pkt-out qp=7 ACKNOWLEDGE psn=40 62B aeth=ack");
        assert!(!l.packet.unwrap().nak);
        let l = line(&ack(Syndrome::RnrNak { timer: 14 }));
        assert_eq!(l.text, "pkt-out qp=7 ACKNOWLEDGE psn=40 62B aeth=rnr-nak");
        assert!(l.packet.unwrap().nak);
        let l = line(&ack(Syndrome::Nak(NakCode::PsnSequenceError)));
        assert_eq!(l.text, "pkt-out qp=7 ACKNOWLEDGE psn=40 62B aeth=nak-psn-sequence-error");
        assert!(l.packet.unwrap().nak);
    }
}
