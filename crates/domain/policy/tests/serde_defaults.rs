//! Every field of every policy type defaults to the same value whether the whole object or
//! only that field is omitted (issue 10, item 1: `approvals` with only `timeout_ms` set
//! used to drop the `min_risk: high` rule and fail open).

use rein_policy::{ApprovalPolicy, Budget, EligibilityRules, PolicySnapshot, Transitions};
use rein_tool::{Annotations, ToolSpec};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// For every subset of `full`'s fields, removes them, reads the rest (plus `required`) as
/// `T` and checks that each removed field reads back as in `T::default()` and each kept one
/// as in `full` read back. `default` is `T::default()` as JSON (a skipped field is absent).
fn check<T: Serialize + DeserializeOwned>(
    name: &str,
    default: &Value,
    required: &Value,
    full: &Value,
) {
    let read = |fields: &Map<String, Value>| -> Result<Value, String> {
        let mut input = required.as_object().cloned().unwrap_or_default();
        input.extend(fields.clone());
        let input = Value::Object(input);
        serde_json::from_value::<T>(input.clone())
            .map(|t| json_of(&t))
            .map_err(|e| format!("{name}: {input} does not read: {e}"))
    };
    let full = full.as_object().expect("a sample is an object");
    let full_back = read(full).unwrap_or_else(|e| panic!("{e}"));
    let keys: Vec<&String> = full.keys().collect();
    assert!(keys.len() < 16, "{name}: too many fields to enumerate");
    for mask in 0u32..(1 << keys.len()) {
        let mut kept = Map::new();
        let mut omitted = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            if mask & (1 << i) == 0 {
                kept.insert((*key).clone(), full[*key].clone());
            } else {
                omitted.push(*key);
            }
        }
        let back = read(&kept).unwrap_or_else(|e| panic!("{e}"));
        for key in &keys {
            let want = if omitted.contains(key) {
                default.get(*key)
            } else {
                full_back.get(*key)
            };
            assert_eq!(
                back.get(*key),
                want,
                "{name}: with {kept:?}, field `{key}` reads otherwise than expected"
            );
        }
    }
}

fn json_of<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("serializes")
}

#[test]
fn approval_policy_fields_default_like_the_whole_policy() {
    let default = json_of(&ApprovalPolicy::default());
    assert_eq!(default["min_risk"], json!("high"));
    check::<ApprovalPolicy>(
        "ApprovalPolicy",
        &default,
        &json!({}),
        &json!({
            "destructive": false,
            "min_risk": "low",
            "tools": ["deploy"],
            "exempt": ["ls"],
            "timeout_ms": 5,
            "mode": "durable",
        }),
    );
    // `null` stays an explicit "no risk rule", distinct from an omitted field.
    check::<ApprovalPolicy>(
        "ApprovalPolicy",
        &default,
        &json!({}),
        &json!({"min_risk": null, "timeout_ms": 30000}),
    );
}

#[test]
fn the_approval_mode_defaults_to_in_process_and_is_recorded_only_when_durable() {
    use rein_policy::ApprovalMode;
    let omitted: ApprovalPolicy = serde_json::from_value(json!({"timeout_ms": 5})).unwrap();
    assert_eq!(omitted.mode(), ApprovalMode::InProcess);
    // A policy recorded before the mode existed reads, and re-encodes, the same.
    assert_eq!(
        json_of(&omitted),
        json!({"destructive": true, "min_risk": "high", "tools": [], "exempt": [], "timeout_ms": 5})
    );
    let durable: ApprovalPolicy = serde_json::from_value(json!({"mode": "durable"})).unwrap();
    assert_eq!(
        durable,
        ApprovalPolicy::default().with_mode(ApprovalMode::Durable)
    );
    let snap: PolicySnapshot =
        serde_json::from_value(json!({"approvals": {"mode": "durable"}})).unwrap();
    assert_eq!(snap.approvals.mode(), ApprovalMode::Durable);
    assert_eq!(
        snap.approvals.timeout(),
        ApprovalPolicy::default().timeout()
    );
    assert!(serde_json::from_value::<ApprovalPolicy>(json!({"mode": "later"})).is_err());
    // Narrowing may make approvals durable, never the other way round.
    let in_process = PolicySnapshot::default();
    assert!(snap.is_within(&in_process, &[]));
    assert!(!in_process.is_within(&snap, &[]));
}

#[test]
fn only_a_timeout_keeps_the_risk_rule() {
    let policy: ApprovalPolicy = serde_json::from_value(json!({"timeout_ms": 30000})).unwrap();
    assert_eq!(policy, ApprovalPolicy::default());
    let high = ToolSpec::new("deploy".parse().unwrap(), "")
        .with_annotations(Annotations::side_effecting().with_risk(rein_tool::RiskLevel::High));
    assert!(
        policy.requires(&high).is_some(),
        "a high-risk call needs approval"
    );
}

#[test]
fn policy_snapshot_fields_default_like_the_whole_snapshot() {
    let default = json_of(&PolicySnapshot::default());
    let custom = Transitions::from_edges([
        (rein_run::State::Intake, rein_run::State::Act),
        (rein_run::State::Act, rein_run::State::Done),
    ])
    .unwrap();
    check::<PolicySnapshot>(
        "PolicySnapshot",
        &default,
        &json!({}),
        &json!({
            "budget": {"tool_calls": 3},
            "eligibility": {"mode": "explicit", "allow": {"act": ["deploy"]}},
            "transitions": json_of(&custom),
            "approvals": {"timeout_ms": 5},
            "max_steps": 7,
            "deadline": {"time_ms": 60000, "count_paused": true},
        }),
    );
    let default = json_of(&rein_policy::Deadline::new(std::time::Duration::from_secs(
        1,
    )));
    check::<rein_policy::Deadline>(
        "Deadline",
        &default,
        &json!({"time_ms": 1000}),
        &json!({"count_paused": true}),
    );
    // A nested object with one field set is completed from the nested type's default.
    let snap: PolicySnapshot =
        serde_json::from_value(json!({"approvals": {"timeout_ms": 30000}})).unwrap();
    assert_eq!(snap, PolicySnapshot::default());
}

#[test]
fn budget_eligibility_and_transitions_read_their_default_from_their_serialized_default() {
    for (name, ok) in [
        (
            "Budget",
            serde_json::from_value::<Budget>(json_of(&Budget::default())).ok()
                == Some(Budget::default()),
        ),
        (
            "EligibilityRules",
            serde_json::from_value::<EligibilityRules>(json_of(&EligibilityRules::default())).ok()
                == Some(EligibilityRules::default()),
        ),
        (
            "Transitions",
            serde_json::from_value::<Transitions>(json_of(&Transitions::default())).ok()
                == Some(Transitions::default()),
        ),
    ] {
        assert!(ok, "{name}: its default does not read back as itself");
    }
    assert_eq!(
        serde_json::from_value::<Budget>(json!({})).unwrap(),
        Budget::default()
    );
}

#[test]
fn annotation_and_spec_fields_default_like_the_whole() {
    let default = json_of(&Annotations::default());
    check::<Annotations>(
        "Annotations",
        &default,
        &json!({}),
        &json!({
            "destructive": true,
            "idempotent": true,
            "risk_level": "low",
            "requires_approval": true,
            "timeout_ms": 5,
        }),
    );
    check::<Annotations>(
        "Annotations",
        &default,
        &json!({}),
        &json!({"read_only": true, "risk_level": "critical"}),
    );
    check::<ToolSpec>(
        "ToolSpec",
        &json_of(&ToolSpec::new("t".parse().unwrap(), "")),
        &json!({"name": "t"}),
        &json!({
            "description": "does t",
            "input_schema": {"type": "object", "required": ["x"]},
            "output_schema": {"type": "string"},
            "annotations": {"read_only": true},
        }),
    );
}
