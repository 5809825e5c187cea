//! Opening a run: starting one (`begin`), reading the policy it recorded, rebuilding it from
//! its ledger (loaded and checked by `load`), and reopening it to resume or narrow it.
//! Every function takes the engine's shared state, not the `Engine`.

use std::sync::Arc;

use rein_ledger::{EntryKind, Ledger, LedgerStoreError};
use rein_policy::{Budget, PolicySnapshot};
use rein_run::{PendingApproval, Run, RunId, RunStatus, RunStoreError};

use crate::config::InDoubtPolicy;
use crate::driver::Driver;
use crate::error::{EngineError, RecordedPolicyError};
use crate::handle::Controls;
use crate::load::{Loaded, SnapshotStanding, load_ledger};
use crate::narrow::PolicyNarrowing;
use crate::project::{Projection, ProjectionError};
use crate::shared::{ActiveGuard, RunPolicy, Shared};
use crate::spec::RunSpec;

pub(crate) async fn begin(
    shared: &Arc<Shared>,
    spec: RunSpec,
    controls: Option<Controls>,
    continues: Option<Continues>,
) -> Result<(Driver, ActiveGuard), EngineError> {
    if let Some(name) = spec
        .vars
        .iter()
        .find_map(|(name, value)| crate::depth::too_deep(value).then(|| name.clone()))
    {
        spec.vars
            .into_iter()
            .for_each(|(_, v)| crate::depth::dispose(v));
        return Err(EngineError::VarTooDeep {
            name,
            limit: crate::depth::MAX_JSON_DEPTH,
        });
    }
    let chosen = spec.id.is_some();
    let id = spec.id.unwrap_or_else(|| shared.ids.run_id());
    let guard = shared.acquire(&id)?;
    if chosen {
        match shared.ledgers.load_boxed(&id).await {
            // An empty ledger is a run whose first entry never became durable.
            Err(LedgerStoreError::NotFound { .. }) => {}
            Ok(loaded) if loaded.ledger.is_empty() => {}
            Ok(_) | Err(_) => return Err(EngineError::RunExists { id }),
        }
        // An id whose ledger is empty or gone, under a snapshot saved after more than the
        // first entry, is a run whose ledger was cut, not a free id: starting afresh would
        // overwrite the one proof of it.
        match shared.runs.load_boxed(&id).await {
            Ok(run) => {
                if let Some(head) = run.ledger_head().filter(|head| head.seq > 1) {
                    return Err(EngineError::LedgerBehindSnapshot { id, head, last: 0 });
                }
            }
            Err(e @ (RunStoreError::Io { .. } | RunStoreError::Backend { .. })) => {
                return Err(EngineError::RunStore(e));
            }
            // No snapshot, or a corrupt one: it holds no head anyone can use.
            Err(_) => {}
        }
    }
    let mut policy = crate::deadline::run_policy(shared, &id, spec.deadline)?;
    if let Some(budget) = continues.as_ref().and_then(|c| c.budget.clone()) {
        // A follow-up that carries the previous run's budgets over starts under its rest.
        let snapshot = PolicySnapshot {
            budget,
            ..policy.snapshot.clone()
        };
        policy = Arc::new(RunPolicy::new(snapshot, shared.tools.specs()).map_err(|e| {
            EngineError::InvalidRecordedPolicy {
                id: id.clone(),
                source: RecordedPolicyError::Eligibility(e),
            }
        })?);
    }
    let started = EntryKind::RunStarted {
        goal: spec.goal,
        vars: spec.vars,
        policy: Arc::clone(&policy.value),
    };
    let mut driver = Driver::start(Arc::clone(shared), policy, started, id, controls).await?;
    if let Some(continues) = continues {
        // Right after `run_started`: the run's opening names the run it continues.
        driver.rec.record(continues.link).await?;
        driver.conversation = continues.earlier;
    }
    // Saved without a sync: a snapshot anchored at the first entry proves nothing about
    // an empty ledger (a power cut may take the unsynced entry and keep the snapshot),
    // and `load_ledger` takes an empty ledger under it for a run that never started.
    driver.rec.save().await?;
    Ok((driver, guard))
}

/// What a new run needs to follow up on an earlier one (built by `Engine::follow_up`):
/// its link and the conversation so far, read and verified.
#[derive(Debug)]
pub(crate) struct Continues {
    /// The `follow_up_of` entry to record right after `run_started`.
    pub(crate) link: EntryKind,
    /// The earlier runs, oldest first, for every plan request.
    pub(crate) earlier: Arc<[rein_run::EarlierRun]>,
    /// The budget the follow-up starts under, when it carries the previous run's rest.
    pub(crate) budget: Option<Budget>,
}

/// The policy the run is held to — the last `policy_narrowed`, else the one recorded
/// when it started; the engine's own when they are equal — and the budget it started
/// under (what a rebuild charges against until the first narrowing).
pub(crate) fn recorded_policy(
    shared: &Shared,
    id: &RunId,
    ledger: &Ledger,
) -> Result<(Budget, Arc<RunPolicy>), EngineError> {
    recorded_policy_of(shared, id, ledger.entries())
}

/// [`recorded_policy`] over the entries of a ledger (or the first ones of it).
pub(crate) fn recorded_policy_of(
    shared: &Shared,
    id: &RunId,
    entries: &[rein_ledger::Entry],
) -> Result<(Budget, Arc<RunPolicy>), EngineError> {
    let invalid = |source| EngineError::InvalidRecordedPolicy {
        id: id.clone(),
        source,
    };
    let Some(EntryKind::RunStarted {
        policy: started, ..
    }) = entries.first().map(rein_ledger::Entry::event)
    else {
        return Err(invalid(RecordedPolicyError::NoRunStarted));
    };
    let narrowed = entries.iter().rev().find_map(|e| match e.event() {
        EntryKind::PolicyNarrowed { policy, .. } => Some(policy),
        _ => None,
    });
    let current = narrowed.unwrap_or(started);
    let policy = if Arc::ptr_eq(current, &shared.policy.value) || **current == *shared.policy.value
    {
        Arc::clone(&shared.policy)
    } else {
        let snapshot = PolicySnapshot::from_value(current)
            .map_err(|e| invalid(RecordedPolicyError::Unreadable(e)))?;
        let policy = RunPolicy::new(snapshot, shared.tools.specs())
            .map_err(|e| invalid(RecordedPolicyError::Eligibility(e)))?;
        Arc::new(policy)
    };
    let budget = match narrowed {
        None => policy.snapshot.budget.clone(),
        Some(_) => {
            PolicySnapshot::from_value(started)
                .map_err(|e| invalid(RecordedPolicyError::Unreadable(e)))?
                .budget
        }
    };
    Ok((budget, policy))
}

pub(crate) async fn reopen(
    shared: &Arc<Shared>,
    id: &RunId,
    answer: Option<&str>,
    controls: Option<Controls>,
) -> Result<(Driver, ActiveGuard), EngineError> {
    reopen_by(shared, id, answer, None, controls).await
}

/// As [`reopen`], with who gave `answer` (recorded in `human_input_received`).
pub(crate) async fn reopen_by(
    shared: &Arc<Shared>,
    id: &RunId,
    answer: Option<&str>,
    by: Option<&str>,
    controls: Option<Controls>,
) -> Result<(Driver, ActiveGuard), EngineError> {
    let guard = shared.acquire(id)?;
    let Loaded {
        loaded,
        unchecked,
        snapshot,
    } = load_ledger(shared, id).await?;
    // A snapshot the store failed to read (an I/O error; a corrupt file holds no head
    // anyone can use) may name a head this ledger does not reach, and resuming would
    // overwrite it with one that it does. Refuse, before anything is written.
    let unchecked = match unchecked {
        Some(e @ (RunStoreError::Io { .. } | RunStoreError::Backend { .. })) => {
            return Err(EngineError::RunStore(e));
        }
        other => other,
    };
    let (budget, policy) = recorded_policy(shared, id, &loaded.ledger)?;
    if let Some(hook) = policy
        .snapshot
        .hooks
        .iter()
        .find(|hook| !shared.hooks.all().iter().any(|h| h.id() == *hook))
    {
        return Err(EngineError::HookMissing {
            id: id.clone(),
            hook: hook.clone(),
        });
    }
    let mut proj = rebuild(id, &loaded.ledger, budget)?;
    let resumable = may_resume(shared, id, &policy, &proj, answer).await;
    if resumable.is_err()
        && matches!(
            snapshot,
            SnapshotStanding::Missing | SnapshotStanding::Behind { .. }
        )
    {
        // The snapshot is the ledger's cache, which listings read: one a crash left behind
        // (between a step's commit and its save) is brought up to date now, when the run
        // ended or waits for a person and nothing else would save it. A run that resumes
        // saves it after its `run_resumed` entry, which says it was rebuilt: saved earlier,
        // a kill in between would lose that report.
        shared.runs.save_boxed(&proj.run).await?;
    }
    let (expired, forward) = resumable?;
    let run = &proj.run;
    let open = proj.open.take();
    let unsettled = proj.unsettled.take();
    let model = std::mem::take(&mut proj.model);
    let mut note = match (&loaded.torn_tail, answer) {
        (Some(torn), _) => format!(
            "resumed after a restart; a torn final ledger line ({} bytes at line {}) was cut",
            torn.bytes, torn.line
        ),
        (None, Some(_)) => "resumed with a human's answer".to_owned(),
        (None, None) if run.status() == RunStatus::Interrupted => {
            "resumed after an interrupt; the run continues from where it stopped".to_owned()
        }
        (None, None) => "resumed after a restart: the process stopped while the run was \
                         running; the run continues from where its ledger ends"
            .to_owned(),
    };
    if let Some(e) = unchecked {
        note.push_str(&format!(
            "; the run snapshot could not be read, so the ledger was not checked against \
             the head it records ({e}); the run was rebuilt from its ledger"
        ));
    }
    note.push_str(&snapshot.note());
    let mut driver = Driver::new(Arc::clone(shared), policy, proj, &loaded.ledger, controls)?;
    // The projection's step was taken above; the driver still needs its decision.
    driver.resume.reopened = unsettled
        .as_ref()
        .and_then(|step| crate::driver::unsettled_decision(&loaded.ledger, step));
    driver.adopt_planner();
    if let Some(answer) = answer {
        driver
            .rec
            .record(EntryKind::HumanInputReceived {
                answer: answer.to_owned(),
                by: by.map(str::to_owned),
            })
            .await?;
    }
    driver.rec.record(EntryKind::RunResumed { note }).await?;
    // A model call the process stopped in is charged before anything else happens.
    driver
        .settle_model_calls(model, crate::plan_link::IN_DOUBT_REASON)
        .await?;
    if let Some((pending, timeout_ms)) = expired {
        driver.expire(&pending, timeout_ms).await?;
    } else if let Some(child) = driver.rec.proj.tree.open.clone() {
        // A child is open: the drive settles it first (answering it, if answered).
        driver.sub.resume = Some((child, answer.filter(|_| forward).map(str::to_owned)));
    } else if let Some(open) = open {
        let retry_all = shared.config.in_doubt == InDoubtPolicy::RetryAll;
        driver.settle_in_doubt(open, retry_all).await?;
    } else if let Some(step) = unsettled
        && driver.run().status() == RunStatus::Running
    {
        // The process stopped inside a step: finish it before asking for the next one.
        driver.complete_step(step).await?;
    }
    driver.rec.persist().await?;
    Ok((driver, guard))
}

/// Whether run `id`, rebuilt as `proj`, may resume now (with `answer`, if given): the
/// approval whose time ran out, if one did, and whether `answer` goes on to the open child.
///
/// # Errors
/// [`EngineError::RunFinished`], [`EngineError::AwaitingAnswer`],
/// [`EngineError::InvalidAnswer`], and [`EngineError::AwaitingApproval`] (from it or a run
/// below it) when it may not; as [`asked_below`].
async fn may_resume(
    shared: &Arc<Shared>,
    id: &RunId,
    policy: &RunPolicy,
    proj: &Projection,
    answer: Option<&str>,
) -> Result<(Option<(PendingApproval, u64)>, bool), EngineError> {
    let run = &proj.run;
    if run.is_finished() {
        return Err(EngineError::RunFinished {
            id: id.clone(),
            status: run.status(),
        });
    }
    let expired = crate::durable::due(shared, policy, run)?;
    // A run paused on its open child: refused while a run below waits for a verdict (an
    // answer is never one); the answer goes on to the child only when the child asks the
    // question it answers.
    let forward = match (&proj.tree.open, run.status()) {
        (Some(open), RunStatus::Paused) => {
            let asked = asked_below(shared, &open.child).await?;
            asked.is_some() && asked.as_deref() == run.pending_question().map(|q| &*q.question)
        }
        _ => true,
    };
    match (
        run.pending_question()
            .filter(|_| run.status() == RunStatus::Paused),
        answer,
    ) {
        (Some(pending), None) => {
            return Err(EngineError::AwaitingAnswer {
                id: id.clone(),
                question: pending.question.clone(),
                options: pending.options.clone(),
            });
        }
        (_, Some(answer)) => {
            // Check the answer on a copy first, so a wrong answer records nothing.
            let mut probe = run.clone();
            if let Err(source) = probe.answer(answer, shared.clock.now()) {
                return Err(EngineError::InvalidAnswer {
                    id: id.clone(),
                    source,
                });
            }
        }
        (None, None) => {}
    }
    Ok((expired, forward))
}

/// The question the open child `child` of a paused run asks, if it asks one.
///
/// # Errors
/// [`EngineError::AwaitingApproval`] when the child, or a run below it, waits for a verdict
/// on a durable approval in time; as [`load_ledger`] and [`rebuild`].
async fn asked_below(shared: &Arc<Shared>, child: &RunId) -> Result<Option<String>, EngineError> {
    let mut id = child.clone();
    let mut asked = None;
    // A tree is no deeper than the engine allows; a ledger naming more is not followed.
    for depth in 0..=shared.config.max_depth {
        let ledger = match load_ledger(shared, &id).await {
            Ok(loaded) => loaded.loaded.ledger,
            Err(EngineError::RunNotFound { .. }) => break,
            Err(e) => return Err(e),
        };
        let (budget, policy) = recorded_policy(shared, &id, &ledger)?;
        let proj = rebuild(&id, &ledger, budget)?;
        let run = &proj.run;
        if let Err(e @ EngineError::AwaitingApproval { .. }) =
            crate::durable::due(shared, &policy, run)
        {
            return Err(e);
        }
        if run.status() != RunStatus::Paused {
            break;
        }
        if depth == 0 {
            asked = run.pending_question().map(|q| q.question.clone());
        }
        match proj.tree.open {
            Some(open) => id = open.child,
            None => break,
        }
    }
    Ok(asked)
}

/// Opens run `id`, not being driven now, to act on it where it stopped (a verdict on its
/// durable approval, a narrowing): its ledger checked against its snapshot, nothing
/// written. The caller holds the run's guard.
pub(crate) async fn stopped(shared: &Arc<Shared>, id: &RunId) -> Result<Driver, EngineError> {
    let Loaded {
        loaded, unchecked, ..
    } = load_ledger(shared, id).await?;
    if let Some(e @ (RunStoreError::Io { .. } | RunStoreError::Backend { .. })) = unchecked {
        return Err(EngineError::RunStore(e));
    }
    let (budget, policy) = recorded_policy(shared, id, &loaded.ledger)?;
    let proj = rebuild(id, &loaded.ledger, budget)?;
    if proj.run.is_finished() {
        return Err(EngineError::RunFinished {
            id: id.clone(),
            status: proj.run.status(),
        });
    }
    Driver::new(Arc::clone(shared), policy, proj, &loaded.ledger, None)
}

/// Narrows the policy of run `id`, not being driven now (see `Engine::narrow`).
pub(crate) async fn narrow(
    shared: &Arc<Shared>,
    id: &RunId,
    narrowing: &PolicyNarrowing,
) -> Result<Run, EngineError> {
    let _guard = shared.acquire(id)?;
    let mut driver = stopped(shared, id).await?;
    driver
        .narrow(narrowing)
        .await?
        .map_err(|source| EngineError::Narrowing {
            id: id.clone(),
            source,
        })?;
    driver.rec.persist().await?;
    Ok(driver.into_run())
}

fn inconsistent(id: &RunId, seq: u64, source: ProjectionError) -> EngineError {
    EngineError::InconsistentLedger {
        id: id.clone(),
        seq,
        source: Box::new(source),
    }
}

/// The run as `ledger` describes it, anchored to the ledger's last entry.
/// `budget` is the one it started under.
pub(crate) fn rebuild(
    id: &RunId,
    ledger: &Ledger,
    budget: Budget,
) -> Result<Projection, EngineError> {
    let mut proj = Projection::rebuild(ledger.entries(), |_| Ok(budget))
        .map_err(|(seq, e)| inconsistent(id, seq, e))?;
    if let Some(head) = ledger.head() {
        // A run rebuilt from scratch has no head yet: anchoring it cannot fail.
        proj.run
            .anchor(head)
            .map_err(|e| inconsistent(id, head.seq, ProjectionError::from(e)))?;
    }
    Ok(proj)
}

#[cfg(test)]
mod tests {
    use rein_planner::ScriptedPlanner;
    use rein_run::{BudgetName, State, Timestamp};
    use serde_json::Map;

    use super::*;
    use crate::builder::EngineBuilder;

    fn shared() -> Arc<Shared> {
        Arc::new(
            EngineBuilder::default()
                .planner(ScriptedPlanner::new([]))
                .into_shared()
                .expect("builds"),
        )
    }

    fn started(shared: &Shared, id: &RunId) -> Ledger {
        let mut ledger = Ledger::new(id.clone());
        ledger.append(
            Timestamp::from_unix_millis(1),
            State::Intake,
            EntryKind::RunStarted {
                goal: "g".into(),
                vars: Map::new(),
                policy: Arc::clone(&shared.policy.value),
            },
        );
        ledger
    }

    #[test]
    fn a_run_under_the_engines_policy_shares_it() {
        let shared = shared();
        let id: RunId = "r".parse().expect("an id");
        let (budget, policy) = recorded_policy(&shared, &id, &started(&shared, &id)).expect("ok");
        assert!(Arc::ptr_eq(&policy, &shared.policy));
        assert_eq!(budget, shared.policy.snapshot.budget);
    }

    #[test]
    fn the_last_narrowing_is_the_policy_and_the_start_is_the_budget_to_rebuild_with() {
        let shared = shared();
        let id: RunId = "r".parse().expect("an id");
        let mut ledger = started(&shared, &id);
        for steps in [50, 10] {
            let mut narrowed = shared.policy.snapshot.clone();
            narrowed.max_steps = steps;
            narrowed.budget = narrowed.budget.with_limit(BudgetName::TOOL_CALLS, 1);
            ledger.append(
                Timestamp::from_unix_millis(2),
                State::Intake,
                EntryKind::PolicyNarrowed {
                    policy: Arc::new(narrowed.to_value()),
                    reason: "less".into(),
                },
            );
        }
        let (budget, policy) = recorded_policy(&shared, &id, &ledger).expect("ok");
        assert_eq!(policy.snapshot.max_steps, 10);
        assert_eq!(
            policy.snapshot.budget.limit(&BudgetName::TOOL_CALLS),
            Some(1)
        );
        // Charges before the narrowing replay against the limits the run started with.
        assert_eq!(budget.limit(&BudgetName::TOOL_CALLS), None);
        // The rebuilt run charges against the narrowed limits from the narrowing on.
        let proj = rebuild(&id, &ledger, budget).expect("rebuilds");
        assert_eq!(proj.budget().limit(&BudgetName::TOOL_CALLS), Some(1));
    }
}
