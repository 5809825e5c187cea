//! Every public serializable type of rein-tool round-trips through `serde_json` unchanged.

use std::time::Duration;

use proptest::prelude::*;
use rein_tool::{Annotations, Digest, RiskLevel, ToolError, ToolName, ToolOutput, ToolSpec};
use serde_json::{Value, json};

fn round_trip<T>(value: &T) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    serde_json::from_str(&serde_json::to_string(value).unwrap()).unwrap()
}

fn name() -> impl Strategy<Value = ToolName> {
    "[a-z][a-z0-9_.-]{0,20}".prop_map(|s| ToolName::new(s).unwrap())
}

fn annotations() -> impl Strategy<Value = Annotations> {
    (
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        proptest::sample::select(RiskLevel::ALL.to_vec()),
        any::<bool>(),
        proptest::option::of(0u64..100_000),
    )
        .prop_map(|(kind, idempotent, cacheable, risk, approval, timeout)| {
            let base = match kind {
                0 => Annotations::read_only(),
                1 => Annotations::side_effecting(),
                _ => Annotations::destructive(),
            };
            // Caching is only meaningful (and only persisted) for read-only tools.
            let mut a = base
                .with_idempotent(idempotent)
                .with_cacheable(cacheable && base.is_read_only())
                .with_risk(risk);
            if approval {
                a = a.with_approval_required();
            }
            if let Some(ms) = timeout {
                a = a.with_timeout(Duration::from_millis(ms));
            }
            a
        })
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[ -~]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn annotations_round_trip(a in annotations()) {
        prop_assert_eq!(round_trip(&a), a);
    }

    #[test]
    fn specs_round_trip(name in name(), description in "[ -~]{0,30}", schema in json_value(), out in proptest::option::of(json_value()), a in annotations()) {
        let mut spec = ToolSpec::new(name, description).with_input_schema(schema).with_annotations(a);
        if let Some(out) = out {
            spec = spec.with_output_schema(out);
        }
        prop_assert_eq!(round_trip(&spec), spec);
    }

    #[test]
    fn outputs_and_digests_round_trip(v in json_value()) {
        let out = ToolOutput::new(v.clone());
        prop_assert_eq!(round_trip(&out), out);
        let d = Digest::of_json(&v);
        prop_assert_eq!(round_trip(&d), d);
    }

    #[test]
    fn errors_round_trip(tool in name(), message in "[ -~]{0,20}", ms in 0u64..1_000_000) {
        for e in [
            ToolError::invalid_input(message.clone()),
            ToolError::failed(message.clone()),
            ToolError::transient(message.clone()),
            ToolError::TimedOut { after: Duration::from_millis(ms) },
            ToolError::Panicked { message },
            ToolError::Cancelled,
            ToolError::CircuitOpen { tool: tool.clone(), retry_after: Duration::from_millis(ms) },
            ToolError::Overloaded { tool },
        ] {
            prop_assert_eq!(round_trip(&e), e);
        }
    }
}

#[test]
fn a_spec_without_schema_accepts_any_object() {
    let spec: ToolSpec = serde_json::from_value(json!({"name": "t"})).unwrap();
    assert_eq!(spec.input_schema(), &json!({"type": "object"}));
    assert_eq!(spec.annotations(), &Annotations::side_effecting());
}
