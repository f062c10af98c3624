//! Outputs never write through a link placed at their path: in a folder another user can write
//! to, a symbolic or hard link at `--junit`, `--json`, `--record`, `schema -o`, a
//! `--transcript`/`--pcap` folder's files (and `bnxt-model serve`'s, in model-host's
//! tests/vfio_user_hostile.rs), aimed at a file of the user's, would otherwise have that file overwritten. Each output replaces the link
//! instead, and the file it pointed at keeps its bytes.

use std::path::{Path, PathBuf};
use std::process::Command;

const PASSES: &str = "name: passes\nabout: x.\nnics: 2\nsteps:\n  - open: {nic: 0, as: a}\n  - open: {nic: 1, as: b}\n  - region: {on: a, as: src, bytes: 4KiB, fill: random}\n  - region: {on: b, as: dst, bytes: 4KiB}\n  - qp: {on: a, as: qa}\n  - qp: {on: b, as: qb}\n  - connect: {qp: qa, peer: qb}\n  - receive: {qp: qb, region: dst, bytes: 4KiB}\n  - send: {qp: qa, region: src, bytes: 4KiB}\n  - complete: {qp: qb, side: receive, bytes: 4KiB}\n";

/// A file of the user's that links are aimed at, and the links.
struct Trap {
    dir: tempfile::TempDir,
    victim: PathBuf,
}

const PRECIOUS: &[u8] = b"the user's own file\n";

impl Trap {
    fn new() -> Trap {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, PRECIOUS).unwrap();
        Trap { dir, victim }
    }

    /// A symbolic link at `name` (in the folder) aimed at the victim.
    fn soft(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::os::unix::fs::symlink(&self.victim, &path).unwrap();
        path
    }

    /// A hard link at `name` to the victim.
    fn hard(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::hard_link(&self.victim, &path).unwrap();
        path
    }

    /// The victim is untouched and `path` is now a file of its own holding something.
    fn check(&self, path: &Path) {
        let now = String::from_utf8_lossy(&std::fs::read(&self.victim).unwrap()).into_owned();
        assert_eq!(now.as_bytes(), PRECIOUS, "the victim was written through {}: {now}", path.display());
        let meta = std::fs::symlink_metadata(path).unwrap();
        assert!(meta.file_type().is_file(), "{} is a file now", path.display());
        assert!(meta.len() > 0 && std::fs::read(path).unwrap() != PRECIOUS, "{} holds the output", path.display());
    }
}

fn rig(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bnxt-rig"))
        .args(args)
        .current_dir(dir)
        .env("BNXT_RIG_RUNS", dir.join("runs"))
        .output()
        .unwrap();
    (out.status.code().unwrap(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_runner_reports_transcripts_pcaps_records_and_schema_replace_links_at_their_paths() {
    let t = Trap::new();
    let dir = t.dir.path();
    std::fs::write(dir.join("passes.yaml"), PASSES).unwrap();
    let junit = t.soft("report.xml");
    let json = t.hard("report.json");
    let record = t.soft("record.json");
    let transcript = t.soft("out/passes.transcript");
    let svg = t.hard("passes.svg");
    std::fs::rename(&svg, dir.join("out/passes.svg")).unwrap();
    let pcap = t.soft("caps/passes.pcap");
    let (code, err) = rig(
        dir,
        &[
            "run",
            "passes.yaml",
            "--junit",
            "report.xml",
            "--json",
            "report.json",
            "--record",
            "record.json",
            "--transcript",
            "out",
            "--pcap",
            "caps",
        ],
    );
    assert_eq!(code, 0, "{err}");
    for path in [junit, json, record, transcript, dir.join("out/passes.svg"), pcap] {
        t.check(&path);
    }
    let schema = t.soft("schema.json");
    let (code, err) = rig(dir, &["schema", "-o", "schema.json"]);
    assert_eq!(code, 0, "{err}");
    t.check(&schema);
}
