//! The runner against the model and against stand-in targets: verdicts, where a failure is
//! reported, skips, caught panics, strict mode.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bnxt::{Clock, Machine, PciError, PciFunction};
use bnxt_rig::run::outcome::{ScenarioOutcome, Verdict};
use bnxt_rig::run::{RunOptions, run_scenario, seed_of, skip_reason};
use bnxt_rig::scenario::Scenario;
use bnxt_rig::scenario::load::load_str;
use bnxt_rig::scenario::values::parse_duration;
use bnxt_rig::target::model::ModelTarget;
use bnxt_rig::target::{Capabilities, ConfigState, Internals, MachinePlan, Session, Target, TargetError};

fn scenario(text: &str) -> Scenario {
    let mut all = load_str(Path::new("test.yaml"), text).unwrap_or_else(|e| panic!("{}", e[0]));
    assert_eq!(all.len(), 1);
    all.remove(0)
}

fn run_on_model(text: &str) -> ScenarioOutcome {
    run_scenario(&scenario(text), &ModelTarget, &RunOptions::default())
}

fn failure(o: &ScenarioOutcome) -> &bnxt_rig::run::outcome::Failure {
    match &o.verdict {
        Verdict::Fail(f) => f,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn the_issue_2_scenario_passes_on_the_model_in_virtual_time() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("nic/firmware-never-answers-registration.yaml"),
    )
    .unwrap();
    let o = run_on_model(&text);
    assert_eq!(o.verdict, Verdict::Pass, "{o:#?}");
    assert_eq!(o.steps.len(), 5);
    assert!(o.steps.iter().all(|s| s.ok));
    let first = &o.steps[0];
    assert!(first.note.as_deref().unwrap().contains("FUNC_DRV_RGTR"), "{first:?}");
    // The unanswered registration cost the driver's timeout in virtual time.
    assert!(first.took >= Duration::from_millis(500), "{first:?}");
    assert!(o.target_time >= first.took);
    assert_eq!(o.steps[3].started, o.steps[2].started + o.steps[2].took);
}

#[test]
fn a_wrong_expectation_fails_at_its_step_with_what_was_expected_and_what_happened() {
    let o = run_on_model(
        "name: t\nabout: x.\nnics: 1\nsteps:\n  - open: {nic: 0, as: a}\n  - config: {nic: a, relaxed_ordering: on, bus_master: on}\n  - close: a\n",
    );
    let f = failure(&o);
    let step = f.step.as_ref().unwrap();
    assert_eq!((step.number.as_str(), step.line), ("2", 6));
    assert_eq!(step.text, "config: {nic: a, relaxed_ordering: on, bus_master: on}");
    assert_eq!(f.expected, "relaxed_ordering on");
    assert_eq!(f.got, "relaxed_ordering off");
    // The first failing step ends the scenario.
    assert_eq!(o.steps.len(), 2);
}

#[test]
fn an_open_expected_to_fail_that_succeeds_fails_the_scenario() {
    let o =
        run_on_model("name: t\nabout: x.\nnics: 1\nsteps:\n  - open: {nic: 0, as: a}\n    expect: {error: VER_GET}\n");
    let f = failure(&o);
    assert_eq!(f.expected, "open fails with an error matching /VER_GET/");
    assert_eq!(f.got, "it succeeded");
}

#[test]
fn an_error_that_does_not_match_is_shown_in_full() {
    let o = run_on_model(
        "name: t\nabout: x.\nnics: 1\nfaults:\n  - firmware: {nic: 0, request: FUNC_QCAPS, action: error, code: BUSY}\nsteps:\n  - open: {nic: 0, as: a}\n    expect: {error: FUNC_QCFG}\n",
    );
    let f = failure(&o);
    assert_eq!(f.got, "error: BNXT: FUNC_QCAPS refused by the firmware: BUSY (error code 0x0010)");
}

#[test]
fn an_unexpected_error_names_the_request() {
    let o = run_on_model(
        "name: t\nabout: x.\nnics: 1\nfaults:\n  - firmware: {nic: 0, request: PORT_PHY_QCFG, action: no-response}\nsteps:\n  - open: {nic: 0, as: a}\n",
    );
    let f = failure(&o);
    assert_eq!(f.expected, "open succeeds");
    assert!(f.got.contains("PORT_PHY_QCFG: no answer from the firmware"), "{}", f.got);
}

#[test]
fn timing_expectations_use_the_target_clock() {
    let o = run_on_model(
        "name: t\nabout: x.\nnics: 1\nfaults:\n  - firmware: {nic: 0, request: VER_GET, action: delay, by: 300ms}\nsteps:\n  - open: {nic: 0, as: a}\n    expect: {takes_at_most: 200ms}\n",
    );
    let f = failure(&o);
    assert_eq!(f.expected, "takes at most 200ms");
    let took = parse_duration(f.got.strip_prefix("took ").unwrap()).unwrap();
    assert!(took >= Duration::from_millis(300), "{}", f.got);
    let o = run_on_model(
        "name: t\nabout: x.\nnics: 1\nsteps:\n  - wait: 40s\n    expect: {takes_at_least: 40s, takes_at_most: 40s}\n",
    );
    assert_eq!(o.verdict, Verdict::Pass, "{o:#?}");
    assert_eq!(o.target_time, Duration::from_secs(40));
    // A repeat is timed as a whole.
    let o = run_on_model(
        "name: t\nabout: x.\nnics: 1\nsteps:\n  - repeat:\n      times: 3\n      steps: [wait: 1s]\n    expect: {takes_at_most: 2s}\n",
    );
    assert_eq!((failure(&o).expected.as_str(), failure(&o).got.as_str()), ("takes at most 2s", "took 3s"));
}

#[test]
fn a_failure_inside_a_repeat_names_the_iteration() {
    let o = run_on_model(
        "name: t\nabout: x.\nnics: 1\nfaults:\n  - firmware: {nic: 0, request: FUNC_QCAPS, action: error, code: BUSY, nth: 2}\nsteps:\n  - count: {equals: 1}\n  - repeat:\n      times: 3\n      steps:\n        - open: {nic: 0, as: a}\n        - close: a\n",
    );
    let step = failure(&o).step.clone().unwrap();
    assert_eq!((step.number.as_str(), step.line, step.iterations), ("2.1", 11, vec![(2, 3)]));
}

#[test]
fn identity_limits_count_and_inspect_check_against_the_model() {
    let o = run_on_model(
        "name: t\nabout: x.\nnics: 2\nsteps:\n  - count: {equals: 2}\n  - open: {nic: 1, as: b}\n  - identity: {nic: b, name: \"BNXT:1\", bus: \"0000:02:00.0\"}\n  - limits: {nic: b}\n  - inspect: {nic: b, driver_registered: on}\n  - close: b\n  - inspect: {nic: 1, dma_mappings: 0, driver_registered: off}\n",
    );
    assert_eq!(o.verdict, Verdict::Pass, "{o:#?}");
    let o = run_on_model(
        "name: t\nabout: x.\nnics: 2\nsteps:\n  - open: {nic: 1, as: b}\n  - identity: {nic: b, name: BNXT, mac: \"02:00:00:00:00:01\"}\n",
    );
    let f = failure(&o);
    assert!(f.expected.starts_with("name BNXT, mac 02:00:00:00:00:01"), "{}", f.expected);
    assert!(f.got.starts_with("name BNXT:1, mac "), "{}", f.got);
    let o = run_on_model("name: t\nabout: x.\nnics: 2\nsteps:\n  - count: {at_least: 3}\n");
    assert_eq!((failure(&o).expected.as_str(), failure(&o).got.as_str()), ("at least 3 NICs", "2 NICs"));
}

#[test]
fn nics_left_open_are_closed_at_the_end() {
    let o = run_on_model("name: t\nabout: x.\nnics: 1\nsteps:\n  - open: {nic: 0, as: a}\n");
    assert_eq!(o.verdict, Verdict::Pass);
}

#[test]
fn a_transcript_made_through_the_library_holds_the_drivers_record() {
    // No subscriber was set by this test binary: the runner installs the one transcripts need.
    let dir = tempfile::tempdir().unwrap();
    let options = RunOptions { transcript: Some(dir.path().to_path_buf()), ..RunOptions::default() };
    let s = scenario("name: recorded\nabout: x.\nnics: 1\nsteps:\n  - open: {nic: 0, as: a}\n  - close: a\n");
    let o = run_scenario(&s, &ModelTarget, &options);
    assert!(matches!(o.verdict, bnxt_rig::run::outcome::Verdict::Pass), "{:?}", o.verdict);
    assert!(o.notes.is_empty(), "{:?}", o.notes);
    let text = std::fs::read_to_string(dir.path().join("recorded.transcript")).unwrap();
    for line in ["drv0   hwrm-request VER_GET seq=0", "drv0   hwrm-answer VER_GET seq=0 ok", "drv0   roce-command"] {
        assert!(text.contains(line), "{line}\n{text}");
    }
}

#[test]
fn the_seed_option_overrides_the_file() {
    let s = scenario("name: t\nabout: x.\nnics: 1\nseed: 7\nsteps:\n  - count: {equals: 1}\n");
    assert_eq!(seed_of(&s, &RunOptions::default()), 7);
    assert_eq!(seed_of(&s, &RunOptions { seed: Some(9), ..RunOptions::default() }), 9);
}

// A stand-in target: a machine whose functions cannot be taken, a clock that only counts, and
// (optionally) panics where the driver or the target would.

#[derive(Clone, Copy, Default)]
struct Fake {
    faults: bool,
    /// Relaxed ordering off in the NICs' Device Control (as some platforms leave it).
    relaxed_off: bool,
    panic_in_take: bool,
    panic_in_start: bool,
    unimplemented: bool,
}

struct FakeMachine {
    panic_in_take: bool,
}

impl Machine for FakeMachine {
    fn buses(&self) -> Result<Vec<String>, PciError> {
        Ok(vec!["0000:01:00.0".into()])
    }
    fn take(&self, bus: &str) -> Result<Arc<dyn PciFunction>, PciError> {
        if self.panic_in_take {
            panic!("the stand-in machine panics taking {bus}");
        }
        Err(PciError::Take { bus: bus.into(), reason: "a stand-in machine has no functions".into() })
    }
}

#[derive(Default)]
struct FakeClock(Mutex<Duration>);

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        *self.0.lock().unwrap()
    }
    fn sleep(&self, d: Duration) -> Result<(), bnxt_pci::Interrupted> {
        *self.0.lock().unwrap() += d;
        Ok(())
    }
}

struct FakeSession {
    machine: FakeMachine,
    clock: FakeClock,
    unimplemented: bool,
    relaxed_off: bool,
}

impl Session for FakeSession {
    fn machine(&self) -> &dyn Machine {
        &self.machine
    }
    fn clock(&self) -> &dyn Clock {
        &self.clock
    }
    fn config_state(&self, _: usize) -> Result<ConfigState, TargetError> {
        Ok(ConfigState { memory: false, bus_master: false, relaxed_ordering: !self.relaxed_off })
    }
    fn internals(&self, _: usize) -> Result<Internals, TargetError> {
        Err(TargetError::Cannot { target: "fake".into(), what: "look inside a NIC".into() })
    }
    fn unimplemented(&self) -> Vec<String> {
        if self.unimplemented { vec!["NIC 0: something it does not do".into()] } else { Vec::new() }
    }
}

impl Target for Fake {
    fn name(&self) -> String {
        "fake".into()
    }
    fn kind(&self) -> &'static str {
        "fake"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities { faults: self.faults, inspect: false, max_nics: 1, virtual_time: false }
    }
    fn start(&self, _: &MachinePlan<'_>) -> Result<Box<dyn Session>, TargetError> {
        if self.panic_in_start {
            panic!("the stand-in target cannot start");
        }
        let machine = FakeMachine { panic_in_take: self.panic_in_take };
        Ok(Box::new(FakeSession {
            machine,
            clock: FakeClock::default(),
            unimplemented: self.unimplemented,
            relaxed_off: self.relaxed_off,
        }))
    }
}

const PLAIN: &str = "name: t\nabout: x.\nnics: 1\nsteps:\n  - count: {equals: 1}\n  - wait: 5s\n  - config: {nic: 0, relaxed_ordering: on}\n";

#[test]
fn scenarios_a_target_cannot_run_are_skipped_with_the_reason() {
    let fake = Fake::default();
    let cases = [
        ("name: t\nabout: x.\ntargets: [model]\nnics: 1\nsteps:\n  - count: {equals: 1}\n", "runs only on: model"),
        (
            "name: t\nabout: x.\nnics: 1\nfaults:\n  - firmware: {nic: 0, request: VER_GET, action: no-response}\nsteps:\n  - count: {equals: 1}\n",
            "needs faults, which the fake target lacks",
        ),
        (
            "name: t\nabout: x.\nnics: 1\nrequires: [inspect]\nsteps:\n  - repeat: {times: 2, steps: [inspect: {nic: 0, dma_mappings: 0}]}\n",
            "needs inspect, which the fake target lacks",
        ),
        (
            "name: t\nabout: x.\nnics: 1\nfaults:\n  - wire: {drop: 0.5}\nsteps:\n  - count: {equals: 1}\n",
            "needs wire-faults, which the fake target lacks (wire faults need the model's segment between the NICs: \
             they run on the model and vfio-user targets only)",
        ),
        (
            "name: t\nabout: x.\nnics: 1\nrequires: [virtual-time, pcap]\nsteps:\n  - count: {equals: 1}\n",
            "needs virtual-time, pcap, which the fake target lacks",
        ),
        (
            "name: t\nabout: x.\nnics: 1\nsteps:\n  - open: {nic: 0, as: a}\n  - qp: {on: a, as: q}\n",
            "needs roce, which the fake target lacks",
        ),
        (
            "name: t\nabout: x.\nnics: 1\nskip: {reason: waits for the firmware's fix}\nsteps:\n  - count: {equals: 1}\n",
            "skipped: waits for the firmware's fix",
        ),
        ("name: t\nabout: x.\nnics: 2\nsteps:\n  - count: {equals: 2}\n", "needs 2 NICs; the fake target has 1"),
    ];
    for (text, reason) in cases {
        let s = scenario(text);
        assert_eq!(skip_reason(&s, &fake).as_deref(), Some(reason));
        let o = run_scenario(&s, &fake, &RunOptions::default());
        assert_eq!(o.verdict, Verdict::Skip(reason.into()));
        assert!(o.steps.is_empty());
    }
    assert_eq!(skip_reason(&scenario(PLAIN), &fake), None);
    assert_eq!(run_scenario(&scenario(PLAIN), &fake, &RunOptions::default()).verdict, Verdict::Pass);
}

#[test]
fn a_panic_in_a_step_fails_the_scenario_with_its_message() {
    let fake = Fake { panic_in_take: true, ..Fake::default() };
    let o = run_scenario(
        &scenario("name: t\nabout: x.\nnics: 1\nsteps:\n  - wait: 1s\n  - open: {nic: 0, as: a}\n  - close: a\n"),
        &fake,
        &RunOptions::default(),
    );
    let f = failure(&o);
    assert_eq!(f.step.as_ref().unwrap().number, "2");
    assert!(f.got.starts_with("panicked at "), "{}", f.got);
    assert!(f.got.ends_with("the stand-in machine panics taking 0000:01:00.0"), "{}", f.got);
    // And the runner goes on: the next scenario runs normally.
    assert_eq!(run_scenario(&scenario(PLAIN), &Fake::default(), &RunOptions::default()).verdict, Verdict::Pass);
}

#[test]
fn an_error_from_the_machine_is_an_ordinary_failure() {
    let o = run_scenario(
        &scenario("name: t\nabout: x.\nnics: 1\nsteps:\n  - open: {nic: 0, as: a}\n"),
        &Fake::default(),
        &RunOptions::default(),
    );
    assert!(failure(&o).got.contains("a stand-in machine has no functions"), "{:?}", o.verdict);
}

#[test]
fn a_target_that_panics_while_starting_fails_the_scenario() {
    let fake = Fake { panic_in_start: true, ..Fake::default() };
    let o = run_scenario(&scenario(PLAIN), &fake, &RunOptions::default());
    let f = failure(&o);
    assert!(f.step.is_none());
    assert!(f.got.ends_with("the stand-in target cannot start"), "{}", f.got);
}

#[test]
fn strict_mode_fails_a_run_that_asked_for_something_unimplemented() {
    let fake = Fake { unimplemented: true, ..Fake::default() };
    let o = run_scenario(&scenario(PLAIN), &fake, &RunOptions::default());
    assert_eq!(o.verdict, Verdict::Pass);
    assert_eq!(o.notes, vec!["NIC 0: something it does not do".to_string()]);
    let o = run_scenario(&scenario(PLAIN), &fake, &RunOptions { strict: true, ..RunOptions::default() });
    assert_eq!(failure(&o).got, "NIC 0: something it does not do");
}

#[test]
fn a_model_only_step_is_skipped_and_reported_and_the_scenario_runs_on() {
    let text =
        "name: t\nabout: x.\nnics: 1\nsteps:\n  - wait: 1s\n  - inspect: {nic: 0, dma_mappings: 0}\n  - wait: 2s\n";
    let s = scenario(text);
    assert_eq!(skip_reason(&s, &Fake::default()), None);
    let o = run_scenario(&s, &Fake::default(), &RunOptions::default());
    assert_eq!(o.verdict, Verdict::Pass, "{o:#?}");
    assert_eq!(o.steps.len(), 3);
    let skipped: Vec<_> = o.skipped_steps().map(|s| (s.number.as_str(), s.line, s.skipped.as_deref())).collect();
    assert_eq!(skipped, [("2", 6, Some("`inspect` needs inspect, which the fake target lacks"))]);
    assert_eq!(o.target_time, Duration::from_secs(3), "the steps after it ran");
    // The listing says the same before anything runs.
    let listed = bnxt_rig::cli::list::on_target(&[&s], &Fake::default());
    let row: Vec<&str> = listed.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row, ["t", "yes", "test.yaml"], "{listed}");
    assert!(
        listed.contains("    skips step 2 (line 6): inspect: {nic: 0, dma_mappings: 0}  (needs inspect, which the fake target lacks)"),
        "{listed}"
    );
    assert!(listed.ends_with("on fake: 1 of 1 scenarios run (1 of them with steps skipped), 0 do not\n"), "{listed}");
    // Where the target can look inside, the step runs (and can fail).
    let o = run_on_model(text);
    assert_eq!(o.verdict, Verdict::Pass);
    assert_eq!(o.skipped_steps().count(), 0);
    let o = run_on_model(&text.replace("dma_mappings: 0", "dma_mappings: 1"));
    assert_eq!(failure(&o).step.as_ref().unwrap().number, "2");
}

#[test]
fn a_machine_state_the_scenario_assumes_skips_it_where_the_machine_differs() {
    let s = scenario(PLAIN);
    let a = s.assumptions();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].to_string(), "relaxed ordering on at NIC 0 while the driver does not hold it (line 7)");
    let o = run_scenario(&s, &Fake { relaxed_off: true, ..Fake::default() }, &RunOptions::default());
    let why = "assumes relaxed ordering on at NIC 0 while the driver does not hold it (line 7); the fake target's \
               NIC 0 has it off";
    assert_eq!(o.verdict, Verdict::Skip(why.into()));
    // A check while the driver holds the NIC is the driver's doing, not an assumption; one after
    // a close is (close gives back the state it found).
    let held = scenario(
        "name: t\nabout: x.\nnics: 2\nsteps:\n  - open: {nic: 0, as: a}\n  - config: {nic: a, relaxed_ordering: off}\n  - close: a\n  - config: {nic: 1, relaxed_ordering: off}\n  - config: {nic: a, relaxed_ordering: on}\n",
    );
    let nics: Vec<(usize, bool, u64)> =
        held.assumptions().iter().map(|a| (a.nic, a.relaxed_ordering, a.line)).collect();
    assert_eq!(nics, [(1, false, 8), (0, true, 9)]);
}

#[test]
fn the_command_timeout_is_the_scenarios_else_the_options_else_short_on_a_real_clock() {
    let plain = scenario(PLAIN);
    let own = scenario(&PLAIN.replace("nics: 1\n", "nics: 1\ncommand_timeout: 5s\n"));
    let given = RunOptions { command_timeout: Some(Duration::from_millis(700)), ..RunOptions::default() };
    let on = |s: &Scenario, t: &dyn Target, o: &RunOptions| run_scenario(s, t, o).command_timeout;
    assert_eq!(on(&plain, &Fake::default(), &RunOptions::default()), Some(Duration::from_secs(2)));
    assert_eq!(on(&plain, &Fake::default(), &given), Some(Duration::from_millis(700)));
    assert_eq!(on(&own, &Fake::default(), &given), Some(Duration::from_secs(5)));
    assert_eq!(on(&plain, &ModelTarget, &RunOptions::default()), None, "the firmware's own on a virtual clock");
    assert_eq!(on(&own, &ModelTarget, &RunOptions::default()), Some(Duration::from_secs(5)));
    // And the driver is opened with it: a RoCE command never answered fails after it.
    let text = "name: t\nabout: x.\nnics: 1\ncommand_timeout: 1500ms\nfaults:\n  - firmware: {nic: 0, request: CREATE_QP, action: no-response, nth: 1}\nsteps:\n  - open: {nic: 0, as: a}\n  - qp: {on: a, as: q}\n    expect: {error: \"CREATE_QP: no answer from the firmware within 1500 ms\", takes_at_least: 1500ms, takes_at_most: 1600ms}\n";
    assert_eq!(run_on_model(text).verdict, Verdict::Pass);
}

#[test]
fn an_upper_bound_on_a_steps_time_is_checked_only_on_a_virtual_clock() {
    let text =
        "name: t\nabout: x.\nnics: 1\nsteps:\n  - wait: 5s\n    expect: {takes_at_least: 2s, takes_at_most: 3s}\n";
    let o = run_scenario(&scenario(text), &Fake::default(), &RunOptions::default());
    assert_eq!(o.verdict, Verdict::Pass, "{o:#?}");
    assert_eq!(o.steps[0].note.as_deref(), Some("takes_at_most 3s not checked on a real clock"));
    assert_eq!(failure(&run_on_model(text)).expected, "takes at most 3s");
    // The lower bound holds on every clock.
    let short = text.replace("takes_at_least: 2s, takes_at_most: 3s", "takes_at_least: 6s, takes_at_most: 7s");
    let o = run_scenario(&scenario(&short), &Fake::default(), &RunOptions::default());
    assert_eq!(failure(&o).expected, "takes at least 6s");
}
