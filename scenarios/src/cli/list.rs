//! `bnxt-rig list`: the scenarios of some files, with their targets, tags and NIC counts; with
//! `--target T`, whether each runs on T (and why not), the steps T would skip and why, and the
//! machine state it takes for granted.

use std::io::Write;
use std::process::ExitCode;

use super::{EXIT_INVALID, ListArgs, load, say_error};
use crate::run::skip_reason;
use crate::scenario::Scenario;
use crate::target::{self, Target};

/// List the scenarios `args` names.
pub fn list(args: &ListArgs) -> ExitCode {
    let Some(scenarios) = load(&args.paths.paths) else { return ExitCode::from(EXIT_INVALID) };
    let selection = args.select.selection();
    let chosen: Vec<&Scenario> = scenarios.iter().filter(|s| selection.chooses(s)).collect();
    let mut out = std::io::stdout().lock();
    if let Some(spec) = &args.target {
        let target = match target::from_spec(spec) {
            Ok(t) => t,
            Err(e) => {
                say_error(&e.to_string());
                return ExitCode::from(EXIT_INVALID);
            }
        };
        let _ = out.write_all(on_target(&chosen, &*target).as_bytes());
        return ExitCode::SUCCESS;
    }
    let rows: Vec<[String; 5]> = chosen
        .iter()
        .map(|s| {
            [
                s.name.clone(),
                s.targets.as_ref().map(|t| t.join(",")).unwrap_or_else(|| "all".into()),
                if s.tags.is_empty() { "-".into() } else { s.tags.join(",") },
                s.nics.to_string(),
                s.file.display().to_string(),
            ]
        })
        .collect();
    let header = ["NAME", "TARGETS", "TAGS", "NICS", "FILE"].map(String::from);
    let _ = out.write_all(table(&header, &rows).as_bytes());
    ExitCode::SUCCESS
}

/// The listing of `scenarios` on `target`: a row per scenario (`yes`, or `no: WHY`), under it a
/// line per step the target skips and per machine state the scenario assumes, and a count.
pub fn on_target(scenarios: &[&Scenario], target: &dyn Target) -> String {
    let name = target.name();
    let supports = |c| target.supports(c);
    let mut rows = Vec::new();
    let mut details: Vec<Vec<String>> = Vec::new();
    let (mut runs, mut with_skips) = (0usize, 0usize);
    for s in scenarios {
        let mut lines = Vec::new();
        let verdict = match skip_reason(s, target) {
            Some(why) => format!("no: {why}"),
            None => {
                runs += 1;
                let skipped = s.skipped_steps(&supports);
                if !skipped.is_empty() {
                    with_skips += 1;
                }
                for step in skipped {
                    lines.push(format!(
                        "skips step {} (line {}): {}  (needs {}, which the {name} target lacks)",
                        step.number,
                        step.line,
                        step.text,
                        step.needs.name()
                    ));
                }
                if s.has_firmware_faults() {
                    let where_ =
                        if target.faults_at_seam() { "at the driver's seam" } else { "by the model's firmware" };
                    lines.push(format!("firmware faults: {where_}"));
                }
                for a in s.assumptions() {
                    lines.push(format!("assumes {a}: skipped when it runs where that is not so"));
                }
                "yes".to_string()
            }
        };
        rows.push([s.name.clone(), verdict, s.file.display().to_string()]);
        details.push(lines);
    }
    let header = ["NAME", "RUNS", "FILE"].map(String::from);
    let mut text = String::new();
    let rendered = table(&header, &rows);
    let mut lines = rendered.lines();
    if let Some(h) = lines.next() {
        text.push_str(h);
        text.push('\n');
    }
    for (line, extra) in lines.zip(&details) {
        text.push_str(line);
        text.push('\n');
        for e in extra {
            text.push_str(&format!("    {e}\n"));
        }
    }
    text.push_str(&format!(
        "\non {name}: {runs} of {} scenarios run ({with_skips} of them with steps skipped), {} do not\n",
        scenarios.len(),
        scenarios.len() - runs
    ));
    text
}

/// `rows` under `header`, in columns two spaces apart.
fn table<const N: usize>(header: &[String; N], rows: &[[String; N]]) -> String {
    let mut widths = [0usize; N];
    for row in std::iter::once(header).chain(rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    for row in std::iter::once(header).chain(rows) {
        let line: Vec<String> = row.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        text.push_str(line.join("  ").trim_end());
        text.push('\n');
    }
    text
}
