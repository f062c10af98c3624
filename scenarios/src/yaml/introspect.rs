//! The keys a derived `Deserialize` type takes, asked of the type itself: a struct's fields, an
//! enum's variants. Messages that list what is valid ("a step needs one of: open, close, ...")
//! and the schema's tests use them, so no list of keys is written twice.

use std::fmt;

use serde::de::{self, Deserialize, Visitor};

/// The names a type's `Deserialize` named when it was asked to read something.
#[derive(Debug)]
struct Names(&'static [&'static str]);

impl fmt::Display for Names {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("names of a type")
    }
}

impl std::error::Error for Names {}

impl de::Error for Names {
    fn custom<T: fmt::Display>(_: T) -> Names {
        Names(&[])
    }
}

/// A deserializer that reads nothing: it gives back the names the type asks for.
struct Probe;

impl<'de> de::Deserializer<'de> for Probe {
    type Error = Names;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Names> {
        Err(Names(&[]))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Names> {
        Err(Names(fields))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Names> {
        Err(Names(variants))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map identifier ignored_any
    }
}

/// The keys of struct `T`, or the variants of enum `T`, in declaration order (serde's names,
/// renames applied); empty for a type that is neither.
pub fn names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    match T::deserialize(Probe) {
        Err(Names(names)) => names,
        Ok(_) => &[],
    }
}
