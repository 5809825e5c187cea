//! `PlanMeter`: how a planner declares what a model call could spend and reports what it
//! did spend. Planners report, the engine charges: no planner touches a budget itself.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::{
    BoxFuture, BudgetExhausted, BudgetName, BudgetSnapshot, Cost, Counter, Digest, PlannerAttempt,
    PlannerCall, PlannerError, PromptCompaction, Skill, WorstCase,
};

/// What a planner tells the engine while it plans, through its [`PlanMeter`], each
/// recorded in the ledger in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanEvent {
    /// A model call is about to be sent (recorded, and durable, before it is).
    Attempt(PlannerAttempt),
    /// The last attempt answered: what it used (recorded, then charged).
    Called(PlannerCall),
    /// The last attempt failed (a server error, a timeout, a broken stream).
    Failed {
        /// The attempt's number within its model call.
        attempt: u32,
        /// What went wrong (no secrets: the planner's errors never hold them).
        error: String,
    },
    /// The model's reply was unusable and the planner asks it again: a correction, which
    /// counts against the `violations` budget.
    Correction {
        /// What was wrong with the reply, as handed back to the model.
        message: String,
    },
    /// The prompt about to be sent was compacted: what was dropped and summarised
    /// (announced before that call's attempt).
    Compacted(PromptCompaction),
    /// A skill's body is in the context about to be sent (announced before that call's
    /// attempt). The engine records each skill, by name and checksum, once per run.
    SkillEntered {
        /// The skill's name.
        name: String,
        /// The skill's checksum: exactly which text entered.
        checksum: Digest,
    },
}

/// The engine closed its end: nothing can be recorded any more, so the planner MUST NOT
/// call out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the engine stopped recording this step; make no further model call")]
pub struct PlanSinkClosed;

/// Where a [`PlanMeter`] sends [`PlanEvent`]s: the engine's recorder. Implemented by the
/// engine; a planner only sees it through the meter.
///
/// # Contract
/// `record` MUST resolve only once the event is in the ledger (for an attempt: durably),
/// and MUST fail with [`PlanSinkClosed`] when it can record nothing any more.
pub trait PlanSink: Send + Sync + fmt::Debug {
    /// Records `event`; resolves when it is on the record.
    fn record(&self, event: PlanEvent) -> BoxFuture<'_, Result<(), PlanSinkClosed>>;
}

/// The engine's meter for one step, reachable from [`PlanRequest::meter`].
///
/// [`PlanRequest::meter`]: crate::PlanRequest::meter
///
/// ```
/// use std::collections::BTreeMap;
/// use rein_run::{BudgetName, BudgetSnapshot, BudgetUsage, Cost, Digest, PlanMeter, PlannerCall, WorstCase};
///
/// let limits = BTreeMap::from([(BudgetName::TOKENS, 1_000)]);
/// let usage = BudgetUsage::default();
/// let meter = PlanMeter::new(BudgetSnapshot::new(&limits, &usage));
/// meter.declare(WorstCase { tokens: 800, cost: Cost::Unknown })?;
/// meter.report(PlannerCall {
///     provider: "openai".into(), model: "m".into(), request_hash: Digest::of_bytes(b"{}"),
///     input_tokens: 300, output_tokens: 200, cost: Cost::Unknown, latency_ms: 12, finish_reason: None,
///     cache_read_tokens: 0, cache_write_tokens: 0, reply: None,
/// });
/// // 500 are spent in this step: a call that could spend 600 more does not fit.
/// assert!(meter.declare(WorstCase { tokens: 600, cost: Cost::Unknown }).is_err());
/// assert_eq!(meter.calls().len(), 1);
/// # Ok::<(), rein_run::BudgetExhausted>(())
/// ```
///
/// A planner that calls a model SHOULD announce every attempt with [`PlanMeter::begin`]
/// (it waits until the engine has the attempt on record) and end it with
/// [`PlanMeter::end`] or [`PlanMeter::failed`]; [`PlanMeter::report`] is the simpler form
/// that records a call only after `plan` returns (a crash mid-call then loses it).
///
/// A planner whose model streams its reply MAY publish it piece by piece as it arrives with
/// [`PlanMeter::delta`] ([`ModelDelta`](crate::ModelDelta)): never recorded and never
/// waited for, so a UI can show the model typing while the ledger keeps the whole reply.
#[derive(Debug)]
pub struct PlanMeter {
    tokens: Option<Limit>,
    cost: Option<Limit>,
    violations: Option<Limit>,
    calls: Mutex<Steps>,
    sink: Option<Arc<dyn PlanSink>>,
    /// Where streamed pieces of a reply go (`delta`), when anybody may watch.
    pub(crate) deltas: Option<Arc<dyn crate::DeltaSink>>,
}

/// What the planner reported in this step.
#[derive(Debug, Default)]
struct Steps {
    /// Every call, with whether it is already on record (through [`PlanMeter::end`]).
    calls: Vec<(PlannerCall, bool)>,
    corrections: u64,
    /// The skills announced in this step (name, checksum).
    skills: Vec<(String, Digest)>,
}

#[derive(Debug, Clone, Copy)]
struct Limit {
    limit: u64,
    used: u64,
}

impl PlanMeter {
    /// A meter over what is left of `tokens` and `cost` in `budget`.
    #[must_use]
    pub fn new(budget: BudgetSnapshot<'_>) -> Self {
        let limit = |name: &BudgetName| {
            budget.limit(name).map(|limit| Limit {
                limit,
                used: budget
                    .used(name)
                    .saturating_add(budget.usage().reserved(name)),
            })
        };
        Self {
            tokens: limit(&BudgetName::TOKENS),
            cost: limit(&BudgetName::COST),
            violations: limit(&BudgetName::VIOLATIONS),
            calls: Mutex::default(),
            sink: None,
            deltas: None,
        }
    }

    /// The same meter, recording what the planner announces through `sink` (the engine's
    /// recorder) as it happens.
    #[must_use]
    pub fn with_sink(mut self, sink: Arc<dyn PlanSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// A meter with no limits (for planners run outside an engine).
    #[must_use]
    pub const fn unlimited() -> Self {
        Self {
            tokens: None,
            cost: None,
            violations: None,
            calls: Mutex::new(Steps {
                calls: Vec::new(),
                corrections: 0,
                skills: Vec::new(),
            }),
            sink: None,
            deltas: None,
        }
    }

    /// Declares that the next call could spend up to `worst` (an unknown cost counts as
    /// nothing here: [`PlanMeter::begin`] refuses an unpriced call under a `cost` budget).
    ///
    /// # Errors
    /// [`BudgetExhausted`] when it does not fit in what is left of `tokens` or `cost` after
    /// the calls already reported in this step. The planner MUST NOT make the call then; it
    /// returns [`PlannerError::OverBudget`] and the engine stops the run.
    ///
    /// [`PlannerError::OverBudget`]: crate::PlannerError::OverBudget
    pub fn declare(&self, worst: WorstCase) -> Result<(), BudgetExhausted> {
        let steps = self.lock();
        let spent_tokens: u64 = steps.calls.iter().map(|(c, _)| c.tokens()).sum();
        let spent_cost: u64 = steps
            .calls
            .iter()
            .map(|(c, _)| c.cost.charged_micros())
            .sum();
        for (name, limit, spent, requested) in [
            (BudgetName::TOKENS, self.tokens, spent_tokens, worst.tokens),
            (
                BudgetName::COST,
                self.cost,
                spent_cost,
                worst.cost.charged_micros(),
            ),
        ] {
            let Some(Limit { limit, used }) = limit else {
                continue;
            };
            let counter = Counter {
                used: used.saturating_add(spent),
                reserved: 0,
            };
            counter.fits(&name, requested, Some(limit))?;
        }
        Ok(())
    }

    /// Reports a call that was made (successful or not, whatever it used). The engine
    /// records it after `plan` returns; [`PlanMeter::begin`] and [`PlanMeter::end`] record
    /// a call as it happens instead.
    pub fn report(&self, call: PlannerCall) {
        self.lock().calls.push((call, false));
    }

    /// Announces an attempt: checks that its worst case fits (as [`PlanMeter::declare`])
    /// and waits until the engine has it on record, durably. Call it right before sending
    /// each attempt, retries included.
    ///
    /// # Errors
    /// [`PlannerError::OverBudget`] when the worst case does not fit;
    /// [`PlannerError::Unpriced`] when the run has a `cost` budget and the attempt's cost
    /// is unknown (its model has no price); [`PlannerError::Failed`] when the engine
    /// stopped recording. Either way the attempt MUST NOT be sent.
    pub async fn begin(&self, attempt: PlannerAttempt) -> Result<(), PlannerError> {
        if self.cost.is_some() && attempt.worst_cost == Cost::Unknown {
            return Err(PlannerError::Unpriced {
                model: attempt.model,
            });
        }
        self.declare(WorstCase {
            tokens: attempt.worst_tokens,
            cost: attempt.worst_cost,
        })?;
        self.send(PlanEvent::Attempt(attempt)).await
    }

    /// Ends the last attempt announced with [`PlanMeter::begin`]: what it used, recorded and
    /// charged as it happens.
    ///
    /// # Errors
    /// [`PlannerError::Failed`] when the engine stopped recording.
    pub async fn end(&self, call: PlannerCall) -> Result<(), PlannerError> {
        self.lock().calls.push((call.clone(), self.sink.is_some()));
        self.send(PlanEvent::Called(call)).await
    }

    /// Ends the last attempt announced with [`PlanMeter::begin`] as failed.
    ///
    /// # Errors
    /// [`PlannerError::Failed`] when the engine stopped recording.
    pub async fn failed(&self, attempt: u32, error: String) -> Result<(), PlannerError> {
        self.send(PlanEvent::Failed { attempt, error }).await
    }

    /// Records that the model's reply was unusable and is handed back to it: one unit of
    /// the `violations` budget.
    ///
    /// # Errors
    /// [`PlannerError::OverBudget`] (on `violations`) when the budget has nothing left:
    /// the planner MUST NOT ask again, and the run ends by policy.
    /// [`PlannerError::Failed`] when the engine stopped recording.
    pub async fn correction(&self, message: String) -> Result<(), PlannerError> {
        {
            let mut steps = self.lock();
            if let Some(Limit { limit, used }) = self.violations {
                let counter = Counter {
                    used: used.saturating_add(steps.corrections),
                    reserved: 0,
                };
                counter.fits(&BudgetName::VIOLATIONS, 1, Some(limit))?;
            }
            steps.corrections += 1;
        }
        self.send(PlanEvent::Correction { message }).await
    }

    /// Announces that `skill`'s body is in the context about to be sent. Call it for every
    /// skill body the context holds, before [`PlanMeter::begin`] announces the call that
    /// carries it: the engine records the skill (name and checksum) at the first step its
    /// body enters the context, once per run; a skill announced again in this step is not
    /// sent again.
    ///
    /// # Errors
    /// [`PlannerError::Failed`] when the engine stopped recording: the call MUST NOT be
    /// sent.
    pub async fn skill_entered(&self, skill: &Skill) -> Result<(), PlannerError> {
        let key = (skill.name().to_owned(), skill.checksum());
        {
            let mut steps = self.lock();
            if steps.skills.contains(&key) {
                return Ok(());
            }
            steps.skills.push(key.clone());
        }
        let (name, checksum) = key;
        self.send(PlanEvent::SkillEntered { name, checksum }).await
    }

    /// Announces that the request about to be sent is compacted as `compaction` says.
    /// Call it before [`PlanMeter::begin`] announces the call that sends it: the ledger
    /// then holds what a rebuild of that request needs.
    ///
    /// # Errors
    /// [`PlannerError::Failed`] when the engine stopped recording: the call MUST NOT be
    /// sent.
    pub async fn compacted(&self, compaction: PromptCompaction) -> Result<(), PlannerError> {
        self.send(PlanEvent::Compacted(compaction)).await
    }

    async fn send(&self, event: PlanEvent) -> Result<(), PlannerError> {
        match &self.sink {
            None => Ok(()),
            Some(sink) => sink
                .record(event)
                .await
                .map_err(|e| PlannerError::failed(e.to_string())),
        }
    }

    /// The calls reported so far, in order.
    #[must_use]
    pub fn calls(&self) -> Vec<PlannerCall> {
        self.lock().calls.iter().map(|(c, _)| c.clone()).collect()
    }

    /// The calls reported and not yet on record (those of [`PlanMeter::report`]), taken out
    /// of the meter.
    #[must_use]
    pub fn into_calls(self) -> Vec<PlannerCall> {
        self.calls
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .calls
            .into_iter()
            .filter_map(|(c, recorded)| (!recorded).then_some(c))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Steps> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    use super::*;
    use crate::BudgetUsage;

    /// Runs a future that never waits (a meter without a sink, or with the sink below).
    fn now<T>(future: impl Future<Output = T>) -> T {
        match std::pin::pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(value) => value,
            Poll::Pending => panic!("the future waited"),
        }
    }

    /// Keeps every event, at once.
    #[derive(Debug, Default)]
    struct Kept(Mutex<Vec<PlanEvent>>);

    impl PlanSink for Kept {
        fn record(&self, event: PlanEvent) -> BoxFuture<'_, Result<(), PlanSinkClosed>> {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(event);
            Box::pin(std::future::ready(Ok(())))
        }
    }

    fn call(tokens: u64) -> PlannerCall {
        PlannerCall {
            provider: "p".into(),
            model: "m".into(),
            request_hash: Digest::of_bytes(b"{}"),
            input_tokens: tokens,
            output_tokens: 0,
            cost: Cost::Unknown,
            latency_ms: 0,
            finish_reason: None,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            reply: None,
        }
    }

    fn attempt(worst_tokens: u64) -> PlannerAttempt {
        PlannerAttempt {
            attempt: 1,
            provider: "p".into(),
            model: "m".into(),
            request_hash: Digest::of_bytes(b"{}"),
            worst_tokens,
            worst_cost: Cost::Unknown,
        }
    }

    #[test]
    fn attempts_and_outcomes_reach_the_sink_in_order_and_count_against_the_step() {
        let limits = BTreeMap::from([(BudgetName::TOKENS, 100)]);
        let usage = BudgetUsage::default();
        let sink = Arc::new(Kept::default());
        let meter = PlanMeter::new(BudgetSnapshot::new(&limits, &usage))
            .with_sink(Arc::clone(&sink) as Arc<dyn PlanSink>);
        now(meter.begin(attempt(80))).unwrap();
        now(meter.end(call(60))).unwrap();
        now(meter.failed(2, "boom".into())).unwrap();
        // 60 spent: an attempt that could spend 50 more does not fit, and is not recorded.
        assert!(matches!(
            now(meter.begin(attempt(50))),
            Err(PlannerError::OverBudget(BudgetExhausted { used: 60, .. }))
        ));
        meter.report(call(5));
        let events = sink.0.lock().unwrap().clone();
        assert_eq!(
            events,
            [
                PlanEvent::Attempt(attempt(80)),
                PlanEvent::Called(call(60)),
                PlanEvent::Failed {
                    attempt: 2,
                    error: "boom".into()
                },
            ]
        );
        assert_eq!(meter.calls().len(), 2);
        // Only what is not on record yet is left for the engine to record.
        assert_eq!(meter.into_calls(), [call(5)]);
    }

    #[test]
    fn a_skill_is_announced_once_per_step_by_name_and_checksum() {
        let sink = Arc::new(Kept::default());
        let meter = PlanMeter::unlimited().with_sink(Arc::clone(&sink) as Arc<dyn PlanSink>);
        let skill = |body: &str| Skill::new("release", "How to release", vec![], body).unwrap();
        let (v1, v2) = (skill("one"), skill("two"));
        now(meter.skill_entered(&v1)).unwrap();
        // A retry or a correction rebuilds the same context: announced once.
        now(meter.skill_entered(&v1)).unwrap();
        now(meter.begin(attempt(1))).unwrap();
        // Another version of the skill is another text: announced too.
        now(meter.skill_entered(&v2)).unwrap();
        let events = sink.0.lock().unwrap().clone();
        assert_eq!(
            events,
            [
                PlanEvent::SkillEntered {
                    name: "release".into(),
                    checksum: v1.checksum()
                },
                PlanEvent::Attempt(attempt(1)),
                PlanEvent::SkillEntered {
                    name: "release".into(),
                    checksum: v2.checksum()
                },
            ]
        );
        assert_ne!(v1.checksum(), v2.checksum());
        // Without a sink there is nothing to record.
        now(PlanMeter::unlimited().skill_entered(&v1)).unwrap();
    }

    #[test]
    fn an_unpriced_call_is_refused_under_a_cost_budget_and_free_of_one_without() {
        let limits = BTreeMap::from([(BudgetName::COST, 1_000_000)]);
        let usage = BudgetUsage::default();
        let sink = Arc::new(Kept::default());
        let meter = PlanMeter::new(BudgetSnapshot::new(&limits, &usage))
            .with_sink(Arc::clone(&sink) as Arc<dyn PlanSink>);
        // Its cost is unknown: the budget could not bind it, so it is neither recorded nor
        // sent, and the error names the model.
        let Err(PlannerError::Unpriced { model }) = now(meter.begin(attempt(10))) else {
            panic!("an unpriced call under a cost budget is refused");
        };
        assert_eq!(model, "m");
        assert!(sink.0.lock().unwrap().is_empty());
        // Priced, it is measured against what is left.
        let priced = |micros| PlannerAttempt {
            worst_cost: Cost::Known(crate::Money::from_micros(micros, crate::Currency::USD)),
            ..attempt(10)
        };
        now(meter.begin(priced(1_000_000))).unwrap();
        assert!(matches!(
            now(meter.begin(priced(1_000_001))),
            Err(PlannerError::OverBudget(_))
        ));
        // Without a cost budget nothing needs a price.
        now(PlanMeter::unlimited().begin(attempt(10))).unwrap();
    }

    #[test]
    fn corrections_stop_at_the_violations_budget() {
        let limits = BTreeMap::from([(BudgetName::VIOLATIONS, 3)]);
        let mut usage = BudgetUsage::default();
        let one = usage.reserve(&BudgetName::VIOLATIONS, 1, None).unwrap();
        usage.commit(one);
        let meter = PlanMeter::new(BudgetSnapshot::new(&limits, &usage));
        now(meter.correction("no call".into())).unwrap();
        now(meter.correction("no call".into())).unwrap();
        let Err(PlannerError::OverBudget(exhausted)) = now(meter.correction("no call".into()))
        else {
            panic!("a third correction does not fit");
        };
        assert_eq!(
            (exhausted.name, exhausted.used),
            (BudgetName::VIOLATIONS, 3)
        );
        // Outside an engine nothing limits them.
        let free = PlanMeter::unlimited();
        for _ in 0..10 {
            now(free.correction("again".into())).unwrap();
        }
    }
}
