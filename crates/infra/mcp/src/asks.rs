//! What a server may ask of rein while a tool runs, answered through the ports the operator
//! gives ([`rein_tool::Elicitor`], [`rein_tool::Sampler`]): without one, the request is
//! refused with a reason; with one, `elicitation/create` waits for the person's answer for
//! at most the configured time (no answer: `cancel`, failing closed) and
//! `sampling/createMessage` goes to the sampler (which charges the run's budgets).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rein_tool::{ElicitAnswer, Elicitation, Elicitor, SampleRequest, SampleRole, Sampler};
use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use serde_json::{Value, json};

/// Why rein does not sample for a server without a sampler.
const NO_SAMPLING: &str = "rein offers no sampling here: a model call made for a server would escape the run's budgets, policies and ledger unless the operator gives rein a sampler";

/// Why rein does not answer elicitation without an elicitor.
const NO_ELICITATION: &str = "rein answers no elicitation here: a governed run takes input only from its planner, its approver and `rein resume`, unless the operator gives rein an elicitor; give the tool what it needs in its arguments";

/// The ports answering a server's questions and completions, and how long an answer may
/// take. Compared by presence and timeout (ports have no identity to compare).
#[derive(Clone, Default)]
pub(crate) struct Asks {
    pub(crate) elicitor: Option<Arc<dyn Elicitor>>,
    pub(crate) sampler: Option<Arc<dyn Sampler>>,
    pub(crate) timeout: Option<Duration>,
}

impl Asks {
    /// How long an answer may take when no timeout is set: 5 minutes (a person reads,
    /// thinks, types).
    pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

    fn timeout(&self) -> Duration {
        self.timeout.unwrap_or(Self::DEFAULT_TIMEOUT)
    }
}

impl crate::ServerConfig {
    /// Answers the server's `elicitation/create` (form mode) through `elicitor`, waiting
    /// inside the tool call for at most
    /// [`ServerConfig::with_ask_timeout`](Self::with_ask_timeout) (default 5 minutes; no
    /// answer in time is `cancel`). Without one, elicitation is refused with a
    /// reason and not declared.
    #[must_use]
    pub fn with_elicitor(mut self, elicitor: Arc<dyn Elicitor>) -> Self {
        self.asks.elicitor = Some(elicitor);
        self
    }

    /// Answers the server's `sampling/createMessage` (text) through `sampler`, which runs
    /// the run's model under its budgets. Without one, sampling is refused with a reason
    /// and not declared.
    #[must_use]
    pub fn with_sampler(mut self, sampler: Arc<dyn Sampler>) -> Self {
        self.asks.sampler = Some(sampler);
        self
    }

    /// Sets how long an elicitation or a sampling request may wait for its answer.
    #[must_use]
    pub const fn with_ask_timeout(mut self, timeout: Duration) -> Self {
        self.asks.timeout = Some(timeout);
        self
    }
}

impl fmt::Debug for Asks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Asks")
            .field("elicitor", &self.elicitor.is_some())
            .field("sampler", &self.sampler.is_some())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl PartialEq for Asks {
    fn eq(&self, other: &Self) -> bool {
        self.elicitor.is_some() == other.elicitor.is_some()
            && self.sampler.is_some() == other.sampler.is_some()
            && self.timeout == other.timeout
    }
}

impl Eq for Asks {}

/// The answer to `elicitation/create` (`params` as JSON) from `server`.
pub(crate) async fn elicit(asks: &Asks, server: &str, params: Value) -> Result<Value, ErrorData> {
    let Some(elicitor) = &asks.elicitor else {
        return Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            NO_ELICITATION,
            None,
        ));
    };
    let Some(schema) = params.get("requestedSchema").filter(|s| s.is_object()) else {
        return Err(ErrorData::invalid_params(
            "rein answers only form elicitation (a message and a requestedSchema); open the URL yourself and give the tool what it needs in its arguments",
            None,
        ));
    };
    let question = Elicitation {
        asker: format!("mcp server `{server}`"),
        message: params
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        schema: schema.clone(),
    };
    let answer = tokio::time::timeout(asks.timeout(), elicitor.elicit(question))
        .await
        .unwrap_or(ElicitAnswer::Cancel);
    Ok(match answer {
        ElicitAnswer::Accept(content) if content.is_object() => {
            json!({"action": "accept", "content": content})
        }
        // An answer that is not an object cannot match a form: nothing is sent.
        ElicitAnswer::Accept(_) | ElicitAnswer::Cancel => json!({"action": "cancel"}),
        ElicitAnswer::Decline => json!({"action": "decline"}),
    })
}

/// The answer to `sampling/createMessage` (`params` as JSON) from `server`.
pub(crate) async fn sample(asks: &Asks, server: &str, params: Value) -> Result<Value, ErrorData> {
    let Some(sampler) = &asks.sampler else {
        return Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            NO_SAMPLING,
            None,
        ));
    };
    let refuse = |why: &str| {
        ErrorData::invalid_params(format!("rein refused the sampling request: {why}"), None)
    };
    let mut messages = Vec::new();
    for message in params["messages"].as_array().into_iter().flatten() {
        let role = match message["role"].as_str() {
            Some("user") => SampleRole::User,
            Some("assistant") => SampleRole::Assistant,
            _ => return Err(refuse("a message's role is neither user nor assistant")),
        };
        // Content is one block or (newer revisions) a list of blocks: text only.
        let blocks = match &message["content"] {
            Value::Array(blocks) => blocks.clone(),
            block => vec![block.clone()],
        };
        let mut text = Vec::new();
        for block in &blocks {
            match (block["type"].as_str(), block["text"].as_str()) {
                (Some("text"), Some(t)) => text.push(t),
                _ => return Err(refuse("rein samples text only; send the content as text")),
            }
        }
        messages.push((role, text.join("\n")));
    }
    let max_tokens = params["maxTokens"]
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| refuse("maxTokens is missing or not a count"))?;
    let request = SampleRequest {
        asker: format!("mcp server `{server}`"),
        system: params["systemPrompt"].as_str().map(str::to_owned),
        messages,
        max_tokens,
    };
    let reply = match tokio::time::timeout(asks.timeout(), sampler.sample(request)).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(error)) => return Err(ErrorData::internal_error(error.to_string(), None)),
        Err(_) => {
            return Err(ErrorData::internal_error(
                format!(
                    "the sampling request got no answer within {} s",
                    asks.timeout().as_secs()
                ),
                None,
            ));
        }
    };
    let mut result = json!({
        "role": "assistant",
        "content": {"type": "text", "text": reply.text},
        "model": reply.model,
    });
    if let Some(stop) = reply.stop_reason {
        result["stopReason"] = stop.into();
    }
    Ok(result)
}
