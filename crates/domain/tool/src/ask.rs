//! What a tool may ask of the run while it runs: an answer from a person ([`Elicitor`]) and
//! a model's completion ([`Sampler`]). Both are ports: the engine or the embedding
//! application answers them, under its own policies (a timeout, a budget). An MCP server's
//! `elicitation/create` and `sampling/createMessage` reach them through `rein-mcp`.
//!
//! Neither is a durable pause: the tool waits inside its call, so an answer that does not
//! come in time is a refusal (fail closed), never a question kept for a later resume.

use serde_json::Value;

use crate::BoxFuture;

/// A question a tool asks a person while it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// Who asks: e.g. ``mcp server `docs` ``.
    pub asker: String,
    /// The question, as the tool words it.
    pub message: String,
    /// The JSON Schema (a flat object of primitive fields) the answer must match.
    pub schema: Value,
}

/// A person's answer to an [`Elicitation`].
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitAnswer {
    /// Answered: a JSON object matching the question's schema.
    Accept(Value),
    /// Refused to answer.
    Decline,
    /// Dismissed the question without a choice (also: no answer in time).
    Cancel,
}

/// Answers the questions tools ask while they run (a terminal prompt, a chat, a queue an
/// operator watches).
///
/// # Contract
/// - `elicit` resolves once with the person's answer; the caller bounds the wait and takes
///   a late answer as [`ElicitAnswer::Cancel`].
/// - It MUST NOT panic on any question, and MUST NOT answer on the person's behalf.
pub trait Elicitor: Send + Sync + 'static {
    /// Asks `question` and waits for the answer.
    fn elicit(&self, question: Elicitation) -> BoxFuture<'_, ElicitAnswer>;
}

/// Who wrote a message of a [`SampleRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleRole {
    /// The user's side.
    User,
    /// The model's side.
    Assistant,
}

/// A model completion a tool asks for: text messages, an optional system prompt, and the
/// most tokens the reply may take.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRequest {
    /// Who asks: e.g. ``mcp server `docs` ``.
    pub asker: String,
    /// The system prompt the tool asked for, if any.
    pub system: Option<String>,
    /// The conversation, oldest first.
    pub messages: Vec<(SampleRole, String)>,
    /// The most tokens the reply may take.
    pub max_tokens: u32,
}

/// The model's reply to a [`SampleRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleReply {
    /// The model that answered.
    pub model: String,
    /// The reply's text.
    pub text: String,
    /// Why the model stopped (`endTurn`, `maxTokens`), if known.
    pub stop_reason: Option<String>,
}

/// Why a [`Sampler`] did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SampleError {
    /// The run's budget (tokens, cost, model calls) has no room for the request.
    #[error(
        "the run's {budget} budget has no room for this sampling request; raise it or give the tool what it needs in its arguments"
    )]
    Budget {
        /// The budget that is exhausted.
        budget: String,
    },
    /// The request was refused (not allowed, not text, too large): the reason says why.
    #[error("sampling refused: {0}")]
    Refused(String),
    /// The model call failed.
    #[error("the model call for sampling failed: {0}")]
    Failed(String),
}

/// Answers the completions tools ask for, with the run's model under the run's budgets.
///
/// # Contract
/// - `sample` charges what it spends to the run and refuses with [`SampleError::Budget`]
///   when the run cannot afford it; it never exceeds `max_tokens`.
/// - It MUST NOT panic on any request.
pub trait Sampler: Send + Sync + 'static {
    /// Asks the model.
    fn sample(&self, request: SampleRequest) -> BoxFuture<'_, Result<SampleReply, SampleError>>;
}
