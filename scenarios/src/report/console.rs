//! The console report: a line per scenario with its verdict and times, a failure's step, line,
//! expectation and outcome with the command that replays it, and a summary.

use std::io::{self, Write};
use std::time::Duration;

use crate::run::outcome::{FailedStep, ScenarioOutcome, Verdict};
use crate::scenario::values::format_duration;

/// Counts and times of a run, for the summary and the exit status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Tally {
    /// Scenarios that passed.
    pub passed: usize,
    /// Scenarios that failed (a step did not do what it should).
    pub failed: usize,
    /// Scenarios skipped on this target.
    pub skipped: usize,
    /// Scenarios stopped by a timeout.
    pub timed_out: usize,
    /// The target-clock time of the scenarios that ran, added up.
    #[serde(serialize_with = "crate::report::json::duration")]
    pub target_time: Duration,
    /// The wall time of the scenarios that ran, added up.
    #[serde(serialize_with = "crate::report::json::duration")]
    pub scenario_time: Duration,
}

impl Tally {
    /// Count one outcome.
    pub fn add(&mut self, outcome: &ScenarioOutcome) {
        match &outcome.verdict {
            Verdict::Pass => self.passed += 1,
            Verdict::Fail(_) => self.failed += 1,
            Verdict::Skip(_) => self.skipped += 1,
            Verdict::Timeout(_) => self.timed_out += 1,
        }
        self.target_time += outcome.target_time;
        self.scenario_time += outcome.wall_time;
    }

    /// Whether the run counts as failed (a failure or a timeout).
    pub fn is_bad(&self) -> bool {
        self.failed + self.timed_out > 0
    }
}

/// Writes the console report.
pub struct Console<W: Write> {
    out: W,
    verbose: bool,
    /// Whether the target's clock is virtual (said beside its times).
    virtual_time: bool,
}

impl<W: Write> Console<W> {
    /// A report to `out`; `verbose` lists every step.
    pub fn new(out: W, verbose: bool, virtual_time: bool) -> Console<W> {
        Console { out, verbose, virtual_time }
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
        if !self.verbose {
            for s in o.skipped_steps() {
                let why = s.skipped.as_deref().unwrap_or_default();
                writeln!(self.out, "      skipped step {} (line {}): {}  ({why})", s.number, s.line, s.text)?;
            }
        }
        if self.verbose {
            for s in &o.steps {
                let mark = if s.skipped.is_some() {
                    "skip"
                } else if s.ok {
                    "ok  "
                } else {
                    "FAIL"
                };
                write!(
                    self.out,
                    "      {mark} {:>3}  line {:<4} {}  [at {}, took {}]",
                    s.number,
                    s.line,
                    s.text,
                    format_duration(s.started),
                    format_duration(s.took)
                )?;
                match s.skipped.as_ref().or(s.note.as_ref()) {
                    Some(note) => writeln!(self.out, "  {note}")?,
                    None => writeln!(self.out)?,
                }
            }
        }
        let step = match &o.verdict {
            Verdict::Fail(f) => {
                self.where_(o, f.step.as_ref())?;
                writeln!(self.out, "        expected: {}", f.expected)?;
                writeln!(self.out, "        got:      {}", f.got)?;
                true
            }
            Verdict::Timeout(t) => {
                self.where_(o, t.step.as_ref())?;
                writeln!(self.out, "        {}", t.describe())?;
                true
            }
            _ => false,
        };
        if step {
            writeln!(self.out, "      replay: {}", o.replay)?;
        }
        if !matches!(o.verdict, Verdict::Skip(_))
            && let Some(t) = o.command_timeout
        {
            writeln!(self.out, "      command timeout: {}", format_duration(t))?;
        }
        if let Some(seam) = &o.seam {
            let fired = seam.iter().filter(|l| seam_fired(l)).count();
            writeln!(self.out, "      firmware faults at the driver's seam: {fired} fired")?;
            for line in seam {
                writeln!(self.out, "        seam: {line}")?;
            }
        }
        for note in &o.notes {
            writeln!(self.out, "      note: {note}")?;
        }
        for artifact in &o.artifacts {
            writeln!(self.out, "      wrote: {}", artifact.display())?;
        }
        Ok(())
    }

    /// Where a failure or timeout happened: the step, its file and line, its iterations.
    fn where_(&mut self, o: &ScenarioOutcome, step: Option<&FailedStep>) -> io::Result<()> {
        match step {
            Some(step) => {
                write!(self.out, "      step {} ({}:{}): {}", step.number, o.file.display(), step.line, step.text)?;
                for (i, n) in &step.iterations {
                    write!(self.out, ", iteration {i} of {n}")?;
                }
                writeln!(self.out)
            }
            None => writeln!(self.out, "      ({})", o.file.display()),
        }
    }

    /// The summary: counts (passed, failed, skipped alone on a line, as CI reads them; a timeout
    /// counts as a failure there and is named on the next line), then the times.
    pub fn summary(&mut self, tally: Tally, deselected: usize, total: Duration, jobs: usize) -> io::Result<()> {
        writeln!(self.out)?;
        let failed = tally.failed + tally.timed_out;
        writeln!(self.out, "scenarios: {} passed, {failed} failed, {} skipped", tally.passed, tally.skipped)?;
        if failed > 0 {
            writeln!(self.out, "failed: {} FAIL, {} TIMEOUT", tally.failed, tally.timed_out)?;
        }
        let deselected = if deselected > 0 { format!("; {deselected} not selected") } else { String::new() };
        let clock = if self.virtual_time { "virtual" } else { "on the target's clock" };
        let jobs = if jobs > 1 { format!(" with {jobs} jobs") } else { String::new() };
        writeln!(
            self.out,
            "time: {} wall{jobs}; {} {clock}{deselected}",
            wall(total),
            format_duration(tally.target_time)
        )
    }
}

/// Whether a line of the seam's log says a fault fired on a request or command
/// (`NIC 0: VER_GET #1: no-response: not passed on`), rather than what followed from one (an
/// answer handed over late) or a fault the layer could not inject.
pub fn seam_fired(line: &str) -> bool {
    let fired = line.split(" #").nth(1).is_some_and(|rest| {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with(": ")
    });
    fired && !line.contains("passed on as written") && !line.contains("cannot be passed on")
}

fn wall(d: Duration) -> String {
    if d < Duration::from_secs(1) { format!("{}ms", d.as_millis()) } else { format!("{:.2}s", d.as_secs_f64()) }
}

/// `s` quoted for a POSIX shell when it needs to be.
pub fn shell_word(s: &str) -> String {
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
    use crate::run::outcome::{FailedStep, Failure, TimedOut, TimeoutClock};

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
            artifacts: vec![],
            replay: "bnxt-rig run 'scenarios/nic/my x.yaml' --target model --seed 7 --strict".into(),
            command_timeout: None,
            seam: None,
        }
    }

    #[test]
    fn a_failure_names_its_step_line_expectation_outcome_and_replay() {
        let failure = Failure {
            step: Some(FailedStep {
                number: "5.2".into(),
                line: 12,
                text: "close: b".into(),
                iterations: vec![(3, 10)],
            }),
            expected: "relaxed_ordering on".into(),
            got: "relaxed_ordering off".into(),
        };
        let mut out = Vec::new();
        let mut console = Console::new(&mut out, false, true);
        let failed = outcome(Verdict::Fail(failure));
        console.scenario(&failed).unwrap();
        let mut tally = Tally { passed: 1, skipped: 2, ..Tally::default() };
        tally.add(&failed);
        console.summary(tally, 0, Duration::from_millis(40), 1).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("FAIL  x  (0 steps, 2.5s virtual, 3ms)\n"), "{text}");
        assert!(text.contains("step 5.2 (scenarios/nic/my x.yaml:12): close: b, iteration 3 of 10\n"), "{text}");
        assert!(text.contains("expected: relaxed_ordering on\n"), "{text}");
        assert!(text.contains("got:      relaxed_ordering off\n"), "{text}");
        assert!(
            text.contains("replay: bnxt-rig run 'scenarios/nic/my x.yaml' --target model --seed 7 --strict\n"),
            "{text}"
        );
        assert!(text.contains("note: NIC 0: something\n"), "{text}");
        assert!(text.contains("\nscenarios: 1 passed, 1 failed, 2 skipped\nfailed: 1 FAIL, 0 TIMEOUT\n"), "{text}");
        assert!(text.contains("time: 40ms wall; 2.5s virtual\n"), "{text}");
    }

    #[test]
    fn a_timeout_is_reported_apart_from_a_failure() {
        let t = TimedOut {
            whose: "step 4".into(),
            limit: Duration::from_secs(2),
            clock: TimeoutClock::Virtual,
            step: Some(FailedStep { number: "4".into(), line: 9, text: "wait: 5s".into(), iterations: vec![] }),
        };
        let timed_out = outcome(Verdict::Timeout(t));
        let mut out = Vec::new();
        let mut console = Console::new(&mut out, false, true);
        console.scenario(&timed_out).unwrap();
        let mut tally = Tally::default();
        tally.add(&timed_out);
        assert!(tally.is_bad());
        console.summary(tally, 3, Duration::from_secs(2), 2).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("TIMEOUT  x  (0 steps, 2.5s virtual, 3ms)\n"), "{text}");
        assert!(text.contains("step 4 (scenarios/nic/my x.yaml:9): wait: 5s\n        the timeout of the step 4 (2s on the virtual clock) passed\n"), "{text}");
        assert!(text.contains("replay: "), "{text}");
        assert!(text.contains("scenarios: 0 passed, 1 failed, 0 skipped\nfailed: 0 FAIL, 1 TIMEOUT\n"), "{text}");
        assert!(text.contains("time: 2.00s wall with 2 jobs; 2.5s virtual; 3 not selected\n"), "{text}");
    }

    #[test]
    fn a_skip_gives_its_reason() {
        let mut out = Vec::new();
        Console::new(&mut out, false, true).scenario(&outcome(Verdict::Skip("runs only on: model".into()))).unwrap();
        assert!(String::from_utf8(out).unwrap().starts_with("SKIP  x  (runs only on: model)\n"));
    }
}
