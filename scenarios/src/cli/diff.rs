//! `bnxt-rig diff A B`: two transcripts compared event by event.

use std::io::Write;
use std::process::ExitCode;

use super::{DiffArgs, EXIT_FAILED, EXIT_INVALID, say_error};
use crate::transcript::Transcript;
use crate::transcript::diff::{DiffOptions, diff as compare};

/// Compare the transcripts `args` names; exit 0 when they agree, 1 when they differ.
pub(crate) fn diff(args: &DiffArgs) -> ExitCode {
    let read = |path: &std::path::Path| -> Result<Transcript, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Transcript::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    };
    let (a, b) = match (read(&args.a), read(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            say_error(&e);
            return ExitCode::from(EXIT_INVALID);
        }
    };
    let report = compare(
        &a,
        &b,
        DiffOptions { all: args.all, exact: args.exact, context: args.context, by_source: args.by_source },
    );
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "--- {}", args.a.display());
    let _ = writeln!(out, "+++ {}", args.b.display());
    let _ = out.write_all(report.text.as_bytes());
    let compared = match (report.nic_lines, report.by_source) {
        (true, false) => "runner, driver and model lines",
        (false, false) => "runner and driver lines",
        (true, true) => "runner, driver and model lines, each source on its own",
        (false, true) => "runner and driver lines, each source on its own",
    };
    if report.same() {
        let _ = writeln!(out, "same: {} events compared ({compared})", report.compared.0);
        ExitCode::SUCCESS
    } else {
        let _ = writeln!(
            out,
            "different: {} events only in the first, {} only in the second ({} and {} events of {compared} compared)",
            report.removed, report.added, report.compared.0, report.compared.1
        );
        ExitCode::from(EXIT_FAILED)
    }
}
