//! The scenario suite as tests: each scenario of `scenarios/` (each matrix variant apart), on
//! each target it runs on, is one test named `TARGET::NAME`, so that `cargo nextest run` filters,
//! retries, shards (`--partition`) and reports (JUnit) scenarios like any other test, and
//! `cargo test` runs them too.
//!
//! Targets: `model`, or what `BNXT_RIG_TARGETS` lists (specs as `--target` takes them, separated
//! by `;`). A scenario that cannot run on a target (its `targets:`, `requires:`, `skip:`, its
//! faults or steps) is listed as ignored there. A failure's message is the console report of the
//! scenario, with the command that replays it. `BNXT_RIG_TRANSCRIPTS=DIR` writes every
//! scenario's transcript and ladder diagram into DIR.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use bnxt_rig::report::console::Console;
use bnxt_rig::run::outcome::Verdict;
use bnxt_rig::run::{RunOptions, SharedTarget, run_scenario, skip_reason};
use bnxt_rig::scenario::load_paths;
use bnxt_rig::target::from_spec;
use libtest_mimic::{Arguments, Failed, Trial};

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let suite = load_paths(&[root.to_path_buf()]);
    let mut trials = Vec::new();
    if !suite.errors.is_empty() {
        let errors: Vec<String> = suite.errors.iter().map(|e| e.to_string()).collect();
        trials.push(Trial::test("suite::loads", move || Err(Failed::from(errors.join("\n")))));
    }
    let specs = std::env::var("BNXT_RIG_TARGETS").unwrap_or_else(|_| "model".into());
    let transcripts = std::env::var_os("BNXT_RIG_TRANSCRIPTS").map(PathBuf::from);
    for spec in specs.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let target: SharedTarget = match from_spec(spec) {
            Ok(t) => Arc::from(t),
            Err(e) => {
                let message = format!("BNXT_RIG_TARGETS names `{spec}`: {e}");
                trials.push(Trial::test(format!("{spec}::target"), move || Err(Failed::from(message))));
                continue;
            }
        };
        for scenario in &suite.scenarios {
            let name = format!("{}::{}", target.kind(), scenario.name);
            if skip_reason(scenario, &*target).is_some() {
                trials.push(Trial::test(name, || Ok(())).with_ignored_flag(true));
                continue;
            }
            let (scenario, target) = (scenario.clone(), target.clone());
            let options = RunOptions { transcript: transcripts.clone(), ..RunOptions::default() };
            trials.push(Trial::test(name, move || {
                let outcome = run_scenario(&scenario, &*target, &options);
                let mut report = Vec::new();
                let _ = Console::new(&mut report, false, target.capabilities().virtual_time).scenario(&outcome);
                match outcome.verdict {
                    Verdict::Pass => Ok(()),
                    Verdict::Skip(reason) => {
                        // Skips are decided before running; one here is a change of mind worth seeing.
                        let _ = writeln!(std::io::stdout(), "skipped: {reason}");
                        Ok(())
                    }
                    Verdict::Fail(_) | Verdict::Timeout(_) => {
                        Err(Failed::from(String::from_utf8_lossy(&report).into_owned()))
                    }
                }
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit_code()
}
