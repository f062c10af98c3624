//! Names steps give and use: [`Alias`] (a NIC's, a region's, a queue pair's) and [`NicRef`] (a
//! NIC by index or by alias). Each keeps where it is written, for the checks that follow
//! reading (an alias used before its `open`). Inside a `repeat` a name may hold the repeat's
//! iteration (`q${i}`, a [template](Alias::references)), which the checks and the runner put in
//! pass by pass ([`Alias::resolve`]).

use std::fmt;

use schemars::json_schema;
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, Visitor};
use serde_json::json;

use super::MAX_NICS;
use super::kinds::{WORD_PATTERN, or_reference};
use super::values::check_word;
use crate::yaml::node::quote_short;
use crate::yaml::{LocatedSeed, NAME, Pos};

/// A name `open` gives a NIC (or `region`, `qp` give theirs), where it is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    /// The name, as written: with `${i}` references to repeats' iterations in it until
    /// [`Alias::resolve`] puts them in.
    pub name: String,
    /// Where this use of it is written.
    pub at: Pos,
    /// The field's path.
    pub path: String,
}

/// A NIC named by index or by alias.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NicRef {
    /// By index.
    Index {
        /// The index.
        nic: usize,
        /// Where it is written.
        at: Pos,
        /// The field's path.
        path: String,
    },
    /// By alias (its index is the one its `open` named).
    Alias(Alias),
}

/// What an alias is read as: a word.
enum Written {
    Word(String),
    Index(u64),
}

/// Reads a word, or with `index` also a whole number.
struct WordOrIndex {
    index: bool,
}

const AN_ALIAS: &str = "an alias (a name an `open` gave with `as:`)";

/// The widest number an iteration can put in a name (`repeat`'s `times` is at most 1,000,000,
/// counted from 0).
const WIDEST_ITERATION: &str = "999999";

/// The iteration names `text` refers to (`${i}`), in order, or why it is not a name of words
/// and references.
fn references(text: &str) -> Result<Vec<&str>, String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or("a `${` is not closed by `}`")?;
        let name = &after[..end];
        check_word(name).map_err(|r| format!("`${{{name}}}` does not name an iteration: {r}"))?;
        found.push(name);
        rest = &after[end + 1..];
    }
    Ok(found)
}

/// `text` with every `${name}` replaced by `value(name)`; the first name without a value if one
/// has none.
fn substitute<'t>(text: &'t str, value: &dyn Fn(&str) -> Option<u32>) -> Result<String, &'t str> {
    let mut out = String::with_capacity(text.len() + 4);
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        let name = &after[..end];
        out.push_str(&value(name).ok_or(name)?.to_string());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether `v` is a name: a word, or (inside a repeat) a word with iterations in it, which is a
/// word whatever number each iteration puts there.
fn check_name(v: &str) -> Result<(), String> {
    if !v.contains("${") {
        return check_word(v);
    }
    references(v)?;
    let widest = substitute(v, &|_| WIDEST_ITERATION.parse().ok()).unwrap_or_default();
    let narrowest = substitute(v, &|_| Some(0)).unwrap_or_default();
    check_word(&narrowest)
        .and_then(|()| check_word(&widest))
        .map_err(|r| format!("{r}, whatever number `${{…}}` puts in (0 to {WIDEST_ITERATION})"))
}

impl Alias {
    /// The iterations the name holds (`i` of `q${i}`): none for a plain name.
    pub fn references(&self) -> Vec<&str> {
        if self.name.contains("${") { references(&self.name).unwrap_or_default() } else { Vec::new() }
    }

    /// The name with each iteration it holds put in (`q${i}` with `i` = 7 is `q7`), or the
    /// first iteration `value` has no number for.
    pub fn resolve(&self, value: &dyn Fn(&str) -> Option<u32>) -> Result<Alias, String> {
        let name = substitute(&self.name, value).map_err(str::to_string)?;
        Ok(Alias { name, at: self.at, path: self.path.clone() })
    }
}

impl<'de> Visitor<'de> for WordOrIndex {
    type Value = Written;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.index { "a NIC index or an alias" } else { AN_ALIAS })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Written, E> {
        match check_name(v) {
            Ok(()) => Ok(Written::Word(v.to_string())),
            Err(reason) => Err(E::custom(format!("{} is not an alias: {reason}", quote_short(v)))),
        }
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Written, E> {
        if !self.index {
            return Err(E::invalid_type(de::Unexpected::Unsigned(v), &self));
        }
        let max = MAX_NICS as u64 - 1;
        if v > max {
            return Err(E::custom(format!("{v} is not a NIC index: must be from 0 to {max}")));
        }
        Ok(Written::Index(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Written, E> {
        if !self.index {
            return Err(E::invalid_type(de::Unexpected::Signed(v), &self));
        }
        Err(E::custom(format!("{v} is not a NIC index: must be from 0 to {}", MAX_NICS - 1)))
    }
}

impl<'de> de::DeserializeSeed<'de> for WordOrIndex {
    type Value = Written;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Written, D::Error> {
        d.deserialize_any(self)
    }
}

/// Reads a name (which may hold iterations) with its position, asking the deserializer to let
/// `${…}` through ([`NAME`]).
struct NameOf(WordOrIndex);

impl<'de> Visitor<'de> for NameOf {
    type Value = crate::yaml::Located<Written>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        LocatedSeed(self.0).deserialize(d)
    }
}

impl<'de> Deserialize<'de> for Alias {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Alias, D::Error> {
        let written = d.deserialize_newtype_struct(NAME, NameOf(WordOrIndex { index: false }))?;
        match written.value {
            Written::Word(name) => Ok(Alias { name, at: written.at, path: written.path }),
            Written::Index(_) => unreachable!("an alias is read without indices"),
        }
    }
}

/// A name: a word, or a word with `${name}` iterations of enclosing repeats in it.
const NAME_PATTERN: &str = r"^[A-Za-z]([A-Za-z0-9_-]|\$\{[A-Za-z][A-Za-z0-9_-]*\})*$";

super::kinds::schema!(Alias, |g| {
    let word = json!({ "type": "string", "pattern": WORD_PATTERN });
    let template = json!({
        "type": "string",
        "pattern": NAME_PATTERN,
        "description": "Inside a repeat: a name with the repeat's iteration in it (`q${i}`)."
    });
    or_reference(json!({ "anyOf": [word, template] }))
});

impl<'de> Deserialize<'de> for NicRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NicRef, D::Error> {
        let written = d.deserialize_newtype_struct(NAME, NameOf(WordOrIndex { index: true }))?;
        let (at, path) = (written.at, written.path);
        Ok(match written.value {
            Written::Word(name) => NicRef::Alias(Alias { name, at, path }),
            Written::Index(nic) => NicRef::Index { nic: nic as usize, at, path },
        })
    }
}

super::kinds::schema!(NicRef, |g| {
    let index = super::kinds::NicIndex::json_schema(g).to_value();
    json_schema!({ "anyOf": [index, Alias::json_schema(g).to_value()] })
});
