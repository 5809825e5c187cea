//! What a server may ask of rein while a tool runs, answered through the ports the operator
//! gives ([`rein_tool::Elicitor`], [`rein_tool::Sampler`]): without one, the request is
//! refused with a reason; with one, `elicitation/create` waits for the person's answer for
//! at most the configured time (no answer: `cancel`, failing closed) and
//! `sampling/createMessage` goes to the sampler (which charges the run's budgets) — or, where
//! the operator lets the runs sample ([`ServerConfig::with_run_sampling`]), to the run whose
//! call is in flight on the connection ([`rein_tool::CallScope`]), refused when none is or
//! when several are (nothing tells which run asks).
//!
//! [`ServerConfig::with_run_sampling`]: crate::ServerConfig::with_run_sampling

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rein_tool::{
    CallScopes, ElicitAnswer, Elicitation, Elicitor, SampleRequest, SampleRole, Sampler,
};
use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use serde_json::{Value, json};

use crate::in_flight::{During, InFlight};

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
    /// Finds the run's side of the call in flight (none: calls are tied to no run).
    pub(crate) scopes: Option<Arc<dyn CallScopes>>,
    /// Sampling is answered by the model of the run whose call is in flight.
    pub(crate) run_sampling: bool,
}

impl Asks {
    /// How long an answer may take when no timeout is set: 5 minutes (a person reads,
    /// thinks, types).
    pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

    fn timeout(&self) -> Duration {
        self.timeout.unwrap_or(Self::DEFAULT_TIMEOUT)
    }

    /// Whether rein declares sampling and answers it.
    pub(crate) const fn samples(&self) -> bool {
        self.sampler.is_some() || (self.run_sampling && self.scopes.is_some())
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

    /// Ties each governed call to the run it belongs to, through `scopes` (the engine's
    /// `rein_engine::CurrentCall`): the server's progress notifications and log lines pass
    /// on to the run's subscribers ([`rein_tool::ToolNotice`]) while its call is the only
    /// one of the server in flight (nothing rmcp passes on says which call they are for).
    #[must_use]
    pub fn with_call_scopes(mut self, scopes: Arc<dyn CallScopes>) -> Self {
        self.asks.scopes = Some(scopes);
        self
    }

    /// Answers the server's `sampling/createMessage` (text) with the model of the run
    /// whose call is in flight on the connection, under that run's budgets (needs
    /// [`with_call_scopes`](Self::with_call_scopes); a sampler given with
    /// [`with_sampler`](Self::with_sampler) answers instead). A request that arrives when no
    /// governed call is in flight, or while several are, is refused with a reason.
    #[must_use]
    pub const fn with_run_sampling(mut self) -> Self {
        self.asks.run_sampling = true;
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
            .field("scopes", &self.scopes.is_some())
            .field("run_sampling", &self.run_sampling)
            .finish()
    }
}

impl PartialEq for Asks {
    fn eq(&self, other: &Self) -> bool {
        self.elicitor.is_some() == other.elicitor.is_some()
            && self.sampler.is_some() == other.sampler.is_some()
            && self.timeout == other.timeout
            && self.scopes.is_some() == other.scopes.is_some()
            && self.run_sampling == other.run_sampling
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
pub(crate) async fn sample(
    asks: &Asks,
    in_flight: &InFlight,
    server: &str,
    params: Value,
) -> Result<Value, ErrorData> {
    if !asks.samples() {
        return Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            NO_SAMPLING,
            None,
        ));
    }
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
    let answer: rein_tool::BoxFuture<'_, _> = match (&asks.sampler, in_flight.during()) {
        (Some(sampler), _) => sampler.sample(request),
        (None, During::One(scope)) => {
            // Owned by the future: the call may end (and deregister) while it waits.
            Box::pin(async move { scope.sample(request).await })
        }
        (None, During::None) => {
            return Err(refuse(&format!(
                "no governed call of server `{server}` is in flight, so no run would pay for it; rein samples only during a tool call it can charge to a run"
            )));
        }
        (None, During::Several(n)) => {
            return Err(refuse(&format!(
                "{n} calls of server `{server}` are in flight, and nothing in the request says which run asks; make one call at a time to a server that samples"
            )));
        }
    };
    let reply = match tokio::time::timeout(asks.timeout(), answer).await {
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
