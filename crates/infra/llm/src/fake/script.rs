//! The scripted replies of the fake server: function calls and the JSON and SSE bodies
//! both APIs answer with, and the failures real servers produce.

use serde_json::{Value, json};

/// One scripted answer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Reply {
    /// `200` with this JSON body.
    Json(Value),
    /// `200 text/event-stream`, the body written in exactly these pieces; then the connection
    /// hangs when `hang` is set.
    Sse {
        /// The raw pieces (they may cut a character or a JSON value anywhere).
        chunks: Vec<Vec<u8>>,
        /// Whether to stall forever after the last piece.
        hang: bool,
    },
    /// Any status, headers and body.
    Status {
        /// The HTTP status.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// `200` with these raw bytes (e.g. invalid UTF-8).
    Raw(Vec<u8>),
    /// Never answers.
    Hang,
}

/// A function call in a scripted reply: provider name and arguments (JSON text, so invalid
/// arguments can be scripted too).
#[derive(Debug, Clone)]
pub struct Call {
    /// The function's (provider) name.
    pub name: String,
    /// The arguments, raw.
    pub arguments: String,
}

impl Call {
    /// A call of `name` with `arguments`.
    #[must_use]
    pub fn new(name: impl Into<String>, arguments: &Value) -> Self {
        Self {
            name: name.into(),
            arguments: arguments.to_string(),
        }
    }

    /// A call whose arguments are exactly `raw` (need not be JSON).
    #[must_use]
    pub fn raw(name: impl Into<String>, raw: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            arguments: raw.into(),
        }
    }
}

impl Reply {
    /// An `OpenAI` reply calling `calls`, using `usage` (input, output) tokens.
    #[must_use]
    pub fn openai_calls(calls: &[Call], usage: (u64, u64)) -> Self {
        let tool_calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                json!({"id": format!("call_{i}"), "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
        Self::Json(json!({
            "id": "chatcmpl-fake", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": null, "tool_calls": tool_calls}}],
            "usage": {"prompt_tokens": usage.0, "completion_tokens": usage.1, "total_tokens": usage.0 + usage.1}
        }))
    }

    /// An `OpenAI` reply in prose.
    #[must_use]
    pub fn openai_text(text: &str) -> Self {
        Self::Json(json!({
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}
        }))
    }

    /// An Anthropic reply: `text` (may be empty), then `calls`.
    #[must_use]
    pub fn anthropic(text: &str, calls: &[Call], usage: (u64, u64)) -> Self {
        let mut content = Vec::new();
        if !text.is_empty() {
            content.push(json!({"type": "text", "text": text}));
        }
        for (i, c) in calls.iter().enumerate() {
            let input: Value = serde_json::from_str(&c.arguments).unwrap_or(Value::Null);
            content.push(json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": c.name, "input": input}));
        }
        Self::Json(json!({
            "id": "msg_fake", "type": "message", "role": "assistant", "content": content,
            "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
            "usage": {"input_tokens": usage.0, "output_tokens": usage.1}
        }))
    }

    /// The `OpenAI` SSE events for `text` and `calls` (arguments streamed in two halves,
    /// usage in a final chunk), written in pieces of `piece` bytes.
    #[must_use]
    pub fn openai_sse(text: &str, calls: &[Call], usage: (u64, u64), piece: usize) -> Self {
        let mut events = Vec::new();
        let chunk = |delta: Value, finish: Value| json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        events.push(chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        ));
        if !text.is_empty() {
            let (a, b) = split_str(text);
            events.push(chunk(json!({"content": a}), Value::Null));
            events.push(chunk(json!({"content": b}), Value::Null));
        }
        for (i, c) in calls.iter().enumerate() {
            let (a, b) = split_str(&c.arguments);
            events.push(chunk(
                json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function", "function": {"name": c.name, "arguments": a}}]}),
                Value::Null,
            ));
            events.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": b}}]}),
                Value::Null,
            ));
        }
        let finish = if calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        events.push(chunk(json!({}), json!(finish)));
        events.push(json!({"id": "c", "choices": [], "usage": {"prompt_tokens": usage.0, "completion_tokens": usage.1}}));
        let mut text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        text.push_str("data: [DONE]\n\n");
        Self::sse_pieces(text.as_bytes(), piece)
    }

    /// The Anthropic SSE events for `text` and `calls` (a `tool_use` start without `input`,
    /// then `input_json_delta`s), written in pieces of `piece` bytes.
    #[must_use]
    pub fn anthropic_sse(text: &str, calls: &[Call], usage: (u64, u64), piece: usize) -> Self {
        let mut events = vec![(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant", "content": [],
                   "usage": {"input_tokens": usage.0, "output_tokens": 1}}}),
        )];
        let mut index = 0;
        if !text.is_empty() {
            let (a, b) = split_str(text);
            events.push(("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})));
            for part in [a, b] {
                events.push(("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": part}})));
            }
            events.push((
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ));
            index = 1;
        }
        for (i, c) in calls.iter().enumerate() {
            let at = index + i;
            let (a, b) = split_str(&c.arguments);
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": at,
                "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": c.name}}),
            ));
            events.push(("ping", json!({"type": "ping"})));
            for part in [a, b] {
                events.push(("content_block_delta", json!({"type": "content_block_delta", "index": at, "delta": {"type": "input_json_delta", "partial_json": part}})));
            }
            events.push((
                "content_block_stop",
                json!({"type": "content_block_stop", "index": at}),
            ));
        }
        let stop = if calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        events.push(("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": usage.1}})));
        events.push(("message_stop", json!({"type": "message_stop"})));
        let text: String = events
            .iter()
            .map(|(name, e)| format!("event: {name}\ndata: {e}\n\n"))
            .collect();
        Self::sse_pieces(text.as_bytes(), piece)
    }

    /// `bytes` as an event stream written in pieces of `piece` bytes (cutting anywhere).
    #[must_use]
    pub fn sse_pieces(bytes: &[u8], piece: usize) -> Self {
        Self::Sse {
            chunks: bytes.chunks(piece.max(1)).map(<[u8]>::to_vec).collect(),
            hang: false,
        }
    }

    /// `429 Too Many Requests` asking to wait `seconds`.
    #[must_use]
    pub fn rate_limited(seconds: u64) -> Self {
        Self::Status {
            status: 429,
            headers: vec![("retry-after".into(), seconds.to_string())],
            body: r#"{"error":{"message":"rate limited"}}"#.into(),
        }
    }

    /// An error status with a short JSON body.
    #[must_use]
    pub fn status(status: u16, message: &str) -> Self {
        Self::Status {
            status,
            headers: Vec::new(),
            body: json!({"error": {"message": message}}).to_string(),
        }
    }

    /// `OpenAI`'s `400` for a prompt over the context window.
    #[must_use]
    pub fn context_too_long() -> Self {
        Self::Status {
            status: 400,
            headers: Vec::new(),
            body: json!({"error": {"code": "context_length_exceeded", "type": "invalid_request_error",
                "message": "This model's maximum context length is 4096 tokens. However, your messages resulted in 9000 tokens."}})
                .to_string(),
        }
    }
}

/// `s` cut in two near the middle, on a char boundary.
fn split_str(s: &str) -> (&str, &str) {
    let mut at = s.len() / 2;
    while !s.is_char_boundary(at) {
        at += 1;
    }
    s.split_at(at)
}
