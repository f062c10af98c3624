//! Comparing two transcripts event by event (`bnxt-rig diff A B`).
//!
//! Times are never compared, only the order of events. By default what must differ between two
//! runs of one scenario is masked: the values of the fields whose values vary by nature
//! ([`bnxt_transcript::Field::varies`]: numbers the firmware hands out, queue pair and other
//! object ids, PSNs chosen per NIC, the HWRM sequence numbers a driver counts, how long steps
//! took) and values that are addresses by their type (MAC, IPv4, GID, bus, DMA). The NICs' own
//! lines (`nicN`) are compared only when both transcripts have them (two runs on the model); a
//! run on a card has the runner's and the driver's lines only, which every target records alike.

use std::fmt::Write;

use bnxt_transcript::tokens;
use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::{Line, Source, Transcript};

/// How to compare.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiffOptions {
    /// Compare the NICs' own lines even when only one transcript has them.
    pub all: bool,
    /// Compare the text exactly (no masking).
    pub exact: bool,
    /// Lines of context around each difference.
    pub context: usize,
    /// Compare each source's lines (`drv0`, `drv1`, `nic0`, ...) on their own, in their own
    /// order, instead of the whole sequence: for recordings whose sources act at the same time
    /// and interleave by chance, as a guest trace of two functions does. Guest traces (header
    /// `target: guest`) are always compared so.
    pub by_source: bool,
}

/// What comparing two transcripts found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffReport {
    /// Events compared on each side.
    pub compared: (usize, usize),
    /// Whether the NICs' own lines were compared.
    pub nic_lines: bool,
    /// Whether each source was compared on its own.
    pub by_source: bool,
    /// Lines only in the first transcript.
    pub removed: usize,
    /// Lines only in the second.
    pub added: usize,
    /// The differences, as text (empty when there are none).
    pub text: String,
}

impl DiffReport {
    /// Whether the transcripts agree.
    pub fn same(&self) -> bool {
        self.removed == 0 && self.added == 0
    }
}

/// A line as it is compared: who speaks and what; unless `exact`, each value that may differ
/// between two runs (by its field, or by its type: see [`bnxt_transcript::Token::varies`]) is
/// replaced by a placeholder.
pub fn normalise(line: &Line, exact: bool) -> String {
    if exact {
        return format!("{} {}", line.source, line.text);
    }
    let mut text = line.source.to_string();
    for token in tokens(&line.text) {
        text.push(' ');
        text.push_str(&token.masked());
    }
    text
}

fn has_nic_lines(t: &Transcript) -> bool {
    t.lines.iter().any(|l| matches!(l.source, Source::Nic(_)))
}

fn is_guest_trace(t: &Transcript) -> bool {
    t.header.iter().any(|(k, v)| k == "target" && v == "guest")
}

/// Compare `a` with `b`.
pub fn diff(a: &Transcript, b: &Transcript, options: DiffOptions) -> DiffReport {
    let nic_lines = options.all || (has_nic_lines(a) && has_nic_lines(b));
    let by_source = options.by_source || (is_guest_trace(a) && is_guest_trace(b));
    let pick = |t: &Transcript| -> Vec<Line> {
        t.lines.iter().filter(|l| nic_lines || !matches!(l.source, Source::Nic(_))).cloned().collect()
    };
    let (a_lines, b_lines) = (pick(a), pick(b));
    let compared = (a_lines.len(), b_lines.len());
    if !by_source {
        let (removed, added, text) = compare_lines(&a_lines, &b_lines, options);
        return DiffReport { compared, nic_lines, by_source, removed, added, text };
    }
    let mut sources: Vec<Source> = Vec::new();
    for l in a_lines.iter().chain(&b_lines) {
        if !sources.contains(&l.source) {
            sources.push(l.source);
        }
    }
    let (mut removed, mut added, mut text) = (0, 0, String::new());
    for source in sources {
        let of = |lines: &[Line]| -> Vec<Line> { lines.iter().filter(|l| l.source == source).cloned().collect() };
        let (r, a, t) = compare_lines(&of(&a_lines), &of(&b_lines), options);
        if !t.is_empty() {
            let _ = writeln!(text, "== {source} ==");
            text.push_str(&t);
        }
        removed += r;
        added += a;
    }
    DiffReport { compared, nic_lines, by_source, removed, added, text }
}

/// The differences between two sequences of lines: lines only in the first, only in the
/// second, and the text showing them with their context.
fn compare_lines(a_lines: &[Line], b_lines: &[Line], options: DiffOptions) -> (usize, usize, String) {
    let a_keys: Vec<String> = a_lines.iter().map(|l| normalise(l, options.exact)).collect();
    let b_keys: Vec<String> = b_lines.iter().map(|l| normalise(l, options.exact)).collect();
    let ops = capture_diff_slices(Algorithm::Myers, &a_keys, &b_keys);
    let (mut removed, mut added) = (0, 0);
    let mut text = String::new();
    let context = options.context;
    // Group the changes, each with `context` equal lines around it.
    let mut i = 0;
    while i < ops.len() {
        if matches!(ops[i], DiffOp::Equal { .. }) {
            i += 1;
            continue;
        }
        let (old_at, new_at) = (ops[i].old_range().start, ops[i].new_range().start);
        let _ = writeln!(text, "@@ first transcript event {}, second {} @@", old_at + 1, new_at + 1);
        let start = old_at.saturating_sub(context);
        for line in &a_lines[start..old_at] {
            let _ = writeln!(text, "  {line}");
        }
        let mut j = i;
        while j < ops.len() {
            match ops[j] {
                DiffOp::Equal { old_index, len, .. } if len > 2 * context || j + 1 == ops.len() => {
                    for line in &a_lines[old_index..old_index + len.min(context)] {
                        let _ = writeln!(text, "  {line}");
                    }
                    break;
                }
                DiffOp::Equal { old_index, len, .. } => {
                    for line in &a_lines[old_index..old_index + len] {
                        let _ = writeln!(text, "  {line}");
                    }
                }
                DiffOp::Delete { old_index, old_len, .. } => {
                    removed += old_len;
                    for line in &a_lines[old_index..old_index + old_len] {
                        let _ = writeln!(text, "- {line}");
                    }
                }
                DiffOp::Insert { new_index, new_len, .. } => {
                    added += new_len;
                    for line in &b_lines[new_index..new_index + new_len] {
                        let _ = writeln!(text, "+ {line}");
                    }
                }
                DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                    removed += old_len;
                    added += new_len;
                    for line in &a_lines[old_index..old_index + old_len] {
                        let _ = writeln!(text, "- {line}");
                    }
                    for line in &b_lines[new_index..new_index + new_len] {
                        let _ = writeln!(text, "+ {line}");
                    }
                }
            }
            j += 1;
        }
        i = j + 1;
    }
    (removed, added, text)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn t(lines: &[(u64, Source, &str)]) -> Transcript {
        Transcript {
            header: vec![],
            lines: lines.iter().map(|(ns, s, text)| Line::new(Duration::from_nanos(*ns), *s, *text)).collect(),
        }
    }

    #[test]
    fn times_ids_and_addresses_do_not_count_but_events_do() {
        let a = t(&[
            (0, Source::Step, "1 line 5: open: {nic: 0, as: a}"),
            (5, Source::Driver(0), "roce-answer CREATE_QP cookie=3 ok"),
            (7, Source::Step, "1 ok took=7ns opened BNXT 0000:01:00.0 mac 00:0a:f7:01:02:03 ipv4 10.1.2.3"),
        ]);
        let b = t(&[
            (0, Source::Step, "1 line 5: open: {nic: 0, as: a}"),
            (9, Source::Driver(0), "roce-answer CREATE_QP cookie=3 ok"),
            (9, Source::Nic(0), "roce-completion CREATE_QP cookie=3 SUCCESS xid=17"),
            (12, Source::Step, "1 ok took=12ns opened BNXT 0000:81:00.0 mac 00:0a:f7:aa:bb:cc ipv4 10.170.187.204"),
        ]);
        let r = diff(&a, &b, DiffOptions { context: 3, ..Default::default() });
        assert!(r.same(), "{}", r.text);
        assert!(!r.nic_lines, "only one side has the model's lines");
        assert_eq!(r.compared, (3, 3));
        let r = diff(&a, &b, DiffOptions { all: true, context: 3, ..Default::default() });
        assert_eq!((r.removed, r.added), (0, 1));
        assert!(r.text.contains("+      0.000000009  nic0   roce-completion"), "{}", r.text);
        let r = diff(&a, &b, DiffOptions { exact: true, context: 0, ..Default::default() });
        assert!(!r.same());
    }

    #[test]
    fn guest_traces_are_compared_source_by_source() {
        let mut a = t(&[
            (0, Source::Driver(0), "hwrm-request VER_GET seq=0"),
            (1, Source::Driver(1), "hwrm-request VER_GET seq=0"),
            (2, Source::Driver(0), "hwrm-request PORT_QSTATS seq=1"),
        ]);
        let mut b = t(&[
            (0, Source::Driver(1), "hwrm-request VER_GET seq=0"),
            (1, Source::Driver(0), "hwrm-request VER_GET seq=0"),
            (2, Source::Driver(0), "hwrm-request PORT_QSTATS seq=1"),
        ]);
        let interleaved = diff(&a, &b, DiffOptions::default());
        assert!(!interleaved.same() && !interleaved.by_source);
        let r = diff(&a, &b, DiffOptions { by_source: true, ..Default::default() });
        assert!(r.same(), "{}", r.text);
        a.header.push(("target".into(), "guest".into()));
        b.header.push(("target".into(), "guest".into()));
        assert!(diff(&a, &b, DiffOptions::default()).same());
        b.lines.pop();
        let r = diff(&a, &b, DiffOptions { context: 1, ..Default::default() });
        assert_eq!((r.removed, r.added), (1, 0));
        assert!(r.text.starts_with("== drv0 ==\n@@ first transcript event 2, second 2 @@\n"), "{}", r.text);
    }

    #[test]
    fn a_different_event_is_shown_with_its_context() {
        let a = t(&[
            (0, Source::Driver(0), "hwrm-request VER_GET seq=0"),
            (1, Source::Driver(0), "hwrm-request FUNC_RESET seq=1"),
        ]);
        let b = t(&[
            (0, Source::Driver(0), "hwrm-request VER_GET seq=0"),
            (1, Source::Driver(0), "hwrm-request FUNC_QCAPS seq=1"),
        ]);
        let r = diff(&a, &b, DiffOptions { context: 1, ..Default::default() });
        assert_eq!((r.removed, r.added), (1, 1));
        assert!(r.text.starts_with("@@ first transcript event 2, second 2 @@\n  "), "{}", r.text);
        assert!(r.text.contains("- ") && r.text.contains("FUNC_RESET") && r.text.contains("+ "), "{}", r.text);
    }
}
