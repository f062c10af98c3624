//! What can be wrong with a scenario file: [`DecodeError`] names where (line, column), the field
//! (`steps[2].open.nic`) and the [`Problem`]. It is also the error type of the scenario
//! deserializer ([`super::de`]): serde's own complaints (unknown key, missing key, wrong type,
//! unknown name) become problems with the closest valid name suggested, and the deserializer
//! fills in the position and field of the node it was reading.

use std::fmt;

use serde::de;

use super::node::{Node, Pos, Value, quote_short};
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
    /// Two keys that exclude each other, or a key that only goes with another value.
    #[error("{0}")]
    Conflict(String),
    /// A value its reader refused, said in the reader's words (a duration without a unit, a
    /// size out of range, an HWRM request that does not exist).
    #[error("{0}")]
    Value(String),
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

impl DecodeError {
    /// An error not yet placed: the deserializer gives it the position and field of the node it
    /// was reading when the error came up.
    pub fn unplaced(problem: Problem) -> DecodeError {
        DecodeError { at: Pos::default(), field: String::new(), problem }
    }

    /// Whether the error has its position already.
    pub fn is_placed(&self) -> bool {
        self.at != Pos::default()
    }

    /// Place the error at `node` (field `field`), unless it is placed already. A wrong type is
    /// said as the node shows it (`a list of 2`), which says more than serde's words for it.
    pub fn place(mut self, node: &Node, field: &str) -> DecodeError {
        if !self.is_placed() {
            self.at = node.at;
            self.field = field.to_string();
            if let Problem::WrongType { found, .. } = &mut self.problem {
                *found = node.value.describe();
            }
        }
        self
    }

    /// Place the error at a key of a mapping, unless it is placed already.
    pub fn place_at(mut self, at: Pos, field: &str) -> DecodeError {
        if !self.is_placed() {
            self.at = at;
            self.field = field.to_string();
        }
        self
    }
}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(msg: T) -> DecodeError {
        DecodeError::unplaced(Problem::Value(msg.to_string()))
    }

    fn invalid_type(unexpected: de::Unexpected<'_>, expected: &dyn de::Expected) -> DecodeError {
        DecodeError::unplaced(Problem::WrongType { expected: expected.to_string(), found: describe(&unexpected) })
    }

    fn invalid_value(unexpected: de::Unexpected<'_>, expected: &dyn de::Expected) -> DecodeError {
        DecodeError::unplaced(Problem::Value(format!("{} is not {expected}", describe(&unexpected))))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> DecodeError {
        // The deserializer names what kind of name it is (the enum's name).
        DecodeError::unplaced(Problem::UnknownName {
            what: String::new(),
            name: variant.to_string(),
            suggestion: closest(variant, expected.iter().copied()).map(str::to_string),
        })
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> DecodeError {
        DecodeError::unplaced(Problem::UnknownKey {
            key: field.to_string(),
            suggestion: closest(field, expected.iter().copied()).map(str::to_string),
            valid: expected.iter().map(|s| s.to_string()).collect(),
        })
    }

    fn missing_field(field: &'static str) -> DecodeError {
        DecodeError::unplaced(Problem::MissingKey { key: field.to_string() })
    }
}

/// A value as serde reports it, in the words [`Value::describe`] uses.
fn describe(unexpected: &de::Unexpected<'_>) -> String {
    use de::Unexpected as U;
    let value = match *unexpected {
        U::Bool(b) => Value::Bool(b),
        U::Unsigned(n) => Value::Int(n.into()),
        U::Signed(n) => Value::Int(n.into()),
        U::Float(x) => Value::Float(x),
        U::Char(c) => Value::Str(c.to_string()),
        U::Str(s) => Value::Str(s.to_string()),
        U::Unit | U::Option => Value::Null,
        U::Seq => return "a list".into(),
        U::Map => return "a mapping".into(),
        ref other => return other.to_string(),
    };
    value.describe()
}

/// `value` as an error message quotes it: a string in quotes (cut short), a number as written.
pub fn quote_value(value: &Value) -> String {
    match value {
        Value::Str(s) => quote_short(s),
        Value::Int(i) => i.to_string(),
        other => other.describe(),
    }
}
