//! A ladder diagram of the frames between NICs: a column per NIC, time flowing down, an arrow
//! per frame from its sender to the NIC that received it. Frames the wire dropped end in a cross
//! half way; frames a NIC dropped on receipt (a bad ICRC after a corruption) end in a cross at
//! the receiver; duplicates, reorderings, delays and retransmissions are marked and coloured.
//!
//! Rows are events, not equal slices of time: a burst of frames at one instant and a 40-ms
//! retransmission timeout both stay readable; each row says its time on the left.

use std::collections::HashMap;
use std::fmt::Write;
use std::time::Duration;

use super::{Line, Packet, PacketKind};
use crate::scenario::opcodes::opcode_name;

/// The most rows one diagram draws; a longer run is drawn from a window around its first fault
/// or retransmission.
pub const MAX_ROWS: usize = 240;

const ROW: f64 = 22.0;
const TOP: f64 = 118.0;
const LEFT: f64 = 150.0;
const COLUMN: f64 = 460.0;
const RIGHT: f64 = 60.0;

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

/// One frame sent, and what became of it.
#[derive(Debug, Clone)]
struct Frame {
    row: usize,
    at: Duration,
    from: usize,
    packet: Packet,
    style: Style,
    /// Rows (and NICs) where it arrived.
    arrivals: Vec<(usize, usize)>,
    /// Rows (and NICs) where a NIC dropped it on receipt, with why.
    refused: Vec<(usize, usize, String)>,
    /// What the wire did to it.
    faults: Vec<String>,
    /// The wire lost it.
    lost: bool,
}

/// The SVG of the frames in `lines` between `nics` NICs, titled `title`; `None` when the run
/// sent no frames.
pub fn ladder(title: &str, nics: usize, lines: &[Line]) -> Option<String> {
    let packets: Vec<(Duration, &Packet)> = lines.iter().filter_map(|l| l.packet.as_ref().map(|p| (l.at, p))).collect();
    if !packets.iter().any(|(_, p)| p.kind == PacketKind::Sent) {
        return None;
    }
    let total_rows = packets.len();
    let (first, last) = window(&packets);
    let mut frames: Vec<Frame> = Vec::new();
    let mut rows: Vec<Duration> = Vec::new();
    let mut sent_before: HashMap<(usize, Option<u32>, Option<u8>, Option<u32>), usize> = HashMap::new();
    // Sends not yet arrived, by (opcode, psn): their frame indices.
    let mut in_flight: HashMap<(Option<u8>, Option<u32>), Vec<usize>> = HashMap::new();
    let mut dropped_rows: Vec<(usize, usize, String)> = Vec::new();
    for (at, p) in &packets[first..last] {
        let row = rows.len();
        rows.push(*at);
        match &p.kind {
            PacketKind::Sent => {
                let key = (p.nic, p.qp, p.opcode, p.psn);
                let seen = sent_before.entry(key).or_insert(0);
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
                in_flight.entry((p.opcode, p.psn)).or_default().push(frames.len());
                frames.push(Frame {
                    row,
                    at: *at,
                    from: p.nic,
                    packet: (*p).clone(),
                    style,
                    arrivals: Vec::new(),
                    refused: Vec::new(),
                    faults: Vec::new(),
                    lost: false,
                });
            }
            PacketKind::Received => {
                // The oldest frame in flight with this opcode and PSN from another NIC; a second
                // arrival of one already arrived is a duplicate.
                let candidates = in_flight.get(&(p.opcode, p.psn)).cloned().unwrap_or_default();
                let towards = |f: &usize| frames[*f].from != p.nic && !frames[*f].lost;
                let pick = candidates
                    .iter()
                    .copied()
                    .find(|f| towards(f) && frames[*f].arrivals.is_empty())
                    .or_else(|| candidates.iter().copied().rev().find(towards));
                if let Some(f) = pick {
                    frames[f].arrivals.push((row, p.nic));
                }
            }
            PacketKind::Fault(kind) => {
                let found = in_flight.get(&(p.opcode, p.psn)).and_then(|c| c.iter().rev().find(|&&f| frames[f].from == p.nic).copied());
                match found {
                    Some(f) => {
                        frames[f].faults.push(kind.clone());
                        frames[f].lost |= kind == "drop";
                    }
                    None => dropped_rows.push((row, p.nic, format!("wire: {kind}"))),
                }
            }
            PacketKind::Dropped(why) => {
                // The newest frame towards this NIC that has not arrived.
                match frames.iter().rposition(|f| f.from != p.nic && !f.lost && f.arrivals.is_empty() && f.refused.is_empty()) {
                    Some(f) => frames[f].refused.push((row, p.nic, why.clone())),
                    None => dropped_rows.push((row, p.nic, why.clone())),
                }
            }
        }
    }
    Some(draw(title, nics.max(2), &frames, &rows, &dropped_rows, (first, last, total_rows)))
}

/// The rows to draw: all, or [`MAX_ROWS`] from a little before the first frame something
/// happened to.
fn window(packets: &[(Duration, &Packet)]) -> (usize, usize) {
    if packets.len() <= MAX_ROWS {
        return (0, packets.len());
    }
    let mut seen: HashMap<(usize, Option<u32>, Option<u8>, Option<u32>), ()> = HashMap::new();
    let first_trouble = packets.iter().position(|(_, p)| match p.kind {
        PacketKind::Fault(_) | PacketKind::Dropped(_) => true,
        PacketKind::Sent => seen.insert((p.nic, p.qp, p.opcode, p.psn), ()).is_some(),
        PacketKind::Received => false,
    });
    let start = first_trouble.map_or(0, |i| i.saturating_sub(MAX_ROWS / 8)).min(packets.len() - MAX_ROWS);
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

fn time_label(at: Duration) -> String {
    let us = at.as_nanos() as f64 / 1000.0;
    if us >= 1_000_000.0 { format!("{:.6} s", us / 1_000_000.0) } else { format!("{us:.3} µs") }
}

fn cross(svg: &mut String, x: f64, y: f64, colour: &str) {
    let d = 6.0;
    let _ = writeln!(
        svg,
        r##"<path d="M{} {} L{} {} M{} {} L{} {}" stroke="{colour}" stroke-width="2.5"/>"##,
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

fn label(p: &Packet) -> String {
    let op = p.opcode.map(opcode_name).unwrap_or_else(|| "frame".into());
    let op = if p.nak { "NAK".to_string() } else { op };
    match p.psn {
        Some(psn) => format!("{op} psn {psn}"),
        None => op,
    }
}

fn draw(
    title: &str,
    nics: usize,
    frames: &[Frame],
    rows: &[Duration],
    stray: &[(usize, usize, String)],
    (first, last, total): (usize, usize, usize),
) -> String {
    let width = LEFT + COLUMN * (nics - 1) as f64 + RIGHT + 120.0;
    let height = y_of(rows.len()) + 40.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, monospace" font-size="12">"##
    );
    let _ = writeln!(svg, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(svg, "<title>{}</title>", escape(title));
    let _ = writeln!(svg, r##"<text x="16" y="24" font-size="16" font-weight="bold">{}</text>"##, escape(title));
    let shown = if first == 0 && last == total {
        format!("{total} frame events")
    } else {
        format!("frame events {} to {} of {total}", first + 1, last)
    };
    let _ = writeln!(svg, r##"<text x="16" y="44" fill="#555">{shown}; time flows down, one row per event</text>"##);
    // Legend.
    let legend = [
        (Style::Request.colour(), "request"),
        (Style::Response.colour(), "ACK / read response"),
        (Style::Nak.colour(), "NAK"),
        (Style::Retransmission.colour(), "retransmission"),
        ("#c0392b", "✕ lost on the wire / dropped on receipt"),
    ];
    let mut lx = 16.0;
    for (colour, what) in legend {
        let _ = writeln!(svg, r##"<line x1="{lx}" y1="62" x2="{}" y2="62" stroke="{colour}" stroke-width="3"/>"##, lx + 22.0);
        let _ = writeln!(svg, r##"<text x="{}" y="66">{what}</text>"##, lx + 28.0);
        lx += 34.0 + 7.6 * what.chars().count() as f64;
    }
    // Columns.
    for nic in 0..nics {
        let x = x_of(nic);
        let _ = writeln!(svg, r##"<text x="{x}" y="{}" text-anchor="middle" font-size="14" font-weight="bold">NIC {nic}</text>"##, TOP - 22.0);
        let _ = writeln!(
            svg,
            r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#444" stroke-width="2"/>"##,
            TOP - 12.0,
            height - 24.0
        );
    }
    // Row times, when they change.
    let mut last_time = None;
    for (row, at) in rows.iter().enumerate() {
        if last_time != Some(*at) {
            let _ = writeln!(svg, r##"<text x="{}" y="{}" text-anchor="end" fill="#666" font-size="11">{}</text>"##, LEFT - 40.0, y_of(row) + 4.0, time_label(*at));
            let _ = writeln!(svg, r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#ddd"/>"##, LEFT - 34.0, y_of(row), LEFT - 6.0, y_of(row));
            last_time = Some(*at);
        }
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
    for f in frames {
        let colour = f.style.colour();
        let (x1, y1) = (x_of(f.from), y_of(f.row));
        let mut notes: Vec<String> = f.faults.clone();
        if f.style == Style::Retransmission {
            notes.push("retransmitted".into());
        }
        if f.arrivals.len() > 1 {
            notes.push(format!("arrived {}×", f.arrivals.len()));
        }
        for (i, (row, to)) in f.arrivals.iter().enumerate() {
            let dash = if i > 0 { r##" stroke-dasharray="6 4""## } else { "" };
            let _ = writeln!(
                svg,
                r##"<line x1="{x1}" y1="{y1}" x2="{}" y2="{}" stroke="{colour}" stroke-width="1.8"{dash} marker-end="url(#head-{})"/>"##,
                f.style.name(),
                x_of(*to),
                y_of(*row)
            );
        }
        for (row, to, why) in &f.refused {
            let (x2, y2) = (x_of(*to), y_of(*row));
            let _ = writeln!(svg, r##"<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{colour}" stroke-width="1.8" stroke-dasharray="2 3"/>"##);
            cross(&mut svg, x2, y2, "#c0392b");
            notes.push(format!("dropped by NIC {to}: {why}"));
        }
        if f.arrivals.is_empty() && f.refused.is_empty() {
            // Lost: half way to the other NIC (the next column, or the previous for the last).
            let to = if f.from + 1 < nics { f.from + 1 } else { f.from.saturating_sub(1) };
            let (xm, ym) = ((x1 + x_of(to)) / 2.0, y1 + ROW * 0.8);
            let _ = writeln!(svg, r##"<line x1="{x1}" y1="{y1}" x2="{xm}" y2="{ym}" stroke="{colour}" stroke-width="1.8" stroke-dasharray="2 3"/>"##);
            cross(&mut svg, xm, ym, "#c0392b");
            if f.faults.is_empty() {
                notes.push("never arrived".into());
            }
        }
        // The label beside the sender, on the side the arrow goes.
        let goes_right = f.arrivals.first().map(|(_, to)| *to).or(f.refused.first().map(|(_, to, _)| *to)).is_none_or(|to| to > f.from);
        let (lx, anchor) = if goes_right { (x1 + 10.0, "start") } else { (x1 - 10.0, "end") };
        let mut text = label(&f.packet);
        if !notes.is_empty() {
            text.push_str(&format!("  [{}]", notes.join(", ")));
        }
        let weight = if notes.is_empty() { "normal" } else { "bold" };
        let _ = writeln!(
            svg,
            r##"<text x="{lx}" y="{}" text-anchor="{anchor}" fill="{colour}" font-weight="{weight}">{}</text>"##,
            y1 - 4.0,
            escape(&text)
        );
        let _ = f.at;
    }
    for (row, nic, why) in stray {
        cross(&mut svg, x_of(*nic), y_of(*row), "#c0392b");
        let _ = writeln!(svg, r##"<text x="{}" y="{}" fill="#c0392b">{}</text>"##, x_of(*nic) + 10.0, y_of(*row) + 4.0, escape(why));
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
            packet(1, 0, PacketKind::Fault("drop".into()), 4, 7),
            packet(500, 0, PacketKind::Sent, 4, 7),
            packet(501, 1, PacketKind::Received, 4, 7),
            packet(501, 1, PacketKind::Sent, 0x11, 7),
            packet(502, 0, PacketKind::Received, 0x11, 7),
        ];
        let svg = ladder("t", 2, &lines).unwrap();
        assert!(svg.starts_with("<svg "), "{svg}");
        assert!(svg.contains("SEND_ONLY psn 7  [drop]"), "{svg}");
        assert!(svg.contains("SEND_ONLY psn 7  [retransmitted]"), "{svg}");
        assert!(svg.contains("ACKNOWLEDGE psn 7"), "{svg}");
        assert_eq!(svg.matches("marker-end").count(), 2, "two frames arrived");
        assert!(svg.contains("#c0392b"), "the lost frame is crossed");
        assert!(ladder("t", 2, &[]).is_none());
    }

    #[test]
    fn a_long_run_is_drawn_from_a_window_before_its_first_fault() {
        let mut lines = Vec::new();
        for i in 0..1000u32 {
            lines.push(packet(u64::from(i) * 2, 0, PacketKind::Sent, 4, i));
            if i == 600 {
                lines.push(packet(u64::from(i) * 2, 0, PacketKind::Fault("corrupt".into()), 4, i));
            } else {
                lines.push(packet(u64::from(i) * 2 + 1, 1, PacketKind::Received, 4, i));
            }
        }
        let svg = ladder("t", 2, &lines).unwrap();
        assert!(svg.contains(&format!("frame events {} to {} of 2000", 1201 - MAX_ROWS / 8 + 1, 1201 - MAX_ROWS / 8 + MAX_ROWS)), "{}", &svg[..600]);
        assert!(svg.contains("[corrupt]"));
    }
}
