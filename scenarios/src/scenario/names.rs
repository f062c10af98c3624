//! Names steps give and use: [`Alias`] (a NIC's, a region's, a queue pair's) and [`NicRef`] (a
//! NIC by index or by alias). Each keeps where it is written, for the checks that follow
//! reading (an alias used before its `open`).

use std::fmt;

use schemars::json_schema;
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, Visitor};
use serde_json::json;

use super::MAX_NICS;
use super::kinds::{WORD_PATTERN, or_reference};
use super::values::check_word;
use crate::yaml::node::quote_short;
use crate::yaml::{LocatedSeed, Pos};

/// A name `open` gives a NIC (or `region`, `qp` give theirs), where it is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    /// The name.
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

impl<'de> Visitor<'de> for WordOrIndex {
    type Value = Written;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.index { "a NIC index or an alias" } else { AN_ALIAS })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Written, E> {
        match check_word(v) {
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

impl<'de> Deserialize<'de> for Alias {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Alias, D::Error> {
        let written = LocatedSeed(WordOrIndex { index: false }).deserialize(d)?;
        match written.value {
            Written::Word(name) => Ok(Alias { name, at: written.at, path: written.path }),
            Written::Index(_) => unreachable!("an alias is read without indices"),
        }
    }
}

super::kinds::schema!(Alias, |g| or_reference(json!({ "type": "string", "pattern": WORD_PATTERN })));

impl<'de> Deserialize<'de> for NicRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NicRef, D::Error> {
        let written = LocatedSeed(WordOrIndex { index: true }).deserialize(d)?;
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
