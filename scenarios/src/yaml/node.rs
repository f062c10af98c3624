//! A YAML document as a tree of nodes, each with the line and column it starts at.
//!
//! serde-saphyr parses the text (with its budgets against hostile input); the tree keeps every
//! node's position so that the scenario decoder can say exactly where a value was wrong, and so
//! that later stages (matrix substitution) can work on plain data before it is typed.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Location, Spanned};

/// A position in a YAML file: 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    /// Line, from 1 (0 when unknown).
    pub line: u64,
    /// Column, from 1 (0 when unknown).
    pub column: u64,
}

impl Pos {
    fn from_location(l: &Location) -> Pos {
        Pos { line: l.line(), column: l.column() }
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// One node of the tree: a value and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where the node starts.
    pub at: Pos,
}

/// One key of a mapping, with its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key, as text.
    pub key: String,
    /// Where the key starts.
    pub key_at: Pos,
    /// The key's value.
    pub value: Node,
}

/// What a node holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `~`, `null` or nothing.
    Null,
    /// `true`/`false` (and what the parser reads as such).
    Bool(bool),
    /// An integer.
    Int(i128),
    /// A number with a fraction or exponent.
    Float(f64),
    /// A string (plain or quoted).
    Str(String),
    /// A list.
    Seq(Vec<Node>),
    /// A mapping, in file order.
    Map(Vec<Entry>),
}

impl Value {
    /// What kind of value this is, as an error message says it ("a string \"x\"").
    pub fn describe(&self) -> String {
        match self {
            Value::Null => "nothing (null)".into(),
            Value::Bool(b) => format!("a boolean ({b})"),
            Value::Int(i) => format!("an integer ({i})"),
            Value::Float(x) => format!("a number ({x})"),
            Value::Str(s) => format!("a string ({})", quote_short(s)),
            Value::Seq(v) => format!("a list of {}", v.len()),
            Value::Map(_) => "a mapping".into(),
        }
    }
}

impl Node {
    /// The tree as JSON (to check a file against the language's JSON Schema). Integers beyond
    /// 64 bits become strings.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => match (i64::try_from(*i), u64::try_from(*i)) {
                (Ok(v), _) => J::from(v),
                (_, Ok(v)) => J::from(v),
                _ => J::String(i.to_string()),
            },
            Value::Float(x) => serde_json::Number::from_f64(*x).map_or(J::Null, J::Number),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(entries.iter().map(|e| (e.key.clone(), e.value.to_json())).collect()),
        }
    }
}

/// `s` in double quotes, cut to 40 characters.
pub fn quote_short(s: &str) -> String {
    const MAX: usize = 40;
    if s.chars().count() > MAX {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut:?}…")
    } else {
        format!("{s:?}")
    }
}

/// The YAML text could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SyntaxError {
    /// Where the parser stopped (0:0 when it could not say).
    pub at: Pos,
    /// What the parser said.
    pub message: String,
}

/// Parse one YAML document into a tree.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    // YAML 1.2 booleans only: `on`, `off`, `y` and `n` stay strings (an alias may be `n`; a
    // switch is written on/off and read as such by the decoder).
    let options = serde_saphyr::options! {
        with_snippet: false,
        strict_booleans: true,
        reject_unsupported_tags: true,
    };
    serde_saphyr::from_str_with_options::<Node>(text, options).map_err(|e| {
        let at = e.location().map(|l| Pos::from_location(&l)).unwrap_or_default();
        let message = match e.without_snippet() {
            serde_saphyr::Error::MultipleDocuments { .. } => {
                "a scenario file holds one YAML document; a `---` starts another".into()
            }
            other => strip_location(&other.to_string()),
        };
        SyntaxError { at, message }
    })
}

/// serde-saphyr's messages end with "at line L, column C"; the position is reported apart.
fn strip_location(message: &str) -> String {
    let m = message.trim();
    match m.rfind(" at line ") {
        Some(i) if m[i..].contains("column") => m[..i].trim_end_matches([',', ':', ' ']).to_string(),
        _ => m.to_string(),
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        let s = Spanned::<Value>::deserialize(d)?;
        Ok(Node { at: Pos::from_location(&s.referenced), value: s.value })
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

/// A mapping key: any scalar, kept as text.
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        match Value::deserialize(d)? {
            Value::Str(s) => Ok(Key(s)),
            Value::Int(i) => Ok(Key(i.to_string())),
            Value::Bool(b) => Ok(Key(b.to_string())),
            Value::Float(x) => Ok(Key(x.to_string())),
            Value::Null => Ok(Key("null".into())),
            other => Err(de::Error::custom(format!("a mapping key must be a plain word, not {}", other.describe()))),
        }
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Int(v.into()))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        i128::try_from(v).map(Value::Int).map_err(|_| E::custom("integer too large"))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }
    fn visit_char<E>(self, v: char) -> Result<Value, E> {
        Ok(Value::Str(v.to_string()))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
        String::from_utf8(v.to_vec()).map(Value::Str).map_err(|_| E::custom("binary data is not text"))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(node) = seq.next_element::<Node>()? {
            items.push(node);
        }
        Ok(Value::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<Key>>()? {
            let value = map.next_value::<Node>()?;
            entries.push(Entry { key: key.value.0, key_at: Pos::from_location(&key.referenced), value });
        }
        Ok(Value::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(node: &Node) -> &[Entry] {
        match &node.value {
            Value::Map(e) => e,
            other => panic!("not a map: {other:?}"),
        }
    }

    #[test]
    fn nodes_carry_their_lines_and_columns() {
        let text = "name: x\nsteps:\n  - open: {nic: 0, as: a}\n    expect: {error: \"RGTR\"}\n  - close: a\n";
        let root = parse(text).unwrap();
        let top = map(&root);
        assert_eq!(top[0].key, "name");
        assert_eq!(top[0].key_at, Pos { line: 1, column: 1 });
        let Value::Seq(steps) = &top[1].value.value else { panic!("steps not a list") };
        assert_eq!(steps[0].at.line, 3);
        assert_eq!(steps[1].at.line, 5);
        let first = map(&steps[0]);
        assert_eq!(first[0].key, "open");
        let open = map(&first[0].value);
        assert_eq!(open[0].value.value, Value::Int(0));
        assert_eq!(open[0].value.at, Pos { line: 3, column: 17 });
        assert_eq!(open[1].value.value, Value::Str("a".into()));
        assert_eq!(first[1].key_at, Pos { line: 4, column: 5 });
    }

    #[test]
    fn a_lone_cr_and_a_crlf_each_end_one_line_as_yaml_counts_them() {
        // YAML 1.2 §5.4: CR LF, CR and LF are each a line break; positions count lines so
        // (as editors do), not by `\n` alone.
        let root = parse("a: 1\rb: 2\r\nc: 3\n").unwrap();
        let lines: Vec<u64> = map(&root).iter().map(|e| e.key_at.line).collect();
        assert_eq!(lines, [1, 2, 3]);
        let e = parse("a: 1\r\r\rb\nc: 2\n").unwrap_err();
        assert_eq!(e.at.line, 4, "{e:?}");
    }

    #[test]
    fn scalars_keep_their_yaml_types() {
        let root = parse("a: 1\nb: 1.5\nc: true\nd: 300ms\ne: '2'\nf: ~\ng: off\n").unwrap();
        let values: Vec<_> = map(&root).iter().map(|e| e.value.value.clone()).collect();
        assert_eq!(values[0], Value::Int(1));
        assert_eq!(values[1], Value::Float(1.5));
        assert_eq!(values[2], Value::Bool(true));
        assert_eq!(values[3], Value::Str("300ms".into()));
        assert_eq!(values[4], Value::Str("2".into()));
        assert_eq!(values[5], Value::Null);
        assert_eq!(values[6], Value::Str("off".into()));
    }

    #[test]
    fn yaml_1_1_booleans_stay_words() {
        let root = parse("n: y\non: off\n").unwrap();
        let entries = map(&root);
        assert_eq!((entries[0].key.as_str(), &entries[0].value.value), ("n", &Value::Str("y".into())));
        assert_eq!((entries[1].key.as_str(), &entries[1].value.value), ("on", &Value::Str("off".into())));
    }

    #[test]
    fn one_document_and_no_unknown_tags() {
        let e = parse("a: 1\n---\na: 2\n").unwrap_err();
        assert_eq!(e.message, "a scenario file holds one YAML document; a `---` starts another");
        assert!(parse("a: !include b.yaml\n").is_err());
    }

    #[test]
    fn syntax_errors_have_a_position() {
        let e = parse("name: x\nsteps: [\n  - a\n").unwrap_err();
        assert!(e.at.line >= 2, "{e:?}");
        let e = parse("a: 1\na: 2\n").unwrap_err();
        assert_eq!(e.at.line, 2, "{e:?}");
        assert!(e.message.to_lowercase().contains("duplicate"), "{e:?}");
    }
}
