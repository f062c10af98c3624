//! Transcripts: a readable, diffable record of one scenario run (docs/transcripts.md).
//!
//! Each line is a time on the target's clock, who speaks, and what happened:
//!
//! ```text
//!      0.100000000  step   1 line 9: open: {nic: 0, as: a}
//!      0.100000000  drv0   hwrm-request VER_GET seq=0
//!      0.100000000  nic0   hwrm-request VER_GET seq=0 direct 24B
//!      0.100002000  nic0   hwrm-response VER_GET seq=0 SUCCESS
//!      0.100010000  drv0   hwrm-answer VER_GET seq=0 ok
//! ```
//!
//! `step` lines are the runner's (a step begins, ends, a completion it took); `drvN` lines are
//! the driver's record of what it asked of NIC N ([`bnxt::trace`]), the same on every target;
//! `nicN` lines are what the model saw and did, model only. [`record::Recorder`] collects them in
//! the order they happened; [`diff`] compares two transcripts by event; [`ladder`] draws the
//! frames between NICs.

pub mod diff;
pub mod ladder;
pub mod model;
pub mod record;

use std::fmt;
use std::time::Duration;

/// Who a line is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The runner: steps and what they saw.
    Step,
    /// The driver, about NIC N.
    Driver(usize),
    /// The model's NIC N.
    Nic(usize),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Step => f.write_str("step"),
            Source::Driver(n) => write!(f, "drv{n}"),
            Source::Nic(n) => write!(f, "nic{n}"),
        }
    }
}

impl Source {
    /// The source written `text` (`step`, `drv1`, `nic0`).
    pub fn parse(text: &str) -> Option<Source> {
        if text == "step" {
            return Some(Source::Step);
        }
        let (kind, n) = text.split_at(text.find(|c: char| c.is_ascii_digit())?);
        let n: usize = n.parse().ok()?;
        match kind {
            "drv" => Some(Source::Driver(n)),
            "nic" => Some(Source::Nic(n)),
            _ => None,
        }
    }
}

/// A frame on the wire, as the ladder diagram draws it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The NIC it concerns (sender for `Sent` and `Fault`, receiver otherwise).
    pub nic: usize,
    /// What happened to it.
    pub kind: PacketKind,
    /// BTH opcode (when known).
    pub opcode: Option<u8>,
    /// BTH PSN (when known).
    pub psn: Option<u32>,
    /// QP: the sender's for `Sent`, the destination for `Received` and `Fault`.
    pub qp: Option<u32>,
    /// Frame bytes.
    pub len: usize,
    /// For an ACKNOWLEDGE: whether its AETH says NAK (when known).
    pub nak: bool,
}

/// What happened to a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PacketKind {
    /// It left its NIC.
    Sent,
    /// It reached a NIC's queue pair.
    Received,
    /// A NIC dropped it on receipt (the reason).
    Dropped(String),
    /// The wire's fault stage did this to it (`drop`, `duplicate`, `reorder`, `corrupt`,
    /// `delay`).
    Fault(String),
}

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Time on the target's clock.
    pub at: Duration,
    /// Who speaks.
    pub source: Source,
    /// What happened: a word naming the event, then its fields.
    pub text: String,
    /// The frame it is about, if any (not written; drawn by the ladder).
    pub packet: Option<Packet>,
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>6}.{:09}  {:<5}  {}",
            self.at.as_secs(),
            self.at.subsec_nanos(),
            self.source.to_string(),
            self.text
        )
    }
}

impl Line {
    /// A line without a frame.
    pub fn new(at: Duration, source: Source, text: impl Into<String>) -> Line {
        Line { at, source, text: text.into(), packet: None }
    }

    /// Read a line as [`fmt::Display`] wrote it (its frame is not written, so it is `None`).
    pub fn parse(line: &str) -> Option<Line> {
        let line = line.trim_start();
        let (time, rest) = line.split_once(char::is_whitespace)?;
        let (secs, nanos) = time.split_once('.')?;
        let at = Duration::new(secs.parse().ok()?, nanos.parse().ok()?);
        let rest = rest.trim_start();
        let (source, text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        Some(Line::new(at, Source::parse(source)?, text.trim_start()))
    }
}

/// The header lines (`# ...`) and lines of a transcript file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Transcript {
    /// `key: value` pairs of the header, in order.
    pub header: Vec<(String, String)>,
    /// The lines.
    pub lines: Vec<Line>,
}

/// The first line of every transcript file.
pub const MAGIC: &str = "# bnxt-rig transcript 1";

impl Transcript {
    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut out = String::with_capacity(64 * (self.lines.len() + 8));
        out.push_str(MAGIC);
        out.push('\n');
        for (k, v) in &self.header {
            out.push_str(&format!("# {k}: {v}\n"));
        }
        for line in &self.lines {
            out.push_str(&line.to_string());
            out.push('\n');
        }
        out
    }

    /// Read a transcript file's text; `Err` names the first line that is not a transcript's.
    /// Carriage returns ending a line are not part of it (a file written with CR LF, or worse,
    /// reads as the same transcript, and prints back without them).
    pub fn parse(text: &str) -> Result<Transcript, String> {
        let mut lines = text.lines().map(|l| l.trim_end_matches('\r')).enumerate();
        match lines.next() {
            Some((_, first)) if first.trim_end() == MAGIC => {}
            _ => return Err(format!("line 1: not a bnxt-rig transcript (it starts with `{MAGIC}`)")),
        }
        let mut t = Transcript::default();
        for (i, line) in lines {
            if let Some(h) = line.strip_prefix("# ") {
                if let Some((k, v)) = h.split_once(": ") {
                    t.header.push((k.to_string(), v.to_string()));
                }
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            t.lines.push(Line::parse(line).ok_or_else(|| format!("line {}: not a transcript line: {line}", i + 1))?);
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_print_and_parse_back() {
        let line = Line::new(Duration::new(12, 345), Source::Driver(1), "hwrm-request VER_GET seq=0");
        let text = line.to_string();
        assert_eq!(text, "    12.000000345  drv1   hwrm-request VER_GET seq=0");
        assert_eq!(Line::parse(&text), Some(line));
        let t = Transcript {
            header: vec![("scenario".into(), "x".into())],
            lines: vec![Line::new(Duration::ZERO, Source::Step, "1 line 3: wait: 1s")],
        };
        assert_eq!(Transcript::parse(&t.to_text()), Ok(t));
        assert!(Transcript::parse("hello\n").unwrap_err().contains("not a bnxt-rig transcript"));
        assert!(Transcript::parse(&format!("{MAGIC}\nnonsense\n")).unwrap_err().starts_with("line 2:"));
    }

    #[test]
    fn carriage_returns_ending_lines_are_not_part_of_them() {
        // Found by the readers fuzz target: a header value ending in a stray CR printed back as
        // CR LF, which read again as the value without it.
        let text = format!("{MAGIC}\r\n# nic: drv1 at guest\r\r\n     1.000000000  drv0   pci bar0 unset\r\r\n");
        let t = Transcript::parse(&text).unwrap();
        assert_eq!(t.header, [("nic".to_string(), "drv1 at guest".to_string())]);
        assert_eq!(t.lines[0].text, "pci bar0 unset");
        assert_eq!(Transcript::parse(&t.to_text()), Ok(t));
    }
}
