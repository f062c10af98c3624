//! The console report: a line per scenario with its verdict and times, a failure's step, line,
//! expectation and outcome with the command that replays it, and a summary.

use std::io::{self, Write};
use std::time::Duration;

use crate::run::outcome::{ScenarioOutcome, Verdict};
use crate::scenario::values::format_duration;

/// Counts of a run, for the summary and the exit status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Scenarios that passed.
    pub passed: usize,
    /// Scenarios that failed.
    pub failed: usize,
    /// Scenarios skipped on this target.
    pub skipped: usize,
}

impl Tally {
    /// Count one outcome.
    pub fn add(&mut self, verdict: &Verdict) {
        match verdict {
            Verdict::Pass => self.passed += 1,
            Verdict::Fail(_) => self.failed += 1,
            Verdict::Skip(_) => self.skipped += 1,
        }
    }
}

/// Writes the console report.
pub struct Console<W: Write> {
    out: W,
    verbose: bool,
    /// Whether the target's clock is virtual (said beside its times).
    virtual_time: bool,
    /// Extra options a replay command repeats (`--strict`).
    replay_options: String,
}

impl<W: Write> Console<W> {
    /// A report to `out`; `verbose` lists every step.
    pub fn new(out: W, verbose: bool, virtual_time: bool, replay_options: String) -> Console<W> {
        Console { out, verbose, virtual_time, replay_options }
    }

    /// Report one scenario.
    pub fn scenario(&mut self, o: &ScenarioOutcome) -> io::Result<()> {
        let clock = if self.virtual_time { "virtual" } else { "on the target's clock" };
        match &o.verdict {
            Verdict::Skip(reason) => writeln!(self.out, "SKIP  {}  ({reason})", o.name)?,
            verdict => writeln!(
                self.out,
                "{}  {}  ({} steps, {} {clock}, {})",
                verdict.label(),
                o.name,
                o.steps.len(),
                format_duration(o.target_time),
                wall(o.wall_time)
            )?,
        }
        if self.verbose {
            for s in &o.steps {
                let mark = if s.ok { "ok  " } else { "FAIL" };
                write!(
                    self.out,
                    "      {mark} {:>3}  line {:<4} {}  [at {}, took {}]",
                    s.number,
                    s.line,
                    s.text,
                    format_duration(s.started),
                    format_duration(s.took)
                )?;
                match &s.note {
                    Some(note) => writeln!(self.out, "  {note}")?,
                    None => writeln!(self.out)?,
                }
            }
        }
        if let Verdict::Fail(f) = &o.verdict {
            match &f.step {
                Some(step) => {
                    write!(self.out, "      step {} ({}:{}): {}", step.number, o.file.display(), step.line, step.text)?;
                    for (i, n) in &step.iterations {
                        write!(self.out, ", iteration {i} of {n}")?;
                    }
                    writeln!(self.out)?;
                }
                None => writeln!(self.out, "      ({})", o.file.display())?,
            }
            writeln!(self.out, "        expected: {}", f.expected)?;
            writeln!(self.out, "        got:      {}", f.got)?;
            writeln!(
                self.out,
                "      replay: bnxt-rig run {} --target {} --seed {}{}",
                shell_word(&o.file.display().to_string()),
                o.target,
                o.seed,
                self.replay_options
            )?;
        }
        for note in &o.notes {
            writeln!(self.out, "      note: {note}")?;
        }
        Ok(())
    }

    /// The summary: counts (alone on a line, as CI reads them) and the total time.
    pub fn summary(&mut self, tally: Tally, deselected: usize, total: Duration) -> io::Result<()> {
        writeln!(self.out)?;
        writeln!(self.out, "scenarios: {} passed, {} failed, {} skipped", tally.passed, tally.failed, tally.skipped)?;
        let deselected = if deselected > 0 { format!(", {deselected} not selected") } else { String::new() };
        writeln!(self.out, "total time: {}{deselected}", wall(total))
    }
}

fn wall(d: Duration) -> String {
    if d < Duration::from_secs(1) { format!("{}ms", d.as_millis()) } else { format!("{:.2}s", d.as_secs_f64()) }
}

/// `s` quoted for a POSIX shell when it needs to be.
fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:,=".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::run::outcome::{FailedStep, Failure};

    fn outcome(verdict: Verdict) -> ScenarioOutcome {
        ScenarioOutcome {
            name: "x".into(),
            file: PathBuf::from("scenarios/nic/my x.yaml"),
            target: "model".into(),
            seed: 7,
            verdict,
            steps: Vec::new(),
            target_time: Duration::from_millis(2500),
            wall_time: Duration::from_millis(3),
            notes: vec!["NIC 0: something".into()],
        }
    }

    #[test]
    fn a_failure_names_its_step_line_expectation_outcome_and_replay() {
        let failure = Failure {
            step: Some(FailedStep { number: "5.2".into(), line: 12, text: "close: b".into(), iterations: vec![(3, 10)] }),
            expected: "relaxed_ordering on".into(),
            got: "relaxed_ordering off".into(),
        };
        let mut out = Vec::new();
        let mut console = Console::new(&mut out, false, true, " --strict".into());
        console.scenario(&outcome(Verdict::Fail(failure))).unwrap();
        console.summary(Tally { passed: 1, failed: 1, skipped: 2 }, 0, Duration::from_millis(40)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("FAIL  x  (0 steps, 2.5s virtual, 3ms)\n"), "{text}");
        assert!(text.contains("step 5.2 (scenarios/nic/my x.yaml:12): close: b, iteration 3 of 10\n"), "{text}");
        assert!(text.contains("expected: relaxed_ordering on\n"), "{text}");
        assert!(text.contains("got:      relaxed_ordering off\n"), "{text}");
        assert!(text.contains("replay: bnxt-rig run 'scenarios/nic/my x.yaml' --target model --seed 7 --strict\n"), "{text}");
        assert!(text.contains("note: NIC 0: something\n"), "{text}");
        assert!(text.contains("\nscenarios: 1 passed, 1 failed, 2 skipped\n"), "{text}");
    }

    #[test]
    fn a_skip_gives_its_reason() {
        let mut out = Vec::new();
        Console::new(&mut out, false, true, String::new()).scenario(&outcome(Verdict::Skip("runs only on: model".into()))).unwrap();
        assert!(String::from_utf8(out).unwrap().starts_with("SKIP  x  (runs only on: model)\n"));
    }
}
