//! How deeply nested the JSON the engine records may be.
//!
//! Two reasons for a bound. A ledger line or run snapshot must read back, and `serde_json`
//! stops reading at 128 levels of nesting: a value nested 126 levels deep inside an entry
//! makes a ledger that can never be loaded, resumed or verified again. And nothing the
//! engine does with a value (hash, validate, clone, serialize, drop) may recurse without
//! bound on a value a planner or a tool made: each of those recurses once per level, and a
//! few thousand levels overflow a thread's stack. So the engine measures depth before it
//! touches a value — recursing at most [`MAX_JSON_DEPTH`] + 1 levels, whatever the value —
//! refuses values deeper than that, and takes refused values apart without recursion.

use rein_run::Decision;
use serde_json::Value;

/// The deepest nesting of arrays and objects the engine records in a value: a tool input, a
/// result, a tool output, a run variable. Far deeper than any real document, and it leaves
/// room for the entry or snapshot around the value under `serde_json`'s limit of 128.
pub const MAX_JSON_DEPTH: usize = 100;

/// Whether `value` nests arrays and objects more than [`MAX_JSON_DEPTH`] levels deep.
///
/// Safe on any value: it descends at most `MAX_JSON_DEPTH + 1` levels (a few kilobytes of
/// stack) and stops there. It allocates nothing — it runs on every tool input, tool output
/// and result the engine records.
pub(crate) fn too_deep(value: &Value) -> bool {
    /// Whether `value` holds a container more than `levels` levels down (itself included).
    fn deeper_than(value: &Value, levels: usize) -> bool {
        match value {
            Value::Array(items) => levels == 0 || items.iter().any(|c| deeper_than(c, levels - 1)),
            Value::Object(map) => levels == 0 || map.values().any(|c| deeper_than(c, levels - 1)),
            _ => false,
        }
    }
    deeper_than(value, MAX_JSON_DEPTH)
}

/// Whether any JSON value `decision` carries is [`too_deep`]. A sequence's members are
/// measured too; a sequence inside a sequence is measured (the engine then refuses it as
/// nested), and one nested deeper still counts as too deep itself: no recursion without
/// bound on a decision a planner made.
pub(crate) fn decision_too_deep(decision: &Decision) -> bool {
    fn measured(decision: &Decision, sequences: usize) -> bool {
        match decision {
            Decision::CallTool { input, .. } => too_deep(input),
            Decision::Finish { result, .. } => too_deep(result),
            Decision::CallTools { calls, .. } => calls.iter().any(|c| too_deep(&c.input)),
            Decision::Sequence { decisions, .. } => {
                sequences == 0 || decisions.iter().any(|d| measured(d, sequences - 1))
            }
            _ => false,
        }
    }
    measured(decision, 2)
}

/// Drops `value` without recursion (`serde_json`'s `Drop` recurses once per level).
pub(crate) fn dispose(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// Drops a shared value without recursion when this is its last holder.
fn dispose_shared(value: std::sync::Arc<Value>) {
    if let Ok(value) = std::sync::Arc::try_unwrap(value) {
        dispose(value);
    }
}

/// Drops `decision` without recursion (a sequence's members included).
pub(crate) fn dispose_decision(decision: Decision) {
    let mut stack = vec![decision];
    while let Some(decision) = stack.pop() {
        match decision {
            Decision::CallTool { input, .. } => dispose_shared(input),
            Decision::Finish { result, .. } => dispose(result),
            Decision::CallTools { calls, .. } => {
                calls.into_iter().for_each(|c| dispose_shared(c.input));
            }
            Decision::Sequence { decisions, .. } => stack.extend(decisions),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn nested(depth: usize) -> Value {
        let mut value = json!("leaf");
        for i in 0..depth {
            // Built by hand: `json!` serializes interpolated values, recursively.
            value = if i % 2 == 0 {
                Value::Array(vec![value])
            } else {
                Value::Object(std::iter::once(("k".to_owned(), value)).collect())
            };
        }
        value
    }

    #[test]
    fn depth_counts_arrays_and_objects_and_stops_at_the_limit() {
        assert!(!too_deep(&json!(1)));
        assert!(!too_deep(&json!({"a": [1, {"b": []}]})));
        let at_limit = nested(MAX_JSON_DEPTH);
        assert!(!too_deep(&at_limit));
        // What the engine accepts reads back through serde_json inside an entry.
        let line = json!({"event": {"decision": {"input": at_limit}}}).to_string();
        assert!(serde_json::from_str::<Value>(&line).is_ok());
        assert!(too_deep(&nested(MAX_JSON_DEPTH + 1)));
        assert!(too_deep(&json!([1, 2, nested(MAX_JSON_DEPTH)])));
    }

    #[test]
    fn a_value_far_too_deep_to_recurse_over_is_measured_and_dropped_safely() {
        let value = nested(200_000);
        assert!(too_deep(&value));
        let decision = Decision::call_tool("t", value, "deep");
        assert!(decision_too_deep(&decision));
        dispose_decision(decision);
        assert!(!decision_too_deep(&Decision::finish("ok", json!([[1]]))));
    }
}
