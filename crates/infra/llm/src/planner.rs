//! `LlmPlanner`: a model proposes rein decisions through function calls.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use rein_run::{
    BoxFuture, Decision, Digest, PlanMeter, PlanRequest, Planner, PlannerAttempt, PlannerCall,
    PlannerError, RunId, State, ToolName,
};
use serde::{Deserialize, Serialize};

use crate::chat::{ChatRequest, Message};
use crate::error::{LlmError, excerpt};
use crate::names::{NameError, NameMap};
use crate::prompt::{PromptConfig, build_request, build_request_with_skills, estimate_tokens};
use crate::provider::{AttemptHook, Completion, DynProvider, Provider};

mod reply;
mod setup;

/// How the planner talks to its model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// How prompts are built and compacted.
    #[serde(default)]
    pub prompt: PromptConfig,
    /// Replies without a usable function call handed back to the model, per step, before
    /// the step fails.
    #[serde(default = "default_corrections")]
    pub max_corrections: u32,
    /// The largest function arguments accepted, in bytes.
    #[serde(default = "default_max_argument_bytes")]
    pub max_argument_bytes: usize,
    /// The deepest nesting accepted in function arguments.
    #[serde(default = "default_max_depth")]
    pub max_argument_depth: usize,
    /// The model's prices, to charge the `cost` budget; none: calls cost 0.
    #[serde(default)]
    pub prices: Option<Prices>,
}

/// A model's prices in integer micro-units of a currency per million tokens (so
/// `input_per_million: 2_500_000` is 2.50 per million input tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Per million input (prompt) tokens.
    pub input_per_million: u64,
    /// Per million output (generated) tokens.
    pub output_per_million: u64,
}

impl Prices {
    /// The cost of `input` and `output` tokens, in micro-units, rounded up.
    ///
    /// ```
    /// use rein_llm::Prices;
    /// let p = Prices { input_per_million: 2_500_000, output_per_million: 10_000_000 };
    /// assert_eq!(p.cost(1_000, 100), 3_500); // 0.0025 + 0.001 = 0.0035 of the currency
    /// ```
    #[must_use]
    pub fn cost(&self, input: u64, output: u64) -> u64 {
        let micro = u128::from(input) * u128::from(self.input_per_million)
            + u128::from(output) * u128::from(self.output_per_million);
        u64::try_from(micro.div_ceil(1_000_000)).unwrap_or(u64::MAX)
    }
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            prompt: PromptConfig::default(),
            max_corrections: default_corrections(),
            max_argument_bytes: default_max_argument_bytes(),
            max_argument_depth: default_max_depth(),
            prices: None,
        }
    }
}

const fn default_corrections() -> u32 {
    2
}
const fn default_max_argument_bytes() -> usize {
    256 << 10
}
const fn default_max_depth() -> usize {
    32
}

/// A planner backed by a model.
///
/// Each step offers the model exactly the tools eligible in the current state (their specs'
/// schemas, under provider-safe names) plus the control functions `transition` (only to the
/// states the table allows from here), `finish`, `fail` and `ask_human`, and `delegate`
/// when the request says the run may delegate ([`PlanRequest::delegation`]): a child run
/// with its own ledger and a budget carved out of this run's, whose summary and result come
/// back as evidence. `delegate` takes `goal`, `reason`, `budget` (budget names to
/// non-negative integers) and `planner` (one of the engine's named planners; none: this
/// run's) and becomes a [`Decision::Delegate`] (rein's engine says so to every run shallower
/// than its `max_depth`; a `max_depth` of 0 keeps `delegate` out of every prompt). One reply becomes
/// one [`Decision`] (consecutive tool calls in it become one `call_tools` batch); further
/// decisions in the same reply are kept, in order, for the following steps, and each still
/// passes every policy check. A reply without a usable call (prose,
/// arguments that are not JSON, too large or too deep) is handed back to the model as a
/// correction, at most [`LlmConfig::max_corrections`] times, and so is a control function
/// called with bad arguments (a `delegate` without a goal, a budget that is not a
/// non-negative integer, a planner the request does not name); a call of a function that is
/// not offered becomes the decision it names, which the engine refuses and records. Each
/// skill body the request carries is announced to the step's meter before the call
/// ([`PlanMeter::skill_entered`]): the ledger shows which skill entered at which step.
///
/// ```no_run
/// use rein_llm::{Api, HttpProvider, LlmConfig, LlmPlanner, ProviderConfig};
/// let provider = HttpProvider::new(ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:8080/v1", "local"))?;
/// let planner = LlmPlanner::new(provider, LlmConfig::default());
/// # Ok::<(), rein_llm::LlmError>(())
/// ```
pub struct LlmPlanner {
    provider: Arc<dyn DynProvider>,
    config: LlmConfig,
    known: NameMap,
    queued: Mutex<HashMap<RunId, Queued>>,
}

/// Calls from one reply waiting for their step.
#[derive(Debug)]
struct Queued {
    step: u32,
    state: State,
    decisions: VecDeque<Decision>,
}

impl fmt::Debug for LlmPlanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmPlanner")
            .field("provider", &self.provider.name())
            .field("model", &self.provider.model())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl LlmPlanner {
    /// A planner asking `provider`.
    #[must_use]
    pub fn new(provider: impl Provider, config: LlmConfig) -> Self {
        Self {
            provider: Arc::new(provider),
            config,
            known: NameMap::default(),
            queued: Mutex::default(),
        }
    }

    /// The same planner, told every tool the engine has: their function names are checked
    /// for collisions now, and a call of a known tool that is not eligible in the current
    /// state is mapped back to its rein name (so the engine's refusal names it).
    ///
    /// # Errors
    /// [`NameError`] when two tools map to one function name or one takes a control
    /// function's name.
    #[deprecated(
        note = "not needed: every plan request names the engine's tools (PlanRequest::all_tools); \
                check names up front with NameMap::new"
    )]
    pub fn with_tools<'a>(
        mut self,
        tools: impl IntoIterator<Item = &'a ToolName>,
    ) -> Result<Self, NameError> {
        self.known = NameMap::new(tools)?;
        Ok(self)
    }

    /// The configuration.
    #[must_use]
    pub const fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The request this planner would send first for the step in `request` (before any
    /// correction or compaction retry): what `inspect` shows.
    #[must_use]
    pub fn prompt(&self, request: &PlanRequest<'_>) -> ChatRequest {
        build_request(&self.config.prompt, request, false)
    }

    fn take_queued(&self, request: &PlanRequest<'_>) -> Option<Decision> {
        let mut queued = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
        let id = request.run().id();
        let entry = queued.get_mut(id)?;
        if entry.step != request.step() || entry.state != request.state() {
            queued.remove(id);
            return None;
        }
        let decision = entry.decisions.pop_front();
        entry.step += 1;
        if entry.decisions.is_empty() {
            queued.remove(id);
        }
        decision
    }

    /// One model call: every attempt announced to the engine's meter with its worst case
    /// before it is sent (refused when it does not fit) and ended there (what it used, or
    /// how it failed) after.
    async fn call(
        &self,
        chat: &ChatRequest,
        meter: Option<&PlanMeter>,
    ) -> Result<Result<Completion, LlmError>, PlannerError> {
        let cost = |i, o| self.config.prices.map_or(0, |p| p.cost(i, o));
        let Some(meter) = meter else {
            return Ok(self.provider.complete_boxed(chat).await);
        };
        let input = estimate_tokens(chat);
        let output = u64::from(self.provider.max_output_tokens());
        let hook = MeterHook {
            meter,
            provider: self.provider.name(),
            model: self.provider.model(),
            worst_tokens: input.saturating_add(output),
            worst_cost: cost(input, output),
            refused: Mutex::new(None),
        };
        let outcome = self.provider.complete_with_boxed(chat, &hook).await;
        if let Some(refused) = hook
            .refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            return Err(refused);
        }
        if let Ok(c) = &outcome {
            let usage = c.response.usage;
            meter
                .end(PlannerCall {
                    provider: self.provider.name().to_owned(),
                    model: self.provider.model().to_owned(),
                    request_hash: c.request_hash,
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    cost: cost(usage.input_tokens, usage.output_tokens),
                    latency_ms: u64::try_from(c.latency.as_millis()).unwrap_or(u64::MAX),
                    finish_reason: c.response.finish_reason.clone(),
                })
                .await?;
        }
        Ok(outcome)
    }
}

/// Puts each attempt of a model call on the engine's record before it is sent.
struct MeterHook<'a> {
    meter: &'a PlanMeter,
    provider: &'a str,
    model: &'a str,
    worst_tokens: u64,
    worst_cost: u64,
    /// Why the meter refused an attempt, for `plan` to return as is.
    refused: Mutex<Option<PlannerError>>,
}

impl AttemptHook for MeterHook<'_> {
    fn before(&self, attempt: u32, request_hash: Digest) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(async move {
            let announced = self
                .meter
                .begin(PlannerAttempt {
                    attempt,
                    provider: self.provider.to_owned(),
                    model: self.model.to_owned(),
                    request_hash,
                    worst_tokens: self.worst_tokens,
                    worst_cost: self.worst_cost,
                })
                .await;
            announced.map_err(|e| {
                let reason = e.to_string();
                *self.refused.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                LlmError::AttemptRefused { reason }
            })
        })
    }

    fn failed<'a>(&'a self, attempt: u32, error: &'a LlmError) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // An engine that stopped recording stops the planner at the next `before`.
            let _ = self.meter.failed(attempt, error.to_string()).await;
        })
    }
}

impl Planner for LlmPlanner {
    /// A model reads the refusals and tool errors handed back to it and tries again.
    fn corrects_itself(&self) -> bool {
        true
    }

    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        if let Some(decision) = self.take_queued(&request) {
            return Ok(decision);
        }
        // Every tool the engine has, eligible here or not: a call of one that may not run
        // now keeps its rein name, so the engine's refusal names it.
        let offered = NameMap::new(request.all_tools().iter().map(rein_run::ToolSpec::name))
            .map_err(|e| failed(e.to_string(), e))?;
        let (mut chat, skills) = build_request_with_skills(&self.config.prompt, &request, false);
        // On the record before the call that carries them (the engine keeps the first).
        if let Some(meter) = request.meter() {
            for skill in skills {
                meter.skill_entered(skill).await?;
            }
        }
        let mut compacted = false;
        let mut corrections = 0;
        loop {
            let completion = match self.call(&chat, request.meter()).await? {
                Ok(c) => c,
                Err(LlmError::ContextTooLong { .. }) if !compacted => {
                    compacted = true;
                    let extra = chat.messages.split_off(1.min(chat.messages.len()));
                    chat = build_request(&self.config.prompt, &request, true);
                    chat.messages.extend(extra);
                    continue;
                }
                Err(e) => return Err(failed(format!("the model call failed: {e}"), e)),
            };
            match self.interpret(&completion.response, &offered, request.delegation()) {
                Ok(mut decisions) => {
                    let first = decisions.remove(0);
                    if !decisions.is_empty() {
                        let mut queued = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
                        queued.insert(
                            request.run().id().clone(),
                            Queued {
                                step: request.step() + 1,
                                state: request.state(),
                                decisions: decisions.into(),
                            },
                        );
                    }
                    return Ok(first);
                }
                Err(correction) if corrections < self.config.max_corrections => {
                    // On the record, and one unit of `violations`: a model that never gets
                    // it right ends the run by policy.
                    if let Some(meter) = request.meter() {
                        meter.correction(correction.clone()).await?;
                    }
                    corrections += 1;
                    chat.messages.push(Message::Assistant {
                        text: excerpt(&completion.response.text),
                        calls: Vec::new(),
                    });
                    chat.messages.push(Message::User {
                        text: format!("{correction} Call exactly one of the offered functions."),
                    });
                }
                Err(correction) => {
                    return Err(PlannerError::failed(format!(
                        "the model gave no usable function call after {corrections} corrections: {correction}"
                    )));
                }
            }
        }
    }
}

fn failed(message: String, source: impl std::error::Error + Send + Sync + 'static) -> PlannerError {
    PlannerError::Failed {
        message,
        source: Some(Box::new(source)),
    }
}
