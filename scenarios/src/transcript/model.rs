//! The model's events as transcript lines: the `nicN` lines of a run on the model, and the frames
//! the ladder diagram draws.

use std::sync::Arc;
use std::time::Duration;

use bnxt_model::events::{AccessKind, Event, EventKind, opcode_label, req_label};
use bnxt_model::faults::FirmwareAction;

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
            let mut t = format!("hwrm-request {} seq={seq_id} {form} {len}B", req_label(*req_type));
            if !summary.is_empty() {
                t.push(' ');
                t.push_str(summary);
            }
            t
        }
        EventKind::HwrmResponse { req_type, seq_id, error_code, reason } => {
            let code = bnxt_hsi::hwrm::ErrorCode::from_value(*error_code);
            let mut t = format!("hwrm-response {} seq={seq_id} {code}", req_label(*req_type));
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
            };
            format!("firmware-fault {} nth={nth} {action}", req_label(*req_type))
        }
        EventKind::UnsupportedRequest { req_type } => format!("unsupported-request {}", req_label(*req_type)),
        EventKind::UnimplementedAccess { bar, offset, access, value, what } => match access {
            AccessKind::Read => format!("unimplemented read BAR{bar}+0x{offset:x} ({what})"),
            AccessKind::Write => format!("unimplemented write BAR{bar}+0x{offset:x} value=0x{value:x} ({what})"),
        },
        EventKind::CommandChanged { memory, bus_master } => {
            format!("pci command memory={} bus_master={}", on_off(*memory), on_off(*bus_master))
        }
        EventKind::RelaxedOrderingChanged { enabled } => format!("pci relaxed_ordering={}", on_off(*enabled)),
        EventKind::FunctionLevelReset => "pci function-level-reset".into(),
        EventKind::RoceCommand { opcode, cookie, summary, .. } => {
            let mut t = format!("roce-command {} cookie={cookie}", opcode_label(*opcode));
            if !summary.is_empty() {
                t.push(' ');
                t.push_str(summary);
            }
            t
        }
        EventKind::RoceCompletion { opcode, cookie, status, xid, reason } => {
            let st = bnxt_hsi::roce::rcfw::CreqStatus::from_value(*status).map_or("?", |s| s.name());
            let mut t = format!("roce-completion {} cookie={cookie} {st} xid={xid}", opcode_label(*opcode));
            if !reason.is_empty() {
                t.push_str(&format!(": {reason}"));
            }
            t
        }
        EventKind::Doorbell { ty, xid, index } => format!("doorbell {ty} xid={xid} index={index}"),
        EventKind::Cqe { cq, qp, requester, status, index } => {
            let side = if *requester { "req" } else { "res" };
            format!("cqe {side} cq={cq} qp={qp} status={status} index={index}")
        }
        EventKind::CqNotification { cq, nq, toggle } => format!("cq-notify cq={cq} nq={nq} toggle={toggle}"),
        EventKind::Interrupt { vector } => format!("msix vector={vector}"),
        EventKind::FrameSent { qp, opcode, psn, len, aeth } => {
            let mut p = frame(nic, PacketKind::Sent, *qp, *opcode, *psn, *len);
            p.nak = aeth.is_some_and(|s| s.is_nak());
            packet = Some(p);
            match aeth {
                Some(s) => format!("pkt-out qp={qp} {} psn={psn} {len}B aeth={s}", opcode_name(*opcode)),
                None => format!("pkt-out qp={qp} {} psn={psn} {len}B", opcode_name(*opcode)),
            }
        }
        EventKind::FrameReceived { qp, opcode, psn, len } => {
            packet = Some(frame(nic, PacketKind::Received, *qp, *opcode, *psn, *len));
            format!("pkt-in qp={qp} {} psn={psn} {len}B", opcode_name(*opcode))
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

/// A wire fault as the model's fault stage describes it (`{time} {kind} frame {n} from port
/// {p}: {cause} (opcode 0x04 QP 0x12 PSN 5), bit 3 of byte 70`), without its time, and the frame
/// it hit.
fn wire_fault(nic: usize, fault: &str) -> (String, Packet) {
    // The time leads; the line has its own.
    let text = fault.split_once(' ').map_or(fault, |(_, rest)| rest);
    let kind = text.split_whitespace().next().unwrap_or("fault").to_string();
    let mut packet =
        Packet { nic, kind: PacketKind::Fault(kind), opcode: None, psn: None, qp: None, len: 0, nak: false };
    if let Some(start) = text.find("(opcode ")
        && let Some(end) = text[start..].find(')')
    {
        let fields: Vec<&str> = text[start + 1..start + end].split_whitespace().collect();
        if let ["opcode", op, "QP", qp, "PSN", psn] = fields[..] {
            packet.opcode = u8::from_str_radix(op.trim_start_matches("0x"), 16).ok();
            packet.qp = u32::from_str_radix(qp.trim_start_matches("0x"), 16).ok();
            packet.psn = psn.parse().ok();
        }
    }
    if packet.opcode == Some(ACKNOWLEDGE) {
        packet.len = 0;
    }
    (format!("wire-fault {text}"), packet)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wire_fault_names_its_frame() {
        let (text, p) = wire_fault(1, "12.5µs drop frame 7 from port 1: chance (opcode 0x04 QP 0x12 PSN 100)");
        assert_eq!(text, "wire-fault drop frame 7 from port 1: chance (opcode 0x04 QP 0x12 PSN 100)");
        assert_eq!(
            (p.nic, p.kind, p.opcode, p.qp, p.psn),
            (1, PacketKind::Fault("drop".into()), Some(4), Some(0x12), Some(100))
        );
        let (_, p) = wire_fault(0, "1ms corrupt frame 2 from port 0: rule 0, bit 3 of byte 9");
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
