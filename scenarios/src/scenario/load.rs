//! Finding scenario files and loading them: read, parse, decode, check. Every problem names the
//! file, and (for what is in it) the line, column and field.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::Scenario;
use super::check::check;
use super::matrix::expand;
use super::validate::validate;
use crate::yaml::{self, DecodeError, NodeDeserializer, Pos, Problem};

/// The largest scenario file read.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Why a scenario file (or a path given to look for them in) could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A path could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A folder holds no scenario files.
    #[error("{}: no scenario files (*.yaml, *.yml) in this folder", path.display())]
    NoScenarios {
        /// The folder.
        path: PathBuf,
    },
    /// A file is larger than a scenario can be.
    #[error("{}: {len} bytes is larger than a scenario file may be ({MAX_FILE_BYTES} bytes)", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: u64,
    },
    /// A file is not UTF-8 text.
    #[error("{}: not UTF-8 text", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// Something in a file is wrong.
    #[error("{0}")]
    Scenario(Box<ScenarioError>),
}

/// A problem inside a scenario file, with the file's path.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    /// The file.
    pub file: PathBuf,
    /// The problem, its position and field.
    pub error: DecodeError,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Pos { line, column } = self.error.at;
        write!(f, "{}:{line}:{column}: ", self.file.display())?;
        if !self.error.field.is_empty() {
            write!(f, "{}: ", self.error.field)?;
        }
        write!(f, "{}", self.error.problem)
    }
}

impl std::error::Error for ScenarioError {}

/// Scenarios loaded from some paths, and what could not be loaded.
#[derive(Debug, Default)]
pub struct Suite {
    /// The scenarios that loaded and passed the checks, in path order.
    pub scenarios: Vec<Scenario>,
    /// Every problem found.
    pub errors: Vec<LoadError>,
}

/// Load every scenario file at `paths` (files, or folders searched recursively for `*.yaml` and
/// `*.yml`; hidden entries are skipped). Names must be unique across all of them.
pub fn load_paths(paths: &[PathBuf]) -> Suite {
    let mut suite = Suite::default();
    let mut files = Vec::new();
    for path in paths {
        match scenario_files(path) {
            Ok(found) if found.is_empty() => suite.errors.push(LoadError::NoScenarios { path: path.clone() }),
            Ok(found) => files.extend(found),
            Err(e) => suite.errors.push(e),
        }
    }
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone())));

    let mut names: HashMap<String, PathBuf> = HashMap::new();
    for file in files {
        let loaded = match load_file(&file) {
            Ok(scenarios) => scenarios,
            Err(errors) => {
                suite.errors.extend(errors);
                continue;
            }
        };
        for scenario in loaded {
            if let Some(other) = names.get(&scenario.name) {
                suite.errors.push(LoadError::Scenario(Box::new(ScenarioError {
                    file: file.clone(),
                    error: DecodeError {
                        at: name_position(&file),
                        field: "name".into(),
                        problem: Problem::DuplicateName {
                            name: scenario.name.clone(),
                            other: other.display().to_string(),
                        },
                    },
                })));
                continue;
            }
            names.insert(scenario.name.clone(), file.clone());
            suite.scenarios.push(scenario);
        }
    }
    suite
}

/// Where `name:` is in a file that already loaded once.
fn name_position(file: &Path) -> Pos {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| yaml::node::parse(&text).ok())
        .and_then(|root| match root.value {
            yaml::Value::Map(entries) => entries.into_iter().find(|e| e.key == "name").map(|e| e.value.at),
            _ => None,
        })
        .unwrap_or_default()
}

/// The scenario files at `path`: the file itself, or the `*.yaml`/`*.yml` files under a folder,
/// sorted. Symbolic links to folders are not followed (no cycles).
pub fn scenario_files(path: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let meta = std::fs::metadata(path).map_err(|source| LoadError::Io { path: path.to_path_buf(), source })?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut found = Vec::new();
    walk(path, &mut found)?;
    found.sort();
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let io = |source| LoadError::Io { path: dir.to_path_buf(), source };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let kind = entry.file_type().map_err(io)?;
        if kind.is_dir() {
            walk(&path, found)?;
        } else if is_scenario_file(&path) && std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            found.push(path);
        }
    }
    Ok(())
}

/// Whether a path names a scenario file by its extension.
pub fn is_scenario_file(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
}

/// Load one scenario file: every problem it has, or its scenarios (one, or a matrix's variants).
pub fn load_file(path: &Path) -> Result<Vec<Scenario>, Vec<LoadError>> {
    let meta = std::fs::metadata(path).map_err(|source| vec![LoadError::Io { path: path.to_path_buf(), source }])?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(vec![LoadError::TooLarge { path: path.to_path_buf(), len: meta.len() }]);
    }
    let bytes = std::fs::read(path).map_err(|source| vec![LoadError::Io { path: path.to_path_buf(), source }])?;
    let text = String::from_utf8(bytes).map_err(|_| vec![LoadError::NotText { path: path.to_path_buf() }])?;
    load_str(path, &text).map_err(|errors| errors.into_iter().map(|e| LoadError::Scenario(Box::new(e))).collect())
}

/// Load the scenarios of `text` (one, or a matrix's variants), naming `path` in errors.
pub fn load_str(path: &Path, text: &str) -> Result<Vec<Scenario>, Vec<ScenarioError>> {
    let wrap = |error: DecodeError| ScenarioError { file: path.to_path_buf(), error };
    let root = yaml::node::parse(text)
        .map_err(|e| vec![wrap(DecodeError { at: e.at, field: String::new(), problem: Problem::Syntax(e.message) })])?;
    let variants = expand(&root).map_err(|e| vec![wrap(e)])?;
    let mut scenarios = Vec::new();
    let mut problems = Vec::new();
    for variant in variants {
        let label = variant.label();
        // A variant's problems say which variant they are in.
        let in_variant = |mut e: DecodeError| {
            if !label.is_empty() {
                e.field = format!("[{label}] {}", e.field).trim_end().to_string();
            }
            wrap(e)
        };
        match Scenario::deserialize(NodeDeserializer::new(&variant.root, "")) {
            Ok(mut scenario) => {
                scenario.file = path.to_path_buf();
                let mut found = validate(&scenario);
                found.extend(check(&scenario));
                if found.is_empty() {
                    scenario.variant = (!label.is_empty()).then_some(label);
                    scenarios.push(scenario);
                } else {
                    problems.extend(found.into_iter().map(in_variant));
                }
            }
            Err(e) => problems.push(in_variant(e)),
        }
        // A mistake outside `${...}` is in every variant: stop after a few.
        if problems.len() >= 10 {
            break;
        }
    }
    if problems.is_empty() { Ok(scenarios) } else { Err(problems) }
}
