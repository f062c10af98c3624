//! The scenario suite against NICs in servers reached over vfio-user sockets (`--target
//! vfio-user:SOCK,SOCK`): two `bnxt-model serve` servers, each run here on a thread of this test
//! through the library's `serve` (the same code as the binary's; `cargo test -p bnxt-rig` does not
//! build other packages' binaries), with the driver's vfio-user backend on the real clock.
//!
//! It runs the issue-2 NIC scenarios of `scenarios/nic/` (those not restricted to the model),
//! then scenarios with firmware faults and `inspect` steps, which reach the servers through the
//! model's extension commands.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bnxt_model::faults::FaultPlan;
use bnxt_model::serve::{ServeOptions, ServeSummary, serve};
use bnxt_rig::run::outcome::Verdict;
use bnxt_rig::run::{RunOptions, run_scenario};
use bnxt_rig::scenario::load::load_str;
use bnxt_rig::scenario::load_paths;

use bnxt_rig::target::vfio_user::VfioUserTarget;
use bnxt_rig::target::from_spec;

/// Two servers in a private folder; they stop when the target's connections close.
struct Servers {
    _dir: tempfile::TempDir,
    sockets: Vec<PathBuf>,
    threads: Vec<JoinHandle<ServeSummary>>,
}

impl Servers {
    fn start() -> Servers {
        let dir = tempfile::tempdir().unwrap();
        let mut sockets = Vec::new();
        let mut threads = Vec::new();
        for i in 1..=2u8 {
            let socket = dir.path().join(format!("nic{i}.sock"));
            let options = ServeOptions {
                socket: socket.clone(),
                mac: [0x02, 0x57, 0x60, 0x80, 0x00, i],
                seed: 0,
                faults: FaultPlan::default(),
                hwrm_log: Some(dir.path().join(format!("hwrm{i}.log"))),
                persist: false,
                segment: None,
                pcap: None,
                catch_signals: false,
            };
            threads.push(std::thread::spawn(move || serve(&options).expect("the server runs")));
            let deadline = Instant::now() + Duration::from_secs(10);
            while !socket.exists() {
                assert!(Instant::now() < deadline, "server {i} did not listen");
                std::thread::sleep(Duration::from_millis(5));
            }
            sockets.push(socket);
        }
        Servers { _dir: dir, sockets, threads }
    }

    fn spec(&self) -> String {
        let paths: Vec<String> = self.sockets.iter().map(|p| p.display().to_string()).collect();
        format!("vfio-user:{}", paths.join(","))
    }

    /// Wait for both servers to stop (after the target is dropped); their summaries.
    fn finish(self) -> Vec<ServeSummary> {
        self.threads.into_iter().map(|t| t.join().expect("the server thread does not panic")).collect()
    }
}

#[test]
fn the_nic_scenarios_pass_against_two_servers() {
    let servers = Servers::start();
    let target = from_spec(&servers.spec()).unwrap();
    assert_eq!(target.kind(), "vfio-user");
    let suite = load_paths(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("nic")]);
    assert!(suite.errors.is_empty(), "{:?}", suite.errors);
    let mut passed = Vec::new();
    for scenario in &suite.scenarios {
        let outcome = run_scenario(scenario, &*target, &RunOptions::default());
        match &outcome.verdict {
            Verdict::Pass => passed.push(scenario.name.clone()),
            Verdict::Skip(_) => {}
            Verdict::Fail(f) => panic!("{} failed on {}: {f:?}", scenario.name, target.name()),
            Verdict::Timeout(t) => panic!("{} timed out on {}: {t:?}", scenario.name, target.name()),
        }
    }
    for name in ["open-and-close", "double-close", "open-held-nic", "reopen-after-close"] {
        assert!(passed.iter().any(|p| p == name), "{name} did not run and pass: {passed:?}");
    }
    drop(target);
    let summaries = servers.finish();
    assert!(summaries.iter().all(|s| s.clients == 1 && s.broken_connections == 0), "{summaries:?}");
    assert!(summaries.iter().all(|s| s.commands > 1000), "the scenarios went through the servers: {summaries:?}");
}

fn run(target: &VfioUserTarget, text: &str) -> Verdict {
    let mut all = load_str(Path::new("vfio-user-test.yaml"), text).unwrap_or_else(|e| panic!("{}", e[0]));
    run_scenario(&all.remove(0), target, &RunOptions::default()).verdict
}

#[test]
fn faults_reach_the_server_of_the_nic_they_name_and_every_scenario_starts_fresh() {
    let servers = Servers::start();
    let target = VfioUserTarget::from_spec(&servers.spec()["vfio-user:".len()..]).unwrap();
    // NIC 1's firmware never answers registration; NIC 0 has no fault and opens.
    let faulty = "name: faults-over-vfio-user\nabout: x.\ntargets: [vfio-user]\nnics: 2\nfaults:\n  - firmware: {nic: 1, request: FUNC_DRV_RGTR, action: no-response}\n  - firmware: {nic: 0, request: FUNC_QCAPS, action: error, code: RESOURCE_ALLOC_ERROR, nth: 2}\nsteps:\n  - open: {nic: 1, as: b}\n    expect: {error: \"FUNC_DRV_RGTR: no answer from the firmware within [0-9]+ ms\", takes_at_least: 500ms}\n  - config: {nic: 1, relaxed_ordering: on, bus_master: off}\n  - open: {nic: 0, as: a}\n  - inspect: {nic: a, driver_registered: on}\n  - close: a\n  - open: {nic: 0, as: a}\n    expect: {error: \"FUNC_QCAPS refused by the firmware: RESOURCE_ALLOC_ERROR\"}\n  - inspect: {nic: 0, dma_mappings: 0, driver_registered: off}\n";
    assert_eq!(run(&target, faulty), Verdict::Pass);
    // The next scenario gets NICs without those faults: both open at once.
    let clean = "name: fresh-after-faults\nabout: x.\nnics: 2\nsteps:\n  - inspect: {nic: 1, dma_mappings: 0, driver_registered: off}\n  - open: {nic: 1, as: b}\n  - open: {nic: 0, as: a}\n    expect: {takes_at_most: 400ms}\n  - identity: {nic: a, differs_from: b, mac: \"02:57:60:80:00:01\"}\n  - close: a\n  - close: b\n";
    assert_eq!(run(&target, clean), Verdict::Pass);
    // A wrong expectation still fails: the checks are real.
    let wrong = "name: wrong\nabout: x.\nnics: 1\nsteps:\n  - open: {nic: 0, as: a}\n  - inspect: {nic: a, driver_registered: off}\n";
    assert!(matches!(run(&target, wrong), Verdict::Fail(_)));
    drop(target);
    servers.finish();
}

#[test]
fn a_bad_socket_list_is_a_clear_error() {
    let err = from_spec("vfio-user:").err().expect("refused");
    assert!(err.to_string().contains("without sockets"), "{err}");
    let target = from_spec("vfio-user:/nonexistent/nic.sock").unwrap();
    let text = "name: t\nabout: x.\nnics: 1\nsteps:\n  - open: {nic: 0, as: a}\n";
    let scenario = load_str(Path::new("t.yaml"), text).unwrap().remove(0);
    match run_scenario(&scenario, &*target, &RunOptions::default()).verdict {
        Verdict::Fail(f) => assert!(f.got.contains("/nonexistent/nic.sock"), "{f:?}"),
        other => panic!("expected a failure to start, got {other:?}"),
    }
}
