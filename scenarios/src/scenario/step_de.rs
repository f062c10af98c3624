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
        let (mut value, action_at) = (action.value, action.at);
        let mut uses: Vec<String> = Vec::new();
        for name in value.names_mut() {
            for iteration in name.references() {
                if !uses.iter().any(|u| u == iteration) {
                    uses.push(iteration.to_string());
                }
            }
        }
        Ok(Step { at: step.at, path: step.path, action: value, action_at, expect, timeout, uses })
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::scenario::load::load_str;
    use crate::scenario::{CountCheck, NicRef};

    fn steps(text: &str) -> Vec<Step> {
        let file = format!("name: t\nabout: x.\nnics: 2\nsteps:\n{text}");
        load_str(Path::new("t.yaml"), &file).unwrap_or_else(|e| panic!("{e:#?}")).remove(0).steps
    }

    #[test]
    fn every_step_keyword_reads_as_its_action() {
        let all = steps(concat!(
            "  - count: {at_least: 1}\n  - open: {nic: 1, as: b}\n",
            "  - identity: {nic: b, name: \"BNXT:1\", mac: 02:00:00:00:00:01, ipv4: 10.0.0.1, gid: \"::ffff:10.0.0.1\"}\n",
            "  - limits: {nic: b, qps: 8}\n  - config: {nic: b, memory: on}\n",
            "  - inspect: {nic: 1, driver_registered: yes}\n  - wait: 250us\n  - repeat: {times: 2, steps: [wait: 1s]}\n",
            "  - region: {on: b, as: r, bytes: 4KiB}\n  - region: {on: b, as: s, bytes: 4KiB}\n",
            "  - qp: {on: b, as: q}\n  - qp: {on: b, as: p}\n  - connect: {qp: q, peer: p}\n",
            "  - send: {qp: q, region: r, bytes: 64}\n  - receive: {qp: p, region: s, bytes: 64}\n",
            "  - read: {qp: q, region: r, from: s, bytes: 64}\n  - complete: {qp: q, side: send}\n",
            "  - compare: {region: r, with: s, bytes: 64}\n  - room: {qp: q, side: send, at_least: 1}\n",
            "  - destroy: q\n  - deregister: r\n  - close: b\n",
            "  - fault: {firmware: {nic: 1, request: VER_GET, action: no-response, nth: 1}}\n",
        ));
        let mut keywords: Vec<&str> = all.iter().map(|s| s.action.keyword()).collect();
        keywords.sort();
        keywords.dedup();
        let mut every = step_keywords().to_vec();
        every.sort();
        // Each keyword serde reads is the one `keyword()` names.
        assert_eq!(keywords, every);
        assert!(matches!(all[0].action, Action::Count(ref c) if c.check() == Some(CountCheck::AtLeast(1))));
        let Action::Identity(id) = &all[2].action else { panic!() };
        assert_eq!((id.mac, id.ipv4.map(|a| a.octets())), (Some([2, 0, 0, 0, 0, 1]), Some([10, 0, 0, 1])));
        assert!(matches!(
            &all[5].action,
            Action::Inspect { nic: NicRef::Index { nic: 1, .. }, driver_registered: Some(true), .. }
        ));
        assert!(matches!(all[6].action, Action::Wait(d) if d == Duration::from_micros(250)));
        assert_eq!(all[7].path, "steps[7]");
        let Action::Repeat { steps: inner, .. } = &all[7].action else { panic!() };
        assert_eq!(inner[0].path, "steps[7].repeat.steps[0]");
        let Action::Complete(c) = &all[16].action else { panic!() };
        assert_eq!((c.status, c.within, c.count), (bnxt::Status::Ok, Duration::from_secs(10), 1));
    }

    #[test]
    fn a_step_keeps_where_it_and_its_expectation_are() {
        let s = steps("  - open: {nic: 0, as: a}\n    expect: {error: x}\n    timeout: 2s\n");
        assert_eq!((s[0].at.line, s[0].at.column, s[0].action_at.column), (5, 5, 11));
        assert_eq!(s[0].expect.at.map(|p| p.line), Some(6));
        assert_eq!(s[0].timeout, Some(Duration::from_secs(2)));
        assert_eq!(step_keys().last(), Some(&"timeout"));
    }
}
