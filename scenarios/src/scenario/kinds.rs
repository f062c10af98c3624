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

/// The schema of a kind: inline, as the kinds are small.
macro_rules! schema {
    ($kind:ident $(<$p:ident>)?, |$g:ident| $body:expr) => {
        impl$(<$p: JsonSchema>)? JsonSchema for $kind$(<$p>)? {
            fn schema_name() -> Cow<'static, str> {
                stringify!($kind).into()
            }
            fn inline_schema() -> bool {
                true
            }
            #[allow(unused_variables)]
            fn json_schema($g: &mut SchemaGenerator) -> Schema {
                $body
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

impl<K: JsonSchema> JsonSchema for At<K> {
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

impl<K: JsonSchema> JsonSchema for Opt<K> {
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

/// Reads a whole number from `lo` to `hi`, `what` saying what it is (`a NIC index`).
struct Integer {
    lo: u64,
    hi: u64,
    what: &'static str,
}

impl Integer {
    fn read<'de, D: Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_any(self)
    }
    fn out_of_range<E: de::Error>(&self, value: impl fmt::Display) -> E {
        refuse(value, self.what, format_args!("must be from {} to {}", self.lo, self.hi))
    }
}

impl<'de> Visitor<'de> for Integer {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        if (self.lo..=self.hi).contains(&v) { Ok(v) } else { Err(self.out_of_range(v)) }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| self.out_of_range(v)).and_then(|v| self.visit_u64(v))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<u64, E> {
        Err(self.out_of_range(v))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<u64, E> {
        Err(self.out_of_range(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        let range = format_args!("must be a whole number from {} to {}", self.lo, self.hi);
        Err(refuse(format_args!("a number ({v})"), self.what, range))
    }
}

/// A kind of whole number: its name, Rust type, range and what it is called in messages.
macro_rules! integer {
    ($(#[$doc:meta])* $name:ident: $t:ty, $lo:expr, $hi:expr, $what:literal) => {
        $(#[$doc])*
        pub struct $name;

        impl Kind for $name {
            type Value = $t;
            fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                let n = Integer { lo: $lo as u64, hi: $hi as u64, what: $what }.read(d)?;
                Ok(<$t>::try_from(n).expect("the range fits the type"))
            }
            fn serialize<S: Serializer>(value: &$t, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u64(*value as u64)
            }
        }

        schema!($name, |g| or_reference(json!({ "type": "integer", "minimum": $lo as u64, "maximum": $hi as u64 })));
    };
}

use super::MAX_NICS;
use super::steps::{MAX_COMPLETE_COUNT, MAX_REPEAT};

integer!(
    /// A NIC index: 0 to 63.
    NicIndex: usize, 0, MAX_NICS - 1, "a NIC index"
);
integer!(
    /// A number of NICs: 1 to 64.
    NicCount: usize, 1, MAX_NICS, "the number of NICs"
);
integer!(
    /// A number of NICs a `count` step expects: 0 to 64.
    NicsCounted: usize, 0, MAX_NICS, "a number of NICs"
);
integer!(
    /// A count from 0 (queue pairs, regions, DMA mappings, ring entries).
    Count: u32, 0, u32::MAX, "a count"
);
integer!(
    /// A number of DMA mappings.
    DmaMappings: u32, 0, u32::MAX, "a number of DMA mappings"
);
integer!(
    /// A number of entries of a ring.
    RingEntries: u32, 0, u32::MAX, "a number of ring entries"
);
integer!(
    /// Which occurrence of a request (1 is the first).
    Nth: u32, 1, u32::MAX, "which occurrence (1 is the first)"
);
integer!(
    /// Which matching frame (1 is the first).
    NthFrame: u64, 1, u64::MAX, "which matching frame (1 is the first)"
);
integer!(
    /// How many times a `repeat` runs its steps.
    RepeatTimes: u32, 1, MAX_REPEAT, "a repeat count"
);
integer!(
    /// How many completions a `complete` step takes.
    CompleteCount: u32, 1, MAX_COMPLETE_COUNT, "how many completions"
);
integer!(
    /// A BTH PSN (24 bits).
    Psn: u32, 0, 0xff_ffff, "a PSN (24 bits)"
);
integer!(
    /// A BAR of a PCI device: 0 to 5.
    Bar: u8, 0, 5, "a BAR number"
);
integer!(
    /// A seed of the model's random choices.
    Seed: u64, 0, u64::MAX, "a seed (an integer)"
);

/// A duration: a number and a unit (`300ms`, `2s`, `1.5s`).
pub struct Time;

impl Kind for Time {
    type Value = Duration;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        d.deserialize_any(TimeVisitor)
    }
    fn serialize<S: Serializer>(value: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&values::format_duration(*value))
    }
}

/// The pattern of a duration.
pub const DURATION_PATTERN: &str = r"^\s*[0-9]+(\.[0-9]+)?\s*(ns|us|µs|ms|s|m|min|h)\s*$";

schema!(Time, |g| or_reference(json!({ "type": "string", "pattern": DURATION_PATTERN })));

struct TimeVisitor;

const A_DURATION: &str = "a duration such as 300ms, 2s or 1.5s";
const NEEDS_A_UNIT: &str = "a duration needs a unit (ns, us, ms, s, m or h)";

impl<'de> Visitor<'de> for TimeVisitor {
    type Value = Duration;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(A_DURATION)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
        parse_duration(v).map_err(|reason| refuse(quote_short(v), A_DURATION, reason))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
        Err(refuse(v, A_DURATION, NEEDS_A_UNIT))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
        Err(refuse(v, A_DURATION, NEEDS_A_UNIT))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
        Err(refuse(format_args!("a number ({v})"), A_DURATION, NEEDS_A_UNIT))
    }
}

/// Reads a size in bytes from `lo` to `hi`: a whole number (`4096`) or a number with a binary
/// suffix (`64KiB`, `2MiB`).
struct Bytes {
    lo: u64,
    hi: u64,
}

const A_SIZE: &str = "a size such as 4096, 64KiB or 2MiB";

impl Bytes {
    fn within<E: de::Error>(&self, value: impl fmt::Display, bytes: u64) -> Result<u64, E> {
        if (self.lo..=self.hi).contains(&bytes) {
            Ok(bytes)
        } else {
            Err(refuse(
                value,
                A_SIZE,
                format_args!("must be from {} to {}", format_size(self.lo), format_size(self.hi)),
            ))
        }
    }
}

impl<'de> Visitor<'de> for Bytes {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(A_SIZE)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        self.within(v, v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        match u64::try_from(v) {
            Ok(v) => self.within(v, v),
            Err(_) => Err(refuse(v, A_SIZE, "a size is not negative")),
        }
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<u64, E> {
        Err(refuse(v, A_SIZE, if v < 0 { "a size is not negative" } else { "too large" }))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<u64, E> {
        Err(refuse(v, A_SIZE, "too large"))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        Err(refuse(format_args!("a number ({v})"), A_SIZE, "a size is a whole number of bytes"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        let bytes = parse_size(v).map_err(|reason| refuse(quote_short(v), A_SIZE, reason))?;
        self.within(quote_short(v), bytes)
    }
}

/// The pattern of a size written with a unit.
pub const SIZE_PATTERN: &str = r"^\s*[0-9]+(\.[0-9]+)?\s*(B|KiB|MiB|GiB)?\s*$";

/// A kind of size: its name, range and what it is for.
macro_rules! size {
    ($(#[$doc:meta])* $name:ident, $lo:expr, $hi:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl Kind for $name {
            type Value = u64;
            fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
                d.deserialize_any(Bytes { lo: $lo, hi: $hi })
            }
            fn serialize<S: Serializer>(value: &u64, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u64(*value)
            }
        }

        schema!($name, |g| json_schema!({
            "anyOf": [
                { "type": "integer", "minimum": $lo, "maximum": $hi },
                { "type": "string", "pattern": SIZE_PATTERN },
                matrix_reference()
            ]
        }));
    };
}

/// The largest message: 2^31 bytes (the contract).
pub const MAX_MESSAGE: u64 = 1 << 31;

size!(
    /// The size of a region: 1 byte to [`MAX_SIZE`].
    RegionBytes, 1, MAX_SIZE
);
size!(
    /// The length of a message: 0 to 2^31 bytes.
    MessageBytes, 0, MAX_MESSAGE
);
size!(
    /// An offset into a region.
    Offset, 0, MAX_SIZE
);
size!(
    /// How many bytes two ranges compare: 1 byte to [`MAX_SIZE`].
    CompareBytes, 1, MAX_SIZE
);

/// A switch: `on`/`off` (also `true`/`false`, `yes`/`no`).
pub struct Switch;

impl Kind for Switch {
    type Value = bool;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        d.deserialize_any(SwitchVisitor)
    }
}

schema!(Switch, |g| or_reference(json!({
    "anyOf": [
        { "type": "boolean" },
        { "type": "string", "pattern": "^([Oo][Nn]|[Oo][Ff][Ff]|[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|[Yy][Ee][Ss]|[Nn][Oo])$" }
    ]
})));

struct SwitchVisitor;

impl<'de> Visitor<'de> for SwitchVisitor {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("on or off")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        Ok(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        match v.to_ascii_lowercase().as_str() {
            "on" | "true" | "yes" => Ok(true),
            "off" | "false" | "no" => Ok(false),
            _ => Err(E::invalid_type(de::Unexpected::Str(v), &self)),
        }
    }
}

/// A probability: a number from 0 to 1.
pub struct Probability;

const A_PROBABILITY: &str = "a probability from 0 to 1";

impl Kind for Probability {
    type Value = f64;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(ProbabilityVisitor)
    }
    fn serialize<S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(*value)
    }
}

schema!(Probability, |g| or_reference(json!({ "type": "number", "minimum": 0, "maximum": 1 })));

struct ProbabilityVisitor;

impl<'de> Visitor<'de> for ProbabilityVisitor {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(A_PROBABILITY)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        if (0.0..=1.0).contains(&v) {
            Ok(v)
        } else {
            Err(refuse(format_args!("a number ({v})"), A_PROBABILITY, "must be from 0 to 1"))
        }
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        if v <= 1 { Ok(v as f64) } else { Err(refuse(v, A_PROBABILITY, "must be from 0 to 1")) }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Err(refuse(v, A_PROBABILITY, "must be from 0 to 1"))
    }
}

/// Reads a string, `what` saying what it should be, and makes a `T` of it with `make`, whose
/// error is the whole message. (The making happens while the node is read, so its error is
/// placed at the node.)
pub struct FromText<T> {
    /// What the string should be (for a string of the wrong type: "expected ...").
    pub what: &'static str,
    /// What the string becomes, or why it cannot.
    pub make: fn(&str) -> Result<T, String>,
}

impl<T> FromText<T> {
    /// Read one from `d`.
    pub fn read<'de, D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T> Visitor<'de> for FromText<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.make)(v).map_err(E::custom)
    }
}

/// "`"x"` is not `what`: `reason`" for text `v`.
fn not_text(v: &str, what: &str, reason: String) -> String {
    let article = what.split_once(", as").map_or(what, |(w, _)| w);
    format!("{} is not {article}: {reason}", quote_short(v))
}

/// A kind of text: its name, what it is called and how it is checked.
macro_rules! text {
    ($(#[$doc:meta])* $name:ident, $what:literal, $check:expr, |$g:ident| $schema:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl Kind for $name {
            type Value = String;
            fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
                let make: fn(&str) -> Result<String, String> =
                    |v| ($check)(v).map(|()| v.to_string()).map_err(|reason| not_text(v, $what, reason));
                FromText { what: $what, make }.read(d)
            }
        }

        schema!($name, |$g| $schema);
    };
}

/// The pattern of an alias or tag.
pub const WORD_PATTERN: &str = "^[A-Za-z][A-Za-z0-9_-]{0,39}$";

text!(
    /// A scenario's name: letters, digits, `-`, `_`, `.`.
    ScenarioName, "a scenario name", check_scenario_name,
    |g| json_schema!({ "type": "string", "pattern": r"^([A-Za-z0-9._-]|\$\{[A-Za-z][A-Za-z0-9_-]*\}){1,100}$" })
);
text!(
    /// A tag to select scenarios by.
    Tag, "a tag", check_word,
    |g| json_schema!({ "type": "string", "pattern": WORD_PATTERN })
);
text!(
    /// A PCI bus address, as Linux writes it (`0000:81:00.0`).
    Bus, "a bus address, as 0000:81:00.0", parse_bus,
    |g| json_schema!({ "type": "string" })
);
/// A kind of target the scenario runs on (`model`).
pub struct TargetKind;

impl Kind for TargetKind {
    type Value = String;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        let make: fn(&str) -> Result<String, String> = |kind| {
            let kinds = crate::target::KINDS;
            match kinds.contains(&kind) {
                true => Ok(kind.to_string()),
                false => Err(unknown_name("target kind", kind, crate::suggest::closest(kind, kinds.iter().copied()))),
            }
        };
        FromText { what: "a target kind", make }.read(d)
    }
}

schema!(TargetKind, |g| one_of(crate::target::KINDS));

/// A sentence: text that says something (trimmed; not empty).
pub struct Sentence;

impl Kind for Sentence {
    type Value = String;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        let make: fn(&str) -> Result<String, String> = |text| match text.trim() {
            "" => Err("the text is empty: say it in a sentence".into()),
            trimmed => Ok(trimmed.to_string()),
        };
        FromText { what: "a sentence", make }.read(d)
    }
}

schema!(Sentence, |g| json_schema!({ "type": "string" }));

/// A parsed text value: its name, Rust type, what it is called and its parser.
macro_rules! parsed {
    ($(#[$doc:meta])* $name:ident: $t:ty, $what:literal, $parse:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl Kind for $name {
            type Value = $t;
            fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                let make: fn(&str) -> Result<$t, String> = |v| ($parse)(v).map_err(|reason| not_text(v, $what, reason));
                FromText { what: $what, make }.read(d)
            }
        }

        schema!($name, |g| json_schema!({ "type": "string" }));
    };
}

parsed!(
    /// A MAC address (`02:00:00:00:00:01`).
    Mac: [u8; 6], "a MAC address, as 02:00:00:00:00:01", parse_mac
);
parsed!(
    /// An IPv4 address.
    Ipv4: Ipv4Addr, "an IPv4 address, as 10.0.0.1", parse_ipv4
);
parsed!(
    /// A GID, as an IPv6 address (`::ffff:10.0.0.1`).
    Gid: [u8; 16], "a GID, as ::ffff:10.0.0.1", parse_gid
);

/// A reliable-connected BTH opcode: a number, or its name (`SEND_ONLY`, `ACKNOWLEDGE`).
pub struct Opcode;

impl Kind for Opcode {
    type Value = u8;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
        d.deserialize_any(OpcodeVisitor)
    }
}

schema!(Opcode, |g| {
    let names: Vec<&str> = super::opcodes::RC_OPCODES.iter().map(|(_, n)| *n).collect();
    json_schema!({
        "anyOf": [
            { "type": "integer", "minimum": 0, "maximum": 255 },
            { "type": "string", "enum": names },
            matrix_reference()
        ]
    })
});

struct OpcodeVisitor;

impl<'de> Visitor<'de> for OpcodeVisitor {
    type Value = u8;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a BTH opcode: a number or a name as SEND_ONLY")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u8, E> {
        Integer { lo: 0, hi: 255, what: "a BTH opcode" }.visit_u64(v).map(|n| n as u8)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u8, E> {
        Integer { lo: 0, hi: 255, what: "a BTH opcode" }.visit_i64(v).map(|n| n as u8)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u8, E> {
        super::opcodes::opcode_by_name(v).ok_or_else(|| {
            let names = super::opcodes::RC_OPCODES.iter().map(|(_, n)| *n);
            E::custom(unknown_name("RC opcode", v, crate::suggest::closest(v, names)))
        })
    }
}

/// "unknown `what` `name` (did you mean ...?)".
pub fn unknown_name(what: &str, name: &str, suggestion: Option<&str>) -> String {
    let problem = crate::yaml::Problem::UnknownName {
        what: what.into(),
        name: name.into(),
        suggestion: suggestion.map(str::to_string),
    };
    problem.to_string()
}

/// One of a table of names (`Fill::ALL`), called `what` in messages.
pub fn by_name<'de, D: Deserializer<'de>, T: Copy>(
    d: D,
    what: &'static str,
    table: &'static [(T, &'static str)],
) -> Result<T, D::Error> {
    struct Names<T: 'static> {
        what: &'static str,
        table: &'static [(T, &'static str)],
    }
    impl<'de, T: Copy> Visitor<'de> for Names<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let names: Vec<&str> = self.table.iter().map(|(_, n)| *n).collect();
            write!(f, "a {}: {}", self.what, names.join(", "))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            self.table.iter().find(|(_, n)| *n == v).map(|(t, _)| *t).ok_or_else(|| {
                let suggestion = crate::suggest::closest(v, self.table.iter().map(|(_, n)| *n));
                E::custom(unknown_name(self.what, v, suggestion))
            })
        }
    }
    d.deserialize_str(Names { what, table })
}

/// The schema of one of a table of names.
pub fn names_schema<T>(table: &[(T, &str)]) -> Schema {
    let names: Vec<&str> = table.iter().map(|(_, n)| *n).collect();
    one_of(&names)
}

/// A completion status (`ok`, `retry-exceeded`): the driver's names.
pub struct CompletionStatus;

impl Kind for CompletionStatus {
    type Value = bnxt::Status;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<bnxt::Status, D::Error> {
        by_name(d, "completion status", &bnxt::Status::ALL)
    }
    fn serialize<S: Serializer>(value: &bnxt::Status, s: S) -> Result<S::Ok, S::Error> {
        let name = bnxt::Status::ALL.iter().find(|(v, _)| v == value).map(|(_, n)| *n);
        s.serialize_str(name.expect("every status is named"))
    }
}

schema!(CompletionStatus, |g| names_schema(&bnxt::Status::ALL));

/// The rings of a queue pair, by name.
pub const RINGS: [(bnxt::Side, &str); 2] = [(bnxt::Side::Send, "send"), (bnxt::Side::Receive, "receive")];

/// Which ring of a queue pair: `send` (sends and reads) or `receive`.
pub struct Ring;

impl Kind for Ring {
    type Value = bnxt::Side;
    fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<bnxt::Side, D::Error> {
        by_name(d, "ring", &RINGS)
    }
}

schema!(Ring, |g| names_schema(&RINGS));

/// Free text (a regular expression, a name to compare).
pub fn text_schema() -> Schema {
    json_schema!({ "type": "string" })
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
        assert_eq!(read::<Switch>("on").unwrap(), true);
        assert_eq!(read::<Switch>("OFF").unwrap(), false);
        assert_eq!(read::<Switch>("true").unwrap(), true);
        assert_eq!(read::<Switch>("yes").unwrap(), true);
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
