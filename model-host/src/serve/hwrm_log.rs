//! `--hwrm-log`: one text line per HWRM request the firmware served, in order, so the requests a
//! guest driver sent and the codes the model answered can be read off (ci/guest-test.sh keeps it
//! under fixtures/ per guest kernel). Each line:
//!
//! ```text
//! <seconds> <REQ_NAME> 0x<req_type> seq=<seq_id> <ERROR_NAME> 0x<error_code>[ : <why refused>]
//! ```
//!
//! e.g. `0.012345 FUNC_QCAPS 0x0015 seq=4 SUCCESS 0x0000` or
//! `0.020001 PORT_MAC_QCAPS 0x00b1 seq=20 CMD_NOT_SUPPORTED 0xffff: not implemented by the model`.
//! A request an injected fault swallows gets `NO_RESPONSE` instead of a code; one whose response
//! could not be written to host memory gets `RESPONSE_NOT_WRITTEN`. A firmware reset and restart
//! (`ctl fw reset` / `fw fatal`) are lines of their own: `<seconds> EVENT firmware reset
//! (RESET_NOTIFY sent)`, `<seconds> EVENT firmware restarted`; so is a RoCE command an injected
//! fault took: `<seconds> EVENT roce fault on CREATE_QP #3: no-response (injected fault)`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use bnxt_hsi::hwrm::ErrorCode;

use bnxt_model::events::{Event, EventKind, req_label};
use bnxt_model::faults::FirmwareAction;

/// The log file.
pub struct HwrmLog {
    out: BufWriter<File>,
    /// The request being served, by NIC (the last HWRM_REQUEST seen), for DMA failures.
    last_request: HashMap<usize, (u16, u16)>,
    lines: u64,
}

impl HwrmLog {
    /// Create the log at `path` (a new file replacing what is there, see [`bnxt_output::create`]).
    pub fn create(path: &Path) -> std::io::Result<HwrmLog> {
        Ok(HwrmLog { out: BufWriter::new(bnxt_output::create(path)?), last_request: HashMap::new(), lines: 0 })
    }

    /// Lines written.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Write the line `event` calls for, if any.
    pub fn record(&mut self, event: &Event) -> std::io::Result<()> {
        let t = event.at.as_secs_f64();
        let line = match &event.kind {
            EventKind::HwrmRequest { req_type, seq_id, .. } => {
                self.last_request.insert(event.nic, (*req_type, *seq_id));
                return Ok(());
            }
            EventKind::HwrmResponse { req_type, seq_id, error_code, reason } => {
                let code = ErrorCode::from_value(*error_code);
                let why = if reason.is_empty() { String::new() } else { format!(": {reason}") };
                format!("{t:.6} {} 0x{req_type:04x} seq={seq_id} {code} 0x{error_code:04x}{why}", req_label(*req_type))
            }
            EventKind::FaultFired { req_type, action: FirmwareAction::NoResponse, .. } => {
                let seq = self.last_request.get(&event.nic).map_or(String::from("?"), |(_, s)| s.to_string());
                format!("{t:.6} {} 0x{req_type:04x} seq={seq} NO_RESPONSE (injected fault)", req_label(*req_type))
            }
            EventKind::FaultFired { req_type, action: FirmwareAction::ActsNoResponse, .. } => {
                let seq = self.last_request.get(&event.nic).map_or(String::from("?"), |(_, s)| s.to_string());
                format!(
                    "{t:.6} {} 0x{req_type:04x} seq={seq} NO_RESPONSE (injected fault; acted on)",
                    req_label(*req_type)
                )
            }
            EventKind::FaultFired {
                req_type,
                action:
                    action @ (FirmwareAction::WrongRespLen | FirmwareAction::WrongSeqId | FirmwareAction::NoValidByte),
                ..
            } => {
                let seq = self.last_request.get(&event.nic).map_or(String::from("?"), |(_, s)| s.to_string());
                let what = bnxt_model::armed::action_name(action.kind());
                format!(
                    "{t:.6} {} 0x{req_type:04x} seq={seq} MALFORMED {what} (injected fault; acted on)",
                    req_label(*req_type)
                )
            }
            EventKind::DmaFailed { during, error } if during.contains("response") => {
                let (req_type, seq) = self.last_request.get(&event.nic).copied().unwrap_or((0xffff, 0));
                format!("{t:.6} {} 0x{req_type:04x} seq={seq} RESPONSE_NOT_WRITTEN: {error}", req_label(req_type))
            }
            // The firmware's own resets, so that the requests around them can be read in order,
            // and the RoCE commands an injected fault took (the CMDQ has no log of its own).
            kind @ (EventKind::FirmwareReset { .. } | EventKind::FirmwareRestarted) => format!("{t:.6} EVENT {kind}"),
            kind @ EventKind::RoceFaultFired { .. } => format!("{t:.6} EVENT {kind} (injected fault)"),
            _ => return Ok(()),
        };
        self.lines += 1;
        writeln!(self.out, "{line}")?;
        // Flushed per line: the log must be whole even when the process is killed.
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn one_line_per_answered_request_with_name_number_and_code() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hwrm.log");
        let mut log = HwrmLog::create(&path).unwrap();
        let ev = |kind| Event { at: Duration::from_millis(12), nic: 0, kind };
        log.record(&ev(EventKind::HwrmRequest {
            req_type: 0,
            seq_id: 1,
            form: bnxt_model::events::SubmitForm::Direct,
            len: 24,
            summary: String::new(),
        }))
        .unwrap();
        log.record(&ev(EventKind::HwrmResponse { req_type: 0, seq_id: 1, error_code: 0, reason: String::new() }))
            .unwrap();
        log.record(&ev(EventKind::HwrmResponse {
            req_type: 0xb1,
            seq_id: 2,
            error_code: 0xffff,
            reason: "not implemented by the model".into(),
        }))
        .unwrap();
        log.record(&ev(EventKind::HwrmRequest {
            req_type: 0x1d,
            seq_id: 3,
            form: bnxt_model::events::SubmitForm::Direct,
            len: 24,
            summary: String::new(),
        }))
        .unwrap();
        log.record(&ev(EventKind::FaultFired { req_type: 0x1d, nth: 1, action: FirmwareAction::NoResponse })).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0], "0.012000 VER_GET 0x0000 seq=1 SUCCESS 0x0000");
        assert!(lines[1].ends_with("seq=2 CMD_NOT_SUPPORTED 0xffff: not implemented by the model"), "{}", lines[1]);
        assert_eq!(lines[2], "0.012000 FUNC_DRV_RGTR 0x001d seq=3 NO_RESPONSE (injected fault)");
        assert_eq!(log.lines(), 3);
        log.record(&ev(EventKind::FirmwareReset { fatal: false, notified: true })).unwrap();
        log.record(&ev(EventKind::FirmwareRestarted)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().skip(3).collect();
        assert_eq!(lines, ["0.012000 EVENT firmware reset (RESET_NOTIFY sent)", "0.012000 EVENT firmware restarted"]);
        log.record(&ev(EventKind::RoceFaultFired {
            opcode: 0x1,
            nth: 3,
            action: bnxt_model::faults::CommandAction::NoResponse,
        }))
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.lines().last(),
            Some("0.012000 EVENT roce fault on CREATE_QP #3: no-response (injected fault)"),
            "{text}"
        );
    }
}
