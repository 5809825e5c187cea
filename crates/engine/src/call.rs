//! The tool-call pipeline: registry, schema, eligibility, cache, circuit, approval, then the
//! charge and the `tool_call` entry before the call runs, every retry ledgered before it
//! starts, and the outcome recorded.

use std::sync::Arc;
use std::time::Duration;

use rein_ledger::{EntryKind, HookPoint};
use rein_resilience::ToolCall;
use rein_run::{BoxFuture, BudgetName, Digest, ToolName};
use rein_tool::{ToolError, ToolOutput};
use serde_json::Value;
use tracing::Instrument as _;

use crate::attempts::{AttemptEvent, AttemptRecord, VETO_MESSAGE};
use crate::charge::exhausted_entry;
use crate::depth;
use crate::driver::Driver;
use crate::error::EngineError;
use crate::gate::{BeforeRun, HookRuled};
use crate::record_first::{First, Next, Watch};
use crate::tools::ToolEntry;

/// One call's attempts, as the driver has ledgered them so far.
struct Attempts {
    tool: ToolName,
    input_hash: Digest,
    idempotent: bool,
    /// The number the call's first attempt has in the ledger (above 1 when a resume retries).
    first_attempt: u32,
    /// The input the first attempt's `tool_call` entry recorded, shared with it: a
    /// retry's `tool_call` records the same input.
    input: Arc<Value>,
    /// The stack's number of the last attempt whose `tool_call` is recorded.
    current: u32,
    /// The last attempt's end, not recorded until it is known whether a retry follows.
    ended: Option<AttemptRecord>,
    /// A retry was vetoed for lack of budget: the error of the attempt before it, recorded.
    veto: Option<ToolError>,
}

impl Attempts {
    /// The ledger's number for the stack's attempt `attempt`.
    const fn number(&self, attempt: u32) -> u32 {
        self.first_attempt.saturating_add(attempt.saturating_sub(1))
    }
}

impl Driver {
    pub(crate) async fn call_tool(
        &mut self,
        name: &str,
        input: Arc<Value>,
    ) -> Result<(), EngineError> {
        let gate = self.gate();
        let entry = match gate.admit(name, &input) {
            Ok(entry) => entry,
            Err(rejection) => return self.reject(rejection).await,
        };
        if !gate.may_call_tools() {
            // Graceful interrupt: no further tool calls; the step loop marks the run interrupted.
            return Ok(());
        }
        let tool = entry.spec.name().clone();
        let input_hash = Digest::of_json(&input);
        // The hooks rule before the cache, the circuit or an approval: a call they refuse
        // is refused whatever else would have become of it.
        let mut hooked = false;
        if self.hooked(HookPoint::BeforeTool, Some(&tool)) {
            let payload = self.hook_payload(HookPoint::BeforeTool, |p| {
                p.tool = Some(tool.clone());
                p.input = Some(Arc::clone(&input));
            });
            let ruled = match self.rule_hooks(payload, Some(input_hash)) {
                Some(ruling) => ruling.await?,
                None => HookRuled::default(),
            };
            if let Some(rejection) = ruled.denied {
                return self.reject(rejection).await;
            }
            hooked = ruled.approval;
        }
        let gate = self.gate();
        match gate.before_run(&entry, input_hash, entry.stack.circuit_state(), &self.cache) {
            BeforeRun::Cached(output) => {
                return self
                    .rec
                    .record(EntryKind::ToolResult {
                        tool,
                        attempt: 0,
                        duration_ms: 0,
                        cached: true,
                        output,
                    })
                    .await;
            }
            // Refused before any attempt: nothing is charged, nobody is asked to approve.
            BeforeRun::Refused(error) => return self.tool_failed(tool, error).await,
            BeforeRun::Run => {}
        }
        // Boxed: most calls need no approval, and their futures need not hold its future.
        if gate.needs_approval(&entry, hooked).is_some()
            && !Box::pin(self.approve(&entry, &input, input_hash, hooked)).await?
        {
            return Ok(());
        }
        self.execute(&entry, input, input_hash, 1).await
    }

    /// Charges and ledgers attempt `first_attempt`, runs the call through the tool's stack,
    /// and ledgers every retry as the stack asks for it — the failed attempt's error, the
    /// retry's charge and its `tool_call`, before the retry starts — then the outcome.
    pub(crate) async fn execute(
        &mut self,
        entry: &ToolEntry,
        input: Arc<Value>,
        input_hash: Digest,
        first_attempt: u32,
    ) -> Result<(), EngineError> {
        let tool = entry.spec.name().clone();
        let idempotent = entry.spec.annotations().is_idempotent();
        if !self.charge_attempt().await? {
            return Ok(());
        }
        // The entry hands the input back: the call runs on it (the tool consumes a copy of
        // its own: the decision and the evidence share the recorded one), and a retry's
        // `tool_call` records it again.
        let recorded = self
            .rec
            .record_entry(EntryKind::ToolCall {
                tool: tool.clone(),
                input,
                input_hash,
                attempt: first_attempt,
                idempotent,
            })
            .await?;
        let span = crate::telemetry::tool_span(&tool, self.rec.proj.state(), &recorded);
        let EntryKind::ToolCall { input, .. } = recorded.into_event() else {
            unreachable!("a tool_call entry is recorded as one")
        };
        if !idempotent {
            // The in-doubt marker must be durable before the side effect can happen.
            self.shared.ledgers.sync_boxed(self.rec.id()).await?;
        }
        self.tool_attempts.link.restart();
        let link = Arc::clone(&self.tool_attempts.link);
        let call = ToolCall::new(Value::clone(&input)).with_retry_inputs(link);
        let mut attempts = Attempts {
            tool: tool.clone(),
            input_hash,
            idempotent,
            first_attempt,
            input,
            current: 1,
            ended: None,
            veto: None,
        };
        let signals = self.signals();
        // The call's scope: what it asks of the run (a server's sampling request) and
        // tells its subscribers (progress) reaches this driver and this run.
        let scope = crate::call_scope::RunCall::new(
            tool.clone(),
            self.rec.log.events.clone(),
            Some(self.tool_attempts.link.sender()),
        );
        let outcome = {
            let call = scope
                .scope(crate::deadline::bounded(
                    entry.stack.call(call),
                    self.remaining(),
                ))
                .instrument(span.clone());
            tokio::pin!(call);
            let mut watch = Watch::new(signals, First::Messages);
            loop {
                match watch
                    .next(call.as_mut(), Some(&mut self.tool_attempts.rx))
                    .await
                {
                    // An attempt's end (once a call) is kept inline; a retry's admission
                    // (rare) records, and is boxed out of every call's future.
                    Next::Message(AttemptEvent::Ended(record)) => attempts.ended = Some(record),
                    Next::Message(event) => {
                        Box::pin(self.on_attempt(&mut attempts, event)).await?;
                    }
                    Next::Done(outcome) => break Some(outcome),
                    Next::Aborted | Next::Stopped => break None,
                }
            }
            // Dropping the call here drops an attempt still in flight, which reports itself.
        };
        while let Ok(event) = self.tool_attempts.rx.try_recv() {
            // Only ends are left: a retry asked for now would never be polled.
            if let AttemptEvent::Ended(record) = event {
                attempts.ended = Some(record);
            }
        }
        let aborted = outcome.is_none();
        let mut outcome = outcome.unwrap_or(Err(ToolError::Cancelled));
        if let Some(last) = attempts.veto.take() {
            // A vetoed retry is no failure of its own: the call failed with the last attempt.
            outcome = Err(last);
        } else {
            self.record_last_attempt(entry, &attempts, &mut outcome)
                .await?;
        }
        crate::telemetry::tool_ended(&span, &outcome);
        if aborted {
            return self.abort().await;
        }
        if self.hooked(HookPoint::AfterTool, Some(&tool)) {
            self.after_tool(&tool, outcome.as_ref().err(), None).await;
        }
        match self
            .gate()
            .after_call(outcome.as_ref().err().map(|e| (&tool, e)))
        {
            Some(failure) => self.rec.fail(failure.kind, failure.message).await,
            None => Ok(()),
        }
    }

    /// Handles what the call's observer reports: keeps an attempt's end until it is known
    /// whether a retry follows; admits a retry only once its charge and call are recorded
    /// (and the failure before it), or vetoes it when the `tool_calls` budget cannot pay.
    async fn on_attempt(
        &mut self,
        attempts: &mut Attempts,
        event: AttemptEvent,
    ) -> Result<(), EngineError> {
        let (attempt, reply) = match event {
            AttemptEvent::Ended(record) => {
                attempts.ended = Some(record);
                return Ok(());
            }
            AttemptEvent::Admit { attempt, reply } => (attempt, reply),
            AttemptEvent::Sample(reply) => {
                let _ = reply.send(self.sampling());
                return Ok(());
            }
            AttemptEvent::Model(message) => {
                let (event, reply) = *message;
                self.record_sampled(event).await?;
                // A model call that stopped waiting finds its event on record anyway.
                let _ = reply.send(());
                return Ok(());
            }
        };
        // The stack reports an attempt before it asks for the next, and retries only errors.
        let Some(AttemptRecord {
            attempt: failed,
            error: Some(error),
            elapsed,
        }) = attempts.ended.take()
        else {
            let _ = reply.send(Err(ToolError::failed(
                "no retry: the attempt before it was not reported as failed",
            )));
            return Ok(());
        };
        let error = *error;
        let tool = attempts.tool.clone();
        let failed_number = attempts.number(failed);
        let duration_ms = millis(elapsed);
        let consumed = match self.gate().charge(&BudgetName::TOOL_CALLS, 1) {
            Ok(consumed) => consumed,
            Err(exhausted) => {
                self.rec
                    .record(EntryKind::ToolError {
                        tool,
                        attempt: failed_number,
                        duration_ms,
                        error: error.clone(),
                        will_retry: false,
                    })
                    .await?;
                self.rec.record(exhausted_entry(&exhausted)).await?;
                attempts.veto = Some(error);
                let _ = reply.send(Err(ToolError::failed(VETO_MESSAGE)));
                return Ok(());
            }
        };
        self.rec
            .record(EntryKind::ToolError {
                tool: tool.clone(),
                attempt: failed_number,
                duration_ms,
                error,
                will_retry: true,
            })
            .await?;
        self.rec.record(consumed).await?;
        let input = Arc::clone(&attempts.input);
        // The retry's `tool_call` hands its input back, for the stack to run the retry on.
        let recorded = self
            .rec
            .record_entry(EntryKind::ToolCall {
                tool,
                input,
                input_hash: attempts.input_hash,
                attempt: attempts.number(attempt),
                idempotent: attempts.idempotent,
            })
            .await?;
        let EntryKind::ToolCall { input, .. } = recorded.into_event() else {
            unreachable!("a tool_call entry is recorded as one")
        };
        if !attempts.idempotent {
            // The same rule as for the first attempt: durable before the side effect.
            self.shared.ledgers.sync_boxed(self.rec.id()).await?;
        }
        attempts.current = attempt;
        // A call dropped meanwhile no longer listens; the attempt is recorded, never run.
        let _ = reply.send(Ok(Value::clone(&input)));
        Ok(())
    }

    /// Records how the call's last attempt ended: its result, its error, or — when it never
    /// reported (refused before any attempt by an open circuit or a full bulkhead, or dropped
    /// by an abort before it started) — the call's error.
    async fn record_last_attempt(
        &mut self,
        entry: &ToolEntry,
        attempts: &Attempts,
        outcome: &mut Result<ToolOutput, ToolError>,
    ) -> Result<(), EngineError> {
        let tool = attempts.tool.clone();
        // An output the ledger could not read back is a failed call, taken apart unrecorded.
        let mut too_deep = None;
        if outcome.as_ref().is_ok_and(|o| depth::too_deep(o.value())) {
            let error = ToolError::failed(format!(
                "the tool returned JSON nested more than {} levels deep, which the ledger cannot \
                 record",
                depth::MAX_JSON_DEPTH
            ));
            if let Ok(output) = std::mem::replace(outcome, Err(error.clone())) {
                depth::dispose(output.into_value());
            }
            too_deep = Some(error);
        }
        let number = attempts.number(attempts.current);
        let (error, duration_ms) = match &attempts.ended {
            Some(ended) if ended.attempt == attempts.current => {
                // An attempt dropped from outside reports itself cancelled; when the run's
                // deadline dropped it, the call's outcome says it timed out, and how soon.
                let error = match (ended.error.as_deref(), &*outcome) {
                    (Some(ToolError::Cancelled), Err(late @ ToolError::TimedOut { .. })) => {
                        Some(late.clone())
                    }
                    (error, _) => error.cloned(),
                };
                (error, millis(ended.elapsed))
            }
            _ => match outcome {
                Err(error) => (Some(error.clone()), 0),
                Ok(_) => (None, 0),
            },
        };
        if let Some(error) = error.or(too_deep) {
            return self
                .rec
                .record(EntryKind::ToolError {
                    tool,
                    attempt: number,
                    duration_ms,
                    error,
                    will_retry: false,
                })
                .await;
        }
        if let Ok(output) = outcome {
            // The links go on record before the result that names them: the result ends the
            // step, so a crash in between leaves the call in doubt, never a result whose
            // attachments are lost.
            let attachments = output.take_attachments();
            if !attachments.is_empty() {
                Box::pin(self.record_attachments(&tool, number, attachments)).await?;
            }
            // The output moves into the record (the caller needs only whether the call failed).
            let output = std::mem::replace(output, ToolOutput::new(Value::Null));
            let output = self.payload(&tool, output).await?;
            if entry.spec.annotations().is_cacheable() {
                self.cache
                    .insert((tool.clone(), attempts.input_hash), output.clone());
            }
            self.rec
                .record(EntryKind::ToolResult {
                    tool: tool.clone(),
                    attempt: number,
                    duration_ms,
                    cached: false,
                    output,
                })
                .await?;
        }
        Ok(())
    }

    /// Records a call refused before any attempt (attempt 0: nothing ran, nothing was
    /// charged), and fails the run unless tool errors are handed back.
    pub(crate) fn tool_failed(
        &mut self,
        tool: ToolName,
        error: ToolError,
    ) -> BoxFuture<'_, Result<(), EngineError>> {
        // Boxed: a rare path, kept out of the futures of every step that might take it.
        Box::pin(async move {
            let failure = self.gate().tool_failure(&tool, &error);
            self.rec
                .record(EntryKind::ToolError {
                    tool,
                    attempt: 0,
                    duration_ms: 0,
                    error,
                    will_retry: false,
                })
                .await?;
            match failure {
                Some(failure) => self.rec.fail(failure.kind, failure.message).await,
                None => Ok(()),
            }
        })
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
