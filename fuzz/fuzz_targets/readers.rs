//! The readers `diff` and `replay` use: transcripts (`Transcript::parse`), run records (JSON),
//! and the pcap reader of the vfio-user target (the servers' capture files it merges). Input: which reader, and its bytes.
//! Invariants: no panic; a transcript that parses prints back to text that parses to the same
//! transcript, and `diff` of it with itself finds no difference (exact, masked, whole or by source); a run record that parses
//! serialises and parses back to itself.
#![no_main]

use arbitrary::Arbitrary;
use bnxt_rig::run::record::RunRecord;
use bnxt_rig::target::vfio_user::read_capture;
use bnxt_rig::transcript::Transcript;
use bnxt_rig::transcript::diff::{DiffOptions, diff};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
enum Input {
    Transcript(String),
    Pcap(Vec<u8>),
    Record(Vec<u8>),
}

fuzz_target!(|input: Input| {
    match input {
        Input::Transcript(text) => {
            if let Ok(t) = Transcript::parse(&text) {
                let again = Transcript::parse(&t.to_text()).expect("a printed transcript parses");
                assert_eq!(again.to_text(), t.to_text(), "printing is stable");
                for (exact, by_source) in [(false, false), (true, false), (false, true), (true, true)] {
                    let d = diff(&t, &again, DiffOptions { all: true, exact, context: 2, by_source });
                    assert!(d.same(), "a transcript differs from itself: {}", d.text);
                }
            }
        }
        Input::Pcap(bytes) => {
            if let Ok(frames) = read_capture(&bytes) {
                assert!(frames.iter().map(|(_, f)| f.len()).sum::<usize>() <= bytes.len(), "no more bytes than read");
            }
        }
        Input::Record(bytes) => {
            if let Ok(r) = serde_json::from_slice::<RunRecord>(&bytes) {
                let text = serde_json::to_string(&r).unwrap();
                assert_eq!(serde_json::from_str::<RunRecord>(&text).unwrap(), r);
            }
        }
    }
});
