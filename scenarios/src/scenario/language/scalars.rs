//! Schemas of the language's scalar values (NIC indices, aliases, durations, sizes, switches),
//! each also accepting a `${name}` reference, which a `matrix:` file may put anywhere.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::{Value, json};

use crate::scenario::MAX_NICS;
use crate::scenario::values::MAX_SIZE;

/// A `${name}` reference to a matrix value.
fn matrix_reference() -> Value {
    json!({
        "type": "string",
        "pattern": r"\$\{[A-Za-z][A-Za-z0-9_-]*\}",
        "description": "A reference to a value of the file's matrix."
    })
}

/// `schema`, or a matrix reference.
pub fn or_reference(schema: Value) -> Schema {
    let description = schema.get("description").cloned();
    let mut both = json!({ "anyOf": [schema, matrix_reference()] });
    if let Some(d) = description {
        both["description"] = d;
    }
    Schema::try_from(both).expect("an object is a schema")
}

/// An integer from `min` to `max`.
pub fn integer(min: u64, max: u64) -> Schema {
    or_reference(json!({ "type": "integer", "minimum": min, "maximum": max }))
}

/// A NIC index: 0 to 63.
pub fn nic_index(_: &mut SchemaGenerator) -> Schema {
    integer(0, MAX_NICS as u64 - 1)
}

/// A number of NICs: 1 to 64.
pub fn nic_count(_: &mut SchemaGenerator) -> Schema {
    integer(1, MAX_NICS as u64)
}

/// A count from 0.
pub fn count(_: &mut SchemaGenerator) -> Schema {
    integer(0, u64::from(u32::MAX))
}

/// A count from 1.
pub fn positive(_: &mut SchemaGenerator) -> Schema {
    integer(1, u64::from(u32::MAX))
}

/// A seed.
pub fn seed(_: &mut SchemaGenerator) -> Schema {
    or_reference(json!({ "type": "integer", "minimum": 0 }))
}

/// The pattern of an alias or tag.
pub const WORD_PATTERN: &str = "^[A-Za-z][A-Za-z0-9_-]{0,39}$";

/// An alias: a name a step gave a NIC, a region or a queue pair.
pub fn alias(_: &mut SchemaGenerator) -> Schema {
    or_reference(json!({ "type": "string", "pattern": WORD_PATTERN }))
}

/// A list of aliases, or one.
pub fn aliases(g: &mut SchemaGenerator) -> Schema {
    let one = alias(g).to_value();
    json_schema!({ "anyOf": [one, { "type": "array", "items": one }] })
}

/// A NIC index or an alias.
pub fn nic_ref(g: &mut SchemaGenerator) -> Schema {
    json_schema!({ "anyOf": [nic_index(g).to_value(), alias(g).to_value()] })
}

/// A tag.
pub fn tags(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "array", "items": { "type": "string", "pattern": WORD_PATTERN } })
}

/// A scenario name.
pub fn scenario_name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": r"^([A-Za-z0-9._-]|\$\{[A-Za-z][A-Za-z0-9_-]*\}){1,100}$" })
}

/// The pattern of a duration.
pub const DURATION_PATTERN: &str = r"^\s*[0-9]+(\.[0-9]+)?\s*(ns|us|µs|ms|s|m|min|h)\s*$";

/// A duration: a number and a unit.
pub fn duration(_: &mut SchemaGenerator) -> Schema {
    or_reference(json!({ "type": "string", "pattern": DURATION_PATTERN }))
}

/// The pattern of a size written with a unit.
pub const SIZE_PATTERN: &str = r"^\s*[0-9]+(\.[0-9]+)?\s*(B|KiB|MiB|GiB)?\s*$";

/// A size: bytes, or a number with KiB, MiB or GiB.
pub fn size(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [
            { "type": "integer", "minimum": 0, "maximum": MAX_SIZE },
            { "type": "string", "pattern": SIZE_PATTERN },
            matrix_reference()
        ]
    })
}

/// A switch: on or off.
pub fn switch(_: &mut SchemaGenerator) -> Schema {
    or_reference(json!({
        "anyOf": [
            { "type": "boolean" },
            { "type": "string", "pattern": "^([Oo][Nn]|[Oo][Ff][Ff]|[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|[Yy][Ee][Ss]|[Nn][Oo])$" }
        ]
    }))
}

/// A probability: 0 to 1.
pub fn probability(_: &mut SchemaGenerator) -> Schema {
    or_reference(json!({ "type": "number", "minimum": 0, "maximum": 1 }))
}

/// One of `names`.
pub fn one_of(names: &[&str]) -> Schema {
    or_reference(json!({ "type": "string", "enum": names }))
}

/// Free text (a regular expression, a sentence).
pub fn text(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string" })
}
