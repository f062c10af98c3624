//! Typed reading of a positioned YAML tree. Every error names the field (`steps[2].open.nic`) and
//! the position of the offending node, and an unknown key comes with the closest valid one.

use std::time::Duration;

use super::node::{Entry, Node, Pos, Value, quote_short};
use crate::suggest::closest;

/// What was wrong with a scenario file, where, and in which field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct DecodeError {
    /// Where the offending node (or key) starts.
    pub at: Pos,
    /// The field's path from the top of the file (`steps[2].open.nic`); empty for the file itself.
    pub field: String,
    /// What was wrong.
    pub problem: Problem,
}

/// What was wrong with a value or a key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Problem {
    /// The file is not well-formed YAML.
    #[error("not valid YAML: {0}")]
    Syntax(String),
    /// A key the language does not have here.
    #[error("unknown key `{key}`{}; valid keys here: {}", did_you_mean(.suggestion), .valid.join(", "))]
    UnknownKey {
        /// The key as written.
        key: String,
        /// The closest valid key, if one is close.
        suggestion: Option<String>,
        /// Every valid key here.
        valid: Vec<String>,
    },
    /// A key that must be present is not.
    #[error("missing key `{key}`")]
    MissingKey {
        /// The key.
        key: String,
    },
    /// A value of the wrong kind.
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// What the field takes.
        expected: String,
        /// What was there.
        found: String,
    },
    /// A value of the right kind that is still not acceptable.
    #[error("{value} is not {expected}: {reason}")]
    Invalid {
        /// The value, quoted.
        value: String,
        /// What the field takes.
        expected: String,
        /// Why not.
        reason: String,
    },
    /// A name that is not one of a known set (HWRM request, error code, target, step).
    #[error("unknown {what} `{name}`{}", did_you_mean(.suggestion))]
    UnknownName {
        /// What kind of name.
        what: String,
        /// The name as written.
        name: String,
        /// The closest known name, if one is close.
        suggestion: Option<String>,
    },
    /// A list, mapping or text that must not be empty is.
    #[error("{what} is empty")]
    Empty {
        /// What is empty.
        what: String,
    },
    /// A step with no step keyword.
    #[error("a step needs one of: {}", .valid.join(", "))]
    NoStep {
        /// The step keywords.
        valid: Vec<String>,
    },
    /// Two keys that exclude each other, or a key that only goes with another value.
    #[error("{0}")]
    Conflict(String),
    /// A step names an alias that no earlier `open` defined.
    #[error("`{alias}` is not defined: no earlier `open` has `as: {alias}`")]
    UndefinedAlias {
        /// The alias.
        alias: String,
    },
    /// A step uses an alias whose NIC was closed (only a second `close` may).
    #[error("`{alias}` was closed at line {closed_at}; only another `close` may name it now")]
    AliasClosed {
        /// The alias.
        alias: String,
        /// Line of the `close` step.
        closed_at: u64,
    },
    /// A step uses an alias whose `open` is expected to fail.
    #[error("`{alias}` names no NIC: its `open` at line {line} is expected to fail")]
    AliasNeverOpened {
        /// The alias.
        alias: String,
        /// Line of the `open` step.
        line: u64,
    },
    /// An `open` reuses an alias that still names an open NIC.
    #[error("`{alias}` already names the NIC opened at line {opened_at}; close it first or choose another name")]
    AliasInUse {
        /// The alias.
        alias: String,
        /// Line of the earlier `open`.
        opened_at: u64,
    },
    /// A NIC index beyond the scenario's `nics`.
    #[error("NIC {nic} does not exist: the scenario has {nics} NIC(s), numbered from 0")]
    NicOutOfRange {
        /// The index.
        nic: u64,
        /// The scenario's NIC count.
        nics: usize,
    },
    /// `expect: {error: ...}` on a step that cannot fail.
    #[error("`{step}` cannot fail, so it cannot expect an error (only `open` can)")]
    ExpectErrorOnInfallible {
        /// The step's name.
        step: String,
    },
    /// A name that already names something live.
    #[error("`{name}` already names {what} (line {line}); choose another name")]
    NameInUse {
        /// The name.
        name: String,
        /// What it names (`an open NIC`, `a region`).
        what: String,
        /// Line of the step that gave it.
        line: u64,
    },
    /// A name of the wrong kind of thing.
    #[error("`{name}` names {is}, not {expected}")]
    WrongKind {
        /// The name.
        name: String,
        /// What the step needs (`a queue pair`).
        expected: String,
        /// What it names (`a region`).
        is: String,
    },
    /// A region or queue pair that is gone.
    #[error("`{name}` is gone: {how} at line {line}")]
    Gone {
        /// The name.
        name: String,
        /// How it went (`deregistered`, `destroyed`, `its NIC was closed`).
        how: String,
        /// Line of the step that made it go.
        line: u64,
    },
    /// Repeats multiply to more step runs than a scenario may have.
    #[error("the steps would run {runs} times (repeats multiplied out); at most {max} are allowed")]
    TooManyRuns {
        /// Step runs after multiplying out repeats (saturating).
        runs: u64,
        /// The limit.
        max: u64,
    },
    /// Two scenario files share a name.
    #[error("scenario name `{name}` is also used by {other}")]
    DuplicateName {
        /// The name.
        name: String,
        /// The other file.
        other: String,
    },
}

fn did_you_mean(s: &Option<String>) -> String {
    match s {
        Some(s) => format!(" (did you mean `{s}`?)"),
        None => String::new(),
    }
}

/// One field's value and its path.
#[derive(Debug, Clone)]
pub struct Field<'a> {
    /// The node.
    pub node: &'a Node,
    path: String,
}

impl<'a> Field<'a> {
    /// A field for `node` at `path` (the top of a file is at the empty path).
    pub fn root(node: &'a Node, path: &str) -> Field<'a> {
        Field { node, path: path.to_string() }
    }

    /// The field's path (`steps[2].open.nic`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// An error at this field.
    pub fn error(&self, problem: Problem) -> DecodeError {
        DecodeError { at: self.node.at, field: self.path.clone(), problem }
    }

    /// A wrong-type error at this field.
    pub fn wrong_type(&self, expected: &str) -> DecodeError {
        self.error(Problem::WrongType { expected: expected.into(), found: self.node.value.describe() })
    }

    /// An invalid-value error at this field.
    pub fn invalid(&self, expected: &str, reason: impl Into<String>) -> DecodeError {
        let value = match &self.node.value {
            Value::Str(s) => quote_short(s),
            Value::Int(i) => i.to_string(),
            other => other.describe(),
        };
        self.error(Problem::Invalid { value, expected: expected.into(), reason: reason.into() })
    }

    /// The value as a string (`expected` says what the string should be, for the error).
    pub fn string(&self, expected: &str) -> Result<&'a str, DecodeError> {
        match &self.node.value {
            Value::Str(s) => Ok(s),
            _ => Err(self.wrong_type(expected)),
        }
    }

    /// The value as an integer in `lo..=hi`.
    pub fn int(&self, expected: &str, lo: u64, hi: u64) -> Result<u64, DecodeError> {
        match self.node.value {
            Value::Int(i) if i >= i128::from(lo) && i <= i128::from(hi) => Ok(i as u64),
            Value::Int(_) => Err(self.invalid(expected, format!("must be from {lo} to {hi}"))),
            Value::Float(_) => Err(self.invalid(expected, format!("must be a whole number from {lo} to {hi}"))),
            _ => Err(self.wrong_type(expected)),
        }
    }

    /// The value as a switch: `on`/`off` (also `true`/`false`).
    pub fn switch(&self) -> Result<bool, DecodeError> {
        const EXPECTED: &str = "on or off";
        match &self.node.value {
            Value::Bool(b) => Ok(*b),
            Value::Str(s) => match s.to_ascii_lowercase().as_str() {
                "on" | "true" | "yes" => Ok(true),
                "off" | "false" | "no" => Ok(false),
                _ => Err(self.wrong_type(EXPECTED)),
            },
            _ => Err(self.wrong_type(EXPECTED)),
        }
    }

    /// The value as a list, each item a field (`steps[3]`).
    pub fn list(&self, expected: &str) -> Result<Vec<Field<'a>>, DecodeError> {
        match &self.node.value {
            Value::Seq(items) => Ok(items
                .iter()
                .enumerate()
                .map(|(i, node)| Field { node, path: format!("{}[{i}]", self.path) })
                .collect()),
            _ => Err(self.wrong_type(expected)),
        }
    }

    /// The value as a duration (`300ms`, `2s`, `1.5s`, `1m`).
    pub fn duration(&self) -> Result<Duration, DecodeError> {
        const EXPECTED: &str = "a duration such as 300ms, 2s or 1.5s";
        match &self.node.value {
            Value::Str(s) => {
                crate::scenario::values::parse_duration(s).map_err(|reason| self.invalid(EXPECTED, reason))
            }
            Value::Int(_) | Value::Float(_) => {
                Err(self.invalid(EXPECTED, "a duration needs a unit (ns, us, ms, s, m or h)"))
            }
            _ => Err(self.wrong_type(EXPECTED)),
        }
    }

    /// The value as a size in bytes: a whole number (`4096`) or a number with a binary suffix
    /// (`4KiB`, `2MiB`, `1GiB`), from `lo` to `hi` bytes.
    pub fn size(&self, lo: u64, hi: u64) -> Result<u64, DecodeError> {
        const EXPECTED: &str = "a size such as 4096, 64KiB or 2MiB";
        let bytes = match &self.node.value {
            Value::Int(i) if *i >= 0 => u64::try_from(*i).map_err(|_| self.invalid(EXPECTED, "too large"))?,
            Value::Int(_) => return Err(self.invalid(EXPECTED, "a size is not negative")),
            Value::Str(s) => crate::scenario::values::parse_size(s).map_err(|reason| self.invalid(EXPECTED, reason))?,
            Value::Float(_) => return Err(self.invalid(EXPECTED, "a size is a whole number of bytes")),
            _ => return Err(self.wrong_type(EXPECTED)),
        };
        if bytes < lo || bytes > hi {
            use crate::scenario::values::format_size;
            return Err(self.invalid(EXPECTED, format!("must be from {} to {}", format_size(lo), format_size(hi))));
        }
        Ok(bytes)
    }

    /// The value as a probability: a number from 0 to 1.
    pub fn probability(&self) -> Result<f64, DecodeError> {
        const EXPECTED: &str = "a probability from 0 to 1";
        let p = match self.node.value {
            Value::Float(x) => x,
            Value::Int(i) => i as f64,
            _ => return Err(self.wrong_type(EXPECTED)),
        };
        if !(0.0..=1.0).contains(&p) {
            return Err(self.invalid(EXPECTED, "must be from 0 to 1"));
        }
        Ok(p)
    }

    /// Read this field as a mapping whose keys must be among `valid`.
    pub fn map(&self, valid: &'static [&'static str]) -> Result<MapReader<'a>, DecodeError> {
        MapReader::new(self.node, self.path.clone(), valid)
    }
}

fn join(path: &str, key: &str) -> String {
    match (path.is_empty(), key.is_empty()) {
        (_, true) => path.to_string(),
        (true, false) => key.to_string(),
        (false, false) => format!("{path}.{key}"),
    }
}

/// A mapping whose keys were checked against the valid ones, read key by key.
#[derive(Debug)]
pub struct MapReader<'a> {
    node: &'a Node,
    entries: &'a [Entry],
    path: String,
}

impl<'a> MapReader<'a> {
    /// Check that `node` is a mapping whose keys are all in `valid` (an unknown key is an error
    /// that suggests the closest valid one).
    pub fn new(node: &'a Node, path: String, valid: &'static [&'static str]) -> Result<MapReader<'a>, DecodeError> {
        let Value::Map(entries) = &node.value else {
            let expected = format!("a mapping with keys {}", valid.join(", "));
            return Err(DecodeError {
                at: node.at,
                field: path,
                problem: Problem::WrongType { expected, found: node.value.describe() },
            });
        };
        if let Some(bad) = entries.iter().find(|e| !valid.contains(&e.key.as_str())) {
            return Err(DecodeError {
                at: bad.key_at,
                field: join(&path, &bad.key),
                problem: Problem::UnknownKey {
                    key: bad.key.clone(),
                    suggestion: closest(&bad.key, valid.iter().copied()).map(str::to_string),
                    valid: valid.iter().map(|s| s.to_string()).collect(),
                },
            });
        }
        Ok(MapReader { node, entries, path })
    }

    /// The mapping's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Where the mapping starts.
    pub fn at(&self) -> Pos {
        self.node.at
    }

    /// The keys present, in file order.
    pub fn keys(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.entries.iter().map(|e| e.key.as_str())
    }

    /// Key `key`, if present.
    pub fn optional(&self, key: &str) -> Option<Field<'a>> {
        self.entries.iter().find(|e| e.key == key).map(|e| Field { node: &e.value, path: join(&self.path, key) })
    }

    /// Key `key`, which must be present.
    pub fn required(&self, key: &str) -> Result<Field<'a>, DecodeError> {
        self.optional(key).ok_or_else(|| DecodeError {
            at: self.node.at,
            field: self.path.clone(),
            problem: Problem::MissingKey { key: key.to_string() },
        })
    }

    /// An error about the mapping as a whole.
    pub fn error(&self, problem: Problem) -> DecodeError {
        DecodeError { at: self.node.at, field: self.path.clone(), problem }
    }
}

#[cfg(test)]
mod tests {
    use super::super::node::parse;
    use super::*;

    #[test]
    fn an_unknown_key_names_the_closest_valid_one_and_its_position() {
        let root = parse("open: {nic: 0, ass: a}\n").unwrap();
        let top = Field::root(&root, "steps[0]").map(&["open", "close"]).unwrap();
        let open = top.required("open").unwrap();
        let e = open.map(&["nic", "as"]).unwrap_err();
        assert_eq!(e.field, "steps[0].open.ass");
        assert_eq!(e.at, Pos { line: 1, column: 16 });
        assert!(matches!(&e.problem, Problem::UnknownKey { suggestion: Some(s), .. } if s == "as"), "{e}");
        assert!(e.to_string().contains("did you mean `as`?"), "{e}");
    }

    #[test]
    fn missing_keys_and_wrong_types_name_the_field() {
        let root = parse("nic: zero\n").unwrap();
        let m = Field::root(&root, "steps[1].open").map(&["nic", "as"]).unwrap();
        let e = m.required("as").unwrap_err();
        assert_eq!(e.field, "steps[1].open");
        assert_eq!(e.problem, Problem::MissingKey { key: "as".into() });
        let e = m.required("nic").unwrap().int("a NIC index", 0, 63).unwrap_err();
        assert_eq!(e.field, "steps[1].open.nic");
        assert_eq!(e.at, Pos { line: 1, column: 6 });
        assert!(e.to_string().contains("expected a NIC index, found a string (\"zero\")"), "{e}");
    }

    #[test]
    fn switches_take_on_off_and_booleans_only() {
        let root = parse("a: on\nb: off\nc: true\nd: maybe\ne: 1\n").unwrap();
        let m = Field::root(&root, "").map(&["a", "b", "c", "d", "e"]).unwrap();
        assert!(m.required("a").unwrap().switch().unwrap());
        assert!(!m.required("b").unwrap().switch().unwrap());
        assert!(m.required("c").unwrap().switch().unwrap());
        assert!(m.required("d").unwrap().switch().is_err());
        assert!(m.required("e").unwrap().switch().is_err());
    }

    #[test]
    fn integers_out_of_range_are_invalid_not_truncated() {
        let root = parse("n: 99999999999999999999\nm: -1\n").unwrap();
        let m = Field::root(&root, "").map(&["n", "m"]).unwrap();
        assert!(matches!(m.required("n").unwrap().int("a count", 1, 64).unwrap_err().problem, Problem::Invalid { .. }));
        assert!(matches!(m.required("m").unwrap().int("a count", 1, 64).unwrap_err().problem, Problem::Invalid { .. }));
    }
}
