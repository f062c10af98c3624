//! A serde [`Deserializer`](de::Deserializer) over the positioned YAML tree: the scenario types
//! derive `Deserialize`, and every error they raise comes out placed at the node it concerns
//! (line and column, and the field's path from the top of the file, `steps[2].open.nic`).
//!
//! The tree, not the text, is what is read because `matrix:` files are expanded on the tree
//! first (a `${n}` may stand where a number goes). Two wrappers read more than a value:
//! [`Located`](super::Located) (the value with its position and path) and
//! [`OneOrMany`](super::OneOrMany) (one item written without a list).

use serde::de::value::{StringDeserializer, U64Deserializer};
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use super::error::{DecodeError, Problem};
use super::located::{LOCATED, NAME, ONE_OR_MANY};
use super::node::{Entry, Node, Value};

/// Reads the node `node`, whose field is `path` (empty for the top of a file).
#[derive(Debug, Clone, Copy)]
pub struct NodeDeserializer<'a> {
    node: &'a Node,
    path: &'a str,
    /// Whether the node is a name, which may hold a repeat's iteration (`q${i}`).
    name: bool,
}

impl<'a> NodeDeserializer<'a> {
    /// A deserializer of `node` at `path`.
    pub fn new(node: &'a Node, path: &'a str) -> NodeDeserializer<'a> {
        NodeDeserializer { node, path, name: false }
    }

    /// A `${…}` left in text after a matrix's values went in is a repeat's iteration (the
    /// expansion refuses any other): it stands only in names, which read it themselves.
    fn iteration_outside_a_name(&self, text: &str) -> Result<(), DecodeError> {
        match text.find("${") {
            Some(start) if !self.name => {
                let reference = text[start..].find('}').map_or(&text[start..], |end| &text[start..=start + end]);
                Err(self.place(DecodeError::unplaced(Problem::Conflict(format!(
                    "`{reference}` (a repeat's iteration) stands only in names (`as:` and the names steps use), not here"
                )))))
            }
            _ => Ok(()),
        }
    }

    fn place(&self, e: DecodeError) -> DecodeError {
        e.place(self.node, self.path)
    }

    fn wrong_type(&self, expected: String) -> DecodeError {
        self.place(DecodeError::unplaced(Problem::WrongType { expected, found: String::new() }))
    }
}

/// `path.key` (or `key` at the top).
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

impl<'de> de::Deserializer<'de> for NodeDeserializer<'_> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let result = match &self.node.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Int(i) => match (u64::try_from(*i), i64::try_from(*i)) {
                (Ok(u), _) => visitor.visit_u64(u),
                (_, Ok(s)) => visitor.visit_i64(s),
                _ => visitor.visit_i128(*i),
            },
            Value::Float(x) => visitor.visit_f64(*x),
            Value::Str(s) => {
                self.iteration_outside_a_name(s)?;
                visitor.visit_str(s)
            }
            Value::Seq(items) => visitor.visit_seq(SeqReader { items, next: 0, path: self.path }),
            Value::Map(entries) => visitor.visit_map(MapReader { entries, next: 0, path: self.path }),
        };
        result.map_err(|e| self.place(e))
    }

    /// An optional key that is present must hold a value: `~` is refused as the value's type
    /// refuses it (the language leaves keys out rather than writing them empty).
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_some(self).map_err(|e| self.place(e))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let result = match (name, &self.node.value) {
            (LOCATED, _) => visitor.visit_seq(LocatedReader { de: self, next: 0 }),
            (NAME, _) => visitor.visit_newtype_struct(NodeDeserializer { name: true, ..self }),
            (ONE_OR_MANY, Value::Seq(_)) => visitor.visit_newtype_struct(self),
            (ONE_OR_MANY, _) => visitor.visit_seq(OneReader { de: Some(self) }),
            _ => visitor.visit_newtype_struct(self),
        };
        result.map_err(|e| self.place(e))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match &self.node.value {
            Value::Map(_) => self.deserialize_any(visitor),
            _ => Err(self.wrong_type(format!("a mapping with keys {}", fields.join(", ")))),
        }
    }

    /// A unit variant is a word (`drop`); any other is a mapping with the variant's name as its
    /// one key (`firmware: {...}`). An enum of words is named by a phrase (`wire fault`, serde's
    /// `rename`), which is what an unknown word is called; an enum of mappings keeps its Rust
    /// name (`FaultKind`), and a word where it belongs is a wrong type.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let of_words = !name.starts_with(|c: char| c.is_ascii_uppercase());
        let named = |mut e: DecodeError| {
            if let Problem::UnknownName { what, .. } = &mut e.problem
                && what.is_empty()
            {
                *what = name.to_string();
            }
            self.place(e)
        };
        match &self.node.value {
            Value::Str(s) if of_words => {
                self.iteration_outside_a_name(s)?;
                visitor.visit_enum(WordVariant { word: s, de: self }).map_err(named)
            }
            Value::Map(entries) if !of_words => match &entries[..] {
                [entry] => {
                    visitor.visit_enum(KeyVariant { entry, path: self.path, variants }).map_err(|e| self.place(e))
                }
                [] => Err(self.place(DecodeError::unplaced(Problem::MissingKey { key: variants.join("` or `") }))),
                [first, second, ..] => {
                    if let Some(unknown) = entries.iter().find(|e| !variants.contains(&e.key.as_str())) {
                        let problem = Problem::UnknownKey {
                            key: unknown.key.clone(),
                            suggestion: crate::suggest::closest(&unknown.key, variants.iter().copied())
                                .map(str::to_string),
                            valid: variants.iter().map(|s| s.to_string()).collect(),
                        };
                        return Err(
                            DecodeError::unplaced(problem).place_at(unknown.key_at, &join(self.path, &unknown.key))
                        );
                    }
                    let message = format!("one entry does one thing: found both `{}` and `{}`", first.key, second.key);
                    Err(self.place(DecodeError::unplaced(Problem::Conflict(message))))
                }
            },
            _ if of_words => Err(self.wrong_type(format!("one of {}", variants.join(", ")))),
            _ => Err(self.wrong_type(format!("a mapping with keys {}", variants.join(", ")))),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

/// The items of a list, each at `path[i]`.
struct SeqReader<'a> {
    items: &'a [Node],
    next: usize,
    path: &'a str,
}

impl<'de> de::SeqAccess<'de> for SeqReader<'_> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, DecodeError> {
        let Some(node) = self.items.get(self.next) else { return Ok(None) };
        let path = format!("{}[{}]", self.path, self.next);
        self.next += 1;
        seed.deserialize(NodeDeserializer::new(node, &path)).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len() - self.next)
    }
}

/// The entries of a mapping in file order, each value at `path.key`.
struct MapReader<'a> {
    entries: &'a [Entry],
    next: usize,
    path: &'a str,
}

impl<'de> de::MapAccess<'de> for MapReader<'_> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, DecodeError> {
        let Some(entry) = self.entries.get(self.next) else { return Ok(None) };
        let path = join(self.path, &entry.key);
        let key: de::value::StrDeserializer<'_, DecodeError> = entry.key.as_str().into_deserializer();
        seed.deserialize(key).map(Some).map_err(|e| e.place_at(entry.key_at, &path))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DecodeError> {
        let entry = &self.entries[self.next];
        self.next += 1;
        let path = join(self.path, &entry.key);
        seed.deserialize(NodeDeserializer::new(&entry.value, &path))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len() - self.next)
    }
}

/// A node read as [`Located`](super::Located): line, column, path, then the value.
struct LocatedReader<'a> {
    de: NodeDeserializer<'a>,
    next: u8,
}

impl<'de> de::SeqAccess<'de> for LocatedReader<'_> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, DecodeError> {
        let at = self.de.node.at;
        self.next += 1;
        match self.next {
            1 => seed.deserialize(U64Deserializer::<DecodeError>::new(at.line)).map(Some),
            2 => seed.deserialize(U64Deserializer::<DecodeError>::new(at.column)).map(Some),
            3 => seed.deserialize(StringDeserializer::<DecodeError>::new(self.de.path.to_string())).map(Some),
            4 => seed.deserialize(self.de).map(Some),
            _ => Ok(None),
        }
    }
}

/// One item written without a list, read as a list of it.
struct OneReader<'a> {
    de: Option<NodeDeserializer<'a>>,
}

impl<'de> de::SeqAccess<'de> for OneReader<'_> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, DecodeError> {
        self.de.take().map(|de| seed.deserialize(de)).transpose()
    }
}

/// A variant written as a word: a unit variant.
struct WordVariant<'a> {
    word: &'a str,
    de: NodeDeserializer<'a>,
}

impl<'de, 'a> de::EnumAccess<'de> for WordVariant<'a> {
    type Error = DecodeError;
    type Variant = WordVariant<'a>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, WordVariant<'a>), DecodeError> {
        let word: de::value::StrDeserializer<'_, DecodeError> = self.word.into_deserializer();
        Ok((seed.deserialize(word)?, self))
    }
}

impl<'de> de::VariantAccess<'de> for WordVariant<'_> {
    type Error = DecodeError;

    fn unit_variant(self) -> Result<(), DecodeError> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> Result<T::Value, DecodeError> {
        Err(self.de.wrong_type(format!("`{}` with a value", self.word)))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, DecodeError> {
        Err(self.de.wrong_type(format!("`{}` with a value", self.word)))
    }

    fn struct_variant<V: Visitor<'de>>(self, _: &'static [&'static str], _: V) -> Result<V::Value, DecodeError> {
        Err(self.de.wrong_type(format!("`{}` with a value", self.word)))
    }
}

/// A variant written as a mapping's one key, its value the variant's content.
struct KeyVariant<'a> {
    entry: &'a Entry,
    path: &'a str,
    variants: &'static [&'static str],
}

impl<'de, 'a> de::EnumAccess<'de> for KeyVariant<'a> {
    type Error = DecodeError;
    type Variant = VariantValue<'a>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, VariantValue<'a>), DecodeError> {
        let path = join(self.path, &self.entry.key);
        let key: de::value::StrDeserializer<'_, DecodeError> = self.entry.key.as_str().into_deserializer();
        // An unknown variant here is an unknown key, said with every key the mapping may have.
        let variant = seed.deserialize(key).map_err(|e| match e.problem {
            Problem::UnknownName { name, suggestion, .. } => DecodeError::unplaced(Problem::UnknownKey {
                key: name,
                suggestion,
                valid: self.variants.iter().map(|s| s.to_string()).collect(),
            })
            .place_at(self.entry.key_at, &path),
            _ => e.place_at(self.entry.key_at, &path),
        })?;
        Ok((variant, VariantValue { node: &self.entry.value, path }))
    }
}

/// The value of a [`KeyVariant`]: the node and its path.
struct VariantValue<'a> {
    node: &'a Node,
    path: String,
}

impl VariantValue<'_> {
    fn de(&self) -> NodeDeserializer<'_> {
        NodeDeserializer::new(self.node, &self.path)
    }
}

impl<'de> de::VariantAccess<'de> for VariantValue<'_> {
    type Error = DecodeError;

    fn unit_variant(self) -> Result<(), DecodeError> {
        match self.de().node.value {
            Value::Null => Ok(()),
            _ => Err(self.de().wrong_type("nothing".into())),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, DecodeError> {
        seed.deserialize(self.de())
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, DecodeError> {
        de::Deserializer::deserialize_seq(self.de(), visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        de::Deserializer::deserialize_struct(self.de(), "", fields, visitor)
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::yaml::node::{Pos, parse};
    use crate::yaml::{Located, OneOrMany};

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Open {
        nic: u32,
        #[serde(rename = "as")]
        alias: String,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Top {
        open: Open,
    }

    fn read<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, DecodeError> {
        T::deserialize(NodeDeserializer::new(&parse(text).unwrap(), "steps[0]"))
    }

    #[test]
    fn an_unknown_key_names_the_closest_valid_one_and_its_position() {
        let e = read::<Top>("open: {nic: 0, ass: a}\n").unwrap_err();
        assert_eq!(e.field, "steps[0].open.ass");
        assert_eq!(e.at, Pos { line: 1, column: 16 });
        assert!(matches!(&e.problem, Problem::UnknownKey { suggestion: Some(s), .. } if s == "as"), "{e}");
        assert!(e.to_string().ends_with("(did you mean `as`?); valid keys here: nic, as"), "{e}");
    }

    #[test]
    fn missing_keys_and_wrong_types_name_the_field() {
        let e = read::<Top>("open:\n  nic: 1\n").unwrap_err();
        assert_eq!((e.field.as_str(), e.at), ("steps[0].open", Pos { line: 2, column: 3 }));
        assert_eq!(e.problem, Problem::MissingKey { key: "as".into() });
        let e = read::<Top>("open: {nic: [1, 2], as: a}\n").unwrap_err();
        assert_eq!((e.field.as_str(), e.at), ("steps[0].open.nic", Pos { line: 1, column: 13 }));
        // The node says what it is, with more than serde's words for it.
        assert!(e.to_string().ends_with("found a list of 2"), "{e}");
        let e = read::<Top>("open: 7\n").unwrap_err();
        assert!(e.to_string().contains("expected a mapping with keys nic, as, found an integer (7)"), "{e}");
    }

    #[test]
    fn a_located_value_has_its_position_and_path() {
        let located = read::<Located<String>>("x").unwrap();
        assert_eq!(
            (located.value.as_str(), located.at, located.path.as_str()),
            ("x", Pos { line: 1, column: 1 }, "steps[0]")
        );
        let inner = read::<Vec<Located<u32>>>("[1,\n 2]").unwrap();
        assert_eq!((inner[1].value, inner[1].at.line, inner[1].path.as_str()), (2, 2, "steps[0][1]"));
    }

    #[test]
    fn one_item_or_a_list_of_them() {
        assert_eq!(read::<OneOrMany<String>>("a").unwrap().0, ["a"]);
        assert_eq!(read::<OneOrMany<String>>("[a, b]").unwrap().0, ["a", "b"]);
    }

    #[test]
    fn an_empty_value_is_not_an_absent_one() {
        let e = read::<Option<u32>>("~").unwrap_err();
        assert!(matches!(e.problem, Problem::WrongType { ref found, .. } if found == "nothing (null)"), "{e}");
    }
}
