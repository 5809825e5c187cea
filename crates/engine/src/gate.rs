//! The gate: every "may it?" of a run, answered in one place from the run's policy, the
//! engine's tool table and the run's projection (plus the two facts of the moment the
//! driver holds: whether a graceful interrupt arrived, and the clock's time against the
//! run's deadline).
//!
//! The gate is synchronous and pure: no runtime, no I/O, no clock of its own (the time is
//! an input), and it changes nothing. The driver asks, then records and executes what the
//! answer says; it decides no rule itself. The rules, each one function:
//!
//! - a call: [`Gate::admit`] (registered, input schema, eligible in the run's state), the
//!   same for each member of a batch ([`Gate::admit_batch`], which adds the batch's own
//!   rules: not empty, not too large, no call twice), [`Gate::before_run`] (served from the
//!   cache, refused by an open circuit), [`Gate::needs_approval`], and for the calls a
//!   resume recovers [`Gate::readmit`] (in doubt), [`Gate::readmit_member`] (a batch's call
//!   cut short) and [`Gate::retry`] (a retry cut short);
//! - budgets: [`Gate::fits`], [`Gate::charge`] and [`Gate::left`] (one body, `Budget::fits` / `Budget::left`,
//!   for tool charges, batches, sub-run carves and planner charges), [`Gate::carve`] (a
//!   child's budget) and [`Gate::overrun`] (a provider reported more than was left). The
//!   rule that makes such a report an overrun is `overrun::reported_charge`, a leaf module:
//!   the planner's link applies it while the planner holds the run, and the projection the
//!   gate reads depends on that link;
//! - what a failure does to the run: [`Gate::tool_failure`] (the run's `on_tool_error`) and
//!   [`Gate::after_call`] (a call, or a batch's group, that failed after the deadline fails
//!   the run by the deadline, otherwise by `on_tool_error`), [`Gate::overdue`];
//! - decisions: [`Gate::max_steps_reached`] and [`Gate::rejection_failure`] (a refused
//!   decision handed back to the planner, or the run's failure);
//! - sequences: [`Gate::next_member`] and [`Gate::member_may_start`];
//! - the end: [`Gate::result_errors`] (`finish`'s result against the run's result schema);
//! - hooks: [`Gate::hooks`] (in `gate/hooks.rs`).
//!
//! Adding a rule is adding a function here, with its unit test in `gate/tests.rs`.
//!
//! # Verdicts from hooks
//!
//! Hooks asked before a run, a model call, a tool call or a child (allow, deny with a
//! reason, narrow to approval-required or to a lower budget limit, never widen) are one
//! more input of the gate, next to the policy: [`Gate::hooks`] turns the verdicts recorded
//! at a point into a `Rejection` when one denies, an approval that
//! [`Gate::needs_approval`] ORs into the policy's answer, and budget limits taken as the
//! lower of the hook's and the run's (applied as a policy narrowing, so [`Gate::fits`]
//! holds the run to them from then on). Each of those can only refuse more, so a hook
//! cannot widen what the policy allows.
//!
//! # What is not here: the fallback rule
//!
//! Whether another model may answer a failed model call
//! (`LlmError::another_model_may_answer`, in rein-llm) stays with the transport: it is a
//! property of the error an HTTP exchange produced (a 429, a 5xx, a connection lost, not a
//! 4xx the request caused), decided inside one model call that the engine sees as one
//! planner step. It admits nothing the run's policy governs: every attempt it leads to is
//! still declared against the budget and put on record by the meter, which the gate's
//! budget rules answer for.

use std::collections::HashMap;
use std::sync::Arc;

use rein_policy::{ApprovalReason, BudgetExhausted, OnToolError, OnViolation};
use rein_resilience::CircuitState;
use rein_run::{
    BudgetName, Decision, Digest, Failure, FailureKind, Payload, ProposedCall, Spend, Timestamp,
    ToolName,
};
use rein_tool::ToolError;
use serde_json::Value;

use crate::deadline::Due;
use crate::progress::{OpenAttempt, SequenceTrack};
use crate::project::Projection;
use crate::rejection::Rejection;
use crate::shared::RunPolicy;
use crate::tools::{ToolEntry, ToolTable};

mod hooks;
#[cfg(test)]
mod tests;

pub(crate) use hooks::HookRuled;

/// The outputs of cacheable calls a run has made, by tool and input hash.
pub(crate) type Cache = HashMap<(ToolName, Digest), Payload>;

/// Why a sequence stops before a member that calls a tool, after a graceful interrupt.
pub(crate) const INTERRUPTED: &str = "the run was interrupted through its handle, so no \
     further tool is called";

/// The questions a run may ask, over what it is allowed and where it stands.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gate<'a> {
    policy: &'a RunPolicy,
    tools: &'a ToolTable,
    proj: &'a Projection,
    /// A graceful interrupt arrived: no further tool call starts.
    interrupting: bool,
    /// When the run's deadline passes, if it has one, and the engine clock's time when the
    /// gate was asked. The clock is read only for a run with a deadline: the driver asks
    /// its gate ~7 times a decision, and a clock read each time cost W1 ~4%.
    due: Option<(Due, Timestamp)>,
}

/// What becomes of an admitted call just before it would run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BeforeRun {
    /// Served from the cache: nothing runs, nothing is charged.
    Cached(Payload),
    /// Refused before any attempt (an open circuit): nothing runs, nothing is charged.
    Refused(ToolError),
    /// It runs.
    Run,
}

/// Where a run's sequence stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NextMember<'a> {
    /// No sequence, or every member applied: nothing to do.
    Done,
    /// A member did not take effect: the rest do not run, for this reason.
    Stop(String),
    /// The member at this index is next.
    Apply(usize, &'a Decision),
}

impl<'a> Gate<'a> {
    /// A gate over `policy`, `tools` and `proj`; `due` is the run's deadline, if it has
    /// one, with the time the gate is asked at.
    pub(crate) const fn new(
        policy: &'a RunPolicy,
        tools: &'a ToolTable,
        proj: &'a Projection,
        interrupting: bool,
        due: Option<(Due, Timestamp)>,
    ) -> Self {
        Self {
            policy,
            tools,
            proj,
            interrupting,
            due,
        }
    }

    // --- Calls --------------------------------------------------------------------------

    /// Whether `name` may be called with `input`: registered, its input valid against the
    /// tool's schema, and the tool eligible in the run's state — in that order.
    pub(crate) fn admit(&self, name: &str, input: &Value) -> Result<Arc<ToolEntry>, Rejection> {
        let Some(entry) = self.tools.get(name) else {
            return Err(Rejection::UnknownTool {
                name: crate::tools::clip(name),
                known: self.tools.names(),
            });
        };
        let errors = entry.schema_errors(input);
        if !errors.is_empty() {
            return Err(Rejection::InvalidInput {
                tool: entry.spec.name().clone(),
                errors,
            });
        }
        self.policy
            .eligibility
            .check(self.proj.state(), &entry.spec)
            .map_err(Rejection::Ineligible)?;
        Ok(Arc::clone(entry))
    }

    /// Whether a batch may run: not empty, at most `max_batch` calls, every call admitted
    /// as if alone ([`Gate::admit`], its refusal naming the call's index), no call twice.
    /// The admitted calls come back in order, each with its input's hash.
    pub(crate) fn admit_batch(
        &self,
        calls: &[ProposedCall],
        max_batch: usize,
    ) -> Result<Vec<(Arc<ToolEntry>, Digest)>, Rejection> {
        if calls.is_empty() {
            return Err(Rejection::EmptyBatch);
        }
        let limit = max_batch.max(1);
        if calls.len() > limit {
            return Err(Rejection::BatchTooLarge {
                calls: calls.len(),
                limit,
            });
        }
        let mut admitted = Vec::with_capacity(calls.len());
        let mut seen: HashMap<(ToolName, Digest), usize> = HashMap::with_capacity(calls.len());
        for (index, call) in calls.iter().enumerate() {
            let entry =
                self.admit(&call.tool, &call.input)
                    .map_err(|source| Rejection::InBatch {
                        index,
                        source: Box::new(source),
                    })?;
            let input_hash = Digest::of_json(&call.input);
            if let Some(first) = seen.insert((entry.spec.name().clone(), input_hash), index) {
                return Err(Rejection::DuplicateCall {
                    tool: entry.spec.name().clone(),
                    first,
                    second: index,
                });
            }
            admitted.push((entry, input_hash));
        }
        Ok(admitted)
    }

    /// Whether a tool call may start: not after a graceful interrupt.
    pub(crate) const fn may_call_tools(&self) -> bool {
        !self.interrupting
    }

    /// What becomes of an admitted call of `entry` on the input hashed `input_hash`: the
    /// cache serves a cacheable tool's earlier output, an open circuit refuses it, or it runs.
    pub(crate) fn before_run(
        &self,
        entry: &ToolEntry,
        input_hash: Digest,
        circuit: CircuitState,
        cache: &Cache,
    ) -> BeforeRun {
        let tool = entry.spec.name();
        if entry.spec.annotations().is_cacheable()
            && let Some(output) = cache.get(&(tool.clone(), input_hash))
        {
            return BeforeRun::Cached(output.clone());
        }
        if let CircuitState::Open { retry_after } = circuit
            && !retry_after.is_zero()
        {
            return BeforeRun::Refused(ToolError::CircuitOpen {
                tool: tool.clone(),
                retry_after,
            });
        }
        BeforeRun::Run
    }

    /// Why a call of `entry` needs approval before it runs, if it does: the policy's
    /// reason, or a hook's ask (`hooked`, see [`Gate::hooks`]) — never fewer approvals.
    pub(crate) fn needs_approval(&self, entry: &ToolEntry, hooked: bool) -> Option<ApprovalReason> {
        self.policy
            .snapshot
            .approvals
            .requires(&entry.spec)
            .or(hooked.then_some(ApprovalReason::Hook))
    }

    /// Whether a call a crash left in doubt may run again as its next attempt: only when
    /// it is idempotent (or the in-doubt policy retries all) and its tool is registered.
    pub(crate) fn readmit(
        &self,
        open: &OpenAttempt,
        retry_all: bool,
    ) -> Result<Arc<ToolEntry>, Failure> {
        in_doubt_rule(open, retry_all)?;
        self.tools.get(open.tool.as_str()).cloned().ok_or_else(|| {
            Failure::new(
                FailureKind::InDoubtToolCall,
                format!(
                    "the in-doubt call's tool `{}` is no longer registered",
                    open.tool
                ),
            )
        })
    }

    /// Whether call `index` of a batch a crash cut short may run, on resume, as its next
    /// attempt (`open`: it was in doubt, by the same rule as [`Gate::readmit`]) or its first
    /// (it never started): its tool still registered.
    pub(crate) fn readmit_member(
        &self,
        index: usize,
        tool: &str,
        open: Option<&OpenAttempt>,
        retry_all: bool,
    ) -> Result<Arc<ToolEntry>, Failure> {
        if let Some(open) = open {
            in_doubt_rule(open, retry_all)?;
        }
        self.tools.get(tool).cloned().ok_or_else(|| {
            Failure::new(
                FailureKind::InDoubtToolCall,
                format!(
                    "call {index} of the batch names tool `{}`, which is no longer registered",
                    crate::tools::clip(tool)
                ),
            )
        })
    }

    /// Whether the retry a crash cut short after attempt `failed` may run: its tool
    /// idempotent and registered, and its `tool_calls` unit paid (`charged`) or fitting.
    /// `Err` carries what is exhausted when the budget is why not.
    pub(crate) fn retry(
        &self,
        failed: &OpenAttempt,
        charged: bool,
    ) -> Result<Arc<ToolEntry>, Option<BudgetExhausted>> {
        let exhausted = if charged {
            None
        } else {
            self.fits(&BudgetName::TOOL_CALLS, 1).err()
        };
        match self.tools.get(failed.tool.as_str()) {
            Some(entry) if failed.idempotent && exhausted.is_none() => Ok(Arc::clone(entry)),
            _ => Err(exhausted),
        }
    }

    // --- Budgets ------------------------------------------------------------------------

    /// Whether `amount` more of `name` fits what the run has left of it.
    pub(crate) fn fits(&self, name: &BudgetName, amount: u64) -> Result<(), BudgetExhausted> {
        self.proj.budget().fits(self.proj.run.usage(), name, amount)
    }

    /// The `budget_consumed` entry that charges `amount` of `name`, if it fits what the
    /// run has left (what every charge before a cost records).
    pub(crate) fn charge(
        &self,
        name: &BudgetName,
        amount: u64,
    ) -> Result<rein_ledger::EntryKind, BudgetExhausted> {
        self.fits(name, amount)?;
        Ok(rein_ledger::EntryKind::BudgetConsumed {
            name: name.clone(),
            amount,
            used: self.proj.run.usage().used(name).saturating_add(amount),
            limit: self.proj.budget().limit(name),
        })
    }

    /// What the run has left of `name` (`None` when it has no limit).
    pub(crate) fn left(&self, name: &BudgetName) -> Option<u64> {
        self.proj.budget().left(self.proj.run.usage(), name)
    }

    /// A child's budget: what `asked` names, and what is left of every other budget this
    /// run limits. Refused when something asked for does not fit what is left.
    pub(crate) fn carve(&self, asked: &Spend) -> Result<Spend, BudgetExhausted> {
        let mut carved = Spend::new();
        for name in self.proj.budget().limits().keys() {
            let left = self.left(name).unwrap_or(u64::MAX);
            let amount = asked.get(name).copied().unwrap_or(left);
            self.fits(name, amount)?;
            carved.insert(name.clone(), amount);
        }
        for (name, &amount) in asked {
            carved.entry(name.clone()).or_insert(amount);
        }
        Ok(carved)
    }

    /// The failure of a run with a budget used past its limit (a provider reported more
    /// than it had left), if one is: the run stops, and a model reply that brought it there
    /// is not applied.
    pub(crate) fn overrun(&self) -> Option<Failure> {
        let usage = self.proj.run.usage();
        let (name, limit) = self
            .proj
            .budget()
            .limits()
            .iter()
            .find(|(name, limit)| usage.used(name) > **limit)?;
        let used = usage.used(name);
        Some(Failure::new(
            FailureKind::BudgetExhausted,
            format!(
                "the `{name}` budget is overrun: {used} used, {} past its limit of {limit} \
                 (a model provider reported more than the budget had left); the run stops, \
                 and a model reply that brought it there is not applied; raise the budget \
                 or lower the model's max_output_tokens",
                used - limit
            ),
        ))
    }

    // --- Decisions ----------------------------------------------------------------------

    /// Whether the run may take another step: not past `max_steps` (which no planner can
    /// correct).
    pub(crate) fn max_steps_reached(&self) -> Option<Rejection> {
        let limit = self.policy.snapshot.max_steps;
        (self.proj.run.steps() >= limit).then(|| Rejection::MaxSteps {
            limit,
            state: self.proj.state(),
        })
    }

    /// What a refused decision does to the run: handed back to the planner (`None`) under
    /// `on_violation: hand_back` while the `violations` budget has some left, or the run's
    /// failure. Running out of steps cannot be corrected by the planner, nor can a decision
    /// too deep to record (unrecorded, it does not count as a step, so a planner handed it
    /// back would propose it again at the same step): those always end the run.
    pub(crate) fn rejection_failure(&self, rejection: &Rejection) -> Option<Failure> {
        let fatal = matches!(
            rejection,
            Rejection::MaxSteps { .. } | Rejection::UnsupportedDecision | Rejection::TooDeep { .. }
        ) || matches!(rejection, Rejection::BudgetExhausted(e) if e.name == BudgetName::STEPS);
        let hands_back = matches!(
            self.policy.snapshot.on_violation,
            OnViolation::HandBack { .. }
        );
        if !fatal && hands_back && self.fits(&BudgetName::VIOLATIONS, 1).is_ok() {
            return None;
        }
        let kind = match rejection {
            Rejection::MaxSteps { .. } => FailureKind::MaxSteps,
            Rejection::BudgetExhausted(_) => FailureKind::BudgetExhausted,
            _ => FailureKind::PolicyViolation,
        };
        let message = if hands_back && !fatal {
            format!("{rejection} (and the violations budget is exhausted)")
        } else {
            rejection.to_string()
        };
        Some(Failure::new(kind, message))
    }

    /// Whether a decision that ends the run, proposed while steering notes waited unread,
    /// is handed back so the planner decides with them in view: when the run hands
    /// refusals back and the `violations` budget has room. Otherwise (a script, which
    /// would not read the note; no room left) the decision stands: a note never fails a run.
    pub(crate) fn hands_back_unread_steering(&self) -> bool {
        matches!(
            self.policy.snapshot.on_violation,
            OnViolation::HandBack { .. }
        ) && self.fits(&BudgetName::VIOLATIONS, 1).is_ok()
    }

    // --- Failures -----------------------------------------------------------------------

    /// What a call of `tool` failing for good with `error` does to the run: fails it under
    /// `on_tool_error: fail_run`, nothing when tool errors are handed back to the planner.
    pub(crate) fn tool_failure(&self, tool: &ToolName, error: &ToolError) -> Option<Failure> {
        (self.policy.snapshot.on_tool_error == OnToolError::FailRun)
            .then(|| Failure::new(FailureKind::ToolFailed, error.about(tool)))
    }

    /// What a finished call (or a batch's group, `failed` naming its first failure) does to
    /// the run: a failure once the deadline has passed is the deadline's (the call was cut
    /// off by it, or no step may start after it), any other is [`Gate::tool_failure`]'s.
    pub(crate) fn after_call(&self, failed: Option<(&ToolName, &ToolError)>) -> Option<Failure> {
        let (tool, error) = failed?;
        self.overdue().or_else(|| self.tool_failure(tool, error))
    }

    /// Whether the run's deadline has passed.
    pub(crate) fn deadline_passed(&self) -> bool {
        self.due.is_some_and(|(due, now)| now >= due.at)
    }

    /// The failure of a run whose deadline has passed, if it has: nothing starts after it.
    pub(crate) fn overdue(&self) -> Option<Failure> {
        self.due
            .filter(|_| self.deadline_passed())
            .map(|(due, _)| deadline_failure(due))
    }

    // --- Sequences ----------------------------------------------------------------------

    /// Where the run's sequence stands: done, stopped by a member that did not take effect
    /// (a refusal, a call failed for good), or the next member to apply.
    pub(crate) fn next_member(&self) -> NextMember<'a> {
        let Some(track) = self.proj.sequence.as_ref() else {
            return NextMember::Done;
        };
        next_member(track)
    }

    /// Whether `member` may start now: after a graceful interrupt, no member that calls a
    /// tool or delegates (`Err` says why the sequence stops there).
    pub(crate) const fn member_may_start(&self, member: &Decision) -> Result<(), &'static str> {
        match member {
            Decision::CallTool { .. } | Decision::CallTools { .. } | Decision::Delegate { .. }
                if self.interrupting =>
            {
                Err(INTERRUPTED)
            }
            _ => Ok(()),
        }
    }

    // --- The end ------------------------------------------------------------------------

    /// Every way `result` violates the run's result schema; empty when it has none or the
    /// result matches. A recorded schema that does not compile refuses every result.
    pub(crate) fn result_errors(&self, result: &Value) -> Vec<String> {
        match &self.policy.result_validator {
            None => Vec::new(),
            Some(Ok(validator)) => crate::tools::schema_errors(validator, result),
            Some(Err(reason)) => vec![format!(
                "the run's recorded result schema is not a valid JSON Schema: {reason}"
            )],
        }
    }
}

/// The in-doubt rule: a call a crash left in doubt runs again only when it is idempotent,
/// or when the in-doubt policy retries all; otherwise it may have run, and the run fails.
fn in_doubt_rule(open: &OpenAttempt, retry_all: bool) -> Result<(), Failure> {
    if open.idempotent || retry_all {
        Ok(())
    } else {
        Err(Projection::in_doubt_failure(open))
    }
}

/// Where `track` stands (see [`Gate::next_member`]).
fn next_member(track: &SequenceTrack) -> NextMember<'_> {
    if track.next >= track.members.len() {
        return NextMember::Done;
    }
    if let Some(reason) = &track.stopped {
        return NextMember::Stop(reason.clone());
    }
    NextMember::Apply(track.next, &track.members[track.next])
}

/// The failure of a run whose deadline `due` passed.
pub(crate) fn deadline_failure(due: Due) -> Failure {
    let paused = if due.paused_ms > 0 {
        format!(" (not counting {} ms spent paused)", due.paused_ms)
    } else {
        String::new()
    };
    Failure::new(
        FailureKind::DeadlineExceeded,
        format!(
            "the run's deadline of {} ms passed at {}{paused}; no step starts after it: give \
             the run a longer deadline, or less to do",
            due.time_ms, due.at
        ),
    )
}
