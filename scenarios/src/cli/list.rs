//! `bnxt-rig list`: the scenarios of some files, with their targets, tags and NIC counts.

use std::io::Write;
use std::process::ExitCode;

use super::{EXIT_INVALID, ListArgs, load};

/// List the scenarios `args` names.
pub fn list(args: &ListArgs) -> ExitCode {
    let Some(scenarios) = load(&args.paths.paths) else { return ExitCode::from(EXIT_INVALID) };
    let selection = args.select.selection();
    let rows: Vec<[String; 5]> = scenarios
        .iter()
        .filter(|s| selection.chooses(s))
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
    let mut widths = [0usize; 5];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = std::io::stdout().lock();
    for row in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = row.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    ExitCode::SUCCESS
}
