//! The JSON Schema of scenario files, derived from the language's types ([`Scenario`] and
//! down), as docs/scenario.schema.json holds it (`bnxt-rig schema` writes it); editors complete
//! and check scenario files with it. A step's schema is made from [`Action`]'s: each keyword's
//! with `expect` and `timeout` beside it.

use std::borrow::Cow;

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value};

use super::Scenario;
use super::kinds::Time;
use super::steps::{Action, Expect, Step};

impl JsonSchema for Step {
    fn schema_name() -> Cow<'static, str> {
        "Step".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let expect = g.subschema_for::<Expect>().to_value();
        let mut timeout = Time::json_schema(g).to_value();
        timeout["description"] = STEP_TIMEOUT.into();
        let mut actions = Action::json_schema(g).to_value();
        let variants = actions.get_mut("oneOf").and_then(Value::as_array_mut).expect("an enum's schema is a oneOf");
        for variant in variants.iter_mut() {
            let keyword = variant["required"][0].as_str().expect("a variant's schema requires its keyword").to_string();
            variant["title"] = keyword.into();
            let properties = variant["properties"].as_object_mut().expect("a variant's schema has properties");
            properties.insert("expect".into(), expect.clone());
            properties.insert("timeout".into(), timeout.clone());
        }
        let variants = actions["oneOf"].take();
        json_schema!({ "description": "A step: one step keyword, and optionally `expect` and `timeout`.", "oneOf": variants })
    }
}

const STEP_TIMEOUT: &str =
    "The longest one run of the step may take on the target's clock; past it the verdict is TIMEOUT.";

/// The settings every schema here is made with: JSON Schema 2020-12, and absent keys are
/// absent (YAML's `~` is not a value the language takes).
fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with_transform(RecursiveTransform(no_null as fn(&mut Schema)))
}

/// Take `null` out of a schema: an optional key is left out, never written `~`.
fn no_null(schema: &mut Schema) {
    let Some(o) = schema.as_object_mut() else { return };
    if o.get("default").is_some_and(Value::is_null) {
        o.remove("default");
    }
    if let Some(Value::Array(types)) = o.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types[0].clone();
            o.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(any)) = o.get_mut("anyOf") {
        any.retain(|s| s.get("type").and_then(Value::as_str) != Some("null"));
        if any.len() == 1 {
            let only = any.remove(0);
            o.remove("anyOf");
            if let Value::Object(inner) = only {
                for (k, v) in inner {
                    o.entry(k).or_insert(v);
                }
            }
        }
    }
}

/// The JSON Schema of a scenario file, as docs/scenario.schema.json holds it.
pub fn schema() -> Value {
    let generated = settings().into_generator().into_root_schema_for::<Scenario>().to_value();
    let Value::Object(mut rest) = generated else { unreachable!("a root schema is an object") };
    // The identifying keys first, as people read a schema file.
    let mut root = Map::new();
    root.insert("$schema".into(), rest.remove("$schema").unwrap_or(Value::Null));
    root.insert("$id".into(), "https://bnxt-rig.invalid/scenario.schema.json".into());
    root.insert("title".into(), rest.remove("title").unwrap_or(Value::Null));
    root.insert(
        "description".into(),
        "A bnxt-rig scenario: what to do with the NICs of a machine and what must happen. \
         docs/scenarios.md is the reference."
            .into(),
    );
    rest.remove("description");
    root.extend(rest);
    Value::Object(root)
}

/// The schema as docs/scenario.schema.json holds it: pretty JSON with a final newline.
pub fn schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&schema()).expect("a schema serialises");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::faults::FaultKind;
    use crate::scenario::step_keywords;
    use crate::scenario::steps::ReadStep;
    use crate::yaml::introspect::names;

    #[test]
    fn keys_come_in_declaration_order_with_renames() {
        assert_eq!(names::<ReadStep>(), ["qp", "region", "at", "from", "from_at", "bytes"]);
        assert_eq!(names::<Scenario>()[..4], ["name", "about", "targets", "nics"]);
        assert_eq!(names::<FaultKind>(), ["firmware", "wire"]);
    }

    #[test]
    fn the_schema_has_every_step_and_fault() {
        let schema = schema();
        let step = &schema["$defs"]["Step"]["oneOf"];
        let titles: Vec<&str> = step.as_array().unwrap().iter().map(|v| v["title"].as_str().unwrap()).collect();
        assert_eq!(titles, step_keywords());
        for variant in step.as_array().unwrap() {
            assert_eq!(variant["additionalProperties"], false, "{variant}");
            assert!(variant["properties"]["expect"].is_object() && variant["properties"]["timeout"].is_object());
        }
        let faults = &schema["$defs"]["Fault"]["oneOf"];
        assert_eq!(faults.as_array().unwrap().len(), names::<FaultKind>().len());
        assert_eq!(schema["additionalProperties"], false);
        assert!(schema["properties"]["nics"]["description"].as_str().unwrap().contains("NICs"));
        // The model's vocabulary, with its own descriptions.
        assert_eq!(schema["$defs"]["WireFaultKind"]["oneOf"].as_array().unwrap().len(), 5);
    }
}
