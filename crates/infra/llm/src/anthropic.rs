//! Anthropic Messages: the request body (`tool_use`/`tool_result` blocks, alternating roles,
//! `cache_control` breakpoints on the stable prefix), the reply, and its SSE events
//! (`message_start`, `content_block_*`, `message_delta`, …).

use rein_run::ModelDelta;
use reqwest::header::HeaderName;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::chat::{ChatRequest, ChatResponse, FunctionCall, Message, Usage};
use crate::config::ProviderConfig;
use crate::error::LlmError;
use crate::wire::{Deltas, Wire, WireStream};

/// The Anthropic Messages API (`POST {base}/messages`).
pub(crate) struct Anthropic;

impl Wire for Anthropic {
    fn endpoint(&self) -> &'static str {
        "messages"
    }

    fn key_header(&self, key: &str) -> (HeaderName, String) {
        (HeaderName::from_static("x-api-key"), key.to_owned())
    }

    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("anthropic-version", "2023-06-01")]
    }

    fn body(&self, config: &ProviderConfig, request: &ChatRequest) -> Value {
        body(config, request)
    }

    fn parse(&self, text: &str) -> Result<ChatResponse, LlmError> {
        parse(text)
    }

    fn stream(&self) -> Box<dyn WireStream> {
        Box::<Stream>::default()
    }
}

/// The request body for `request` under `config`.
pub(crate) fn body(config: &ProviderConfig, request: &ChatRequest) -> Value {
    // Consecutive messages of one role are merged: the API wants them alternating.
    let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            Message::User { text } => ("user", vec![json!({"type": "text", "text": text})]),
            Message::ToolResult {
                call_id,
                content,
                is_error,
            } => {
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
            Message::Assistant { text, calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for c in calls {
                    let input = serde_json::from_str::<Value>(&c.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                ("assistant", blocks)
            }
        };
        // The API refuses a message without content: an empty turn is left out.
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    if config.prompt_cache
        && let Some(last) = messages
            .last_mut()
            .and_then(|(_, blocks)| blocks.last_mut())
    {
        // The conversation so far: the next step's request starts with it and reads it back.
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    // The tools and the system prompt stay the same through a run: cached once, read by
    // every step.
    let system = if config.prompt_cache && !request.system.is_empty() {
        json!([{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}])
    } else {
        json!(request.system)
    };
    let mut body = json!({
        "model": config.model,
        "system": system,
        "messages": messages,
        "max_tokens": config.max_output_tokens,
        "stream": config.stream,
    });
    if !request.functions.is_empty() {
        body["tools"] = request
            .functions
            .iter()
            .map(|f| json!({"name": f.name, "description": f.description, "input_schema": f.parameters}))
            .collect();
        body["tool_choice"] = json!({"type": "any"});
    }
    if let Some(t) = config.temperature {
        body["temperature"] = json!(t);
    }
    body
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    content: Vec<Block>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: Option<String>,
        name: String,
        /// Absent in some servers' stream starts (llama.cpp): filled by deltas.
        #[serde(default)]
        input: Option<Value>,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize, Clone, Copy, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    /// Read from the prompt cache; not part of `input_tokens`.
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    /// Written to the prompt cache; not part of `input_tokens`.
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// `self`, with every field `later` reports replaced (a stream's `message_delta`
    /// repeats or completes what `message_start` said).
    fn updated(self, later: Self) -> Self {
        Self {
            input_tokens: later.input_tokens.or(self.input_tokens),
            output_tokens: later.output_tokens.or(self.output_tokens),
            cache_read_input_tokens: later
                .cache_read_input_tokens
                .or(self.cache_read_input_tokens),
            cache_creation_input_tokens: later
                .cache_creation_input_tokens
                .or(self.cache_creation_input_tokens),
        }
    }
}

impl From<WireUsage> for Usage {
    /// Anthropic counts cached prompt tokens apart from `input_tokens`; rein counts them in.
    fn from(u: WireUsage) -> Self {
        let read = u.cache_read_input_tokens.unwrap_or(0);
        let write = u.cache_creation_input_tokens.unwrap_or(0);
        Self {
            input_tokens: u
                .input_tokens
                .unwrap_or(0)
                .saturating_add(read)
                .saturating_add(write),
            output_tokens: u.output_tokens.unwrap_or(0),
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }
}

/// A non-streamed reply.
pub(crate) fn parse(text: &str) -> Result<ChatResponse, LlmError> {
    let reply: Reply = serde_json::from_str(text)
        .map_err(|e| LlmError::unparsable("not a Messages reply", text, e))?;
    let mut out = ChatResponse {
        finish_reason: reply.stop_reason,
        model: reply.model,
        ..ChatResponse::default()
    };
    if let Some(u) = reply.usage {
        out.usage = u.into();
    }
    for block in reply.content {
        match block {
            Block::Text { text } => out.text.push_str(&text),
            Block::ToolUse { id, name, input } => {
                let n = out.calls.len();
                out.calls.push(FunctionCall {
                    id: id.unwrap_or_else(|| format!("toolu_{n}")),
                    name,
                    arguments: input
                        .unwrap_or_else(|| Value::Object(Map::new()))
                        .to_string(),
                });
            }
            Block::Other => {}
        }
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        #[serde(default)]
        message: Option<StartMessage>,
    },
    ContentBlockStart {
        index: usize,
        content_block: Block,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    ContentBlockStop {},
    MessageDelta {
        #[serde(default)]
        delta: Option<StopDelta>,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop {},
    Ping {},
    Error {
        #[serde(default)]
        error: Value,
    },
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::enum_variant_names)] // the wire names
enum BlockDelta {
    TextDelta {
        #[serde(default)]
        text: String,
    },
    InputJsonDelta {
        #[serde(default)]
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct StopDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// One `tool_use` block being streamed.
#[derive(Debug)]
struct OpenCall {
    index: usize,
    id: String,
    name: String,
    /// The input from the start block, used when no delta arrives.
    start_input: Option<Value>,
    partial: String,
}

impl OpenCall {
    /// The call's arguments when no `input_json_delta` came: its start block's input.
    fn arguments_without_deltas(&self) -> String {
        self.start_input
            .clone()
            .unwrap_or_else(|| Value::Object(Map::new()))
            .to_string()
    }
}

/// Assembles a streamed reply from its SSE events.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    text: String,
    calls: Vec<OpenCall>,
    usage: WireUsage,
    finish_reason: Option<String>,
    model: Option<String>,
    done: bool,
}

impl Stream {
    /// Adds `text` to the reply's prose and publishes it.
    fn push_text(&mut self, text: String, deltas: &mut Deltas<'_>) {
        self.text.push_str(&text);
        if let Some(out) = deltas.as_mut().filter(|_| !text.is_empty()) {
            out(ModelDelta::Text(text));
        }
    }
}

impl WireStream for Stream {
    /// Feeds one SSE event's data; `Ok(true)` at `message_stop`.
    fn feed(&mut self, data: &str, mut deltas: Deltas<'_>) -> Result<bool, LlmError> {
        let event: Event = serde_json::from_str(data)
            .map_err(|e| LlmError::unparsable("not a Messages event", data, e))?;
        match event {
            Event::MessageStart { message } => {
                if let Some(m) = message {
                    if let Some(u) = m.usage {
                        self.usage = self.usage.updated(u);
                    }
                    self.model = m.model;
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                Block::Text { text } => self.push_text(text, &mut deltas),
                Block::ToolUse { id, name, input } => self.calls.push(OpenCall {
                    index,
                    id: id.unwrap_or_else(|| format!("toolu_{index}")),
                    name,
                    start_input: input,
                    partial: String::new(),
                }),
                Block::Other => {}
            },
            Event::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => self.push_text(text, &mut deltas),
                BlockDelta::InputJsonDelta { partial_json } => {
                    let Some(at) = self.calls.iter().position(|c| c.index == index) else {
                        return Err(LlmError::malformed(
                            "an input_json_delta for a block that is not a tool_use",
                            data,
                        ));
                    };
                    let call = &mut self.calls[at];
                    call.partial.push_str(&partial_json);
                    if let Some(out) = deltas.as_mut().filter(|_| !partial_json.is_empty()) {
                        out(ModelDelta::ToolArguments {
                            index: u32::try_from(at).unwrap_or(u32::MAX),
                            name: call.name.clone(),
                            piece: partial_json,
                        });
                    }
                }
                BlockDelta::Other => {}
            },
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.and_then(|d| d.stop_reason) {
                    self.finish_reason = Some(reason);
                }
                if let Some(u) = usage {
                    self.usage = self.usage.updated(u);
                }
            }
            Event::MessageStop {} => {
                self.done = true;
                // A call that streamed no input takes its start block's: published last,
                // so the pieces still add up to the reply.
                if let Some(out) = deltas.as_mut() {
                    for (at, call) in self.calls.iter().enumerate() {
                        if call.partial.is_empty() {
                            out(ModelDelta::ToolArguments {
                                index: u32::try_from(at).unwrap_or(u32::MAX),
                                name: call.name.clone(),
                                piece: call.arguments_without_deltas(),
                            });
                        }
                    }
                }
                return Ok(true);
            }
            Event::ContentBlockStop {} | Event::Ping {} => {}
            Event::Error { error } => {
                let message = error.to_string();
                return Err(LlmError::context_too_long(&message).unwrap_or_else(|| {
                    LlmError::malformed("the stream reported an error", &message)
                }));
            }
        }
        Ok(false)
    }

    /// Bytes of text and arguments generated so far (for progress).
    fn text_len(&self) -> usize {
        self.text.len() + self.calls.iter().map(|c| c.partial.len()).sum::<usize>()
    }

    /// The assembled reply.
    fn finish(&mut self) -> Result<ChatResponse, LlmError> {
        let this = std::mem::take(self);
        if !this.done {
            return Err(LlmError::malformed(
                "the stream ended before message_stop",
                &this.text,
            ));
        }
        let calls = this
            .calls
            .into_iter()
            .map(|c| FunctionCall {
                arguments: if c.partial.is_empty() {
                    c.arguments_without_deltas()
                } else {
                    c.partial
                },
                id: c.id,
                name: c.name,
            })
            .collect();
        Ok(ChatResponse {
            text: this.text,
            calls,
            usage: this.usage.into(),
            finish_reason: this.finish_reason,
            model: this.model,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::FunctionDef;

    #[test]
    fn a_tool_use_without_input_takes_its_deltas() {
        let mut s = Stream::default();
        for data in [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":30,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Reading."}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"fs_read"}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\":\"a\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
        ] {
            assert!(!s.feed(data, None).unwrap(), "{data}");
        }
        assert!(s.feed(r#"{"type":"message_stop"}"#, None).unwrap());
        let r = s.finish().unwrap();
        assert_eq!(r.text, "Reading.");
        assert_eq!(r.calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 30,
                output_tokens: 9,
                ..Usage::default()
            }
        );
        assert_eq!(r.finish_reason.as_deref(), Some("tool_use"));
    }

    #[test]
    fn tool_results_merge_into_one_user_turn() {
        let config = ProviderConfig::new(crate::Api::Anthropic, "http://x", "m");
        let request = ChatRequest {
            system: "s".into(),
            messages: vec![
                Message::User {
                    text: "goal".into(),
                },
                Message::Assistant {
                    text: String::new(),
                    calls: vec![FunctionCall {
                        id: "1".into(),
                        name: "f".into(),
                        arguments: "{}".into(),
                    }],
                },
                Message::ToolResult {
                    call_id: "1".into(),
                    content: "ok".into(),
                    is_error: false,
                },
                Message::User {
                    text: "next".into(),
                },
            ],
            functions: vec![FunctionDef {
                name: "f".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let b = body(&config, &request);
        let roles: Vec<&str> = b["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(b["messages"][2]["content"][0]["type"], "tool_result");
        assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
    }
}
