//! The guest traces kept in fixtures/trace (recorded by the bnxt-qemu-trace plugin during
//! `ci/guest-test.sh --trace`): they read as transcripts, and `bnxt-rig diff` of the trixie
//! 6.12 trace against the sid 7.x one prints the difference kept beside them.

use std::path::{Path, PathBuf};
use std::process::Command;

use bnxt_rig::transcript::{Source, Transcript};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn trace(name: &str) -> Transcript {
    let path = repo().join("fixtures/trace").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Transcript::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn guest_traces_read_as_transcripts_with_every_request_answered() {
    for name in ["trixie.transcript", "sid.transcript"] {
        let t = trace(name);
        assert!(t.header.contains(&("target".into(), "guest".into())), "{name}: {:?}", t.header);
        assert!(t.header.iter().any(|(k, v)| k == "kernel" && v != "unknown"), "{name} names its kernel");
        for nic in 0..2 {
            let count = |event: &str| {
                t.lines.iter().filter(|l| l.source == Source::Driver(nic) && l.text.starts_with(event)).count()
            };
            let requests = count("hwrm-request ");
            assert!(requests > 100, "{name}: drv{nic} made {requests} requests");
            assert_eq!(count("hwrm-answer "), requests, "{name}: drv{nic}: a request without its answer");
            assert!(count("doorbell ") > 100, "{name}: drv{nic} rang its doorbells");
            assert!(count("msix entry=") > 0, "{name}: drv{nic} set its MSI-X table up");
        }
    }
}

#[test]
fn the_kept_difference_of_the_two_kernels_is_what_diff_prints() {
    let out = Command::new(env!("CARGO_BIN_EXE_bnxt-rig"))
        .args(["diff", "fixtures/trace/trixie.transcript", "fixtures/trace/sid.transcript"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "the kernels differ");
    let kept = std::fs::read_to_string(repo().join("fixtures/trace/trixie-vs-sid.diff")).unwrap();
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(printed == kept, "bnxt-rig diff no longer prints fixtures/trace/trixie-vs-sid.diff:\n{printed}");
    // What 7.x's bnxt_en asks and 6.12's does not, on both functions.
    for nic in ["== drv0 ==", "== drv1 =="] {
        assert!(printed.contains(nic), "{nic}");
    }
    let added = |what: &str| printed.lines().any(|l| l.starts_with("+ ") && l.contains(what));
    assert!(added("drv0   hwrm-request PORT_MAC_QCAPS") && added("drv1   hwrm-request PORT_MAC_QCAPS"));
}
