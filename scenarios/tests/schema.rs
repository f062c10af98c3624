//! The JSON Schema of scenario files (docs/scenario.schema.json): the committed file is the one
//! the language's types make; every scenario of the suite and every example of
//! docs/scenarios.md passes it; the fixtures with wrong keys, types or missing keys fail it, as
//! they fail the decoder; and the decoder demands every key the schema requires.

use std::path::{Path, PathBuf};

use bnxt_rig::scenario::load::{load_str, scenario_files};
use bnxt_rig::scenario::{Scenario, schema, step_keywords};
use bnxt_rig::yaml::introspect::names;
use bnxt_rig::yaml::node::parse;
use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&schema::schema()).expect("the schema is a valid JSON Schema")
}

/// The problems the schema finds in `doc` (none when it passes).
fn problems(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path())).collect()
}

#[test]
fn the_committed_schema_is_the_one_the_types_make() {
    let committed = std::fs::read_to_string(repo().join("docs/scenario.schema.json")).unwrap();
    assert!(
        committed == schema::schema_text(),
        "docs/scenario.schema.json is out of date: run `cargo run -- schema -o docs/scenario.schema.json`"
    );
}

#[test]
fn every_scenario_of_the_suite_passes_the_schema() {
    let v = validator();
    let files = scenario_files(&repo().join("scenarios")).unwrap();
    assert!(files.len() >= 15, "{files:?}");
    for file in files {
        let doc = parse(&std::fs::read_to_string(&file).unwrap()).unwrap().to_json();
        let found = problems(&v, &doc);
        assert!(found.is_empty(), "{}: {found:#?}", file.display());
    }
}

/// The YAML examples of a markdown file, with their line numbers.
fn yaml_blocks(markdown: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in markdown.lines().enumerate() {
        match (&mut current, line.trim_start()) {
            (None, "```yaml") => current = Some((i + 2, String::new())),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some((_, text)), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// An example as a whole scenario file: a scenario as it is, a list of steps as the steps of
/// one, a `faults:` or `firmware:` block as that of one.
fn as_scenario(example: &Value) -> Value {
    let minimal = |steps: Value| json!({ "name": "example", "about": "An example.", "nics": 64, "steps": steps });
    match example {
        Value::Object(o) if o.contains_key("steps") => example.clone(),
        Value::Object(o) if o.contains_key("faults") || o.contains_key("firmware") => {
            let mut s = minimal(json!([{ "wait": "1s" }]));
            for key in ["faults", "firmware"] {
                if let Some(v) = o.get(key) {
                    s[key] = v.clone();
                }
            }
            s
        }
        Value::Array(_) => minimal(example.clone()),
        other => panic!("an example of an unknown kind: {other}"),
    }
}

#[test]
fn every_example_of_the_reference_passes_the_schema_and_the_decoder() {
    let v = validator();
    let doc = std::fs::read_to_string(repo().join("docs/scenarios.md")).unwrap();
    let blocks = yaml_blocks(&doc);
    assert!(blocks.len() > 25, "{} examples", blocks.len());
    let mut keywords_shown = std::collections::BTreeSet::new();
    for (line, text) in &blocks {
        let node = parse(text).unwrap_or_else(|e| panic!("docs/scenarios.md:{line}: {e}"));
        let scenario = as_scenario(&node.to_json());
        let found = problems(&v, &scenario);
        assert!(found.is_empty(), "docs/scenarios.md:{line}: {found:#?}\n{text}");
        for step in scenario["steps"].as_array().unwrap() {
            keywords_shown.extend(step.as_object().unwrap().keys().cloned());
        }
        // The decoder takes it too (as far as a fragment goes: the aliases it names may come
        // from steps the example leaves out).
        let yaml = serde_json::to_string(&scenario).unwrap();
        if let Err(errors) = load_str(Path::new("example.yaml"), &yaml) {
            let shape: Vec<_> = errors
                .iter()
                .filter(|e| !matches!(e.error.problem, bnxt_rig::yaml::Problem::UndefinedAlias { .. }))
                .filter(|e| !matches!(e.error.problem, bnxt_rig::yaml::Problem::WrongKind { .. }))
                .collect();
            assert!(shape.is_empty(), "docs/scenarios.md:{line}: {shape:#?}\n{text}");
        }
    }
    for keyword in step_keywords() {
        assert!(keywords_shown.contains(*keyword), "docs/scenarios.md has no example of `{keyword}`");
    }
}

#[test]
fn files_with_wrong_keys_types_or_missing_keys_fail_the_schema_too() {
    let v = validator();
    for name in [
        "typo-in-key",
        "typo-in-top-key",
        "typo-in-step-keyword",
        "missing-field",
        "missing-field-in-step",
        "wrong-type",
        "wrong-type-in-step",
        "two-steps-in-one",
        "bad-duration-unit",
        "repeat-zero",
        "unknown-target",
        "bad-size",
        "unknown-status",
    ] {
        let path = repo().join(format!("fixtures/bad-scenarios/{name}.yaml"));
        let doc = parse(&std::fs::read_to_string(&path).unwrap()).unwrap().to_json();
        assert!(!problems(&v, &doc).is_empty(), "{name} passes the schema");
    }
}

/// The keys the schema requires of step keyword `keyword`'s value.
fn required(schema: &Value, keyword: &str) -> Vec<String> {
    let steps = schema["$defs"]["Step"]["oneOf"].as_array().unwrap();
    let step = steps.iter().find(|s| s["title"] == keyword).unwrap_or_else(|| panic!("no step `{keyword}`"));
    let mut value = &step["properties"][keyword];
    if let Some(reference) = value["$ref"].as_str() {
        value = &schema["$defs"][reference.trim_start_matches("#/$defs/")];
    }
    value["required"].as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_string()).collect()
}

#[test]
fn the_decoder_demands_every_key_the_schema_requires() {
    let schema = schema::schema();
    // A step of each keyword that takes a mapping, with only its required keys.
    let examples = [
        ("open", "{nic: 0, as: a}"),
        ("region", "{on: a, as: r, bytes: 4096}"),
        ("qp", "{on: a, as: q}"),
        ("connect", "{qp: q, peer: p}"),
        ("send", "{qp: q, region: r, bytes: 64}"),
        ("read", "{qp: q, region: r, from: s, bytes: 64}"),
        ("complete", "{qp: q, side: send}"),
        ("compare", "{region: r, with: s, bytes: 64}"),
        ("room", "{qp: q, side: send, equals: 1}"),
        ("repeat", "{times: 1, steps: [wait: 1s]}"),
    ];
    for (keyword, body) in examples {
        let required = required(&schema, keyword);
        assert!(!required.is_empty(), "`{keyword}` requires nothing");
        let node = parse(body).unwrap();
        let bnxt_rig::yaml::Value::Map(entries) = &node.value else { panic!() };
        assert!(required.iter().all(|k| entries.iter().any(|e| &e.key == k)), "{keyword}: {required:?}");
        for key in &required {
            let kept: Vec<String> = entries
                .iter()
                .filter(|e| &e.key != key)
                .map(|e| format!("{}: {}", e.key, serde_json::to_string(&e.value.to_json()).unwrap()))
                .collect();
            let text = format!("name: t\nabout: x.\nnics: 2\nsteps:\n  - {keyword}: {{{}}}\n", kept.join(", "));
            let errors = load_str(Path::new("t.yaml"), &text).expect_err(&text);
            assert!(
                errors.iter().any(|e| e.error.problem == bnxt_rig::yaml::Problem::MissingKey { key: key.clone() }),
                "`{keyword}` without `{key}`: {errors:?}"
            );
        }
    }
    assert_eq!(names::<Scenario>().len(), schema["properties"].as_object().unwrap().len());
}
