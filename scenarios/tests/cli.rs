//! The `bnxt-rig` command: exit status, what it prints, selection.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn rig(args: &[&str]) -> (i32, String, String) {
    let Output { status, stdout, stderr } =
        Command::new(env!("CARGO_BIN_EXE_bnxt-rig")).args(args).current_dir(repo()).output().unwrap();
    (status.code().expect("exited"), String::from_utf8(stdout).unwrap(), String::from_utf8(stderr).unwrap())
}

#[test]
fn a_passing_run_exits_0_with_a_summary() {
    let (code, out, _) = rig(&["run", "scenarios/nic/firmware-never-answers-registration.yaml"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("PASS  firmware-never-answers-registration  (5 steps, "), "{out}");
    assert!(out.contains("\nscenarios: 1 passed, 0 failed, 0 skipped\n"), "{out}");
}

#[test]
fn a_failing_run_exits_1_and_prints_the_replay_command() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fails.yaml");
    std::fs::write(&file, "name: fails\nabout: x.\nnics: 1\nseed: 3\nsteps:\n  - open: {nic: 0, as: a}\n  - config: {nic: a, bus_master: off}\n").unwrap();
    let ok = repo().join("scenarios/nic/double-close.yaml");
    let (code, out, _) = rig(&["run", ok.to_str().unwrap(), file.to_str().unwrap(), "--strict"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("PASS  double-close"), "{out}");
    assert!(out.contains("FAIL  fails  (2 steps, "), "{out}");
    assert!(out.contains(&format!("step 2 ({}:7): config: {{nic: a, bus_master: off}}", file.display())), "{out}");
    assert!(out.contains("expected: bus_master off\n        got:      bus_master on\n"), "{out}");
    assert!(
        out.contains(&format!("replay: bnxt-rig run {} --target model --seed 3 --strict", file.display())),
        "{out}"
    );
    assert!(out.contains("scenarios: 1 passed, 1 failed, 0 skipped"), "{out}");
}

#[test]
fn bad_files_exit_2_and_nothing_runs() {
    let good = "scenarios/nic/double-close.yaml";
    let bad = "fixtures/bad-scenarios/typo-in-key.yaml";
    let (code, out, err) = rig(&["run", good, bad]);
    assert_eq!(code, 2);
    assert_eq!(out, "");
    assert!(err.contains("error: fixtures/bad-scenarios/typo-in-key.yaml:8:20: steps[2].open.ass: unknown key `ass` (did you mean `as`?)"), "{err}");
    assert!(err.contains("nothing was run"), "{err}");
    let (code, _, err) = rig(&["check", "fixtures/bad-scenarios"]);
    assert_eq!(code, 2);
    let files = std::fs::read_dir(repo().join("fixtures/bad-scenarios")).unwrap().count();
    assert_eq!(err.lines().filter(|l| l.starts_with("error: fixtures/bad-scenarios/")).count(), files, "{err}");
}

#[test]
fn check_and_list_read_the_whole_suite_ignoring_non_scenario_files() {
    let (code, out, err) = rig(&["check", "scenarios"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("ok: ") && out.contains("scenario(s), no problems"), "{out}");
    let (code, out, _) = rig(&["list", "scenarios", "--tag", "timeouts", "--filter", "FUNC_RESET"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("NAME") && lines[0].contains("TARGETS") && lines[0].contains("NICS"), "{out}");
    assert!(
        // Firmware faults run on every target (at the driver's seam off the model).
        lines[1..].iter().all(|l| l.contains("FUNC_RESET") && l.contains(" all ") && l.contains("timeouts")),
        "{out}"
    );
    assert!(lines.len() >= 3, "{out}");
}

#[test]
fn selection_and_unknown_targets() {
    let (code, out, _) = rig(&["run", "scenarios", "--filter", "registration", "--skip-tag", "faults"]);
    assert_eq!(code, 0, "{out}");
    // Only the issue-2 scenario has "registration" in its name and no `faults` tag.
    assert!(out.contains("scenarios: 1 passed, 0 failed, 0 skipped\n"), "{out}");
    assert!(out.contains(" not selected"), "{out}");
    let (code, _, err) = rig(&["run", "scenarios", "--target", "modle"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown target `modle` (did you mean `model`?); available: model"), "{err}");
    let (code, _, _) = rig(&["run"]);
    assert_eq!(code, 2, "no paths is a usage error");
}

#[test]
fn nics_lists_the_bcm57608_functions_of_a_sysfs_tree_in_bus_order() {
    let dir = tempfile::tempdir().unwrap();
    let function = |bus: &str, device: &str, driver: Option<&str>| {
        let d = dir.path().join(bus);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("vendor"), "0x14e4\n").unwrap();
        std::fs::write(d.join("device"), format!("{device}\n")).unwrap();
        if let Some(name) = driver {
            let target = dir.path().join("drivers").join(name);
            std::fs::create_dir_all(&target).unwrap();
            std::os::unix::fs::symlink(target, d.join("driver")).unwrap();
        }
    };
    function("0000:c1:00.0", "0x1760", Some("vfio-pci"));
    function("0000:41:00.0", "0x1760", Some("bnxt_en"));
    function("0000:41:00.1", "0x16d7", Some("bnxt_en"));
    let (code, out, err) = rig(&["nics", "--sysfs", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "BNXT     0000:41:00.0  bnxt_en\nBNXT:1   0000:c1:00.0  vfio-pci\n");
    let (code, _, err) = rig(&["nics", "--sysfs", dir.path().join("nowhere").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("nowhere"), "{err}");
}
