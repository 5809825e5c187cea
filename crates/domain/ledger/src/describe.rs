//! Ledger entries in one readable line each (what `rein ledger show` prints): `Display` for
//! [`EntryKind`] and [`Entry`]. Long inputs, outputs and results are cut.

use std::fmt;

use rein_run::{ChildOutcome, Payload, Spend};
use serde::Serialize;
use serde_json::Value;

use crate::{Entry, EntryKind};

/// A value's serde name (`"policy_violation"` for `FailureKind::PolicyViolation`).
fn serde_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_owned(),
    }
}

/// `text` cut to `max` characters (the last one an ellipsis) when it is longer.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `value` as compact JSON, cut to `max` characters.
fn short_json(value: &Value, max: usize) -> String {
    cut(&value.to_string(), max)
}

fn payload(output: &Payload, max: usize) -> String {
    match output {
        Payload::Inline(value) => short_json(value, max),
        Payload::Artifact(link) => format!("artifact {} ({} bytes)", cut(&link.id, 12), link.size),
    }
}

fn limit(limit: Option<u64>) -> String {
    limit.map_or_else(|| "∞".to_owned(), |l| l.to_string())
}

/// A spend or a carve, `tool_calls 3, tokens 1200` (`nothing` when empty).
fn spend(spend: &Spend) -> String {
    if spend.is_empty() {
        return "nothing".to_owned();
    }
    let parts: Vec<String> = spend
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    parts.join(", ")
}

/// `" by planner `name`"` for a named planner, or nothing for the run's own.
fn by_planner(planner: Option<&String>) -> String {
    planner.map_or_else(String::new, |p| format!(" by planner `{p}`"))
}

/// `": reason"`, or nothing for an empty reason (no dangling separator).
fn colon(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}

/// What the entry records, in one line.
///
/// ```
/// use rein_ledger::EntryKind;
/// use rein_run::State;
/// let kind = EntryKind::Transition { from: State::Intake, to: State::Explore, reason: "start".into() };
/// assert_eq!(kind.to_string(), "transition intake → explore: start");
/// ```
impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = match self {
            Self::RunStarted { goal, .. } => format!("run started: {goal:?}"),
            Self::RunPaused { question } => format!("paused, asking a human: {question:?}"),
            Self::RunResumed { note } => format!("resumed{}", colon(note)),
            Self::RunCompleted { summary, result } => {
                format!("completed: {summary} → {}", short_json(result, 60))
            }
            Self::RunFailed { failure } => {
                format!(
                    "failed ({}){}",
                    serde_name(&failure.kind),
                    colon(&failure.message)
                )
            }
            Self::Decision { step, decision } => {
                format!("decision #{step}: {decision}")
            }
            Self::Transition { from, to, reason } => {
                format!("transition {from} → {to}{}", colon(reason))
            }
            Self::ToolCall {
                tool,
                input,
                attempt,
                idempotent,
                ..
            } => format!(
                "tool call {tool} {} (attempt {attempt}{})",
                short_json(input, 60),
                if *idempotent { ", idempotent" } else { "" }
            ),
            Self::ToolResult {
                tool,
                duration_ms,
                cached,
                output,
                ..
            } => format!(
                "tool result {tool} in {duration_ms} ms{}: {}",
                if *cached { " (cached)" } else { "" },
                payload(output, 70)
            ),
            // Attempt 0: refused before any attempt was made (an open circuit, a full bulkhead).
            Self::ToolError {
                tool,
                attempt: 0,
                error,
                ..
            } => format!("tool error {tool}, refused before any attempt: {error}"),
            Self::ToolError {
                tool,
                attempt,
                duration_ms,
                error,
                will_retry,
            } => format!(
                "tool error {tool} attempt {attempt} after {duration_ms} ms: {error}{}",
                if *will_retry { " — will retry" } else { "" }
            ),
            Self::ApprovalRequested { tool, reason, .. } => {
                format!("approval requested for {tool}{}", colon(&reason.clone()))
            }
            Self::ApprovalGranted {
                tool,
                approver,
                reason,
                ..
            } => format!("approval granted for {tool} by {approver}{}", colon(reason)),
            Self::ApprovalDenied {
                tool,
                approver,
                reason,
                ..
            } => format!("approval DENIED for {tool} by {approver}{}", colon(reason)),
            Self::BudgetConsumed {
                name,
                used,
                limit: l,
                ..
            } => format!("budget {name}: {used}/{}", limit(*l)),
            Self::BudgetExhausted {
                name,
                limit: l,
                used,
                requested,
            } => format!("budget {name} EXHAUSTED: {used}/{l} used, {requested} more requested"),
            Self::HumanInputRequested { question, options } => {
                if options.is_empty() {
                    format!("question for a human: {question:?}")
                } else {
                    format!(
                        "question for a human: {question:?} (options: {})",
                        options.join(", ")
                    )
                }
            }
            Self::HumanInputReceived { answer, by } => match by {
                Some(by) => format!("{by} answered {answer:?}"),
                None => format!("human answered {answer:?}"),
            },
            Self::PolicyViolation {
                violation,
                message,
                handed_back,
            } => format!(
                "POLICY VIOLATION {violation}: {message}{}",
                if *handed_back {
                    " — handed back to the planner"
                } else {
                    ""
                }
            ),
            Self::Steering { note } => format!("steering note{}", colon(note)),
            Self::RunInterrupted { reason } => format!("interrupted{}", colon(reason)),
            Self::Interrupt { kind } => format!("interrupt requested ({kind})"),
            Self::ToolAttachment {
                tool, name, link, ..
            } => format!(
                "{tool} attached {name:?} ({} bytes, {}) as artifact {}",
                link.size, link.content_type, link.id
            ),
            Self::ApprovalPending { pending } => format!(
                "paused, waiting for approval of {} (risk {}){}",
                pending.tool,
                pending.risk,
                colon(&pending.reason)
            ),
            Self::SkillEntered { name, checksum, .. } => {
                format!("skill `{name}` entered the context (sha256 {checksum})")
            }
            Self::PolicyNarrowed { reason, .. } => format!("policy narrowed{}", colon(reason)),
            Self::SequenceMember { index, kind, .. } => {
                format!("sequence member {index}: {}", kind.replace('_', " "))
            }
            Self::TraceStarted { traceparent } => format!("traced as {traceparent}"),
            Self::SequenceStopped {
                not_run, reason, ..
            } => {
                let members: Vec<String> = not_run.iter().map(u32::to_string).collect();
                format!(
                    "sequence stopped, members {} not run: {reason}",
                    members.join(", ")
                )
            }
            Self::BudgetOverrun {
                name,
                amount,
                used,
                limit,
            } => format!("budget {name} overrun: {amount} reported, {used} used of {limit}"),
            Self::FollowUpOf {
                previous,
                previous_head,
                turn,
            } => format!("follows up on run {previous} at its {previous_head} (turn {turn})"),
            Self::PromptCompacted { compaction, .. } => format!(
                "prompt compacted ({}): {} replies and {} tool results dropped, {}~{} → ~{} tokens",
                match compaction.reason {
                    rein_run::CompactionReason::ContextExceeded =>
                        "the model's context was exceeded",
                    _ => "over the prompt limit",
                },
                compaction.replies,
                compaction.results,
                // Measured only until past the limit since the cut is recorded: a floor.
                if compaction.kept_from.is_some()
                    && compaction.reason == rein_run::CompactionReason::OverLimit
                {
                    "over "
                } else {
                    ""
                },
                compaction.tokens_before,
                compaction.tokens_after
            ),
            Self::StopRequested { request } => format!(
                "{} requested by {} at {}{}",
                request.kind,
                request.by,
                request.requested_at,
                colon(&request.reason)
            ),
            Self::HookVerdicts {
                point,
                tool,
                rulings,
                ..
            } => {
                let on = tool
                    .as_ref()
                    .map(|t| format!(" on {t}"))
                    .unwrap_or_default();
                let each: Vec<String> = rulings
                    .iter()
                    .map(|r| {
                        let what = match &r.outcome {
                            crate::HookOutcome::Deny => "deny".to_owned(),
                            crate::HookOutcome::RequireApproval => "require approval".to_owned(),
                            crate::HookOutcome::Budget { name, limit } => {
                                format!("budget {name} to {limit}")
                            }
                        };
                        format!("`{}` {what}{}", r.hook, colon(&cut(&r.reason, 120)))
                    })
                    .collect();
                format!("hooks at {point}{on}: {}", each.join("; "))
            }
            Self::PlannerAttempt { attempt, .. } => format!(
                "model call to {} {} (attempt {}, at most {} tokens)",
                attempt.provider, attempt.model, attempt.attempt, attempt.worst_tokens
            ),
            Self::PlannerCall { call, .. } => format!(
                "model answered in {} ms: {} tokens in, {} out{}",
                call.latency_ms,
                call.input_tokens,
                call.output_tokens,
                call.finish_reason
                    .as_deref()
                    .map_or_else(String::new, |r| format!(", stopped: {r}"))
            ),
            Self::PlannerAttemptFailed { attempt, error, .. } => {
                format!("model call attempt {attempt} failed: {}", cut(error, 120))
            }
            Self::ChildStarted {
                child,
                goal,
                carved,
                planner,
            } => format!(
                "child run {child} started{}: {goal:?} (carved {})",
                by_planner(planner.as_ref()),
                spend(carved)
            ),
            Self::ChildEnded {
                child,
                outcome,
                spent,
                ..
            } => match outcome {
                ChildOutcome::Failed { failure } => format!(
                    "child run {child} failed ({}){}, spent {}",
                    serde_name(&failure.kind),
                    colon(&failure.message),
                    spend(spent)
                ),
                // Completed, and any outcome a later version adds.
                _ => format!("child run {child} completed, spent {}", spend(spent)),
            },
            Self::ChildOf {
                parent,
                depth,
                planner,
                ..
            } => format!(
                "child of run {parent} at depth {depth}{}",
                by_planner(planner.as_ref())
            ),
        };
        f.write_str(&line)
    }
}

/// `#seq state: what it records`.
///
/// ```
/// use rein_ledger::{EntryKind, Ledger};
/// use rein_run::{State, Timestamp};
/// let mut ledger = Ledger::new("run-1".parse()?);
/// let at = Timestamp::from_unix_millis(1_700_000_000_000);
/// let entry = ledger.append(at, State::Intake, EntryKind::Steering { note: "be brief".into() });
/// assert_eq!(entry.to_string(), "#1 intake: steering note: be brief");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} {}: {}", self.seq(), self.state(), self.event())
    }
}

#[cfg(test)]
mod tests {
    use rein_run::{ChildOutcome, Digest, Failure, FailureKind, PlannerAttempt, PlannerCall};
    use serde_json::json;

    use crate::EntryKind;

    fn call() -> PlannerCall {
        PlannerCall {
            provider: "openai".into(),
            model: "m".into(),
            request_hash: Digest::of_bytes(b"{}"),
            input_tokens: 120,
            output_tokens: 18,
            cost: rein_run::Cost::Known(rein_run::Money::zero(rein_run::Currency::UNNAMED)),
            latency_ms: 340,
            finish_reason: Some("tool_calls".into()),
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            reply: None,
        }
    }

    #[test]
    fn model_calls_and_child_runs_read_as_words() {
        let child = "child-1".parse().unwrap();
        let spent: rein_run::Spend = [("tool_calls".parse().unwrap(), 2)].into_iter().collect();
        for (kind, line) in [
            (
                EntryKind::PlannerAttempt {
                    step: 0,
                    attempt: PlannerAttempt {
                        attempt: 1,
                        provider: "openai".into(),
                        model: "m".into(),
                        request_hash: Digest::of_bytes(b"{}"),
                        worst_tokens: 4096,
                        worst_cost: rein_run::Cost::Known(rein_run::Money::zero(
                            rein_run::Currency::UNNAMED,
                        )),
                    },
                },
                "model call to openai m (attempt 1, at most 4096 tokens)",
            ),
            (
                EntryKind::PlannerCall {
                    step: 0,
                    call: call(),
                },
                "model answered in 340 ms: 120 tokens in, 18 out, stopped: tool_calls",
            ),
            (
                EntryKind::PlannerAttemptFailed {
                    step: 0,
                    attempt: 2,
                    error: "the server answered 503".into(),
                },
                "model call attempt 2 failed: the server answered 503",
            ),
            (
                EntryKind::ChildStarted {
                    child: "child-1".parse().unwrap(),
                    goal: "read the notes".into(),
                    carved: spent.clone(),
                    planner: Some("reader".into()),
                },
                "child run child-1 started by planner `reader`: \"read the notes\" (carved tool_calls 2)",
            ),
            (
                EntryKind::ChildEnded {
                    child: "child-1".parse().unwrap(),
                    head: rein_run::LedgerHead {
                        seq: 9,
                        hash: Digest::of_bytes(b"head"),
                    },
                    outcome: ChildOutcome::Completed {
                        summary: "read".into(),
                        result: json!(1),
                    },
                    spent,
                },
                "child run child-1 completed, spent tool_calls 2",
            ),
            (
                EntryKind::ChildEnded {
                    child,
                    head: rein_run::LedgerHead {
                        seq: 9,
                        hash: Digest::of_bytes(b"head"),
                    },
                    outcome: ChildOutcome::Failed {
                        failure: Failure::new(FailureKind::Aborted, "stopped"),
                    },
                    spent: Default::default(),
                },
                "child run child-1 failed (aborted): stopped, spent nothing",
            ),
        ] {
            assert_eq!(kind.to_string(), line);
        }
    }

    #[test]
    fn a_compaction_that_recorded_its_cut_reads_its_measure_as_a_floor() {
        let compaction = |kept_from, dropped| EntryKind::PromptCompacted {
            step: 9,
            compaction: rein_run::PromptCompaction {
                reason: rein_run::CompactionReason::OverLimit,
                keep_last: 4,
                max_item_chars: 4000,
                replies: 3,
                results: 3,
                dropped,
                kept_from,
                summary: Digest::of_bytes(b"note"),
                tokens_before: 16_100,
                tokens_after: 9_000,
            },
        };
        let dropped = "3 replies and 3 tool results dropped";
        assert_eq!(
            compaction(Some(4), None).to_string(),
            format!(
                "prompt compacted (over the prompt limit): {dropped}, over ~16100 → ~9000 tokens"
            )
        );
        // An entry of an earlier version measured the whole request.
        assert_eq!(
            compaction(None, Some(vec![Digest::of_bytes(b"m")])).to_string(),
            format!("prompt compacted (over the prompt limit): {dropped}, ~16100 → ~9000 tokens")
        );
    }
}
