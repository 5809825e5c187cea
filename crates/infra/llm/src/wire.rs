//! `Wire`: what one model API puts on the wire, behind one trait so the HTTP provider is
//! written once. Each API (OpenAI-compatible Chat Completions, Anthropic Messages) is one
//! implementation in its own module: where requests go, how the key travels, the request
//! body, the reply, and how a streamed reply is assembled from its events.

use rein_run::ModelDelta;
use reqwest::header::HeaderName;
use serde_json::Value;

use crate::chat::{ChatRequest, ChatResponse};
use crate::config::ProviderConfig;
use crate::error::LlmError;

/// One model API's wire format.
pub(crate) trait Wire: Send + Sync {
    /// The path under the base URL that requests are posted to.
    fn endpoint(&self) -> &'static str;
    /// The header that carries the API key, and its value for `key`.
    fn key_header(&self, key: &str) -> (HeaderName, String);
    /// Headers every request carries besides the content type and the key.
    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)];
    /// The request body for `request` under `config`.
    fn body(&self, config: &ProviderConfig, request: &ChatRequest) -> Value;
    /// A reply that was not streamed.
    ///
    /// # Errors
    /// [`LlmError::Malformed`] when `text` is not a reply of this API.
    fn parse(&self, text: &str) -> Result<ChatResponse, LlmError>;
    /// An empty assembler for a streamed reply.
    fn stream(&self) -> Box<dyn WireStream>;
}

/// Where a [`WireStream`] hands the pieces of the reply as they arrive, when anybody
/// watches.
pub(crate) type Deltas<'a> = Option<&'a mut dyn FnMut(ModelDelta)>;

/// Assembles a streamed reply from its server-sent events.
pub(crate) trait WireStream: Send {
    /// Feeds one event's data; `Ok(true)` once the stream says it is done. The pieces of
    /// text and of function arguments the event adds go to `deltas` (when given), in order
    /// and complete: once the stream is done they add up to the reply
    /// [`finish`](Self::finish) assembles.
    ///
    /// # Errors
    /// [`LlmError::Malformed`] for an event this API does not send, or the error the stream
    /// reports.
    fn feed(&mut self, data: &str, deltas: Deltas<'_>) -> Result<bool, LlmError>;
    /// Bytes of text and arguments generated so far (for progress).
    fn text_len(&self) -> usize;
    /// The assembled reply, leaving the assembler empty.
    ///
    /// # Errors
    /// [`LlmError::Malformed`] when the stream ended before it said it was done.
    fn finish(&mut self) -> Result<ChatResponse, LlmError>;
}
