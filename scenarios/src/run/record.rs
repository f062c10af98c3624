//! Run records: what `bnxt-rig run` ran, written so that `bnxt-rig replay` can run it again the
//! same way (the same files, target, seed and options), and say which files changed since.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The version of the record's format.
pub const VERSION: u32 = 1;

/// Where records go unless `--record` says otherwise: `$BNXT_RIG_RUNS`, else this folder under
/// the working directory.
pub const DEFAULT_DIR: &str = "target/bnxt-rig/runs";

/// The name of the copy of the newest record in the records' folder.
pub const LATEST: &str = "latest.json";

/// One run of the command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// [`VERSION`].
    pub version: u32,
    /// The working directory the paths are relative to.
    pub cwd: PathBuf,
    /// Scenario files and folders, as given.
    pub paths: Vec<PathBuf>,
    /// `--target`.
    pub target: String,
    /// `--seed`, if given.
    pub seed: Option<u64>,
    /// `--filter`, if given.
    pub filter: Option<String>,
    /// `--exact`.
    pub exact: bool,
    /// `--tag`.
    pub tags: Vec<String>,
    /// `--skip-tag`.
    pub skip_tags: Vec<String>,
    /// `--strict`.
    pub strict: bool,
    /// `--wall-limit`, in milliseconds.
    pub wall_limit_ms: u64,
    /// `--command-timeout`, in milliseconds (absent from records written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_timeout_ms: Option<u64>,
    /// Each scenario file read, with a checksum of its text then.
    pub files: Vec<FileSum>,
    /// Each scenario run, with its verdict.
    pub scenarios: Vec<RecordedScenario>,
}

/// A scenario file and the CRC-32 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSum {
    /// The file.
    pub path: PathBuf,
    /// CRC-32 (IEEE) of its bytes.
    pub crc32: u32,
}

/// A scenario of a recorded run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedScenario {
    /// Its name.
    pub name: String,
    /// The seed it ran with.
    pub seed: u64,
    /// PASS, FAIL, SKIP or TIMEOUT.
    pub verdict: String,
}

/// Why a record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not a run record this version reads.
    #[error("{}: not a bnxt-rig run record: {reason}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// Why not.
        reason: String,
    },
}

/// The CRC-32 of a file's bytes, if it can be read.
pub fn checksum(path: &Path) -> Option<u32> {
    std::fs::read(path).ok().map(|bytes| crc32fast::hash(&bytes))
}

/// The folder records go to by default.
pub fn default_dir() -> PathBuf {
    std::env::var_os("BNXT_RIG_RUNS").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

impl RunRecord {
    /// Write the record to `path` (making its folder).
    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        let io = |source| RecordError::Io { path: path.to_path_buf(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut text = serde_json::to_string_pretty(self).expect("a record serialises");
        text.push('\n');
        bnxt_output::write(path, text).map_err(io)
    }

    /// Write the record into `dir` under a new name and as [`LATEST`]; the new file's path.
    pub fn write_into(&self, dir: &Path) -> Result<PathBuf, RecordError> {
        let stamp =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
        let path = dir.join(format!("run-{stamp}-{}.json", std::process::id()));
        self.write(&path)?;
        self.write(&dir.join(LATEST))?;
        Ok(path)
    }

    /// Read the record `run` names: a file, or `latest` (the newest in the default folder).
    pub fn read(run: &str) -> Result<RunRecord, RecordError> {
        let path = if run == "latest" { default_dir().join(LATEST) } else { PathBuf::from(run) };
        let text = std::fs::read_to_string(&path).map_err(|source| RecordError::Io { path: path.clone(), source })?;
        let record: RunRecord = serde_json::from_str(&text)
            .map_err(|e| RecordError::Format { path: path.clone(), reason: e.to_string() })?;
        if record.version != VERSION {
            return Err(RecordError::Format {
                path,
                reason: format!("version {} (this is version {VERSION})", record.version),
            });
        }
        Ok(record)
    }

    /// The files whose bytes changed (or went) since the run, relative to the record's folder.
    pub fn changed_files(&self) -> Vec<PathBuf> {
        self.files
            .iter()
            .filter(|f| checksum(&self.cwd.join(&f.path)) != Some(f.crc32))
            .map(|f| f.path.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_sees_changed_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.yaml");
        std::fs::write(&file, "name: a\n").unwrap();
        let record = RunRecord {
            version: VERSION,
            cwd: dir.path().to_path_buf(),
            paths: vec!["a.yaml".into()],
            target: "model".into(),
            seed: Some(3),
            filter: None,
            exact: false,
            tags: vec![],
            skip_tags: vec![],
            strict: true,
            wall_limit_ms: 1000,
            command_timeout_ms: Some(2000),
            files: vec![FileSum { path: "a.yaml".into(), crc32: checksum(&file).unwrap() }],
            scenarios: vec![RecordedScenario { name: "a".into(), seed: 3, verdict: "FAIL".into() }],
        };
        let path = record.write_into(&dir.path().join("runs")).unwrap();
        let back = RunRecord::read(path.to_str().unwrap()).unwrap();
        assert_eq!(back, record);
        assert_eq!(RunRecord::read(dir.path().join("runs/latest.json").to_str().unwrap()).unwrap(), record);
        assert!(back.changed_files().is_empty());
        std::fs::write(&file, "name: b\n").unwrap();
        assert_eq!(back.changed_files(), vec![PathBuf::from("a.yaml")]);
        std::fs::write(dir.path().join("bad.json"), "{}").unwrap();
        assert!(
            RunRecord::read(dir.path().join("bad.json").to_str().unwrap())
                .unwrap_err()
                .to_string()
                .contains("not a bnxt-rig run record")
        );
    }
}
