//! The scenario language's shape as Rust types: every key, whether it is required, and what
//! kind of value it takes. It is the one source of two things:
//!
//! - the JSON Schema of scenario files ([`schema`], written to docs/scenario.schema.json by
//!   `bnxt-rig schema`), with which editors complete and check scenario files;
//! - the keys the decoder accepts in each mapping ([`keys`], [`step_keywords`],
//!   [`fault_kinds`]), so an unknown key is refused, with the closest valid one, by the same list
//!   the schema states.
//!
//! The types are never built: they exist for their shape. What a schema cannot say (aliases
//! defined before use, regular expressions that compile, names of HWRM requests) the decoder and
//! the checks say.

#![allow(dead_code)]

pub mod faults;
pub mod scalars;
pub mod steps;

use std::any::TypeId;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value, json};

use super::Capability;

/// A scenario file.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields, title = "bnxt-rig scenario")]
pub struct ScenarioFile {
    /// Unique name: letters, digits, `-`, `_`, `.` (with a matrix, it uses every matrix name as
    /// `${name}`).
    #[schemars(schema_with = "scalars::scenario_name")]
    pub name: String,
    /// What the scenario shows, in a sentence.
    pub about: String,
    /// The kinds of target it runs on; leave it out to run everywhere.
    #[schemars(default, schema_with = "target_kinds")]
    pub targets: Option<Vec<String>>,
    /// How many NICs the machine has (1 to 64).
    #[schemars(schema_with = "scalars::nic_count")]
    pub nics: u32,
    /// Seed of every random choice (MAC addresses, wire faults, data fills); 0 when absent,
    /// `--seed` overrides.
    #[schemars(default, schema_with = "scalars::seed")]
    pub seed: Option<u64>,
    /// Words to select scenarios with (`--tag`, `--skip-tag`).
    #[schemars(default, schema_with = "scalars::tags")]
    pub tags: Option<Vec<String>>,
    /// The longest the scenario may take on the target's clock (virtual time on the model);
    /// past it the verdict is TIMEOUT.
    #[schemars(default, schema_with = "scalars::duration")]
    pub timeout: Option<String>,
    /// Do not run the scenario, for this reason (it is reported as skipped).
    pub skip: Option<Skip>,
    /// What a target must be able to do to run the scenario (faults, inspect steps and RoCE
    /// steps imply their own); elsewhere it is skipped with the reason.
    #[schemars(default, schema_with = "capabilities")]
    pub requires: Option<Vec<String>>,
    /// Values that make several scenarios of the file: every combination is one, and `${name}`
    /// stands for its value anywhere in the file.
    #[schemars(default, schema_with = "matrix")]
    pub matrix: Option<HashMap<String, Vec<String>>>,
    /// What the target injects.
    #[schemars(default, schema_with = "fault_list")]
    pub faults: Option<Vec<()>>,
    /// What every NIC's firmware advertises beyond its defaults (targets that can set it: the
    /// model's; elsewhere the scenario is skipped).
    pub firmware: Option<Firmware>,
    /// What to do, in order.
    #[schemars(schema_with = "steps::step_list")]
    pub steps: Vec<()>,
}

/// `firmware`: what every NIC's firmware advertises beyond its defaults.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Firmware {
    /// The firmware states resource limits of its own (FUNC_QCAPS `flags_ext2`
    /// SW_MAX_RESOURCE_LIMITS_SUPPORTED), and its MRAV context type the address vectors it keeps:
    /// the driver then holds every queue pair the firmware holds and the MRAV entries less those
    /// address vectors as regions.
    #[schemars(default, schema_with = "scalars::switch")]
    pub resource_limits: Option<bool>,
    /// Queue pairs the firmware destroys fast (the QP context type's third split entry), which
    /// the driver adds beyond its 65,536 without firmware limits (0 to 65535).
    #[schemars(default, range(max = 65535))]
    pub fast_destroy_qps: Option<u32>,
}

/// `skip`: why a scenario is not run.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Skip {
    /// Why (said in the report).
    pub reason: String,
}

fn target_kinds(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "array", "minItems": 1, "items": scalars::one_of(crate::target::KINDS).to_value() })
}

fn capabilities(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "array", "items": scalars::one_of(&Capability::ALL.map(|(_, n)| n)).to_value() })
}

fn matrix(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "minProperties": 1,
        "propertyNames": { "pattern": scalars::WORD_PATTERN },
        "additionalProperties": {
            "type": "array",
            "minItems": 1,
            "items": { "type": ["string", "integer", "boolean"] }
        }
    })
}

fn fault_list(g: &mut SchemaGenerator) -> Schema {
    let fault = g.subschema_for::<FaultEntry>().to_value();
    json_schema!({ "type": "array", "items": fault })
}

/// How a keyword's value is described: its schema, made by the generator.
type MakeSchema = fn(&mut SchemaGenerator) -> Schema;

/// Every step keyword, with what the step does and the schema of its value.
pub const STEPS: &[(&str, &str, MakeSchema)] = &[
    ("open", "Open a NIC and name it.", |g| g.subschema_for::<steps::Open>()),
    ("close", "Close a NIC, by its alias (a second close does nothing).", scalars::alias),
    ("config", "The NIC's PCI config-space state.", |g| g.subschema_for::<steps::Config>()),
    ("identity", "Who an open NIC is.", |g| g.subschema_for::<steps::Identity>()),
    ("limits", "An open NIC's queue-pair and region limits.", |g| g.subschema_for::<steps::Limits>()),
    ("count", "How many NICs the machine has.", |g| g.subschema_for::<steps::Count>()),
    ("wait", "Let time pass on the target's clock.", scalars::duration),
    ("repeat", "Steps several times.", |g| g.subschema_for::<steps::Repeat>()),
    ("inspect", "What the model sees of a NIC (model only).", |g| g.subschema_for::<steps::Inspect>()),
    ("region", "Register memory on a NIC.", |g| g.subschema_for::<steps::Region>()),
    ("deregister", "Give a region back, by its name.", scalars::alias),
    ("qp", "Make a queue pair on a NIC.", |g| g.subschema_for::<steps::Qp>()),
    ("connect", "Connect two queue pairs to each other.", |g| g.subschema_for::<steps::Connect>()),
    ("send", "Post a send.", |g| g.subschema_for::<steps::Transfer>()),
    ("receive", "Post a receive.", |g| g.subschema_for::<steps::Transfer>()),
    ("read", "Post an RDMA READ between two regions of one NIC.", |g| g.subschema_for::<steps::Read>()),
    ("complete", "The next completions of a ring.", |g| g.subschema_for::<steps::Complete>()),
    ("compare", "Two ranges of regions hold the same bytes.", |g| g.subschema_for::<steps::Compare>()),
    ("room", "How many more entries a ring takes.", |g| g.subschema_for::<steps::Room>()),
    ("destroy", "Destroy a queue pair, by its name.", scalars::alias),
];

/// The keys a step may have besides its keyword.
pub const STEP_EXTRAS: &[&str] = &["expect", "timeout"];

/// Every step keyword, in the order of [`STEPS`].
pub fn step_keywords() -> &'static [&'static str] {
    static KEYWORDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KEYWORDS.get_or_init(|| STEPS.iter().map(|(k, _, _)| *k).collect())
}

/// Every key a step may have: the keywords, then [`STEP_EXTRAS`].
pub fn step_keys() -> &'static [&'static str] {
    static KEYS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KEYS.get_or_init(|| step_keywords().iter().chain(STEP_EXTRAS).copied().collect())
}

/// One step: a mapping with one step keyword, and optionally `expect` and `timeout`.
pub struct StepEntry;

impl JsonSchema for StepEntry {
    fn schema_name() -> Cow<'static, str> {
        "Step".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let expect = g.subschema_for::<steps::Expect>().to_value();
        let timeout = scalars::duration(g).to_value();
        let variants: Vec<Value> = STEPS
            .iter()
            .map(|(keyword, about, make)| {
                let mut properties = Map::new();
                properties.insert((*keyword).to_string(), make(g).to_value());
                properties.insert("expect".into(), expect.clone());
                properties.insert("timeout".into(), with_description(timeout.clone(), STEP_TIMEOUT));
                json!({
                    "type": "object",
                    "title": keyword,
                    "description": about,
                    "properties": properties,
                    "required": [keyword],
                    "additionalProperties": false
                })
            })
            .collect();
        json_schema!({ "description": "A step: one step keyword, and optionally `expect` and `timeout`.", "oneOf": variants })
    }
}

const STEP_TIMEOUT: &str =
    "The longest one run of the step may take on the target's clock; past it the verdict is TIMEOUT.";

fn with_description(mut schema: Value, description: &str) -> Value {
    if let Some(o) = schema.as_object_mut() {
        o.insert("description".into(), description.into());
    }
    schema
}

/// Every kind of fault, with what it is and the schema of its value.
pub const FAULTS: &[(&str, &str, MakeSchema)] = &[
    ("firmware", "The firmware misbehaves on one HWRM request or RoCE command of one NIC.", |g| {
        g.subschema_for::<faults::Firmware>()
    }),
    ("wire", "The wire between the NICs misbehaves.", |g| g.subschema_for::<faults::Wire>()),
];

/// Every fault kind, in the order of [`FAULTS`].
pub fn fault_kinds() -> &'static [&'static str] {
    static KINDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KINDS.get_or_init(|| FAULTS.iter().map(|(k, _, _)| *k).collect())
}

/// One entry of `faults`: a mapping with one fault kind.
pub struct FaultEntry;

impl JsonSchema for FaultEntry {
    fn schema_name() -> Cow<'static, str> {
        "Fault".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let variants: Vec<Value> = FAULTS
            .iter()
            .map(|(kind, about, make)| {
                json!({
                    "type": "object",
                    "title": kind,
                    "description": about,
                    "properties": { *kind: make(g).to_value() },
                    "required": [kind],
                    "additionalProperties": false
                })
            })
            .collect();
        json_schema!({ "description": "A fault: one fault kind.", "oneOf": variants })
    }
}

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
    let generated = settings().into_generator().into_root_schema_for::<ScenarioFile>().to_value();
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

/// The keys of the mapping `T` describes, in the order its type declares them.
pub fn keys<T: JsonSchema + 'static>() -> &'static [&'static str] {
    static KEYS: OnceLock<Mutex<HashMap<TypeId, &'static [&'static str]>>> = OnceLock::new();
    let table = KEYS.get_or_init(Default::default);
    let mut table = table.lock().unwrap_or_else(|e| e.into_inner());
    table.entry(TypeId::of::<T>()).or_insert_with(|| {
        let schema = settings().into_generator().into_root_schema_for::<T>().to_value();
        let names: Vec<&'static str> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(|k| &*Box::leak(k.clone().into_boxed_str())).collect())
            .unwrap_or_default();
        Box::leak(names.into_boxed_slice())
    })
}

/// The keys `T` requires.
pub fn required<T: JsonSchema>() -> Vec<String> {
    let schema = settings().into_generator().into_root_schema_for::<T>().to_value();
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_in_declaration_order_with_renames() {
        assert_eq!(keys::<steps::Open>(), ["nic", "as"]);
        assert_eq!(keys::<steps::Read>(), ["qp", "region", "at", "from", "from_at", "bytes"]);
        assert_eq!(required::<steps::Read>(), ["qp", "region", "from", "bytes"]);
        assert_eq!(keys::<ScenarioFile>()[..4], ["name", "about", "targets", "nics"]);
    }

    #[test]
    fn the_schema_has_every_step_and_fault() {
        let schema = schema();
        let step = &schema["$defs"]["Step"]["oneOf"];
        let titles: Vec<&str> = step.as_array().unwrap().iter().map(|v| v["title"].as_str().unwrap()).collect();
        assert_eq!(titles, step_keywords());
        let faults = &schema["$defs"]["Fault"]["oneOf"];
        assert_eq!(faults.as_array().unwrap().len(), fault_kinds().len());
        assert_eq!(schema["additionalProperties"], false);
        assert!(schema["properties"]["nics"]["description"].as_str().unwrap().contains("NICs"));
    }
}
