//! A ladder diagram of the frames between NICs: a column per NIC, and a row per frame, in the
//! order the frames were sent, with an arrow from its sender to the NIC that took it. The model
//! sends a message's frames in a burst at one instant and they arrive one after another, so rows
//! are frames, not slices of time; each row says when its frame left and when it arrived.
//!
//! A frame the wire lost ends in a cross half way; one a NIC dropped on receipt (its ICRC failed
//! after a corruption) ends in a cross at the receiver; duplicates, reorderings, delays and
//! retransmissions (a frame sent again with the same opcode and PSN) are named and coloured.

use std::collections::HashMap;
use std::fmt::Write;
use std::time::Duration;

use super::{Line, Packet, PacketKind};
use crate::scenario::opcodes::opcode_name;

/// The most frames one diagram draws; a longer run is drawn from a window around its first
/// fault or retransmission.
pub const MAX_ROWS: usize = 160;

const ROW: f64 = 26.0;
const TOP: f64 = 118.0;
const LEFT: f64 = 60.0;
const COLUMN: f64 = 520.0;
const RIGHT: f64 = 420.0;

/// How an arrow is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// A request (SEND, READ request).
    Request,
    /// An ACKNOWLEDGE or READ response.
    Response,
    /// A NAK.
    Nak,
    /// A frame sent again.
    Retransmission,
}

impl Style {
    fn name(self) -> &'static str {
        match self {
            Style::Request => "request",
            Style::Response => "response",
            Style::Nak => "nak",
            Style::Retransmission => "retransmission",
        }
    }

    fn colour(self) -> &'static str {
        match self {
            Style::Request => "#1f5fbf",
            Style::Response => "#2e8b57",
            Style::Nak => "#d98200",
            Style::Retransmission => "#8a2be2",
        }
    }
}

/// Red: what was lost.
const LOST: &str = "#c0392b";

/// One frame sent, and what became of it.
#[derive(Debug, Clone)]
struct Frame {
    at: Duration,
    from: usize,
    packet: Packet,
    style: Style,
    /// When and where it arrived.
    arrivals: Vec<(Duration, usize)>,
    /// When and where a NIC dropped it on receipt, with why.
    refused: Vec<(Duration, usize, String)>,
    /// What the wire did to it.
    faults: Vec<String>,
    /// The wire lost it.
    lost: bool,
}

impl Frame {
    fn troubled(&self) -> bool {
        self.style == Style::Retransmission
            || !self.faults.is_empty()
            || !self.refused.is_empty()
            || self.arrivals.len() != 1
    }
}

/// What makes a frame the same frame sent again: its sender, queue pair, opcode, PSN, and for
/// an ACKNOWLEDGE whether it is a NAK (an ACK after a NAK of the same PSN is no repeat).
type SendKey = (usize, Option<u32>, Option<u8>, Option<u32>, bool);

/// The frames of `lines` and what became of each, in the order they were sent; and the events
/// that could not be tied to a frame.
fn frames(lines: &[Line]) -> (Vec<Frame>, usize) {
    let mut frames: Vec<Frame> = Vec::new();
    let mut sent_before: HashMap<SendKey, usize> = HashMap::new();
    // Frames by (opcode, psn), for what happens to them after.
    let mut by_key: HashMap<(Option<u8>, Option<u32>), Vec<usize>> = HashMap::new();
    let mut untied = 0;
    for line in lines {
        let Some(p) = &line.packet else { continue };
        let at = line.at;
        match &p.kind {
            PacketKind::Sent => {
                let seen = sent_before.entry((p.nic, p.qp, p.opcode, p.psn, p.nak)).or_insert(0);
                let style = if *seen > 0 {
                    Style::Retransmission
                } else if p.nak {
                    Style::Nak
                } else if matches!(p.opcode, Some(0x0d..=0x11)) {
                    Style::Response
                } else {
                    Style::Request
                };
                *seen += 1;
                by_key.entry((p.opcode, p.psn)).or_default().push(frames.len());
                frames.push(Frame {
                    at,
                    from: p.nic,
                    packet: p.clone(),
                    style,
                    arrivals: Vec::new(),
                    refused: Vec::new(),
                    faults: Vec::new(),
                    lost: false,
                });
            }
            PacketKind::Received => {
                // The oldest frame with this opcode and PSN that has not arrived, one from
                // another NIC first (a frame between two queue pairs of one NIC goes out and
                // back); a second arrival of one that has is a duplicate.
                let candidates = by_key.get(&(p.opcode, p.psn)).map(Vec::as_slice).unwrap_or_default();
                let open =
                    |f: &&usize| !frames[**f].lost && frames[**f].arrivals.is_empty() && frames[**f].refused.is_empty();
                let pick = candidates
                    .iter()
                    .filter(open)
                    .find(|f| frames[**f].from != p.nic)
                    .or_else(|| candidates.iter().find(open))
                    .or_else(|| candidates.iter().rev().find(|f| !frames[**f].lost))
                    .copied();
                match pick {
                    Some(f) => frames[f].arrivals.push((at, p.nic)),
                    None => untied += 1,
                }
            }
            PacketKind::Fault(kind) => {
                let newest = by_key
                    .get(&(p.opcode, p.psn))
                    .and_then(|c| c.iter().rev().find(|f| frames[**f].from == p.nic))
                    .copied();
                match newest {
                    Some(f) => {
                        frames[f].faults.push(kind.clone());
                        frames[f].lost |= kind == "drop";
                    }
                    None => untied += 1,
                }
            }
            PacketKind::Dropped(why) => {
                // A NIC drops what it cannot read: the oldest frame still on the wire that the
                // wire corrupted, else the oldest the wire did something to.
                let on_wire = |f: &Frame| !f.lost && f.arrivals.is_empty() && f.refused.is_empty();
                let pending = frames
                    .iter()
                    .position(|f| on_wire(f) && f.faults.iter().any(|k| k == "corrupt"))
                    .or_else(|| frames.iter().position(|f| on_wire(f) && !f.faults.is_empty()));
                match pending {
                    Some(f) => frames[f].refused.push((at, p.nic, why.clone())),
                    None => untied += 1,
                }
            }
        }
    }
    (frames, untied)
}

/// The SVG of the frames in `lines` between `nics` NICs, titled `title`; `None` when the run
/// sent no frames.
pub fn ladder(title: &str, nics: usize, lines: &[Line]) -> Option<String> {
    let (frames, untied) = frames(lines);
    if frames.is_empty() {
        return None;
    }
    let (first, last) = window(&frames);
    Some(draw(title, nics.max(2), &frames[first..last], (first, last, frames.len()), untied))
}

/// The frames to draw: all, or [`MAX_ROWS`] from a little before the first that something
/// happened to.
fn window(frames: &[Frame]) -> (usize, usize) {
    if frames.len() <= MAX_ROWS {
        return (0, frames.len());
    }
    let first_trouble = frames.iter().position(Frame::troubled);
    let start = first_trouble.map_or(0, |i| i.saturating_sub(MAX_ROWS / 8)).min(frames.len() - MAX_ROWS);
    (start, start + MAX_ROWS)
}

fn x_of(nic: usize) -> f64 {
    LEFT + COLUMN * nic as f64
}

fn y_of(row: usize) -> f64 {
    TOP + ROW * row as f64
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A time as the diagram writes it: milliseconds to the nanosecond.
fn time_label(at: Duration) -> String {
    format!("{}.{:06} ms", at.as_millis(), at.as_nanos() % 1_000_000)
}

fn cross(svg: &mut String, x: f64, y: f64) {
    let d = 6.0;
    let _ = writeln!(
        svg,
        r##"<path d="M{} {} L{} {} M{} {} L{} {}" stroke="{LOST}" stroke-width="2.5"/>"##,
        x - d,
        y - d,
        x + d,
        y + d,
        x - d,
        y + d,
        x + d,
        y - d
    );
}

/// Why a NIC dropped a frame, in a few words (the transcript has it whole).
fn short_reason(why: &str) -> String {
    if why.contains("ICRC") {
        return "bad ICRC".into();
    }
    let words: Vec<&str> = why.split_whitespace().take(5).collect();
    words.join(" ")
}

fn label(p: &Packet) -> String {
    let op = if p.nak { "NAK".to_string() } else { p.opcode.map(opcode_name).unwrap_or_else(|| "frame".into()) };
    match p.psn {
        Some(psn) => format!("{op} psn {psn}"),
        None => op,
    }
}

fn draw(
    title: &str,
    nics: usize,
    frames: &[Frame],
    (first, last, total): (usize, usize, usize),
    untied: usize,
) -> String {
    let width = (LEFT + COLUMN * (nics - 1) as f64 + RIGHT).max(1040.0);
    let height = y_of(frames.len()) + 30.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, monospace" font-size="12">"##
    );
    let _ = writeln!(svg, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(svg, "<title>{}</title>", escape(title));
    let _ = writeln!(svg, r##"<text x="16" y="24" font-size="16" font-weight="bold">{}</text>"##, escape(title));
    let mut shown = if first == 0 && last == total {
        format!("{total} frames, one a row in the order they were sent")
    } else {
        format!(
            "frames {} to {} of {total} (from just before the first trouble), one a row in the order they were sent",
            first + 1,
            last
        )
    };
    if untied > 0 {
        shown.push_str(&format!("; {untied} events not tied to a frame"));
    }
    let _ = writeln!(svg, r##"<text x="16" y="44" fill="#555">{}</text>"##, escape(&shown));
    // NAKs are told apart only where the events say which ACKs are NAKs.
    let naks = frames.iter().any(|f| f.style == Style::Nak);
    let legend = [
        (Style::Request.colour(), "request"),
        (Style::Response.colour(), "ACK / read response"),
        (Style::Nak.colour(), "NAK"),
        (Style::Retransmission.colour(), "retransmission"),
        (LOST, "✕ lost on the wire / dropped on receipt"),
    ];
    let mut lx = 16.0;
    for (colour, what) in legend.into_iter().filter(|(_, what)| naks || *what != "NAK") {
        let _ = writeln!(
            svg,
            r##"<line x1="{lx}" y1="64" x2="{}" y2="64" stroke="{colour}" stroke-width="3"/>"##,
            lx + 22.0
        );
        let _ = writeln!(svg, r##"<text x="{}" y="68">{what}</text>"##, lx + 28.0);
        lx += 40.0 + 7.3 * what.chars().count() as f64;
    }
    svg.push_str("<defs>");
    for style in [Style::Request, Style::Response, Style::Nak, Style::Retransmission] {
        let _ = write!(
            svg,
            r##"<marker id="head-{}" markerWidth="10" markerHeight="10" refX="9" refY="5" orient="auto" markerUnits="userSpaceOnUse"><path d="M0,0 L10,5 L0,10 z" fill="{}"/></marker>"##,
            style.name(),
            style.colour()
        );
    }
    svg.push_str("</defs>\n");
    for nic in 0..nics {
        let x = x_of(nic);
        let _ = writeln!(
            svg,
            r##"<text x="{x}" y="{}" text-anchor="middle" font-size="14" font-weight="bold">NIC {nic}</text>"##,
            TOP - 30.0
        );
        let _ = writeln!(
            svg,
            r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#444" stroke-width="2"/>"##,
            TOP - 20.0,
            height - 10.0
        );
    }
    let _ = writeln!(
        svg,
        r##"<text x="{}" y="{}" fill="#666" font-size="11">sent → arrived</text>"##,
        x_of(nics - 1) + 90.0,
        TOP - 30.0
    );
    let drop = ROW * 0.55;
    for (row, f) in frames.iter().enumerate() {
        let colour = f.style.colour();
        let (x1, y1) = (x_of(f.from), y_of(row) - ROW * 0.35);
        let mut notes: Vec<String> = f.faults.clone();
        if f.style == Style::Retransmission {
            notes.push("sent again".into());
        }
        if f.arrivals.len() > 1 {
            notes.push(format!("arrived {}×", f.arrivals.len()));
        }
        let to = f
            .arrivals
            .first()
            .map(|(_, n)| *n)
            .or(f.refused.first().map(|(_, n, _)| *n))
            .unwrap_or(if f.from + 1 < nics { f.from + 1 } else { f.from.saturating_sub(1) });
        let (x2, y2) = (x_of(to), y1 + drop);
        let goes_right = x2 >= x1;
        let arrived_at = f.arrivals.first().map(|(t, _)| *t).or(f.refused.first().map(|(t, _, _)| *t));
        if to == f.from && !f.arrivals.is_empty() {
            // Between two queue pairs of one NIC: out to the switch and back.
            let _ = writeln!(
                svg,
                r##"<polyline points="{x1},{y1} {},{} {},{y2}" fill="none" stroke="{colour}" stroke-width="1.8" marker-end="url(#head-{})"/>"##,
                x1 + 70.0,
                (y1 + y2) / 2.0,
                x1 + 3.0,
                f.style.name()
            );
        } else if !f.arrivals.is_empty() {
            let _ = writeln!(
                svg,
                r##"<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{colour}" stroke-width="1.8" marker-end="url(#head-{})"/>"##,
                f.style.name()
            );
        } else if let Some((_, _, why)) = f.refused.first() {
            let _ = writeln!(
                svg,
                r##"<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{colour}" stroke-width="1.8" stroke-dasharray="3 3"/>"##
            );
            cross(&mut svg, x2, y2);
            notes.push(format!("dropped on receipt: {}", short_reason(why)));
        } else {
            let (xm, ym) = ((x1 + x2) / 2.0, (y1 + y2) / 2.0);
            let _ = writeln!(
                svg,
                r##"<line x1="{x1}" y1="{y1}" x2="{xm}" y2="{ym}" stroke="{colour}" stroke-width="1.8" stroke-dasharray="3 3"/>"##
            );
            cross(&mut svg, xm, ym);
            if f.faults.is_empty() {
                notes.push("never arrived".into());
            }
        }
        let (lx, anchor) = if goes_right { (x1 + 10.0, "start") } else { (x1 - 10.0, "end") };
        let mut text = label(&f.packet);
        if !notes.is_empty() {
            text.push_str(&format!("  [{}]", notes.join(", ")));
        }
        let weight = if notes.is_empty() { "normal" } else { "bold" };
        let fill = if notes.is_empty() {
            colour
        } else if f.lost || !f.refused.is_empty() {
            LOST
        } else {
            colour
        };
        let _ = writeln!(
            svg,
            r##"<text x="{lx}" y="{}" text-anchor="{anchor}" fill="{fill}" font-weight="{weight}">{}</text>"##,
            y1 - 3.0,
            escape(&text)
        );
        let when = match arrived_at {
            Some(t) => format!("{} → {}", time_label(f.at), time_label(t)),
            None => format!("{} → lost", time_label(f.at)),
        };
        let _ = writeln!(
            svg,
            r##"<text x="{}" y="{}" fill="#666" font-size="11">{when}</text>"##,
            x_of(nics - 1) + 90.0,
            y1 + 6.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Source;

    fn packet(at: u64, nic: usize, kind: PacketKind, opcode: u8, psn: u32) -> Line {
        Line {
            at: Duration::from_micros(at),
            source: Source::Nic(nic),
            text: String::new(),
            packet: Some(Packet { nic, kind, opcode: Some(opcode), psn: Some(psn), qp: Some(1), len: 100, nak: false }),
        }
    }

    #[test]
    fn arrows_losses_and_retransmissions_are_drawn() {
        let lines = vec![
            packet(0, 0, PacketKind::Sent, 4, 7),
            packet(0, 0, PacketKind::Fault("drop".into()), 4, 7),
            packet(500, 0, PacketKind::Sent, 4, 7),
            packet(501, 1, PacketKind::Received, 4, 7),
            packet(501, 1, PacketKind::Sent, 0x11, 7),
            packet(502, 0, PacketKind::Received, 0x11, 7),
            packet(600, 0, PacketKind::Sent, 4, 8),
            packet(600, 0, PacketKind::Fault("corrupt".into()), 4, 8),
            Line {
                packet: Some(Packet {
                    nic: 1,
                    kind: PacketKind::Dropped("bad ICRC".into()),
                    opcode: None,
                    psn: None,
                    qp: None,
                    len: 0,
                    nak: false,
                }),
                ..packet(601, 1, PacketKind::Received, 0, 0)
            },
        ];
        let svg = ladder("t", 2, &lines).unwrap();
        assert!(svg.starts_with("<svg "), "{svg}");
        assert!(svg.contains("4 frames, one a row"), "{svg}");
        assert!(svg.contains("SEND_ONLY psn 7  [drop]"), "{svg}");
        assert!(svg.contains("SEND_ONLY psn 7  [sent again]"), "{svg}");
        assert!(svg.contains(">ACKNOWLEDGE psn 7<"), "{svg}");
        assert!(svg.contains("SEND_ONLY psn 8  [corrupt, dropped on receipt: bad ICRC]"), "{svg}");
        assert_eq!(short_reason("ICRC 0x1 is wrong (computed 0x2)"), "bad ICRC");
        assert_eq!(short_reason("no QP 5 ready to receive (RTS)"), "no QP 5 ready to");
        assert_eq!(svg.matches("marker-end").count(), 2, "two frames arrived");
        assert_eq!(svg.matches(r##"stroke="#c0392b" stroke-width="2.5""##).count(), 2, "a cross for each frame lost");
        assert!(ladder("t", 2, &[]).is_none());
    }

    #[test]
    fn a_long_run_is_drawn_from_a_window_before_its_first_fault() {
        let mut lines = Vec::new();
        for i in 0..1000u32 {
            lines.push(packet(u64::from(i) * 2, 0, PacketKind::Sent, 4, i));
            if i == 600 {
                lines.push(packet(u64::from(i) * 2, 0, PacketKind::Fault("drop".into()), 4, i));
            } else {
                lines.push(packet(u64::from(i) * 2 + 1, 1, PacketKind::Received, 4, i));
            }
        }
        let svg = ladder("t", 2, &lines).unwrap();
        let first = 600 - MAX_ROWS / 8;
        assert!(svg.contains(&format!("frames {} to {} of 1000", first + 1, first + MAX_ROWS)), "{}", &svg[..800]);
        assert!(svg.contains("psn 600  [drop]"));
        assert_eq!(svg.matches("marker-end").count(), MAX_ROWS - 1);
    }
}
