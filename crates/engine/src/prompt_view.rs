//! What a planner was asked, rebuilt from the ledger: the prompt is a projection of the
//! run's recorded history, so `rein inspect RUN --prompt STEP` and replay see exactly the
//! request a step's planner saw (its first model call).

use rein_ledger::{EntryKind, InterruptKind, Ledger};
use rein_run::{PlanRequest, State};

use crate::engine::Engine;
use crate::error::EngineError;
use crate::open::recorded_policy_of;
use crate::project::Projection;

impl Engine {
    /// Rebuilds the [`PlanRequest`] step `step` of the run `ledger` records was planned
    /// from, and hands it to `view` (e.g. an LLM planner's `prompt`). `None` when the
    /// ledger never reached that step's planning.
    ///
    /// The run is projected from the entries before the step's first decision or model
    /// call; the tools offered are those the policy recorded then allows in the run's state,
    /// and the skills are this engine's, as is the delegation offered (its planner names,
    /// when the run is shallower than its `max_depth`). The request carries no
    /// conversation: for a follow-up, [`Engine::plan_request_in_conversation`] adds the
    /// earlier runs its planner was shown.
    ///
    /// # Errors
    /// [`EngineError::InconsistentLedger`] or [`EngineError::InvalidRecordedPolicy`] when
    /// the ledger cannot be projected.
    pub fn plan_request_at<R>(
        &self,
        ledger: &Ledger,
        step: u32,
        view: impl FnOnce(PlanRequest<'_>) -> R,
    ) -> Result<Option<R>, EngineError> {
        self.plan_request_at_call(ledger, step, 0, view)
    }

    /// [`Engine::plan_request_at`] for the model call `call` (from 0) of step `step`: the
    /// run projected from the entries before that call's first attempt, so the step's
    /// earlier replies and the corrections handed back for them are in the request's
    /// dialogue and evidence, as they were in the request the call sent. `None` when the
    /// ledger shows no such call.
    ///
    /// # Errors
    /// As [`Engine::plan_request_at`].
    pub fn plan_request_at_call<R>(
        &self,
        ledger: &Ledger,
        step: u32,
        call: u32,
        view: impl FnOnce(PlanRequest<'_>) -> R,
    ) -> Result<Option<R>, EngineError> {
        self.plan_request_in_conversation(ledger, &[], step, call, view)
    }

    /// [`Engine::plan_request_at_call`] for a follow-up: `earlier` holds the ledgers of the
    /// runs of its conversation before it, oldest first, and each is rebuilt as the
    /// follow-up's planner was shown it (the request's
    /// [`conversation`](PlanRequest::conversation)). The caller reads and checks them —
    /// [`Engine::verify_conversation`] over the engine's stores, or each ledger verified and
    /// each `follow_up_of` link matched — since this engine may not hold them.
    ///
    /// # Errors
    /// As [`Engine::plan_request_at`], for `ledger` or any of `earlier`.
    pub fn plan_request_in_conversation<R>(
        &self,
        ledger: &Ledger,
        earlier: &[Ledger],
        step: u32,
        call: u32,
        view: impl FnOnce(PlanRequest<'_>) -> R,
    ) -> Result<Option<R>, EngineError> {
        let conversation = earlier
            .iter()
            .map(|l| crate::conversation::earlier_run(&self.shared, l))
            .collect::<Result<Vec<_>, _>>()?;
        let entries = ledger.entries();
        let first_of_step = |e: &rein_ledger::Entry| match e.event() {
            EntryKind::Decision { step: s, .. }
            | EntryKind::PlannerAttempt { step: s, .. }
            | EntryKind::PlannerCall { step: s, .. }
            | EntryKind::PlannerAttemptFailed { step: s, .. }
            | EntryKind::SkillEntered { step: s, .. }
            | EntryKind::PromptCompacted { step: s, .. } => *s == step,
            _ => false,
        };
        let cut = if call == 0 {
            entries.iter().position(first_of_step)
        } else {
            rein_ledger::model_call_starts(entries, step)
                .get(usize::try_from(call).unwrap_or(usize::MAX))
                .copied()
        };
        let Some(cut) = cut else {
            return Ok(None);
        };
        let (id, prefix) = (ledger.run_id(), &entries[..cut]);
        let (budget, policy) = recorded_policy_of(&self.shared, id, prefix)?;
        let proj = Projection::rebuild(prefix, |_| Ok(budget)).map_err(|(seq, source)| {
            EngineError::InconsistentLedger {
                id: id.clone(),
                seq,
                source: Box::new(source),
            }
        })?;
        // A graceful interrupt not yet followed by a resume makes the step the last one.
        let interrupted = prefix.iter().fold(false, |on, e| match e.event() {
            EntryKind::Interrupt {
                kind: InterruptKind::Graceful,
            } => true,
            EntryKind::RunResumed { .. } => false,
            _ => on,
        });
        let run = &proj.run;
        let next: Vec<State> = policy.snapshot.transitions.targets(run.state()).collect();
        let mut request = PlanRequest::new(
            run,
            policy.allowed.in_state(run.state()),
            proj.budget().snapshot(run.usage()),
        )
        .with_all_tools(self.shared.tools.specs())
        .with_interrupted(interrupted)
        .with_next_states(&next)
        .with_skills(&self.shared.config.skills)
        .with_dialogue(&proj.dialogue)
        .with_conversation(&conversation)
        .with_rules(&policy.rules);
        if let Some(schema) = &policy.snapshot.result_schema {
            request = request.with_result_schema(schema);
        }
        if let Some(delegation) = self.shared.delegation_at(proj.tree.depth()) {
            request = request.with_delegation(delegation);
        }
        Ok(Some(view(request)))
    }
}
