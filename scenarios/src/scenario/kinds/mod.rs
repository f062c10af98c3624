//! Kinds of scalar value in the language (NIC indices, durations, sizes, switches, ...): each is
//! a marker type that says both how a field of it is read and its JSON Schema, so one
//! attribute, `#[serde(with = "Kind")]`, gives a field of a plain Rust type (`u64`, `Duration`)
//! its decoder and its schema together. Every schema also takes a `${name}` reference, which a
//! `matrix:` file may put anywhere.
//!
//! (serde calls `Kind::deserialize` for `with`; schemars takes the schema of the type `with`
//! names.)

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::net::Ipv4Addr;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde::{Serializer, ser};
use serde_json::{Value as Json, json};

use super::values::{
    self, MAX_SIZE, check_scenario_name, check_word, format_size, parse_bus, parse_duration, parse_gid, parse_ipv4,
    parse_mac, parse_size,
};
use crate::yaml::node::quote_short;
use crate::yaml::{Located, LocatedSeed};

/// A kind of value: how a field of it is read (`Kind::deserialize`, which serde's `with` calls)
/// and what it is read as.
pub trait Kind: JsonSchema {
    /// What a field of this kind holds.
    type Value;
    /// Read one.
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Self::Value, D::Error>;

    /// Write one as a scenario file would, for the default the schema shows (schemars calls
    /// it for a field with `#[serde(default)]`). A kind with no default worth showing refuses,
    /// and the schema shows none.
    fn serialize<S: Serializer>(value: &Self::Value, s: S) -> Result<S::Ok, S::Error> {
        let _ = (value, s);
        Err(ser::Error::custom("no default to show"))
    }
}

/// Reads a value of kind `K` where serde wants a seed.
pub struct KindSeed<K>(PhantomData<K>);

impl<K> KindSeed<K> {
    /// The seed.
    pub fn new() -> KindSeed<K> {
        KindSeed(PhantomData)
    }
}

impl<K> Default for KindSeed<K> {
    fn default() -> KindSeed<K> {
        KindSeed::new()
    }
}

impl<'de, K: Kind> DeserializeSeed<'de> for KindSeed<K> {
    type Value = K::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<K::Value, D::Error> {
        K::deserialize(d)
    }
}

/// The schema of a kind (or of another small type of the language): inline, as they are small.
macro_rules! schema {
    ($kind:ident $(<$p:ident>)?, |$g:ident| $body:expr) => {
        impl$(<$p: schemars::JsonSchema>)? schemars::JsonSchema for $kind$(<$p>)? {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($kind).into()
            }
            fn inline_schema() -> bool {
                true
            }
            #[allow(unused_variables)]
            fn json_schema($g: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $body
            }
        }
    };
}

pub(crate) use schema;

/// The schema of a wrapper of a kind `K`: `K`'s own.
macro_rules! schema_of_inner {
    ($wrapper:ident) => {
        impl<K: JsonSchema> JsonSchema for $wrapper<K> {
            fn schema_name() -> Cow<'static, str> {
                K::schema_name()
            }
            fn inline_schema() -> bool {
                K::inline_schema()
            }
            fn json_schema(g: &mut SchemaGenerator) -> Schema {
                K::json_schema(g)
            }
        }
    };
}

/// A `${name}` reference to a matrix value.
fn matrix_reference() -> Json {
    json!({
        "type": "string",
        "pattern": r"\$\{[A-Za-z][A-Za-z0-9_-]*\}",
        "description": "A reference to a value of the file's matrix."
    })
}

/// `schema`, or a matrix reference.
pub fn or_reference(schema: Json) -> Schema {
    let description = schema.get("description").cloned();
    let mut both = json!({ "anyOf": [schema, matrix_reference()] });
    if let Some(d) = description {
        both["description"] = d;
    }
    Schema::try_from(both).expect("an object is a schema")
}

/// One of `names`, or a matrix reference.
pub fn one_of(names: &[&str]) -> Schema {
    or_reference(json!({ "type": "string", "enum": names }))
}

/// An error raised while reading a value: the reader's words, placed by the deserializer.
fn refuse<E: de::Error>(value: impl fmt::Display, expected: &str, reason: impl fmt::Display) -> E {
    E::custom(format!("{value} is not {expected}: {reason}"))
}

/// A value of kind `K`, with where it is written.
pub struct At<K>(PhantomData<K>);

impl<K: Kind> Kind for At<K> {
    type Value = Located<K::Value>;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Located<K::Value>, D::Error> {
        LocatedSeed(KindSeed::<K>::new()).deserialize(d)
    }
}

schema_of_inner!(At);

/// An optional value of kind `K` (with `#[serde(default)]`: absent is `None`).
pub struct Opt<K>(PhantomData<K>);

impl<K: Kind> Kind for Opt<K> {
    type Value = Option<K::Value>;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<K::Value>, D::Error> {
        K::deserialize(d).map(Some)
    }
    fn serialize<S: Serializer>(value: &Option<K::Value>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            None => s.serialize_none(),
            Some(v) => K::serialize(v, s),
        }
    }
}

schema_of_inner!(Opt);

/// The tags of a scenario.
pub struct Tags;

impl Kind for Tags {
    type Value = Vec<String>;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        d.deserialize_seq(Items::<Tag>(PhantomData, "a list of tags, as [nic, faults]"))
    }
}

schema!(Tags, |g| {
    let item = g.subschema_for::<Tag>().to_value();
    json_schema!({ "type": "array", "items": item })
});

/// A list of `T` (read by its own `Deserialize`), called `what` in messages.
pub fn list_of<'de, D: Deserializer<'de>, T: de::DeserializeOwned + JsonSchema>(
    d: D,
    what: &'static str,
) -> Result<Vec<T>, D::Error> {
    d.deserialize_seq(Items::<Named<T>>(PhantomData, what))
}

/// A kind of list of `T`: its name, item type and what it is called.
macro_rules! list {
    ($(#[$doc:meta])* $name:ident: $t:ty, $what:literal) => {
        $(#[$doc])*
        pub struct $name;

        impl $crate::scenario::kinds::Kind for $name {
            type Value = Vec<$t>;
            fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<$t>, D::Error> {
                $crate::scenario::kinds::list_of(d, $what)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let item = g.subschema_for::<$t>().to_value();
                schemars::json_schema!({ "type": "array", "items": item })
            }
        }
    };
}

pub(crate) use list;

struct Items<K>(PhantomData<K>, &'static str);

impl<'de, K: Kind> Visitor<'de> for Items<K> {
    type Value = Vec<K::Value>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.1)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<K::Value>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(KindSeed::<K>::new())? {
            items.push(item);
        }
        Ok(items)
    }
}

/// A name the model or the driver defines (`T`'s own `Deserialize`), or a matrix reference.
pub struct Named<T>(PhantomData<T>);

impl<T: for<'de> de::Deserialize<'de> + JsonSchema> Kind for Named<T> {
    type Value = T;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        T::deserialize(d)
    }
}

impl<T: JsonSchema> JsonSchema for Named<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        or_reference(g.subschema_for::<T>().to_value())
    }
}

/// `Deserialize` and `JsonSchema` for an enum of names with an `ALL` table of them, called
/// `what` in messages.
macro_rules! named {
    ($t:ty, $what:literal) => {
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                $crate::scenario::kinds::by_name(d, $what, &<$t>::ALL)
            }
        }

        impl schemars::JsonSchema for $t {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($t).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $crate::scenario::kinds::names_schema(&<$t>::ALL)
            }
        }
    };
}

pub(crate) use named;

mod numbers;
mod text;

pub use numbers::*;
pub use text::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::node::parse;
    use crate::yaml::{DecodeError, NodeDeserializer};

    fn read<K: Kind>(text: &str) -> Result<K::Value, DecodeError> {
        K::deserialize(NodeDeserializer::new(&parse(text).unwrap(), "v"))
    }

    #[test]
    fn switches_take_on_off_and_booleans_only() {
        assert!(read::<Switch>("on").unwrap());
        assert!(!read::<Switch>("OFF").unwrap());
        assert!(read::<Switch>("true").unwrap());
        assert!(read::<Switch>("yes").unwrap());
        assert!(read::<Switch>("maybe").unwrap_err().to_string().contains("expected on or off, found a string"));
        assert!(read::<Switch>("1").is_err());
    }

    #[test]
    fn integers_out_of_range_are_refused_not_truncated() {
        let e = read::<NicCount>("99999999999999999999") // beyond 64 bits: the parser reads a number
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not the number of NICs: must be a whole number from 1 to 64"), "{e}");
        assert!(read::<NicCount>("-1").unwrap_err().to_string().contains("must be from 1 to 64"));
        assert!(read::<NicCount>("1.5").unwrap_err().to_string().contains("must be a whole number"));
        assert_eq!(read::<NicCount>("64").unwrap(), 64);
    }

    #[test]
    fn sizes_durations_and_probabilities_say_why_not() {
        assert_eq!(read::<RegionBytes>("2MiB").unwrap(), 2 << 20);
        let e = read::<RegionBytes>("0").unwrap_err().to_string();
        assert!(e.contains("0 is not a size such as 4096, 64KiB or 2MiB: must be from 1 to 4GiB"), "{e}");
        assert!(read::<Offset>("-4").unwrap_err().to_string().contains("a size is not negative"));
        assert_eq!(read::<Time>("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(read::<Time>("300").unwrap_err().to_string().contains("300 is not a duration"));
        assert!(read::<Probability>("2").unwrap_err().to_string().contains("must be from 0 to 1"));
        assert_eq!(read::<Probability>("0.25").unwrap(), 0.25);
    }

    #[test]
    fn names_suggest_the_closest() {
        let e = read::<CompletionStatus>("retry-exceded").unwrap_err().to_string();
        assert!(e.ends_with("unknown completion status `retry-exceded` (did you mean `retry-exceeded`?)"), "{e}");
        assert_eq!(read::<Opcode>("send_only").unwrap(), 4);
        assert!(read::<Opcode>("SEND_ONLYY").unwrap_err().to_string().contains("did you mean `SEND_ONLY`"));
        assert!(read::<Opcode>("256").unwrap_err().to_string().contains("must be from 0 to 255"));
    }
}
