//! OpenAI-compatible Chat Completions: the request body, the reply, and the SSE chunks
//! (tool-call deltas assembled by index, the final usage chunk).

use rein_run::ModelDelta;
use reqwest::header::{AUTHORIZATION, HeaderName};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::chat::{ChatRequest, ChatResponse, FunctionCall, Message, Usage};
use crate::config::ProviderConfig;
use crate::error::LlmError;
use crate::wire::{Deltas, Wire, WireStream};

/// The OpenAI-compatible Chat Completions API (`POST {base}/chat/completions`).
pub(crate) struct OpenAi;

impl Wire for OpenAi {
    fn endpoint(&self) -> &'static str {
        "chat/completions"
    }

    fn key_header(&self, key: &str) -> (HeaderName, String) {
        (AUTHORIZATION, format!("Bearer {key}"))
    }

    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
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
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    for message in &request.messages {
        messages.push(match message {
            Message::User { text } => json!({"role": "user", "content": text}),
            Message::Assistant { text, calls } => {
                // No text beside calls is `null`, as OpenAI itself writes it.
                let content = if text.is_empty() && !calls.is_empty() {
                    Value::Null
                } else {
                    json!(text)
                };
                let mut m = json!({"role": "assistant", "content": content});
                if !calls.is_empty() {
                    m["tool_calls"] = calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function",
                                   "function": {"name": c.name, "arguments": c.arguments}})
                        })
                        .collect();
                }
                m
            }
            Message::ToolResult {
                call_id, content, ..
            } => {
                json!({"role": "tool", "tool_call_id": call_id, "content": content})
            }
        });
    }
    let mut body = json!({
        "model": config.model,
        "messages": messages,
        "max_tokens": config.max_output_tokens,
        "stream": config.stream,
    });
    if !request.functions.is_empty() {
        body["tools"] = request
            .functions
            .iter()
            .map(|f| {
                json!({"type": "function", "function": {
                    "name": f.name, "description": f.description, "parameters": f.parameters}})
            })
            .collect();
        body["tool_choice"] = json!("required");
    }
    if let Some(t) = config.temperature {
        body["temperature"] = json!(t);
    }
    if config.stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<ReplyMessage>,
    #[serde(default)]
    delta: Option<ReplyMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct ReplyMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<WireCall>,
}

#[derive(Deserialize)]
struct WireCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize, Default)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    /// Of `prompt_tokens`, those served from the prompt cache.
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize, Clone, Copy)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Self {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            cache_read_tokens: u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
        }
    }
}

/// A non-streamed reply.
pub(crate) fn parse(text: &str) -> Result<ChatResponse, LlmError> {
    let reply: Reply = serde_json::from_str(text)
        .map_err(|e| LlmError::unparsable("not a chat completion", text, e))?;
    let Some(choice) = reply.choices.into_iter().next() else {
        return Err(LlmError::malformed("the reply has no choices", text));
    };
    let message = choice.message.unwrap_or_default();
    let calls = message
        .tool_calls
        .into_iter()
        .enumerate()
        .map(|(i, call)| {
            let f = call.function.unwrap_or_default();
            let name = f
                .name
                .ok_or_else(|| LlmError::malformed("a tool call has no function name", text))?;
            Ok(FunctionCall {
                id: call.id.unwrap_or_else(|| format!("call_{i}")),
                name,
                arguments: f.arguments.unwrap_or_default(),
            })
        })
        .collect::<Result<_, LlmError>>()?;
    Ok(ChatResponse {
        text: message.content.unwrap_or_default(),
        calls,
        usage: reply.usage.map(Usage::from).unwrap_or_default(),
        finish_reason: choice.finish_reason,
        model: reply.model,
    })
}

/// Assembles a streamed reply from its SSE chunks.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    text: String,
    /// Calls by their `index`, in the order first seen.
    calls: Vec<(usize, String, String, String)>,
    usage: Usage,
    finish_reason: Option<String>,
    model: Option<String>,
    done: bool,
}

impl WireStream for Stream {
    /// Feeds one SSE event's data; `Ok(true)` once the stream says it is done.
    fn feed(&mut self, data: &str, mut deltas: Deltas<'_>) -> Result<bool, LlmError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        let chunk: Reply = serde_json::from_str(data)
            .map_err(|e| LlmError::unparsable("not a chat completion chunk", data, e))?;
        if let Some(usage) = chunk.usage {
            self.usage = usage.into();
        }
        if chunk.model.is_some() {
            self.model = chunk.model;
        }
        for choice in chunk.choices {
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
            let Some(delta) = choice.delta.or(choice.message) else {
                continue;
            };
            if let Some(text) = delta.content {
                self.text.push_str(&text);
                if let Some(out) = deltas.as_mut().filter(|_| !text.is_empty()) {
                    out(ModelDelta::Text(text));
                }
            }
            for (n, call) in delta.tool_calls.into_iter().enumerate() {
                let index = call.index.unwrap_or(n);
                let f = call.function.unwrap_or_default();
                let at = self
                    .calls
                    .iter()
                    .position(|c| c.0 == index)
                    .unwrap_or_else(|| {
                        self.calls
                            .push((index, String::new(), String::new(), String::new()));
                        self.calls.len() - 1
                    });
                let slot = &mut self.calls[at];
                if let Some(id) = call.id {
                    slot.1 = id;
                }
                if let Some(name) = f.name {
                    slot.2.push_str(&name);
                }
                if let Some(args) = f.arguments {
                    slot.3.push_str(&args);
                    // The call's place in the assembled reply, not the wire's `index`.
                    if let Some(out) = deltas.as_mut().filter(|_| !args.is_empty()) {
                        out(ModelDelta::ToolArguments {
                            index: u32::try_from(at).unwrap_or(u32::MAX),
                            name: slot.2.clone(),
                            piece: args,
                        });
                    }
                }
            }
        }
        Ok(false)
    }

    /// Tokens generated so far, as far as the stream says (for progress).
    fn text_len(&self) -> usize {
        self.text.len() + self.calls.iter().map(|c| c.3.len()).sum::<usize>()
    }

    /// The assembled reply.
    fn finish(&mut self) -> Result<ChatResponse, LlmError> {
        let this = std::mem::take(self);
        if !this.done && this.finish_reason.is_none() {
            return Err(LlmError::malformed(
                "the stream ended before a finish reason or [DONE]",
                &this.text,
            ));
        }
        let calls = this
            .calls
            .into_iter()
            .map(|(index, id, name, arguments)| FunctionCall {
                id: if id.is_empty() {
                    format!("call_{index}")
                } else {
                    id
                },
                name,
                arguments,
            })
            .collect();
        Ok(ChatResponse {
            text: this.text,
            calls,
            usage: this.usage,
            finish_reason: this.finish_reason,
            model: this.model,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_deltas_assemble_by_index_with_the_final_usage_chunk() {
        let mut s = Stream::default();
        for data in [
            r#"{"choices":[{"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"fs_read","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"fs_list","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.txt\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7}}"#,
        ] {
            assert!(!s.feed(data, None).unwrap());
        }
        assert!(s.feed("[DONE]", None).unwrap());
        let r = s.finish().unwrap();
        assert_eq!(r.calls.len(), 2);
        assert_eq!(r.calls[0].name, "fs_read");
        assert_eq!(r.calls[0].arguments, r#"{"path":"a.txt"}"#);
        assert_eq!(r.calls[1].id, "b");
        assert_eq!(r.usage.total(), 19);
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn a_reply_without_choices_is_malformed() {
        let e = parse(r#"{"id":"x"}"#).unwrap_err();
        assert!(matches!(e, LlmError::Malformed { .. }), "{e}");
        let e = parse("<html>").unwrap_err();
        assert!(e.to_string().contains("<html>"), "{e}");
    }

    #[test]
    fn missing_optional_fields_are_fine() {
        let r = parse(r#"{"choices":[{"message":{"content":"hi"}}]}"#).unwrap();
        assert_eq!(r.text, "hi");
        assert_eq!(r.usage, Usage::default());
        assert_eq!(r.finish_reason, None);
    }
}
