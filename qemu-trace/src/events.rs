//! What the tracer writes about a function: typed events, and their text in a transcript line
//! (docs/transcripts.md; docs/qemu-trace.md lists the events).

use std::fmt;

use bnxt_hsi::hwrm::ErrorCode;
use bnxt_transcript::Field;

/// How a request reached the firmware.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// The request itself, in the CHIMP window.
    Direct,
    /// A `hwrm_short_input` in the window naming the request in host memory.
    Short,
    /// The KONG window.
    Kong,
}

/// One thing the guest's driver did to a function, or saw from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceEvent {
    /// A BAR now holds a base (or none, while being sized).
    Bar {
        /// The BAR.
        bar: u8,
        /// Its base.
        base: Option<u64>,
    },
    /// The command register's enables.
    Command {
        /// Memory space.
        memory: bool,
        /// Bus master.
        bus_master: bool,
    },
    /// An HWRM request was triggered.
    HwrmRequest {
        /// `req_type`.
        req_type: u16,
        /// `seq_id` (None when a short request's body could not be read).
        seq_id: Option<u16>,
        /// How it was submitted.
        channel: Channel,
        /// `target_id`, when not the HWRM firmware's own (0xffff).
        target_id: Option<u16>,
        /// `cmpl_ring`, when the request asks for a completion-ring notification.
        cmpl_ring: Option<u16>,
    },
    /// The driver read a request's response with its valid byte set.
    HwrmAnswer {
        /// `req_type` of the request.
        req_type: u16,
        /// Its `seq_id`.
        seq_id: u16,
        /// `error_code` of the response.
        error_code: u16,
        /// `resp_len`.
        resp_len: u16,
    },
    /// A 64-bit doorbell store that decodes.
    Doorbell {
        /// Its type (`SQ`, `CQ_ARMALL`, ...).
        ty: &'static str,
        /// Ring or queue id.
        xid: u32,
        /// Index.
        index: u32,
        /// Whether on the L2 path (else RoCE or the engine).
        l2: bool,
        /// Whether the valid bit was set (P7 ignores doorbells without it).
        valid: bool,
    },
    /// A store to the doorbell BAR that is not a doorbell.
    DoorbellStore {
        /// Offset in BAR2.
        offset: u64,
        /// Bytes.
        size: u8,
        /// Value.
        value: u64,
        /// Why it is not one.
        why: String,
    },
    /// A GRC window was pointed at a GRC address.
    GrcWindow {
        /// Window number (1..=3).
        window: u8,
        /// The GRC base.
        base: u32,
    },
    /// A register read returned a value different from the last read of it.
    Read {
        /// What was read (`BAR0+0x520`, `GRC 0x31001f0`).
        at: String,
        /// Its name, when known.
        name: &'static str,
        /// The value.
        value: u64,
    },
    /// A store not otherwise decoded.
    Write {
        /// Where (`BAR0+0x...`).
        at: String,
        /// Its name, when known.
        name: &'static str,
        /// Bytes.
        size: u8,
        /// The value.
        value: u64,
    },
    /// The RoCE command queue's trigger, with the producer index last written.
    RoceTrigger {
        /// The CMDQ producer (`BAR0+0x60c`).
        prod: u32,
    },
    /// An MSI-X table entry's vector control was written.
    Msix {
        /// Entry.
        entry: u64,
        /// Message address.
        address: u64,
        /// Message data.
        data: u32,
        /// Masked.
        masked: bool,
    },
}

/// A register or data value in hexadecimal, grouped by four digits from the right once it has
/// more than four (`0x4843_5301`): so that `bnxt-rig diff` compares it, where it masks an
/// ungrouped 8-digit number as an address.
pub fn value(v: u64) -> String {
    let hex = format!("{v:x}");
    let mut out = String::from("0x");
    for (i, c) in hex.chars().enumerate() {
        if i > 0 && (hex.len() - i) % 4 == 0 {
            out.push('_');
        }
        out.push(c);
    }
    out
}

/// An address (a BAR's base, a DMA or message address) in hexadecimal, at least 8 digits: as
/// `bnxt-rig diff` masks addresses, which differ between runs and machines.
pub fn address(a: u64) -> String {
    format!("{a:#010x}")
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

/// The name of a `req_type`, `0x....` when the interface does not define it.
pub fn req_label(req_type: u16) -> String {
    bnxt_hsi::hwrm::req_name(req_type).map_or_else(|| format!("0x{req_type:04x}"), str::to_string)
}

/// A firmware status register's value as bnxt_en reads it (bnxt.h `BNXT_FW_STATUS_*`).
pub fn fw_status(value: u64) -> String {
    use bnxt_hsi::fw_status as s;
    let v = value as u32;
    let code = v & s::CODE_MASK;
    let mut t = match code.cmp(&s::CODE_READY) {
        std::cmp::Ordering::Equal => "ready".to_string(),
        std::cmp::Ordering::Less => format!("booting 0x{code:x}"),
        std::cmp::Ordering::Greater => format!("error 0x{code:x}"),
    };
    for (bit, name) in [
        (s::IMAGE_DEGRADED, "image-degraded"),
        (s::RECOVERABLE, "recoverable"),
        (s::SHUTDOWN, "shutdown"),
        (s::RECOVERING, "recovering"),
    ] {
        if v & bit != 0 {
            t.push(' ');
            t.push_str(name);
        }
    }
    t
}

impl fmt::Display for TraceEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceEvent::Bar { bar, base: Some(b) } => write!(f, "pci bar{bar}={}", address(*b)),
            TraceEvent::Bar { bar, base: None } => write!(f, "pci bar{bar} unset"),
            TraceEvent::Command { memory, bus_master } => {
                write!(
                    f,
                    "pci command {} {}",
                    Field::Memory.is(on_off(*memory)),
                    Field::BusMaster.is(on_off(*bus_master))
                )
            }
            TraceEvent::HwrmRequest { req_type, seq_id, channel, target_id, cmpl_ring } => {
                write!(f, "hwrm-request {}", req_label(*req_type))?;
                match seq_id {
                    Some(s) => write!(f, " {}", Field::Seq.is(s))?,
                    None => write!(f, " {}", Field::Seq.is("?"))?,
                }
                match channel {
                    Channel::Direct => {}
                    Channel::Short => f.write_str(" short")?,
                    Channel::Kong => f.write_str(" kong")?,
                }
                if let Some(t) = target_id {
                    write!(f, " {}", Field::Target.is(format_args!("0x{t:04x}")))?;
                }
                if let Some(c) = cmpl_ring {
                    write!(f, " {}", Field::CmplRing.is(c))?;
                }
                Ok(())
            }
            TraceEvent::HwrmAnswer { req_type, seq_id, error_code, resp_len } => {
                write!(f, "hwrm-answer {} {} ", req_label(*req_type), Field::Seq.is(seq_id))?;
                if *error_code == 0 {
                    f.write_str("ok")?;
                } else {
                    write!(f, "refused {}", ErrorCode::from_value(*error_code))?;
                }
                write!(f, " {}", Field::Len.is(resp_len))
            }
            TraceEvent::Doorbell { ty, xid, index, l2, valid } => {
                write!(f, "doorbell {ty} {} {}", Field::Xid.is(xid), Field::Index.is(index))?;
                if *l2 {
                    f.write_str(" l2")?;
                }
                if !valid {
                    f.write_str(" not-valid")?;
                }
                Ok(())
            }
            TraceEvent::DoorbellStore { offset, size, value, why } => {
                write!(f, "doorbell-store BAR2+0x{offset:x} {size}B {}: {why}", self::value(*value))
            }
            TraceEvent::GrcWindow { window, base } => {
                write!(f, "grc-window {window} {}", Field::Base.is(format_args!("0x{base:x}")))
            }
            TraceEvent::Read { at, name, value } => {
                write!(f, "read {at}")?;
                if !name.is_empty() {
                    write!(f, " ({name})")?;
                }
                write!(f, " = {}", self::value(*value))?;
                if name.starts_with("fw_status") {
                    write!(f, " {}", fw_status(*value))?;
                }
                Ok(())
            }
            TraceEvent::Write { at, name, size, value } => {
                write!(f, "write {at}")?;
                if !name.is_empty() {
                    write!(f, " ({name})")?;
                }
                if name.ends_with("address") {
                    write!(f, " {size}B {}", address(*value))
                } else {
                    write!(f, " {size}B {}", self::value(*value))
                }
            }
            TraceEvent::RoceTrigger { prod } => write!(f, "roce-trigger {}", Field::Prod.is(value(u64::from(*prod)))),
            TraceEvent::Msix { entry, address, data, masked } => {
                let m = if *masked { "masked" } else { "unmasked" };
                write!(
                    f,
                    "msix {} {} {} {m}",
                    Field::Entry.is(entry),
                    Field::Address.is(self::address(*address)),
                    Field::Data.is(value(u64::from(*data)))
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_as_the_transcript_vocabulary() {
        let e = TraceEvent::HwrmRequest {
            req_type: 0x15,
            seq_id: Some(4),
            channel: Channel::Direct,
            target_id: None,
            cmpl_ring: None,
        };
        assert_eq!(e.to_string(), "hwrm-request FUNC_QCAPS seq=4");
        let e = TraceEvent::HwrmAnswer { req_type: 0xfff6, seq_id: 1, error_code: 0xffff, resp_len: 16 };
        assert_eq!(e.to_string(), "hwrm-answer NVM_GET_DEV_INFO seq=1 refused CMD_NOT_SUPPORTED len=16");
        let e = TraceEvent::Doorbell { ty: "NQ_ARM", xid: 3, index: 7, l2: true, valid: true };
        assert_eq!(e.to_string(), "doorbell NQ_ARM xid=3 index=7 l2");
        let e = TraceEvent::Read { at: "BAR0+0x520".into(), name: "fw_status", value: 0x8000 };
        assert_eq!(e.to_string(), "read BAR0+0x520 (fw_status) = 0x8000 ready");
        assert_eq!(fw_status(0x40_0000 | 0x8001), "error 0x8001 recovering");
        assert_eq!(
            (value(0x8000), value(0x4843_5301), value(0x1_0000)),
            ("0x8000".into(), "0x4843_5301".into(), "0x1_0000".into())
        );
    }
}
