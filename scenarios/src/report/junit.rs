//! The JUnit XML report of a run (`--junit FILE`), as CI systems read it: a test suite per
//! target, a test case per scenario (its file the class name). A FAIL is a `failure`, a
//! TIMEOUT an `error` of type `timeout` (JUnit has no verdict of its own for it), a SKIP is
//! `skipped` with its reason.

use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::run::outcome::{ScenarioOutcome, Verdict};
use crate::scenario::values::format_duration;

/// The JUnit XML of `outcomes`, run on `target`, taking `wall_time` in all.
pub fn to_xml(target: &str, wall_time: Duration, outcomes: &[ScenarioOutcome]) -> String {
    let mut suite = TestSuite::new(format!("bnxt-rig scenarios on {target}"));
    suite.set_time(wall_time);
    for o in outcomes {
        let status = match &o.verdict {
            Verdict::Pass => TestCaseStatus::success(),
            Verdict::Skip(reason) => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(reason.as_str());
                s
            }
            Verdict::Fail(f) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                let at = f.step.as_ref().map(|s| format!("step {} (line {}): ", s.number, s.line)).unwrap_or_default();
                s.set_message(format!("{at}expected {}; got {}", f.expected, f.got));
                s.set_type("fail");
                s.set_description(format!("replay: {}", o.replay));
                s
            }
            Verdict::Timeout(t) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                let at = t.step.as_ref().map(|s| format!("step {} (line {}): ", s.number, s.line)).unwrap_or_default();
                s.set_message(format!("{at}{}", t.describe()));
                s.set_type("timeout");
                s.set_description(format!("replay: {}", o.replay));
                s
            }
        };
        let mut case = TestCase::new(o.name.as_str(), status);
        case.set_classname(o.file.display().to_string());
        case.set_time(o.wall_time);
        if let Some(t) = o.command_timeout {
            case.add_property(quick_junit::Property::new("command-timeout", format_duration(t)));
        }
        for step in o.skipped_steps() {
            let why = step.skipped.as_deref().unwrap_or_default();
            let value = format!("line {}: {}: {why}", step.line, step.text);
            case.add_property(quick_junit::Property::new(format!("skipped-step-{}", step.number), value));
        }
        let mut out = String::new();
        for note in &o.notes {
            out.push_str(&format!("note: {note}\n"));
        }
        for a in &o.artifacts {
            out.push_str(&format!("wrote: {}\n", a.display()));
        }
        if !out.is_empty() {
            case.set_system_out(out);
        }
        suite.add_test_case(case);
    }
    let mut report = Report::new("bnxt-rig");
    report.set_time(wall_time);
    report.add_test_suite(suite);
    report.to_string().expect("a report of strings serialises")
}

/// Write the JUnit XML of `outcomes` to `path`.
pub fn write(path: &Path, target: &str, wall_time: Duration, outcomes: &[ScenarioOutcome]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    bnxt_output::write(path, to_xml(target, wall_time, outcomes))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::run::outcome::{Failure, TimedOut, TimeoutClock};

    fn outcome(name: &str, verdict: Verdict) -> ScenarioOutcome {
        ScenarioOutcome {
            name: name.into(),
            file: PathBuf::from("s/x.yaml"),
            target: "model".into(),
            seed: 1,
            verdict,
            steps: vec![],
            target_time: Duration::ZERO,
            wall_time: Duration::from_millis(5),
            notes: vec!["a <note> & more".into()],
            artifacts: vec![],
            replay: "bnxt-rig run s/x.yaml --target model --seed 1".into(),
            command_timeout: None,
            seam: None,
        }
    }

    #[test]
    fn every_verdict_has_its_element() {
        let timeout = TimedOut {
            whose: "scenario".into(),
            limit: Duration::from_secs(1),
            clock: TimeoutClock::Virtual,
            step: None,
        };
        let outcomes = [
            outcome("p", Verdict::Pass),
            outcome("f", Verdict::Fail(Failure { step: None, expected: "on".into(), got: "off".into() })),
            outcome("s", Verdict::Skip("needs roce".into())),
            outcome("t", Verdict::Timeout(timeout)),
        ];
        let xml = to_xml("model", Duration::from_secs(1), &outcomes);
        assert!(
            xml.contains(r#"tests="4""#) && xml.contains(r#"failures="1""#) && xml.contains(r#"errors="1""#),
            "{xml}"
        );
        assert!(xml.contains(r#"skipped="1""#), "{xml}");
        assert!(xml.contains(r#"<failure message="expected on; got off" type="fail">"#), "{xml}");
        assert!(xml.contains(r#"type="timeout""#), "{xml}");
        assert!(xml.contains("a &lt;note&gt; &amp; more"), "{xml}");
    }
}
