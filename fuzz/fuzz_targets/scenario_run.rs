//! Scenario YAML through `run` on the in-process model, with small limits: a scenario that loads
//! and checks cleanly, with at most 4 MiB of regions and 2,000 steps to run, runs with a wall
//! limit of 2 s and every timeout on the virtual clock. Invariants: no panic escapes the runner
//! (a panic in a step is a verdict, not a crash), the run ends with a verdict, and memory stays
//! bounded (libFuzzer's -rss_limit_mb).
#![no_main]

use std::path::Path;
use std::time::Duration;

use bnxt_rig::run::{RunOptions, run_scenario};
use bnxt_rig::scenario::check::{check, step_runs};
use bnxt_rig::scenario::load::load_str;
use bnxt_rig::target::model::ModelTarget;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let Ok(scenarios) = load_str(Path::new("fuzz.yaml"), text) else { return };
    let options = RunOptions { wall_limit: Duration::from_secs(2), ..RunOptions::default() };
    for s in scenarios.iter().take(2) {
        if !check(s).is_empty() || s.region_bytes() > 4 << 20 || step_runs(&s.steps) > 2000 {
            continue;
        }
        let outcome = run_scenario(s, &ModelTarget, &options);
        let _ = outcome.verdict.label();
    }
});
