//! The published JSON Schema of scenario files: it compiles, every example validates
//! against it, and it lists exactly the fields rein accepts (compared with what the binary
//! itself says when it meets an unknown field).

mod support;

use std::collections::BTreeSet;

use serde_json::{Value, json};
use support::{Outcome, Scratch, example_names, examples_dir, rein};

fn schema() -> Value {
    let outcome = Outcome::of(&rein().args(["schema", "scenario"]).output().unwrap());
    outcome.expect_code(0);
    serde_json::from_str(&outcome.stdout).unwrap()
}

#[test]
fn every_example_validates_against_the_schema() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    for name in example_names() {
        let text = std::fs::read_to_string(examples_dir().join(&name)).unwrap();
        let scenario: Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&scenario)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
}

#[test]
fn the_schema_rejects_what_rein_rejects() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let base = json!({"goal": "g", "planner": {"scripted": []}});
    assert!(validator.is_valid(&base));
    for good in [
        json!({"builtin": "shell.run", "shell": {"allow": ["cargo"], "timeout_ms": 5000, "output_cap": 100, "env": ["PATH"]}}),
        json!({"kind": "builtin", "name": "shell.run", "shell": {"allow": ["cargo"]}}),
        json!({"builtin": "http.fetch"}),
        json!({"builtin": "http.fetch", "http": {"allow_hosts": ["api.example.com"], "post": true}}),
        json!({"builtin": "fs.read"}),
    ] {
        let scenario = json!({"goal": "g", "planner": {"scripted": []}, "tools": [good]});
        assert!(
            validator.is_valid(&scenario),
            "the schema refuses {scenario}"
        );
    }
    for bad in [
        json!({"goal": "g"}),
        json!({"goal": "g", "planner": {"scripted": []}, "goals": 1}),
        json!({"goal": "g", "planner": {"scripted": []}, "policies": {"budgets": {"tool_calls": -1}}}),
        json!({"goal": "g", "planner": {"scripted": [{"decision": {"type": "jump"}}]}}),
        json!({"goal": "g", "planner": {"scripted": [{"decision": {"type": "fail", "reason": "r"}, "when": "last_tool_failed"}]}}),
        json!({"goal": "g", "planner": {"scripted": []}, "tools": [{"builtin": "fs.read", "delay_ms": 1}]}),
        json!({"goal": "g", "planner": {"scripted": []}, "tools": [{"fixture": "t"}]}),
        json!({"goal": "g", "planner": {"scripted": []}, "tools": [{"fixture": "t", "behavior": "echo", "annotations": {"read_only": true, "destructive": true}}]}),
        json!({"goal": "g", "planner": {"scripted": []}, "approver": "maybe"}),
        json!({"goal": "g", "planner": {"scripted": []}, "tools": [{"builtin": "shell.run"}]}),
        json!({"goal": "g", "planner": {"scripted": []}, "tools": [{"builtin": "shell.run", "shell": {"allow": []}}]}),
        json!({"goal": "g", "planner": {"scripted": []}, "tools": [{"builtin": "fs.read", "shell": {"allow": ["ls"]}}]}),
        json!({"goal": "g", "planner": {"scripted": []}, "tools": [{"builtin": "http.fetch", "http": {"allow_hosts": ["https://x.org/"]}}]}),
        json!({"goal": "g", "planner": {"scripted": []}, "tools": [{"builtin": "http.fetch", "shell": {"allow": ["ls"]}}]}),
        json!({"goal": "g", "planner": {"scripted": []}, "resilience": {"retry": {"max_attempts": 0}}}),
    ] {
        assert!(!validator.is_valid(&bad), "the schema accepts {bad}");
    }
}

/// The fields rein names when it meets an unknown field `zzz` placed by `with_unknown`.
fn accepted_fields(scratch: &Scratch, with_unknown: &Value) -> BTreeSet<String> {
    let file = scratch.write("probe.json", &with_unknown.to_string());
    let outcome = Outcome::of(&rein().arg("validate").arg(file).output().unwrap());
    outcome.expect_code(2);
    let line = outcome.stderr.lines().next().unwrap();
    let (_, expected) = line
        .split_once("expected")
        .unwrap_or_else(|| panic!("no field list in {line}"));
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The property names of the schema objects at `pointers` (`|`-separated: their union).
fn schema_fields(schema: &Value, pointers: &str) -> BTreeSet<String> {
    let mut fields = BTreeSet::new();
    for pointer in pointers.split('|') {
        let object = schema
            .pointer(pointer)
            .unwrap_or_else(|| panic!("no {pointer}"));
        let properties = object["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{pointer} has no properties"));
        fields.extend(properties.keys().cloned());
    }
    fields
}

#[test]
fn the_schema_lists_exactly_the_accepted_fields() {
    let scratch = Scratch::new();
    let schema = schema();
    let planner = json!({"scripted": []});
    let cases = [
        ("", json!({"goal": "g", "planner": planner, "zzz": 1})),
        (
            "/$defs/policies",
            json!({"goal": "g", "planner": planner, "policies": {"zzz": 1}}),
        ),
        (
            "/$defs/policies/properties/approvals",
            json!({"goal": "g", "planner": planner, "policies": {"approvals": {"zzz": 1}}}),
        ),
        (
            "/$defs/resilience",
            json!({"goal": "g", "planner": planner, "resilience": {"zzz": 1}}),
        ),
        (
            "/$defs/resilience/properties/retry",
            json!({"goal": "g", "planner": planner, "resilience": {"retry": {"max_attempts": 1, "zzz": 1}}}),
        ),
        (
            "/$defs/resilience/properties/breaker",
            json!({"goal": "g", "planner": planner, "resilience": {"breaker": {"consecutive_failures": 1, "zzz": 1}}}),
        ),
        (
            "/$defs/tool/oneOf/0|/$defs/tool/oneOf/1|/$defs/tool/oneOf/2|/$defs/tool/oneOf/3|/$defs/tool/oneOf/4|/$defs/tool/oneOf/5",
            json!({"goal": "g", "planner": planner, "tools": [{"zzz": 1}]}),
        ),
        (
            "/$defs/shellConfig",
            json!({"goal": "g", "planner": planner, "tools": [{"builtin": "shell.run", "shell": {"allow": ["echo"], "zzz": 1}}]}),
        ),
        (
            "/$defs/httpConfig",
            json!({"goal": "g", "planner": planner, "tools": [{"builtin": "http.fetch", "http": {"zzz": 1}}]}),
        ),
        (
            "/$defs/annotations",
            json!({"goal": "g", "planner": planner, "tools": [{"fixture": "t", "behavior": "echo", "annotations": {"zzz": 1}}]}),
        ),
        (
            "/$defs/approver/oneOf/1/properties/scripted/items",
            json!({"goal": "g", "planner": planner, "approver": {"scripted": [{"answer": "grant", "zzz": 1}]}}),
        ),
        (
            "/$defs/step",
            json!({"goal": "g", "planner": {"scripted": [{"decision": {"type": "fail", "reason": "r"}, "zzz": 1}]}}),
        ),
    ];
    for (pointer, probe) in cases {
        let mut fields = accepted_fields(&scratch, &probe);
        if pointer.is_empty() {
            // serde names the `$schema` key like any other.
            assert!(fields.contains("$schema"));
        }
        fields.remove("zzz");
        assert_eq!(
            schema_fields(&schema, pointer),
            fields,
            "schema {pointer:?}"
        );
    }
}

#[test]
fn the_printed_schema_is_the_published_file() {
    let file = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schema/scenario.schema.json"
    ))
    .unwrap();
    let outcome = Outcome::of(&rein().args(["schema", "scenario"]).output().unwrap());
    assert_eq!(outcome.stdout, file);
}
