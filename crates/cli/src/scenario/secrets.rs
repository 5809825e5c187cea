//! MCP `env` and `headers` values, and the model provider's `extra_headers` values, are
//! never stored: the data directory's copy of a scenario keeps `{"from_env": "NAME"}`
//! references as written and replaces every literal with `{"redacted": true}`; `rein resume` reads the literals again from the original
//! scenario file (its path is stored beside the copy) and refuses, naming the value, when
//! that file no longer has them.

use std::collections::BTreeMap;

use rein::llm::HeaderSource;

use super::model::{PlannerDef, Scenario, SecretValue, ToolDef};

/// The extra headers of each model provider (the primary, then the fallbacks), when the
/// scenario's planner is a model.
fn model_headers(scenario: &Scenario) -> Vec<&[(String, HeaderSource)]> {
    match &scenario.planner {
        PlannerDef::Llm(def) => def
            .providers()
            .map(|p| p.extra_headers.as_slice())
            .collect(),
        PlannerDef::Scripted(_) => Vec::new(),
    }
}

fn model_headers_mut(scenario: &mut Scenario) -> Vec<&mut [(String, HeaderSource)]> {
    match &mut scenario.planner {
        PlannerDef::Llm(def) => def
            .providers_mut()
            .map(|p| p.extra_headers.as_mut_slice())
            .collect(),
        PlannerDef::Scripted(_) => Vec::new(),
    }
}

/// `scenario` with every literal MCP `env`/`headers` value and every literal model
/// `extra_headers` value (an `Authorization`, an Azure `api-key`) replaced by a redaction.
pub(crate) fn redacted(scenario: &Scenario) -> Scenario {
    let mut copy = scenario.clone();
    for (_, value) in model_headers_mut(&mut copy).into_iter().flatten() {
        if matches!(value, HeaderSource::Literal(_)) {
            *value = HeaderSource::Redacted { redacted: true };
        }
    }
    for def in &mut copy.tools {
        for map in [def.env.as_mut(), def.headers.as_mut()]
            .into_iter()
            .flatten()
        {
            for value in map.values_mut() {
                if matches!(value, SecretValue::Literal(_)) {
                    *value = SecretValue::Redacted { redacted: true };
                }
            }
        }
    }
    copy
}

/// Whether `scenario` holds a redacted value (it is a data directory copy).
pub(crate) fn has_redacted(scenario: &Scenario) -> bool {
    let header = model_headers(scenario)
        .into_iter()
        .flatten()
        .any(|(_, v)| matches!(v, HeaderSource::Redacted { .. }));
    header
        || scenario.tools.iter().any(|def| {
            [def.env.as_ref(), def.headers.as_ref()]
                .into_iter()
                .flatten()
                .flat_map(BTreeMap::values)
                .any(|v| matches!(v, SecretValue::Redacted { .. }))
        })
}

/// Puts back into `saved` every redacted value, from the MCP entry of `original` with the
/// same server name.
///
/// # Errors
/// The first value `original` no longer has as a literal, in words that name the server,
/// the field and the key.
pub(crate) fn restore(saved: &mut Scenario, original: &Scenario) -> Result<(), String> {
    let written = model_headers(original);
    // The primary's headers come back from the original's primary, each fallback's from
    // the fallback at its place.
    for (at, headers) in model_headers_mut(saved).into_iter().enumerate() {
        for (name, value) in headers {
            if !matches!(value, HeaderSource::Redacted { .. }) {
                continue;
            }
            let same = written.get(at).copied().unwrap_or_default();
            match same.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
                Some((_, literal @ HeaderSource::Literal(_))) => *value = literal.clone(),
                _ => {
                    return Err(format!(
                        "the model provider had `extra_headers` `{name}` written literally in the scenario file, and rein never stores such values; the original file no longer has it"
                    ));
                }
            }
        }
    }
    for def in &mut saved.tools {
        let Some(server) = def.server.clone() else {
            continue;
        };
        let source = original
            .tools
            .iter()
            .find(|t| t.server.as_deref() == Some(server.as_str()));
        for (field, map) in [("env", def.env.as_mut()), ("headers", def.headers.as_mut())] {
            for (key, value) in map.into_iter().flatten() {
                if !matches!(value, SecretValue::Redacted { .. }) {
                    continue;
                }
                match source.and_then(|t| literal(t, field, key)) {
                    Some(literal) => *value = SecretValue::Literal(literal),
                    None => {
                        return Err(format!(
                            "MCP server `{server}` had `{field}.{key}` written literally in the scenario file, and rein never stores such values; the original file no longer has it"
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

fn literal(def: &ToolDef, field: &str, key: &str) -> Option<String> {
    let map = if field == "env" {
        def.env.as_ref()
    } else {
        def.headers.as_ref()
    }?;
    match map.get(key)? {
        SecretValue::Literal(value) => Some(value.clone()),
        _ => None,
    }
}

/// The value to give the server: the literal, or rein's environment variable (`None` when
/// it is not set, or for a redaction).
pub(crate) fn resolve(value: &SecretValue) -> Option<String> {
    match value {
        SecretValue::Literal(value) => Some(value.clone()),
        SecretValue::FromEnv { from_env } => std::env::var(from_env).ok(),
        SecretValue::Redacted { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scenario() -> Scenario {
        serde_json::from_value(json!({
            "goal": "g",
            "planner": {"scripted": []},
            "tools": [
                {"kind": "mcp", "server": "a", "command": ["x"], "env": {"K": "s3cret-env", "R": {"from_env": "HOME"}}},
                {"kind": "mcp", "server": "b", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer s3cret-hdr"}}
            ]
        }))
        .unwrap()
    }

    #[test]
    fn the_stored_copy_and_debug_hold_no_value_and_restore_puts_them_back() {
        let original = scenario();
        assert!(!format!("{original:?}").contains("s3cret"));
        let mut copy = redacted(&original);
        let stored = serde_json::to_string(&copy).unwrap();
        assert!(!stored.contains("s3cret"), "{stored}");
        assert!(stored.contains(r#""R":{"from_env":"HOME"}"#), "{stored}");
        assert!(has_redacted(&copy) && !has_redacted(&original));
        restore(&mut copy, &original).unwrap();
        assert_eq!(copy, original);

        let mut copy = redacted(&original);
        let mut changed = original.clone();
        changed.tools[1].headers = None;
        let why = restore(&mut copy, &changed).unwrap_err();
        assert!(
            why.contains("`b` had `headers.Authorization`") && !why.contains("s3cret"),
            "{why}"
        );
    }

    #[test]
    fn model_header_values_are_not_stored_unless_read_from_the_environment() {
        let original: Scenario = serde_json::from_value(json!({
            "goal": "g",
            "planner": {"llm": {"provider": {
                "api": "open_ai", "base_url": "https://x.example/v1", "model": "m",
                "extra_headers": [["api-key", "s3cret-azure"], ["x-key", {"from_env": "AZURE_KEY"}]]
            }}}
        }))
        .unwrap();
        assert!(!format!("{original:?}").contains("s3cret"));
        let mut copy = redacted(&original);
        let stored = serde_json::to_string(&copy).unwrap();
        assert!(!stored.contains("s3cret"), "{stored}");
        assert!(stored.contains(r#"{"from_env":"AZURE_KEY"}"#), "{stored}");
        assert!(has_redacted(&copy) && !has_redacted(&original));
        restore(&mut copy, &original).unwrap();
        assert_eq!(copy, original);
    }

    #[test]
    fn fallback_header_values_are_not_stored_and_come_back_from_their_own_entry() {
        let original: Scenario = serde_json::from_value(json!({
            "goal": "g",
            "planner": {"llm": {
                "provider": {"api": "open_ai", "base_url": "https://x.example/v1", "model": "m",
                    "extra_headers": [["api-key", "primary-s3cret"]]},
                "fallbacks": [{"api": "open_ai", "base_url": "https://y.example/v1", "model": "n",
                    "extra_headers": [["api-key", "fallback-s3cret"]]}]
            }}
        }))
        .unwrap();
        let mut copy = redacted(&original);
        let stored = serde_json::to_string(&copy).unwrap();
        assert!(!stored.contains("s3cret"), "{stored}");
        assert!(has_redacted(&copy));
        restore(&mut copy, &original).unwrap();
        assert_eq!(copy, original);
    }
}
