//! The JSON report of a run (`--json FILE`): every scenario's outcome with its steps, times,
//! notes, files and replay command, and the counts.

use std::path::Path;
use std::time::Duration;

use serde::{Serialize, Serializer};

use super::console::Tally;
use crate::run::outcome::ScenarioOutcome;

/// A duration as JSON writes it: a number of seconds, to the nanosecond.
pub fn duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// An optional duration: seconds, or `null`.
pub fn optional_duration<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// A run as the JSON report holds it.
#[derive(Debug, Serialize)]
pub struct JsonReport<'a> {
    /// The report's format version.
    pub version: u32,
    /// The target the run used.
    pub target: &'a str,
    /// The counts and added-up times.
    pub tally: Tally,
    /// Wall time of the whole run, in seconds.
    #[serde(serialize_with = "duration")]
    pub wall_time: Duration,
    /// Each scenario, in suite order.
    pub scenarios: &'a [ScenarioOutcome],
}

/// Write the JSON report of `outcomes` to `path`.
pub fn write(
    path: &Path,
    target: &str,
    tally: Tally,
    wall_time: Duration,
    outcomes: &[ScenarioOutcome],
) -> std::io::Result<()> {
    let report = JsonReport { version: 1, target, tally, wall_time, scenarios: outcomes };
    let mut text = serde_json::to_string_pretty(&report).map_err(std::io::Error::other)?;
    text.push('\n');
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    bnxt_output::write(path, text)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::run::outcome::{Failure, Verdict};

    #[test]
    fn the_report_holds_each_outcome_with_its_verdict() {
        let o = ScenarioOutcome {
            name: "x".into(),
            file: PathBuf::from("x.yaml"),
            target: "model".into(),
            seed: 7,
            verdict: Verdict::Fail(Failure { step: None, expected: "a".into(), got: "b".into() }),
            steps: vec![],
            target_time: Duration::from_millis(1500),
            wall_time: Duration::from_millis(2),
            notes: vec![],
            artifacts: vec![],
            replay: "bnxt-rig run x.yaml --target model --seed 7".into(),
            command_timeout: Some(Duration::from_secs(2)),
            seam: None,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r/report.json");
        let mut tally = Tally::default();
        tally.add(&o);
        write(&path, "model", tally, Duration::from_secs(1), std::slice::from_ref(&o)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["tally"]["failed"], 1);
        assert_eq!(v["scenarios"][0]["verdict"]["verdict"], "fail");
        assert_eq!(v["scenarios"][0]["verdict"]["detail"]["got"], "b");
        assert_eq!(v["scenarios"][0]["target_time"], 1.5);
        assert_eq!(v["scenarios"][0]["command_timeout"], 2.0);
        assert_eq!(v["scenarios"][0]["replay"], "bnxt-rig run x.yaml --target model --seed 7");
    }
}
