//! `LlmPlanner`: a model proposes rein decisions through function calls.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rein_run::{
    BoxFuture, Cost, Decision, Digest, ModelDelta, PlanMeter, PlanRequest, Planner, PlannerAttempt,
    PlannerCall, PlannerError, PromptCompaction, ToolName,
};

use rein_tool::{SampleError, SampleReply, SampleRequest};

use crate::chat::{ChatRequest, ChatResponse};
use crate::config::{LlmConfig, PromptConfig};
use crate::dialogue::StepSoFar;
use crate::error::LlmError;
use crate::names::{NameError, NameMap};
use crate::prices::Prices;
use crate::prompt::{Built, Compaction, build_request, build_request_with_skills, estimate_tokens};
use crate::provider::{AttemptHook, Completion, DynProvider, Provider};
use crate::reply::{Reader, record};

/// A planner backed by a model.
///
/// Each step offers the model the run's tools ([`PlanRequest::rules`]; without rules, the
/// tools eligible in the current state), their specs' schemas under provider-safe names,
/// plus the control functions `transition`, `finish`, `fail` and `ask_human`, and `delegate`
/// when the request says the run may delegate ([`PlanRequest::delegation`]): a child run
/// with its own ledger and a budget carved out of this run's, whose summary and result come
/// back as evidence. `delegate` takes `goal`, `reason`, `budget` (budget names to
/// non-negative integers) and `planner` (one of the engine's named planners; none: this
/// run's) and becomes a [`Decision::Delegate`] (rein's engine says so to every run shallower
/// than its `max_depth`; a `max_depth` of 0 keeps `delegate` out of every prompt). One reply becomes
/// one [`Decision`]: consecutive tool calls in it become one `call_tools` batch, and a reply
/// asking for more than one thing (a transition, then calls; calls, then `finish`) becomes
/// one [`Decision::Sequence`], which the engine applies member by member, each checked,
/// stopping at the first it refuses. The planner keeps nothing between steps: what a reply
/// asked for is in the ledger, and nothing of it is dropped silently. The request shows the
/// model its earlier replies ([`PlanRequest::dialogue`], recorded with each `planner_call`)
/// with their results, and which tools run in the current state. A reply without a usable
/// call (prose, arguments that are not JSON, too large or too deep, any call of it
/// malformed, or `finish`, `fail` or `ask_human` before another call) is handed back to the
/// model as a correction, at most [`LlmConfig::max_corrections`] times, and so is a control
/// function called with bad arguments (a `delegate` without a goal, a budget that is not a
/// non-negative integer, a planner the request does not name), a reply the output limit cut
/// short, and a call of a function no one offered (the correction names the functions
/// offered); a call of a known tool not eligible here becomes the decision it names, which
/// the engine refuses and records. Each
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
        build_request(&self.config.prompt, request, Compaction::WhenOverLimit)
    }

    /// One model call: every attempt announced to the engine's meter with its worst case
    /// before it is sent (refused when it does not fit) and ended there (what it used, or
    /// how it failed) after.
    ///
    /// `attempts` counts the attempts this step announced so far: a call after a
    /// correction or a compaction goes on from there, so each attempt of a step has its
    /// own number on the record.
    async fn call(
        &self,
        chat: &ChatRequest,
        meter: Option<&PlanMeter>,
        attempts: &mut u32,
    ) -> Result<Result<Completion, LlmError>, PlannerError> {
        let Some(meter) = meter else {
            return Ok(self.provider.complete_boxed(chat).await);
        };
        let input = estimate_tokens(chat);
        let output = u64::from(self.provider.max_output_tokens());
        let hook = MeterHook {
            meter,
            sent_to: Mutex::new((
                self.provider.name().to_owned(),
                self.provider.model().to_owned(),
            )),
            prices: self.config.prices.as_ref(),
            input,
            output,
            offset: *attempts,
            last: AtomicU32::new(0),
        };
        let outcome = self.provider.complete_with_boxed(chat, &hook).await;
        *attempts = attempts.saturating_add(hook.last.load(Ordering::Relaxed));
        // The meter's refusal, returned as it said it.
        let outcome = match outcome {
            Err(LlmError::AttemptRefused { source }) => return Err(source),
            other => other,
        };
        if let Ok(c) = &outcome {
            let usage = c.response.usage;
            // The model the last attempt went to answered (a fallback, perhaps).
            let (provider, model) = hook
                .sent_to
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner);
            let cost = self
                .config
                .prices
                .as_ref()
                .map_or(Cost::Unknown, |p| p.cost(&model, &usage));
            meter
                .end(PlannerCall {
                    provider,
                    model,
                    request_hash: c.request_hash,
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    cost,
                    latency_ms: u64::try_from(c.latency.as_millis()).unwrap_or(u64::MAX),
                    finish_reason: c.response.finish_reason.clone(),
                    cache_read_tokens: usage.cache_read_tokens,
                    cache_write_tokens: usage.cache_write_tokens,
                    // What the next requests show the model as its own turn.
                    reply: Some(record(&c.response, self.config.max_argument_bytes)),
                })
                .await?;
        }
        Ok(outcome)
    }
}

impl LlmPlanner {
    /// The same planner with another system prompt (default:
    /// [`DEFAULT_SYSTEM_PROMPT`](crate::DEFAULT_SYSTEM_PROMPT)). It replaces what rein tells
    /// the model about the run and its functions; to give the model a task or a style, use
    /// [`with_instructions`](Self::with_instructions), which keeps it.
    ///
    /// ```no_run
    /// use rein_llm::{HttpProvider, LlmConfig, LlmPlanner, ModelPrices, Prices};
    /// use rein_run::Currency;
    /// let prices = Prices::new(Currency::USD)
    ///     .with_model("gpt-4o-mini", ModelPrices::new("0.15".parse()?, "0.60".parse()?));
    /// let planner = LlmPlanner::new(HttpProvider::from_env()?, LlmConfig::default())
    ///     .with_system_prompt("You triage support tickets. Be brief.")
    ///     .with_prices(prices);
    /// assert_eq!(planner.config().prompt.system, "You triage support tickets. Be brief.");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_system_prompt(mut self, system: impl Into<String>) -> Self {
        self.config.prompt.system = system.into();
        self
    }

    /// The same planner with the team's instructions for its agent, sent before rein's
    /// system prompt ([`PromptConfig::instructions`](crate::PromptConfig::instructions)).
    ///
    /// ```no_run
    /// use rein_llm::{DEFAULT_SYSTEM_PROMPT, HttpProvider, LlmConfig, LlmPlanner};
    /// let planner = LlmPlanner::new(HttpProvider::from_env()?, LlmConfig::default())
    ///     .with_instructions("You triage support tickets. Be brief.");
    /// let sent = planner.config().prompt.system_prompt();
    /// assert!(sent.starts_with("You triage support tickets. Be brief.\n\n"));
    /// assert!(sent.ends_with(DEFAULT_SYSTEM_PROMPT));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.config.prompt.instructions = instructions.into();
        self
    }

    /// The same planner knowing what its models cost at `prices`, and charging the
    /// `cost` budget by them (default: no prices, so every call's cost is unknown and a
    /// run with a `cost` budget refuses to call).
    #[must_use]
    pub fn with_prices(mut self, prices: Prices) -> Self {
        self.config.prices = Some(prices);
        self
    }
}

/// Puts each attempt of a model call on the engine's record before it is sent.
struct MeterHook<'a> {
    meter: &'a PlanMeter,
    /// The provider and model the next attempts go to.
    sent_to: Mutex<(String, String)>,
    /// The models' prices: each attempt's worst cost is the model's it goes to.
    prices: Option<&'a Prices>,
    /// The prompt's estimated tokens, and the most the reply may generate.
    input: u64,
    output: u64,
    /// The attempts the step announced before this call: its attempts are numbered on.
    offset: u32,
    /// The provider's number of this call's last attempt announced.
    last: AtomicU32,
}

impl AttemptHook for MeterHook<'_> {
    fn before(&self, attempt: u32, request_hash: Digest) -> BoxFuture<'_, Result<(), LlmError>> {
        self.last.fetch_max(attempt, Ordering::Relaxed);
        let attempt = self.offset.saturating_add(attempt);
        let (provider, model) = self
            .sent_to
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Box::pin(async move {
            let announced = self
                .meter
                .begin(PlannerAttempt {
                    attempt,
                    worst_cost: self.prices.map_or(Cost::Unknown, |p| {
                        p.worst_cost(&model, self.input, self.output)
                    }),
                    provider,
                    model,
                    request_hash,
                    worst_tokens: self.input.saturating_add(self.output),
                })
                .await;
            announced.map_err(|source| LlmError::AttemptRefused { source })
        })
    }

    fn failed<'a>(&'a self, attempt: u32, error: &'a LlmError) -> BoxFuture<'a, ()> {
        let attempt = self.offset.saturating_add(attempt);
        Box::pin(async move {
            // An engine that stopped recording stops the planner at the next `before`.
            let _ = self.meter.failed(attempt, error.to_string()).await;
        })
    }

    fn sending_to(&self, provider: &str, model: &str) {
        *self.sent_to.lock().unwrap_or_else(PoisonError::into_inner) =
            (provider.to_owned(), model.to_owned());
    }

    fn streams(&self) -> bool {
        self.meter.streams()
    }

    /// The reply streaming in, published through the step's meter (never recorded).
    fn delta(&self, delta: ModelDelta) {
        self.meter.delta(delta);
    }
}

impl LlmPlanner {
    /// The prompt compacted after the provider said `sent` does not fit the model's
    /// context: rebuilt compacted (older tool results summarised, the step's corrections
    /// kept), and compacted harder (half the items kept, each cut to half the length) when
    /// that is no shorter than what was sent. `None` when nothing shortens it: sending the
    /// same bytes again would fail the same way.
    fn compacted(
        &self,
        request: &PlanRequest<'_>,
        so_far: &StepSoFar,
        sent: &ChatRequest,
    ) -> Option<(ChatRequest, Option<PromptCompaction>)> {
        let before = estimate_tokens(sent);
        let prompt = &self.config.prompt;
        let harder = PromptConfig {
            keep_last: prompt.keep_last / 2,
            max_item_chars: (prompt.max_item_chars / 2).max(1),
            ..prompt.clone()
        };
        [prompt, &harder]
            .into_iter()
            .map(|config| build_request_with_skills(config, request, so_far, Compaction::Always))
            .find(|candidate| estimate_tokens(&candidate.chat) < before)
            .map(|built| (built.chat, built.compaction))
    }
}

impl Planner for LlmPlanner {
    /// A model reads the refusals and tool errors handed back to it and tries again.
    fn corrects_itself(&self) -> bool {
        true
    }

    /// The planner's model answers: every attempt declared and reported through `meter`
    /// as a step's calls are (`crate::sample`).
    async fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
        meter: &'a PlanMeter,
    ) -> Result<SampleReply, SampleError> {
        let mut attempts = 0;
        let chat = crate::sample::chat(request);
        match self.call(&chat, Some(meter), &mut attempts).await {
            Ok(Ok(completion)) => Ok(crate::sample::reply(
                completion.response,
                self.provider.model(),
            )),
            Ok(Err(error)) => Err(SampleError::Failed(error.to_string())),
            Err(refused) => Err(crate::sample::refusal(refused)),
        }
    }

    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        // Offered: the run's tools every step when the engine says what they are.
        let tools = request.rules().map_or(request.tools(), |r| r.run_tools());
        let offered = NameMap::new(tools.iter().map(rein_run::ToolSpec::name))
            .map_err(|e| failed(e.to_string(), e))?;
        let mut so_far = StepSoFar::default();
        let Built {
            mut chat,
            skills,
            compaction: mut compacted,
        } = build_request_with_skills(
            &self.config.prompt,
            &request,
            &so_far,
            Compaction::WhenOverLimit,
        );
        // On the record before the call that carries them (the engine keeps the first).
        if let Some(meter) = request.meter() {
            for skill in skills {
                meter.skill_entered(skill).await?;
            }
        }
        let mut compaction = Compaction::WhenOverLimit;
        let mut corrections = 0;
        let mut attempts = 0;
        loop {
            // What the request about to be sent left out, on the record before it is sent.
            if let (Some(meter), Some(c)) = (request.meter(), compacted.take()) {
                meter.compacted(c).await?;
            }
            let completion = match self.call(&chat, request.meter(), &mut attempts).await? {
                Ok(c) => c,
                Err(e @ LlmError::ContextTooLong { .. })
                    if compaction == Compaction::WhenOverLimit =>
                {
                    compaction = Compaction::Always;
                    (chat, compacted) =
                        self.compacted(&request, &so_far, &chat).ok_or_else(|| {
                            failed(
                                format!(
                                    "the model call failed: {e}; compacting the prompt does not \
                                 make it any shorter, so it was not sent again; lower \
                                 `keep_last` or `max_item_chars`, or use a model with a \
                                 larger context"
                                ),
                                e,
                            )
                        })?;
                    continue;
                }
                Err(e) => return Err(failed(format!("the model call failed: {e}"), e)),
            };
            let interpreted =
                match cut_short(&completion.response, self.provider.max_output_tokens()) {
                    Some(correction) => Err(correction),
                    None => Reader {
                        max_argument_bytes: self.config.max_argument_bytes,
                        max_argument_depth: self.config.max_argument_depth,
                        known: &self.known,
                    }
                    .interpret(
                        &completion.response,
                        &offered,
                        request.delegation(),
                    ),
                };
            match interpreted {
                Ok(decision) => return Ok(decision),
                Err(correction) if corrections < self.config.max_corrections => {
                    let correction = format!("{correction} Call one of the offered functions.");
                    // On the record, and one unit of `violations`: a model that never gets
                    // it right ends the run by policy.
                    if let Some(meter) = request.meter() {
                        meter.correction(correction.clone()).await?;
                    }
                    corrections += 1;
                    // The reply and the correction, as the engine records them: the next
                    // request extends this one, as the next step's will.
                    so_far.turns.push(rein_run::Turn {
                        step: request.step(),
                        state: request.state(),
                        after: request.evidence().len() + so_far.evidence.len(),
                        reply: Arc::new(record(
                            &completion.response,
                            self.config.max_argument_bytes,
                        )),
                    });
                    so_far.evidence.push(rein_run::Evidence::new(
                        request.step(),
                        rein_run::EvidenceKind::note(rein_run::NoteSource::Violation, correction),
                    ));
                    let built = build_request_with_skills(
                        &self.config.prompt,
                        &request,
                        &so_far,
                        compaction,
                    );
                    (chat, compacted) = (built.chat, built.compaction);
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

/// The correction for a reply the output limit cut short (`max_tokens` on Anthropic,
/// `length` on OpenAI): its calls may be incomplete (Anthropic then sends `input: {}`), so
/// none of them is run.
fn cut_short(reply: &ChatResponse, max_output_tokens: u32) -> Option<String> {
    matches!(
        reply.finish_reason.as_deref(),
        Some("max_tokens" | "length")
    )
    .then(|| {
        format!(
            "Your reply was cut at the output limit of {max_output_tokens} tokens before it \
             was complete, so none of its calls was run; reply more briefly (shorter \
             arguments, fewer calls)."
        )
    })
}

fn failed(message: String, source: impl std::error::Error + Send + Sync + 'static) -> PlannerError {
    PlannerError::Failed {
        message,
        source: Some(Box::new(source)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Api, HttpProvider, ProviderConfig};

    #[test]
    fn setters_change_only_what_they_name() {
        let provider = HttpProvider::with_key(
            ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:9/v1", "m"),
            None,
        )
        .unwrap();
        let prices = crate::Prices::new(rein_run::Currency::USD).with_model(
            "m",
            crate::ModelPrices::new("1".parse().unwrap(), "2".parse().unwrap()),
        );
        let planner = LlmPlanner::new(provider, LlmConfig::default())
            .with_system_prompt("be brief")
            .with_prices(prices.clone());
        let expected = LlmConfig {
            prices: Some(prices),
            prompt: crate::PromptConfig {
                system: "be brief".into(),
                ..crate::PromptConfig::default()
            },
            ..LlmConfig::default()
        };
        assert_eq!(planner.config(), &expected);
    }
}
