//! Batches: a `call_tools` decision checked whole before any call runs, its read-only calls
//! run concurrently in groups, every other call alone, and the ledger in the batch's order.
//!
//! The record of a batch, after its `decision` entry:
//!
//! 1. every call's checks (registry, schema, eligibility, no repeated call, the whole batch's
//!    `tool_calls` fit), then the approvals the policy asks for, in the batch's order; one
//!    refusal or denial rejects the batch whole and nothing runs;
//! 2. per group (consecutive read-only calls, or one other call): each call's charge and its
//!    `tool_call`, in order, synced before any of them runs when one is not idempotent; then
//!    the calls run (a group concurrently, at most `batch_concurrency` at once); then each
//!    call's `tool_result` or `tool_error`, in the batch's order whatever order they ended in.
//!
//! A call of a batch is attempted once: a retry would have to be ledgered before it starts,
//! in the middle of its siblings' entries, and would spend `tool_calls` units the batch's
//! check promised to the calls after it. The planner sees the failure and may propose the
//! call again. One call's failure does not cancel its siblings; when tool errors fail the
//! run, the run fails after the failing call's group, and later groups do not run.
//!
//! The run's deadline binds a batch as it binds a single call: no group starts after it,
//! every call of a group gets at most the time that remains when the group starts, and a
//! group cut off by it fails the run as `DeadlineExceeded`.
//!
//! A crash mid-batch leaves some calls settled, some in doubt (their `tool_call` is on
//! record, their outcome is not) and some never started; resume settles each in-doubt call
//! by the in-doubt rule on its own, then runs the calls that never started, one at a time,
//! in order.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use rein_ledger::{EntryKind, HookPoint};
use rein_resilience::ToolCall;
use rein_run::{BoxFuture, BudgetName, Digest, ProposedCall};
use rein_tool::{ToolError, ToolOutput};
use serde_json::Value;
use tracing::Instrument as _;

use crate::config::InDoubtPolicy;
use crate::depth;
use crate::driver::Driver;
use crate::error::EngineError;
use crate::gate::{BeforeRun, HookRuled};
use crate::record_first::{First, Watch};
use crate::rejection::Rejection;
use crate::tools::ToolEntry;

/// One call of a batch, checked, about to run as attempt `attempt`.
struct Member {
    entry: Arc<ToolEntry>,
    input: Arc<Value>,
    input_hash: Digest,
    attempt: u32,
}

/// How a member of a group ended, before it is recorded.
enum Outcome {
    /// Served from the cache: nothing ran, nothing was charged.
    Cached(rein_run::Payload),
    /// Refused before any attempt (open circuit, no budget left): nothing ran.
    Refused(ToolError),
    /// The call ran (or was cut short by an abort).
    Ran {
        outcome: Result<ToolOutput, ToolError>,
        elapsed: Duration,
    },
}

impl Driver {
    /// Applies a `call_tools` decision: checks every call, asks every approval, then runs
    /// the batch group by group.
    pub(crate) fn call_tools(
        &mut self,
        calls: Vec<ProposedCall>,
    ) -> BoxFuture<'_, Result<(), EngineError>> {
        // Boxed: a rare path, kept out of the futures of every step that might take it.
        Box::pin(async move {
            let gate = self.gate();
            let admitted = match gate.admit_batch(&calls, self.shared.config.max_batch) {
                Ok(admitted) => admitted,
                Err(rejection) => return self.reject(rejection).await,
            };
            let members: Vec<Member> = admitted
                .into_iter()
                .zip(calls)
                .map(|((entry, input_hash), call)| Member {
                    entry,
                    input: call.input,
                    input_hash,
                    attempt: 1,
                })
                .collect();
            if !gate.may_call_tools() {
                // Graceful interrupt: no further tool calls; the step loop marks the run interrupted.
                return Ok(());
            }
            // Each call's hooks, in the batch's order; a refusal rejects the batch whole.
            let mut hooked = vec![false; members.len()];
            for (index, member) in members.iter().enumerate() {
                let tool = member.entry.spec.name();
                if !self.hooked(HookPoint::BeforeTool, Some(tool)) {
                    continue;
                }
                let payload = self.hook_payload(HookPoint::BeforeTool, |p| {
                    p.tool = Some(tool.clone());
                    p.input = Some(Arc::clone(&member.input));
                    p.batch_index = u32::try_from(index).ok();
                });
                let ruled = match self.rule_hooks(payload, Some(member.input_hash)) {
                    Some(ruling) => ruling.await?,
                    None => HookRuled::default(),
                };
                if let Some(rejection) = ruled.denied {
                    return self
                        .reject(Rejection::InBatch {
                            index,
                            source: Box::new(rejection),
                        })
                        .await;
                }
                hooked[index] = ruled.approval;
            }
            if let Err(exhausted) = self
                .gate()
                .fits(&BudgetName::TOOL_CALLS, members.len() as u64)
            {
                return self.refuse_over_budget(exhausted).await;
            }
            for (member, hooked) in members.iter().zip(hooked) {
                // A denial is recorded and rejects the decision: the batch whole, as nothing ran.
                if !self
                    .approve(&member.entry, &member.input, member.input_hash, hooked)
                    .await?
                {
                    return Ok(());
                }
            }
            let mut members = members.into_iter().peekable();
            while let Some(first) = members.next() {
                let mut group = vec![first];
                if group[0].entry.spec.annotations().is_read_only() {
                    while let Some(next) =
                        members.next_if(|m| m.entry.spec.annotations().is_read_only())
                    {
                        group.push(next);
                    }
                }
                if !self.run_group(group).await? {
                    return Ok(());
                }
            }
            Ok(())
        })
    }

    /// Finishes a batch a crash cut short (see the module's docs): each in-doubt call by the
    /// in-doubt rule, then every call that never started, one at a time, in order.
    pub(crate) async fn resume_batch(&mut self) -> Result<(), EngineError> {
        let Some(track) = self.rec.proj.batch.clone() else {
            return Ok(());
        };
        if let Some(failure) = track
            .failed
            .as_ref()
            .and_then(|(tool, error)| self.gate().tool_failure(tool, error))
        {
            return self.rec.fail(failure.kind, failure.message).await;
        }
        let retry_all = self.shared.config.in_doubt == InDoubtPolicy::RetryAll;
        for (index, (tool, input)) in track.calls.iter().enumerate().skip(track.settled) {
            let open = track.open.get(index).cloned().flatten();
            let entry = match self
                .gate()
                .readmit_member(index, tool, open.as_ref(), retry_all)
            {
                Ok(entry) => entry,
                Err(failure) => return self.rec.fail(failure.kind, failure.message).await,
            };
            let member = Member {
                entry,
                input: input.clone(),
                input_hash: Digest::of_json(input),
                attempt: open.map_or(1, |open| open.attempt.saturating_add(1)),
            };
            if !self.run_group(vec![member]).await? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Runs one group: records each call's charge and `tool_call` in order, runs the calls
    /// (concurrently, bounded by `batch_concurrency`), then records each outcome in order.
    /// `false` when the run stopped (aborted, or failed by a tool error).
    async fn run_group(&mut self, group: Vec<Member>) -> Result<bool, EngineError> {
        if let Some(failure) = self.gate().overdue() {
            self.rec.fail(failure.kind, failure.message).await?;
            return Ok(false);
        }
        let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(group.len());
        let mut started = Vec::with_capacity(group.len());
        let mut sync = false;
        for (k, member) in group.iter().enumerate() {
            let tool = member.entry.spec.name();
            let annotations = member.entry.spec.annotations();
            let circuit = member.entry.stack.circuit_state();
            match self
                .gate()
                .before_run(&member.entry, member.input_hash, circuit, &self.cache)
            {
                BeforeRun::Cached(output) => {
                    outcomes.push(Some(Outcome::Cached(output)));
                    continue;
                }
                BeforeRun::Refused(error) => {
                    outcomes.push(Some(Outcome::Refused(error)));
                    continue;
                }
                BeforeRun::Run => {}
            }
            if let Some(refused) = self.charge_in_batch().await? {
                outcomes.push(Some(Outcome::Refused(refused)));
                continue;
            }
            let recorded = self
                .rec
                .record_entry(EntryKind::ToolCall {
                    tool: tool.clone(),
                    input: member.input.clone(),
                    input_hash: member.input_hash,
                    attempt: member.attempt,
                    idempotent: annotations.is_idempotent(),
                })
                .await?;
            sync |= !annotations.is_idempotent();
            outcomes.push(None);
            let span = crate::telemetry::tool_span(tool, self.rec.proj.state(), &recorded);
            started.push((k, span));
        }
        if sync {
            // The in-doubt markers must be durable before any side effect can happen.
            self.shared.ledgers.sync_boxed(self.rec.id()).await?;
        }
        let clock = Arc::clone(&self.shared.clock);
        let remaining = self.remaining();
        let events = self.rec.log.events.clone();
        // Collected before they are polled: a lazy iterator holding a closure over the group
        // would make the run's future lose `Send`.
        let calls: Vec<_> = started
            .iter()
            .map(|(k, span)| {
                let (k, member) = (*k, &group[*k]);
                // Its scope passes the server's progress on; it samples nothing (no driver
                // records while a batch runs).
                let scope = crate::call_scope::RunCall::new(
                    member.entry.spec.name().clone(),
                    events.clone(),
                    None,
                );
                let call = scope.scope(crate::deadline::bounded(
                    member
                        .entry
                        .stack
                        .call(ToolCall::new(Value::clone(&member.input)).without_retries()),
                    remaining,
                ));
                let clock = Arc::clone(&clock);
                let span = span.clone();
                async move {
                    let start = clock.now().as_unix_millis();
                    let outcome = call.instrument(span.clone()).await;
                    crate::telemetry::tool_ended(&span, &outcome);
                    let end = clock.now().as_unix_millis();
                    (k, outcome, Duration::from_millis(end.saturating_sub(start)))
                }
            })
            .collect();
        let limit = self.shared.config.batch_concurrency.max(1);
        let mut running = futures_util::stream::iter(calls).buffer_unordered(limit);
        let mut aborted = false;
        let mut watch = Watch::new(self.signals(), First::Work);
        loop {
            let Ok(next) = watch.until(pin!(running.next())).await else {
                aborted = true;
                break;
            };
            let Some((k, outcome, elapsed)) = next else {
                break;
            };
            outcomes[k] = Some(Outcome::Ran { outcome, elapsed });
        }
        // Dropping the stream drops every call still in flight.
        drop(running);
        let mut failure = None;
        for (member, outcome) in group.iter().zip(outcomes) {
            let outcome = outcome.unwrap_or(Outcome::Ran {
                outcome: Err(ToolError::Cancelled),
                elapsed: Duration::ZERO,
            });
            let error = self.record_outcome(member, outcome).await?;
            let tool = member.entry.spec.name();
            if self.hooked(HookPoint::AfterTool, Some(tool)) {
                self.after_tool(tool, error.as_ref(), Some(&member.input))
                    .await;
            }
            if let Some(error) = error {
                failure.get_or_insert((tool.clone(), error));
            }
        }
        if aborted {
            self.abort().await?;
            return Ok(false);
        }
        // As for a single call: a call cut off by the deadline fails the run by it, any
        // other failure by the run's `on_tool_error`.
        let verdict = self
            .gate()
            .after_call(failure.as_ref().map(|(tool, error)| (tool, error)));
        if let Some(failure) = verdict {
            self.rec.fail(failure.kind, failure.message).await?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Records how one call of a group ended; its error, if it failed.
    async fn record_outcome(
        &mut self,
        member: &Member,
        outcome: Outcome,
    ) -> Result<Option<ToolError>, EngineError> {
        let tool = member.entry.spec.name().clone();
        let (attempt, duration_ms, result) = match outcome {
            Outcome::Cached(output) => {
                self.rec
                    .record(EntryKind::ToolResult {
                        tool,
                        attempt: 0,
                        duration_ms: 0,
                        cached: true,
                        output,
                    })
                    .await?;
                return Ok(None);
            }
            Outcome::Refused(error) => (0, 0, Err(error)),
            Outcome::Ran { outcome, elapsed } => (
                member.attempt,
                u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                outcome,
            ),
        };
        let result = match result {
            Ok(output) if depth::too_deep(output.value()) => {
                depth::dispose(output.into_value());
                Err(ToolError::failed(format!(
                    "the tool returned JSON nested more than {} levels deep, which the ledger \
                     cannot record",
                    depth::MAX_JSON_DEPTH
                )))
            }
            other => other,
        };
        match result {
            Ok(mut output) => {
                // As for a single call: the attachments' links before the result.
                let attachments = output.take_attachments();
                if !attachments.is_empty() {
                    Box::pin(self.record_attachments(&tool, attempt, attachments)).await?;
                }
                let output = self.payload(&tool, output).await?;
                if member.entry.spec.annotations().is_cacheable() {
                    self.cache
                        .insert((tool.clone(), member.input_hash), output.clone());
                }
                self.rec
                    .record(EntryKind::ToolResult {
                        tool,
                        attempt,
                        duration_ms,
                        cached: false,
                        output,
                    })
                    .await?;
                Ok(None)
            }
            Err(error) => {
                self.rec
                    .record(EntryKind::ToolError {
                        tool,
                        attempt,
                        duration_ms,
                        error: error.clone(),
                        will_retry: false,
                    })
                    .await?;
                Ok(Some(error))
            }
        }
    }

    /// Charges one `tool_calls` unit for a call of a batch, unless a unit a crash left
    /// unused pays for it; the error the call is refused with when the budget is spent.
    async fn charge_in_batch(&mut self) -> Result<Option<ToolError>, EngineError> {
        if self.rec.proj.batch.as_ref().is_some_and(|b| b.paid > 0) {
            return Ok(None);
        }
        match self.charge_one_call().await? {
            Ok(()) => Ok(None),
            Err(exhausted) => {
                let message = exhausted.to_string();
                self.rec
                    .record(crate::charge::exhausted_entry(&exhausted))
                    .await?;
                Ok(Some(ToolError::failed(message)))
            }
        }
    }
}
