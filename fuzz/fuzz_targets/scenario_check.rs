//! Scenario YAML through `check`: the text is parsed, decoded and checked as `bnxt-rig check`
//! does. Invariants: no panic; every problem of loading names a line inside the text, lines
//! counted as YAML counts them (or the file as a whole, line 0); every problem, of loading or of
//! checking, says something.
#![no_main]

use std::path::Path;

use bnxt_rig::scenario::check::check;
use bnxt_rig::scenario::load::load_str;
use libfuzzer_sys::fuzz_target;

/// The last line a position in `text` can name: YAML counts lines by their breaks (YAML 1.2
/// §5.4: CR LF, a lone CR and LF each end one, as editors show them), and the position just past
/// the end is on the line after the last break.
fn last_line(text: &str) -> usize {
    text.replace("\r\n", "\n").chars().filter(|&c| c == '\n' || c == '\r').count() + 1
}

fuzz_target!(|text: &str| {
    let lines = last_line(text);
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
                assert!(
                    at.line <= lines as u64,
                    "a problem at line {} of a text whose last line is {lines}: {e}",
                    at.line
                );
                assert!(!e.to_string().is_empty());
            }
        }
    }
});
