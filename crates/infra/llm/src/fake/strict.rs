//! The request rules the real APIs enforce, checked by the fake server so a test sees the
//! `400` a real server would send: calls paired with their results, no empty turns, Anthropic's
//! alternating roles and required `max_tokens`, provider-safe function names.

use std::collections::BTreeSet;

use serde_json::{Value, json};

/// Which API a request is for, by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    OpenAi,
    Anthropic,
}

impl Wire {
    pub(super) fn of(path: &str) -> Option<Self> {
        if path.ends_with("/chat/completions") {
            Some(Self::OpenAi)
        } else if path.ends_with("/messages") {
            Some(Self::Anthropic)
        } else {
            None
        }
    }

    /// The body of the `400` this API sends for `message`.
    pub(super) fn error_body(self, message: &str) -> String {
        match self {
            Self::OpenAi => json!({"error": {"message": message, "type": "invalid_request_error",
                "param": "messages", "code": null}}),
            Self::Anthropic => json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": message}}),
        }
        .to_string()
    }
}

/// Why `body` would be refused by the real API, if it would.
pub(super) fn check(wire: Wire, body: &Value) -> Result<(), String> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Err("messages: field required".into());
    };
    if messages.is_empty() {
        return Err("messages: at least one message is required".into());
    }
    for tool in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = match wire {
            Wire::OpenAi => &tool["function"]["name"],
            Wire::Anthropic => &tool["name"],
        };
        function_name(name.as_str().unwrap_or(""))?;
    }
    match wire {
        Wire::OpenAi => openai(messages),
        Wire::Anthropic => {
            if !body.get("max_tokens").is_some_and(Value::is_u64) {
                return Err("max_tokens: field required".into());
            }
            let breakpoints = body.to_string().matches("\"cache_control\"").count();
            if breakpoints > 4 {
                return Err(format!(
                    "A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
                ));
            }
            anthropic(messages)
        }
    }
}

fn function_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "tools: function name {name:?} does not match '^[a-zA-Z0-9_-]{{1,64}}$'"
        ))
    }
}

fn openai(messages: &[Value]) -> Result<(), String> {
    // Ids of the last assistant message's calls not answered yet.
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        if role != "tool" && !open.is_empty() {
            return Err(format!(
                "Invalid parameter: tool_call_ids did not have response messages: {}",
                open.join(", ")
            ));
        }
        match role {
            "system" | "user" => {}
            "assistant" => {
                let calls = m["tool_calls"].as_array().map_or(&[][..], Vec::as_slice);
                let text = m["content"].as_str().unwrap_or("");
                if calls.is_empty() && text.is_empty() {
                    return Err(format!(
                        "Invalid value for 'messages[{i}].content': an assistant message \
                         needs content or tool_calls"
                    ));
                }
                for call in calls {
                    function_name(call["function"]["name"].as_str().unwrap_or(""))?;
                    open.push(call["id"].as_str().unwrap_or("").to_owned());
                }
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap_or("");
                let Some(at) = open.iter().position(|o| o == id) else {
                    return Err(format!(
                        "Invalid parameter: messages[{i}] with role 'tool' must be a response \
                         to a preceding message with 'tool_calls' (tool_call_id {id:?})"
                    ));
                };
                open.remove(at);
            }
            other => return Err(format!("messages[{i}]: unknown role {other:?}")),
        }
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "Invalid parameter: tool_call_ids did not have response messages: {}",
            open.join(", ")
        ))
    }
}

fn anthropic(messages: &[Value]) -> Result<(), String> {
    let mut expected = "user";
    // The tool_use ids of the previous assistant message.
    let mut uses: BTreeSet<String> = BTreeSet::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        if role != expected {
            return Err(if i == 0 {
                "messages: first message must use the \"user\" role".to_owned()
            } else {
                format!(
                    "messages: roles must alternate between \"user\" and \"assistant\", but \
                     found multiple \"{role}\" roles in a row"
                )
            });
        }
        expected = if role == "user" { "assistant" } else { "user" };
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => Vec::new(),
        };
        if blocks.is_empty() {
            return Err(format!(
                "messages.{i}: all messages must have non-empty content except for the \
                 optional final assistant message"
            ));
        }
        let mut answered = BTreeSet::new();
        let mut past_results = false;
        for (j, block) in blocks.iter().enumerate() {
            match block["type"].as_str().unwrap_or("") {
                "text" => {
                    if block["text"].as_str().unwrap_or("").is_empty() {
                        return Err("messages: text content blocks must be non-empty".into());
                    }
                    past_results = true;
                }
                "tool_use" if role == "assistant" => {
                    function_name(block["name"].as_str().unwrap_or(""))?;
                    if !block["input"].is_object() {
                        return Err(format!(
                            "messages.{i}.content.{j}.tool_use.input: Input should be a valid \
                             dictionary"
                        ));
                    }
                }
                "tool_result" if role == "user" => {
                    let id = block["tool_use_id"].as_str().unwrap_or("");
                    if past_results || !uses.contains(id) {
                        return Err(format!(
                            "messages.{i}.content.{j}: unexpected `tool_use_id` found in \
                             `tool_result` blocks: {id}. Each `tool_result` block must have a \
                             corresponding `tool_use` block in the previous message, and \
                             come first in its message."
                        ));
                    }
                    answered.insert(id.to_owned());
                }
                other => {
                    return Err(format!(
                        "messages.{i}.content.{j}: a {other:?} block is not allowed in a \
                         {role} message"
                    ));
                }
            }
        }
        if role == "user" {
            let missing: Vec<&String> = uses.difference(&answered).collect();
            if !missing.is_empty() {
                return Err(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks \
                     immediately after: {}. Each `tool_use` block must have a corresponding \
                     `tool_result` block in the next message.",
                    missing
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            uses.clear();
        } else {
            uses = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| b["id"].as_str().unwrap_or("").to_owned())
                .collect();
        }
    }
    if uses.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "messages: `tool_use` ids were found without `tool_result` blocks immediately \
             after: {}",
            uses.into_iter().collect::<Vec<_>>().join(", ")
        ))
    }
}

/// What a provider's prefix cache would roughly serve of `body` after `previous`: the
/// tokens (a quarter of the bytes) of the longest common prefix of their tools, system
/// prompt and messages, in the order a provider caches them, breakpoints ignored.
pub(super) fn cached_tokens(previous: Option<&str>, body: &Value) -> (String, u64) {
    let mut key = String::new();
    for part in [&body["tools"], &body["system"]] {
        key.push_str(&without_breakpoints(part).to_string());
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        key.push_str(&without_breakpoints(m).to_string());
    }
    let common = previous.map_or(0, |p| {
        p.bytes()
            .zip(key.bytes())
            .take_while(|(a, b)| a == b)
            .count()
    });
    (key, u64::try_from(common / 4).unwrap_or(u64::MAX))
}

fn without_breakpoints(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), without_breakpoints(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_breakpoints).collect()),
        other => other.clone(),
    }
}
