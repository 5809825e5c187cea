//! The provider-neutral shape of one model call: what is sent ([`ChatRequest`]) and what came
//! back ([`ChatResponse`]). Each API module translates these to and from its wire format.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One model call: a system prompt, the conversation, the functions offered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The system prompt.
    pub system: String,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// The functions the model may call (provider-safe names).
    pub functions: Vec<FunctionDef>,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Something the user (rein, on the user's behalf) says.
    User {
        /// The text.
        text: String,
    },
    /// What the model said earlier: text and the functions it called.
    Assistant {
        /// The text, possibly empty.
        text: String,
        /// The calls it made, in order.
        calls: Vec<FunctionCall>,
    },
    /// The result of one of the model's function calls.
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// The result, as text (usually JSON).
        content: String,
        /// Whether the call failed, was refused or never completed (Anthropic's
        /// `is_error`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// A function offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDef {
    /// The provider-safe name (`^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
}

/// A function call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The provider's id for the call (made up when the provider gave none).
    pub id: String,
    /// The function's provider-safe name, as the model wrote it.
    pub name: String,
    /// The arguments, as the raw JSON text the model produced (not yet checked).
    pub arguments: String,
}

/// Tokens a call used, as the provider reported them.
///
/// `input_tokens` counts every prompt token, whatever the provider's prompt cache did with
/// it: `OpenAI`'s `prompt_tokens` (which includes its `cached_tokens`), Anthropic's
/// `input_tokens` plus its `cache_read_input_tokens` and `cache_creation_input_tokens`
/// (which it reports apart).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the provider's prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to the provider's prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Input plus output tokens.
    #[must_use]
    pub const fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// What the model answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Its text (prose), possibly empty.
    pub text: String,
    /// The functions it called, in order.
    pub calls: Vec<FunctionCall>,
    /// The usage the provider reported (zero when it reported none).
    pub usage: Usage,
    /// Why it stopped, as the provider said (`stop`, `tool_calls`, `end_turn`, …).
    pub finish_reason: Option<String>,
    /// The model that answered, as the provider named it (often more precise than the one
    /// asked for: a dated version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}
