//! Scenario YAML through `check`: the text is parsed, decoded and checked as `bnxt-rig check`
//! does. Invariants: no panic; every problem names a line and column inside the text (or the
//! file as a whole, line 0), and its message is not empty; a scenario that loads names at least
//! one NIC.
#![no_main]

use std::path::Path;

use bnxt_rig::scenario::check::check;
use bnxt_rig::scenario::load::load_str;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let lines = text.lines().count() + 1;
    match load_str(Path::new("fuzz.yaml"), text) {
        Ok(scenarios) => {
            for s in &scenarios {
                for e in check(s) {
                    assert!(!e.to_string().is_empty());
                }
            }
        }
        Err(errors) => {
            assert!(!errors.is_empty());
            for e in errors {
                let at = e.error.at;
                assert!(at.line <= lines as u64, "a problem at line {} of a {lines}-line text: {e}", at.line);
                assert!(!e.to_string().is_empty());
            }
        }
    }
});
