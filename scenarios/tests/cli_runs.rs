//! The `bnxt-rig` command's runs: timeouts, reports, run records and replays, transcripts
//! (deterministic by seed), `diff`, `--jobs`, `schema`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Run the command in `dir`: its exit status, stdout and stderr.
fn rig_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let Output { status, stdout, stderr } = Command::new(env!("CARGO_BIN_EXE_bnxt-rig"))
        .args(args)
        .current_dir(dir)
        .env("BNXT_RIG_RUNS", dir.join("runs"))
        .output()
        .unwrap();
    (status.code().expect("exited"), String::from_utf8(stdout).unwrap(), String::from_utf8(stderr).unwrap())
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const TIMEOUTS: &str = "name: scenario-timeout\nabout: x.\nnics: 1\ntimeout: 3s\nsteps:\n  - wait: 2s\n  - wait: 2s\n";
const STEP_TIMEOUT: &str = "name: step-timeout\nabout: x.\nnics: 1\nsteps:\n  - repeat:\n      times: 10\n      steps:\n        - wait: 1s\n    timeout: 5500ms\n";
const FAILS: &str = "name: fails\nabout: x.\nnics: 1\nseed: 3\nsteps:\n  - open: {nic: 0, as: a}\n  - config: {nic: a, bus_master: off}\n";
const PASSES: &str = "name: passes\nabout: x.\nnics: 1\nsteps:\n  - open: {nic: 0, as: a}\n  - close: a\n";

/// A small scenario over a lossy wire: every kind of fault, and every byte checked.
const LOSSY: &str = "name: lossy\nabout: x.\nnics: 2\nseed: 11\nfaults:\n  - wire: {drop: 0.05, duplicate: 0.03, reorder: 0.05, corrupt: 0.03}\nsteps:\n  - open: {nic: 0, as: a}\n  - open: {nic: 1, as: b}\n  - region: {on: a, as: src, bytes: 64KiB, fill: random}\n  - region: {on: b, as: dst, bytes: 64KiB}\n  - qp: {on: a, as: qa}\n  - qp: {on: b, as: qb}\n  - connect: {qp: qa, peer: qb}\n  - repeat:\n      times: 4\n      steps:\n        - receive: {qp: qb, region: dst, bytes: 64KiB}\n        - send: {qp: qa, region: src, bytes: 64KiB}\n        - complete: {qp: qa, side: send}\n        - complete: {qp: qb, side: receive, bytes: 64KiB}\n        - compare: {region: dst, with: src, bytes: 64KiB}\n";

#[test]
fn timeouts_are_their_own_verdict_on_the_virtual_clock() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "t1.yaml", TIMEOUTS);
    write(dir.path(), "t2.yaml", STEP_TIMEOUT);
    write(dir.path(), "ok.yaml", PASSES);
    let (code, out, _) = rig_in(dir.path(), &["run", "."]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("TIMEOUT  scenario-timeout  (2 steps, 3s virtual"), "{out}");
    assert!(
        out.contains(
            "step 2 (./t1.yaml:7): wait: 2s\n        the timeout of the scenario (3s on the virtual clock) passed"
        ),
        "{out}"
    );
    // The step's bound stops the repeat exactly at it, in iteration 6.
    assert!(out.contains("TIMEOUT  step-timeout  (1 steps, 5.5s virtual"), "{out}");
    assert!(out.contains("step 1.1 (./t2.yaml:8): wait: 1s, iteration 6 of 10\n        the timeout of the step 1 (5.5s on the virtual clock) passed"), "{out}");
    assert!(out.contains("PASS  passes"), "{out}");
    assert!(out.contains("scenarios: 1 passed, 2 failed, 0 skipped\nfailed: 0 FAIL, 2 TIMEOUT\n"), "{out}");
}

/// The scenario's timeout passes while the driver waits for the firmware's answer to a request;
/// then again while it waits for a completion that never comes.
const TIMEOUT_IN_DRIVER: &str = "name: timeout-in-driver\nabout: x.\ntargets: [model]\nnics: 1\ntimeout: 200ms\nfaults:\n  - firmware: {nic: 0, request: FUNC_QCAPS, action: no-response, nth: 1}\nsteps:\n  - open: {nic: 0, as: a}\n";
const TIMEOUT_IN_WAIT: &str = "name: timeout-in-wait\nabout: x.\ntargets: [model]\nnics: 2\ntimeout: 2s\nsteps:\n  - open: {nic: 0, as: a}\n  - open: {nic: 1, as: b}\n  - region: {on: b, as: dst, bytes: 4KiB}\n  - qp: {on: a, as: qa}\n  - qp: {on: b, as: qb}\n  - connect: {qp: qa, peer: qb}\n  - receive: {qp: qb, region: dst, bytes: 4KiB}\n  - complete: {qp: qb, side: receive, within: 1h}\n";

#[test]
fn a_timeout_that_passes_inside_a_driver_wait_ends_the_wait_and_the_scenario_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.yaml", TIMEOUT_IN_DRIVER);
    write(dir.path(), "b.yaml", TIMEOUT_IN_WAIT);
    let (code, out, err) = rig_in(dir.path(), &["run", "."]);
    assert_eq!(code, 1, "{out}{err}");
    // The open's wait for FUNC_QCAPS stops at the scenario's 200 ms, not at the firmware's 500 ms
    // timeout, and the verdict is TIMEOUT, not the error the driver returned.
    assert!(out.contains("TIMEOUT  timeout-in-driver  (1 steps, 200ms virtual"), "{out}");
    assert!(out.contains("step 1 (./a.yaml:9): open: {nic: 0, as: a}\n        the timeout of the scenario (200ms on the virtual clock) passed"), "{out}");
    assert!(out.contains("TIMEOUT  timeout-in-wait  (8 steps, 2."), "{out}");
    assert!(out.contains("step 8 (./b.yaml:14): complete: {qp: qb, side: receive, status: ok, within: 3600s}\n        the timeout of the scenario (2s on the virtual clock) passed"), "{out}");
    // Nothing panicked and the cleanup after each (closing the NICs) had nothing to report.
    assert!(!out.contains("panicked") && !err.contains("panicked"), "{out}{err}");
    assert!(!out.contains("close at the end"), "{out}");
    assert!(out.contains("failed: 0 FAIL, 2 TIMEOUT\n"), "{out}");
}

#[test]
fn junit_and_json_reports_count_every_verdict() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.yaml", FAILS);
    write(dir.path(), "b.yaml", PASSES);
    write(dir.path(), "c.yaml", TIMEOUTS);
    write(
        dir.path(),
        "d.yaml",
        "name: skipped\nabout: x.\nnics: 1\nskip: {reason: not today}\nsteps:\n  - count: {equals: 1}\n",
    );
    let (code, out, err) = rig_in(dir.path(), &["run", ".", "--junit", "out/junit.xml", "--json", "out/report.json"]);
    assert_eq!(code, 1, "{out}{err}");
    let xml = std::fs::read_to_string(dir.path().join("out/junit.xml")).unwrap();
    let report = quick_junit::Report::deserialize_from_str(&xml).expect("a JUnit parser reads it");
    assert_eq!((report.tests, report.failures, report.errors), (4, 1, 1), "{xml}");
    let suite = &report.test_suites[0];
    assert_eq!((suite.tests, suite.failures, suite.errors), (4, 1, 1), "{xml}");
    assert_eq!(
        suite.test_cases.iter().filter(|c| matches!(c.status, quick_junit::TestCaseStatus::Skipped { .. })).count(),
        1
    );
    assert!(xml.contains(r#"<skipped message="skipped: not today"/>"#), "{xml}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/report.json")).unwrap()).unwrap();
    let tally = &json["tally"];
    assert_eq!(
        (tally["passed"].as_u64(), tally["failed"].as_u64(), tally["skipped"].as_u64(), tally["timed_out"].as_u64()),
        (Some(1), Some(1), Some(1), Some(1))
    );
    let verdicts: Vec<&str> =
        json["scenarios"].as_array().unwrap().iter().map(|s| s["verdict"]["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["fail", "pass", "timeout", "skip"]);
}

#[test]
fn the_printed_replay_command_and_replay_reproduce_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "fails.yaml", FAILS);
    write(dir.path(), "passes.yaml", PASSES);
    let (code, out, _) = rig_in(dir.path(), &["run", ".", "--strict", "--record", "run.json"]);
    assert_eq!(code, 1);
    let failure = |out: &str| {
        out.lines().skip_while(|l| !l.starts_with("FAIL")).take(4).map(|l| l.to_string()).collect::<Vec<_>>()
    };
    let first = failure(&out);
    let replay = out.lines().find_map(|l| l.trim().strip_prefix("replay: ")).expect("a replay line").to_string();
    assert_eq!(replay, "bnxt-rig run ./fails.yaml --target model --seed 3 --strict");
    // The printed command, run as printed.
    let words: Vec<&str> = replay.split_whitespace().skip(1).collect();
    let (code, again, _) = rig_in(dir.path(), &words);
    assert_eq!(code, 1);
    assert_eq!(failure(&again)[1..], first[1..], "the same step fails the same way");
    // The run record, whole and only its failures, from elsewhere.
    let elsewhere = tempfile::tempdir().unwrap();
    let record = dir.path().join("run.json");
    let (code, all, _) = rig_in(elsewhere.path(), &["replay", record.to_str().unwrap()]);
    assert_eq!(code, 1, "{all}");
    assert!(all.contains("PASS  passes") && all.contains("scenarios: 1 passed, 1 failed, 0 skipped"), "{all}");
    assert_eq!(failure(&all)[1..], first[1..]);
    let (code, failed, _) = rig_in(elsewhere.path(), &["replay", record.to_str().unwrap(), "--failed"]);
    assert_eq!(code, 1);
    assert!(failed.starts_with("replaying 1 scenario(s)") && !failed.contains("passes"), "{failed}");
    // A file changed since is said.
    write(dir.path(), "fails.yaml", &FAILS.replace("bus_master: off", "bus_master: on"));
    let (code, fixed, err) = rig_in(elsewhere.path(), &["replay", record.to_str().unwrap(), "--failed"]);
    assert_eq!(code, 0, "{fixed}");
    assert!(err.contains("fails.yaml changed since the run"), "{err}");
    // `latest` is the newest run recorded in the default folder.
    let (_, _, _) = rig_in(dir.path(), &["run", "passes.yaml"]);
    let (code, latest, _) = rig_in(dir.path(), &["replay", "latest"]);
    assert_eq!(code, 0);
    assert!(latest.contains("PASS  passes") && !latest.contains("fails"), "{latest}");
}

#[test]
fn transcripts_follow_the_seed_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "lossy.yaml", LOSSY);
    let file = file.to_str().unwrap();
    let transcript = |run: &str, seed: &str| {
        let out_dir = dir.path().join(run);
        let (code, out, _) =
            rig_in(dir.path(), &["run", file, "--seed", seed, "--transcript", out_dir.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("wrote: ") && out.contains("lossy.svg"), "{out}");
        std::fs::read(out_dir.join("lossy.transcript")).unwrap()
    };
    let (a, b, c) = (transcript("a", "11"), transcript("b", "11"), transcript("c", "12"));
    assert!(a == b, "the same seed gives the same transcript, byte for byte");
    assert!(a != c, "another seed gives another");
    let text = String::from_utf8(a).unwrap();
    for kind in ["wire-fault drop", "wire-fault duplicate", "wire-fault reorder", "wire-fault corrupt", "pkt-drop ICRC"]
    {
        assert!(text.contains(kind), "the wire did `{kind}`");
    }
    for line in [
        "drv0   hwrm-request VER_GET seq=0",
        "nic1   pkt-in",
        "step   8.5 (4/4) line 22: compare",
        "drv1   doorbell RQ",
    ] {
        assert!(text.contains(line), "{line}");
    }
    // diff: the same runs agree; another seed's differs where the wire differed.
    let path = |run: &str| dir.path().join(run).join("lossy.transcript").to_str().unwrap().to_string();
    let (code, out, _) = rig_in(dir.path(), &["diff", &path("a"), &path("b")]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("same: "), "{out}");
    let (code, out, _) = rig_in(dir.path(), &["diff", &path("a"), &path("c"), "--context", "0"]);
    assert_eq!(code, 1);
    assert!(out.contains("wire-fault") && out.lines().last().unwrap().starts_with("different: "), "{out}");
    // The driver's record alone (a card's transcript has no model lines) still agrees.
    let driver_only: String = text.lines().filter(|l| !l.contains("  nic")).map(|l| format!("{l}\n")).collect();
    let lab = dir.path().join("lab.transcript");
    std::fs::write(&lab, driver_only).unwrap();
    let (code, out, _) = rig_in(dir.path(), &["diff", lab.to_str().unwrap(), &path("b")]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("(runner and driver lines)"), "{out}");
}

#[test]
fn jobs_run_scenarios_side_by_side_with_the_same_verdicts() {
    let suite = repo().join("scenarios/firmware");
    let (code, one, _) = rig_in(&repo(), &["run", suite.to_str().unwrap(), "--record", "/dev/null"]);
    let (code2, four, _) = rig_in(&repo(), &["run", suite.to_str().unwrap(), "--jobs", "4", "--record", "/dev/null"]);
    assert_eq!((code, code2), (0, 0));
    let verdicts = |out: &str| {
        out.lines()
            .filter(|l| l.starts_with("PASS") || l.starts_with("FAIL"))
            .map(|l| l.split("  (").next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(verdicts(&one), verdicts(&four), "the same scenarios, verdicts and order");
    assert!(four.contains(" wall with 4 jobs;"), "{four}");
}

#[test]
fn the_schema_command_writes_the_committed_schema() {
    let (code, out, _) = rig_in(&repo(), &["schema"]);
    assert_eq!(code, 0);
    assert_eq!(out, std::fs::read_to_string(repo().join("docs/scenario.schema.json")).unwrap());
}

#[test]
fn a_run_that_ran_nothing_exits_3_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let only = "name: elsewhere\nabout: x.\ntargets: [vfio-user]\nnics: 1\nsteps:\n  - count: {at_least: 1}\n";
    write(dir.path(), "elsewhere.yaml", only);
    let (code, out, err) = rig_in(dir.path(), &["run", "elsewhere.yaml"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("scenarios: 0 passed, 0 failed, 1 skipped"), "{out}");
    assert!(
        err.contains("no scenario ran on the model target (1 skipped); `bnxt-rig list --target model` says why"),
        "{err}"
    );
    // Nothing chosen is nothing run too.
    let (code, _, _) = rig_in(dir.path(), &["run", "elsewhere.yaml", "--filter", "nothing-has-this-name"]);
    assert_eq!(code, 3);
    // One scenario that runs is a run: the skipped one beside it does not count against it.
    write(dir.path(), "passes.yaml", PASSES);
    let (code, out, err) = rig_in(dir.path(), &["run", "."]);
    assert_eq!(code, 0, "{out}{err}");
    // The listing says why, before anything runs.
    let (code, out, _) = rig_in(dir.path(), &["list", "--target", "model", "."]);
    assert_eq!(code, 0);
    assert!(out.contains("no: runs only on: vfio-user"), "{out}");
    assert!(out.ends_with("on model: 1 of 2 scenarios run (0 of them with steps skipped), 1 do not\n"), "{out}");
}

#[test]
fn run_help_names_every_target() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, _) = rig_in(dir.path(), &["run", "--help"]);
    assert_eq!(code, 0);
    for kind in bnxt_rig::target::KINDS {
        assert!(out.contains(&format!("`{kind}")), "`run --help` does not name {kind}:\n{out}");
    }
    assert!(out.contains("--command-timeout"), "{out}");
}
