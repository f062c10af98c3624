//! Values that keep where they were written: [`Located`] (for errors found after reading, such
//! as an alias used before its `open`), and [`OneOrMany`] (an item, or a list of them).
//!
//! Both are read through [`super::de::NodeDeserializer`], which recognises their names (as
//! serde-saphyr's `Spanned` is recognised by its deserializer).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, SeqAccess, Visitor};

use super::node::Pos;

/// The newtype name by which [`Located`] asks the deserializer for its position.
pub(super) const LOCATED: &str = "$bnxt_rig::Located";
/// The newtype name by which [`OneOrMany`] asks to take one item as a list of it.
pub(super) const ONE_OR_MANY: &str = "$bnxt_rig::OneOrMany";
/// The newtype name by which a name's reader (`scenario::names::Alias`) asks for text that may
/// hold a repeat's iteration (`q${i}`), which the deserializer refuses anywhere else.
pub const NAME: &str = "$bnxt_rig::Name";

/// A value, where it is written and its field's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located<T> {
    /// The value.
    pub value: T,
    /// Where it starts.
    pub at: Pos,
    /// Its field's path (`steps[2].open.nic`).
    pub path: String,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Located<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Located<T>, D::Error> {
        LocatedSeed(PhantomData::<T>).deserialize(d)
    }
}

impl<T: JsonSchema> JsonSchema for Located<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        T::json_schema(g)
    }
}

/// Reads what `S` reads, with its position: [`Located`] of a value that needs a seed.
pub struct LocatedSeed<S>(pub S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for LocatedSeed<S> {
    type Value = Located<S::Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Located<S::Value>, D::Error> {
        d.deserialize_newtype_struct(LOCATED, LocatedVisitor(self.0))
    }
}

struct LocatedVisitor<S>(S);

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for LocatedVisitor<S> {
    type Value = Located<S::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value of a scenario file")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Located<S::Value>, A::Error> {
        let missing = || de::Error::custom("a located value is read only from a scenario file");
        let line: u64 = seq.next_element()?.ok_or_else(missing)?;
        let column: u64 = seq.next_element()?.ok_or_else(missing)?;
        let path: String = seq.next_element()?.ok_or_else(missing)?;
        let value = seq.next_element_seed(self.0)?.ok_or_else(missing)?;
        Ok(Located { value, at: Pos { line, column }, path })
    }
}

/// A list, which may be written as its one item (`differs_from: b` or `differs_from: [b, c]`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OneOrMany<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OneOrMany<T>, D::Error> {
        struct Items<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Items<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("one item or a list of them")
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<OneOrMany<T>, D::Error> {
                Vec::deserialize(d).map(OneOrMany)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OneOrMany<T>, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(OneOrMany(items))
            }
        }
        d.deserialize_newtype_struct(ONE_OR_MANY, Items(PhantomData))
    }
}

impl<T: JsonSchema> JsonSchema for OneOrMany<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("OneOrMany_{}", T::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let one = g.subschema_for::<T>().to_value();
        json_schema!({ "anyOf": [one, { "type": "array", "items": one }] })
    }
}
