//! How a [`Step`] is read: a mapping with one step keyword (an [`Action`] variant, read by
//! `Action`'s derived `Deserialize`) and optionally `expect` and `timeout`. The keywords are
//! `Action`'s variants, asked of the type; no list of them is written here.

use std::fmt;
use std::sync::LazyLock;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, VariantAccess, Visitor};

use super::kinds::{KindSeed, Time};
use super::steps::{Action, Expect, Step};
use crate::yaml::introspect::names;
use crate::yaml::{Located, LocatedSeed};

/// The keys a step may have besides its keyword.
pub const STEP_EXTRAS: [&str; 2] = ["expect", "timeout"];

/// Every step keyword, in the order of [`Action`].
pub fn step_keywords() -> &'static [&'static str] {
    names::<Action>()
}

/// Every key a step may have: the keywords, then [`STEP_EXTRAS`].
pub fn step_keys() -> &'static [&'static str] {
    static KEYS: LazyLock<Vec<&'static str>> =
        LazyLock::new(|| step_keywords().iter().copied().chain(STEP_EXTRAS).collect());
    &KEYS
}

impl<'de> Deserialize<'de> for Step {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Step, D::Error> {
        let step = LocatedSeed(StepVisitor).deserialize(d)?;
        let Parts { action, expect, timeout } = step.value;
        Ok(Step { at: step.at, path: step.path, action: action.value, action_at: action.at, expect, timeout })
    }
}

/// What a step's mapping holds.
struct Parts {
    action: Located<Action>,
    expect: Expect,
    timeout: Option<Duration>,
}

struct StepVisitor;

impl<'de> DeserializeSeed<'de> for StepVisitor {
    type Value = Parts;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Parts, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for StepVisitor {
    type Value = Parts;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a mapping with keys {}", step_keys().join(", "))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parts, A::Error> {
        let mut action: Option<(&str, Located<Action>)> = None;
        let mut expect = Expect::default();
        let mut timeout = None;
        while let Some(key) = map.next_key::<StepKey>()? {
            match key {
                StepKey::Expect => {
                    let written: Located<Expect> = map.next_value()?;
                    expect = Expect { at: Some(written.at), ..written.value };
                }
                StepKey::Timeout => timeout = Some(map.next_value_seed(KindSeed::<Time>::new())?),
                StepKey::Keyword(keyword) => {
                    if let Some((first, _)) = action {
                        return Err(de::Error::custom(format!(
                            "a step does one thing: found both `{first}` and `{keyword}` (make them two steps)"
                        )));
                    }
                    action = Some((keyword, map.next_value_seed(LocatedSeed(ActionOf(keyword)))?));
                }
            }
        }
        let Some((_, action)) = action else {
            return Err(de::Error::custom(format!("a step needs one of: {}", step_keywords().join(", "))));
        };
        Ok(Parts { action, expect, timeout })
    }
}

/// A key of a step's mapping.
enum StepKey {
    Keyword(&'static str),
    Expect,
    Timeout,
}

impl<'de> Deserialize<'de> for StepKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StepKey, D::Error> {
        struct Key;
        impl<'de> Visitor<'de> for Key {
            type Value = StepKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a step keyword, `expect` or `timeout`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StepKey, E> {
                match v {
                    "expect" => Ok(StepKey::Expect),
                    "timeout" => Ok(StepKey::Timeout),
                    _ => match step_keywords().iter().find(|k| **k == v) {
                        Some(keyword) => Ok(StepKey::Keyword(keyword)),
                        None => Err(E::unknown_field(v, step_keys())),
                    },
                }
            }
        }
        d.deserialize_identifier(Key)
    }
}

/// Reads the value of step keyword `.0` as that [`Action`] variant.
struct ActionOf(&'static str);

impl<'de> DeserializeSeed<'de> for ActionOf {
    type Value = Action;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Action, D::Error> {
        Action::deserialize(Variant { keyword: self.0, value: d })
    }
}

/// The enum variant `keyword` whose content `value` holds, for `Action`'s derived reader.
struct Variant<D> {
    keyword: &'static str,
    value: D,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Variant<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        visitor.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de, D: Deserializer<'de>> EnumAccess<'de> for Variant<D> {
    type Error = D::Error;
    type Variant = Content<D>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Content<D>), D::Error> {
        let keyword: de::value::StrDeserializer<'_, D::Error> = de::IntoDeserializer::into_deserializer(self.keyword);
        Ok((seed.deserialize(keyword)?, Content(self.value)))
    }
}

/// The content of a [`Variant`].
struct Content<D>(D);

impl<'de, D: Deserializer<'de>> VariantAccess<'de> for Content<D> {
    type Error = D::Error;

    fn unit_variant(self) -> Result<(), D::Error> {
        de::IgnoredAny::deserialize(self.0).map(|_| ())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, D::Error> {
        seed.deserialize(self.0)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_struct("", fields, visitor)
    }
}
