//! Asking hooks: the driver's side of [`Gate::hooks`](crate::gate::Gate::hooks). At a point
//! that may refuse, the hooks are asked in registration order (on the run's own task, each
//! within its timeout, a panic caught), every verdict other than allow is recorded in one
//! `hook_verdicts` entry **before** the engine acts on it, and the gate rules on what was
//! recorded; a resume that finds the entry rules on it again without asking. At a point
//! that only observes, the hooks are asked and their verdicts dropped.

use std::future::Ready;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt as _;
use futures_util::future::Either;
use rein_ledger::{EntryKind, HookOutcome, HookPoint, HookRuling};
use rein_run::{BoxFuture, Digest, FailureKind, RunStatus, Spend, ToolName};

use crate::driver::{Driver, panic_message};
use crate::error::EngineError;
use crate::gate::HookRuled;
use crate::hook::{HookPayload, HookSpec, HookVerdict};
use crate::narrow::PolicyNarrowing;

/// The gate's ruling on a point's hooks, to be awaited.
pub(crate) type Ruling<'a> = BoxFuture<'a, Result<HookRuled, EngineError>>;

/// The hooks of a point that only observes, asked: at once, or to be awaited.
pub(crate) type Observed<'a> = Either<Ready<()>, BoxFuture<'a, ()>>;

/// The longest reason a hook's verdict is recorded with, in characters (a command hook's
/// stderr may be long; the ledger keeps its start).
const MAX_REASON_CHARS: usize = 2_000;

impl Driver {
    /// Whether any hook is asked at `point` (about `tool`, at the tool points): when none
    /// is, no payload is built.
    #[inline]
    pub(crate) fn hooked(&self, point: HookPoint, tool: Option<&ToolName>) -> bool {
        self.shared.hooks.any(point, tool)
    }

    /// A payload at `point`, where the run stands now, for the caller to fill in with `fill`.
    ///
    /// One payload serves a run point after point: the last one comes back here once its
    /// hooks answered (`settle`), and is reset in place when no hook kept it, so a point
    /// costs no allocation (its `used` map keeps its nodes while the budgets stay the same,
    /// and is not looked at while the run spent nothing).
    pub(crate) fn hook_payload(
        &mut self,
        point: HookPoint,
        fill: impl FnOnce(&mut HookPayload),
    ) -> Arc<HookPayload> {
        let run = &self.rec.proj.run;
        let spends = run.usage().spends();
        // The last point's payload when no hook kept it; a new one otherwise.
        let (mut payload, spent) = match self.hook_scratch.take() {
            Some(kept) if Arc::strong_count(&kept) == 1 => (kept, spends != self.hook_spends),
            _ => {
                let id = run.id().clone();
                (Arc::new(HookPayload::new(point, id, 0, run.state())), true)
            }
        };
        // Unique (the engine makes no `Weak` of it): no copy is made here.
        let slot = Arc::make_mut(&mut payload);
        slot.reset(point, run.steps(), run.state());
        if spent {
            used_now(&mut slot.used, run.usage());
            self.hook_spends = spends;
        }
        fill(slot);
        payload
    }

    /// Keeps `payload` for the next point's [`hook_payload`](Self::hook_payload).
    fn settle(&mut self, payload: Arc<HookPayload>) {
        self.hook_scratch = Some(payload);
    }

    /// The gate's ruling on the hooks at `payload`'s point (one that may refuse), to be
    /// awaited; `None` when it is known at once to be nothing (the gate's ruling on no
    /// verdict: nothing refused, no approval asked, no budget lowered), because every hook
    /// asked there answered without a future and allowed, and nothing is on record for the
    /// point. Otherwise through [`before_hooks`](Self::before_hooks), boxed (a run without
    /// hooks keeps a small step future), without asking again the hooks already asked.
    pub(crate) fn rule_hooks(
        &mut self,
        payload: Arc<HookPayload>,
        input_hash: Option<Digest>,
    ) -> Option<Ruling<'_>> {
        let asked = if self.on_record(&payload, input_hash).is_some() {
            None
        } else {
            self.rulings_now(&payload)
        };
        if asked.as_ref().is_some_and(Vec::is_empty) {
            self.settle(payload);
            return None;
        }
        Some(Box::pin(self.before_hooks(payload, input_hash, asked)))
    }

    /// The verdicts a `hook_verdicts` entry recorded at `payload`'s point (and call), when a
    /// resume re-applies its step: ruled on again without asking.
    #[inline]
    fn on_record(
        &self,
        payload: &HookPayload,
        input_hash: Option<Digest>,
    ) -> Option<&crate::progress::RecordedHooks> {
        self.rec.proj.hooks_recorded.iter().find(|r| {
            r.step == payload.step
                && r.point == payload.point
                && r.tool == payload.tool
                && r.input_hash == input_hash
        })
    }

    /// The rulings of the hooks at `payload`'s point (one that may refuse), asked at once,
    /// when every one of them answers without a future (`HookSpec::from_check`); `None`
    /// when one does not (none is asked then).
    fn rulings_now(&self, payload: &HookPayload) -> Option<Vec<HookRuling>> {
        self.answers_now(payload, true)
    }

    /// The verdicts other than allow of the hooks at `payload`'s point, asked at once, when
    /// every one of them answers without a future; `None` when one does not (none is asked
    /// then). `fail_closed` as in [`ask`](Self::ask).
    #[inline]
    fn answers_now(&self, payload: &HookPayload, fail_closed: bool) -> Option<Vec<HookRuling>> {
        let (hooks, tool) = (self.shared.hooks.at(payload.point), payload.tool.as_ref());
        if !hooks.answer_now(tool) {
            return None;
        }
        let mut rulings = Vec::new();
        let mut asked = hooks.asked(tool);
        // One guard against a panic for the point's hooks, not one a hook: an allow is
        // passed over inside it, and the guard is set again past a hook that panicked.
        loop {
            let mut last = None;
            let answered = std::panic::catch_unwind(AssertUnwindSafe(|| {
                asked.by_ref().find_map(|spec| {
                    last = Some(spec);
                    match spec.hook().ask_now(payload) {
                        None | Some(HookVerdict::Allow) => None,
                        Some(verdict) => Some((spec, verdict)),
                    }
                })
            }));
            let (spec, answer) = match answered {
                Ok(None) => break,
                Ok(Some((spec, verdict))) => (spec, Ok(verdict)),
                Err(panic) => match last {
                    Some(spec) => (spec, Err(panicked(panic.as_ref()))),
                    None => break,
                },
            };
            take(spec, payload, answer, fail_closed, &mut rulings);
        }
        Some(rulings)
    }

    /// Asks the hooks at `payload`'s point (one that may refuse) and returns the gate's
    /// ruling on their verdicts; a budget a hook lowered is lowered here, as a recorded
    /// policy narrowing. `input_hash` names the call at the tool points.
    async fn before_hooks(
        &mut self,
        payload: Arc<HookPayload>,
        input_hash: Option<Digest>,
        asked: Option<Vec<HookRuling>>,
    ) -> Result<HookRuled, EngineError> {
        let point = payload.point;
        let rulings = match self.on_record(&payload, input_hash) {
            Some(recorded) => recorded.rulings.clone(),
            None => {
                let rulings = match asked {
                    Some(rulings) => rulings,
                    None => self.ask(&payload, true).await,
                };
                if !rulings.is_empty() {
                    self.rec
                        .record(EntryKind::HookVerdicts {
                            step: payload.step,
                            point,
                            tool: payload.tool.clone(),
                            input_hash,
                            rulings: rulings.clone(),
                        })
                        .await?;
                }
                rulings
            }
        };
        self.settle(payload);
        let ruled = self.gate().hooks(point, &rulings);
        if !ruled.budgets.is_empty() && ruled.denied.is_none() {
            let hooks: Vec<&str> = rulings
                .iter()
                .filter(|r| matches!(r.outcome, HookOutcome::Budget { .. }))
                .map(|r| r.hook.as_str())
                .collect();
            let narrowing = ruled.budgets.iter().fold(
                PolicyNarrowing::new(format!("lowered by hook {} at {point}", hooks.join(", "))),
                |narrowing, (name, limit)| narrowing.budget(name.clone(), *limit),
            );
            // Lower limits only, so the narrowing cannot be refused as widening; were it
            // refused anyway, the run keeps the stricter policy it has.
            if let Err(e) = self.narrow(&narrowing).await? {
                tracing::warn!(error = %e, "a hook's budget narrowing was not applied");
            }
        }
        Ok(ruled)
    }

    /// Asks the hooks at `payload`'s point (one that only observes): what they answer is
    /// dropped, a failure only logged. At once, with no future, when every hook asked there
    /// answers without one.
    pub(crate) fn observe_hooks(&mut self, payload: Arc<HookPayload>) -> Observed<'_> {
        if self.answers_now(&payload, false).is_some() {
            self.settle(payload);
            return Either::Left(std::future::ready(()));
        }
        Either::Right(Box::pin(async move {
            let _ = self.ask(&payload, false).await;
            self.settle(payload);
        }))
    }

    /// Asks the `run_start` hooks, before the run's first decision: whether the run may go
    /// on (a deny fails it, as a policy violation).
    pub(crate) async fn run_start(&mut self) -> Result<bool, EngineError> {
        if !self.hooked(HookPoint::RunStart, None) {
            return Ok(true);
        }
        let goal = self.rec.proj.run.goal().to_owned();
        let payload = self.hook_payload(HookPoint::RunStart, |p| p.goal = Some(goal));
        let ruled = match self.rule_hooks(payload, None) {
            Some(ruling) => ruling.await?,
            None => HookRuled::default(),
        };
        let Some(rejection) = ruled.denied else {
            return Ok(true);
        };
        self.rec
            .fail(FailureKind::PolicyViolation, rejection.to_string())
            .await?;
        Ok(false)
    }

    /// Shows the `run_end` hooks a run that ended, the `pause` hooks one that paused.
    pub(crate) async fn after_run(&mut self) {
        let run = &self.rec.proj.run;
        let point = match run.status() {
            RunStatus::Completed | RunStatus::Failed => HookPoint::RunEnd,
            RunStatus::Paused => HookPoint::Pause,
            _ => return,
        };
        if !self.hooked(point, None) {
            return;
        }
        let (status, error, question) = (
            run.status(),
            run.failure().map(|f| f.message.clone()),
            run.pending_question().map(|q| q.question.clone()),
        );
        let payload = self.hook_payload(point, |p| {
            p.status = Some(status);
            p.error = error;
            p.question = question;
        });
        self.observe_hooks(payload).await;
    }

    /// Shows the `after_tool` hooks how a call of `tool` ended: `error`, or the output the
    /// run's evidence now ends with (and the call's input, from `input` or that evidence).
    pub(crate) fn after_tool(
        &mut self,
        tool: &rein_run::ToolName,
        error: Option<&rein_tool::ToolError>,
        input: Option<&Arc<serde_json::Value>>,
    ) -> Observed<'_> {
        let mut input = input.cloned();
        let (mut output, mut failed) = (None, None);
        match error {
            Some(error) => failed = Some(error.about(tool)),
            None => {
                if let Some(rein_run::Evidence {
                    kind:
                        rein_run::EvidenceKind::ToolResult {
                            tool: of,
                            input: used,
                            output: out,
                            ..
                        },
                    ..
                }) = self.rec.proj.run.evidence().last()
                    && of == tool
                {
                    input.get_or_insert_with(|| Arc::clone(used));
                    output = Some(match out {
                        rein_run::Payload::Inline(value) => value.clone(),
                        artifact @ rein_run::Payload::Artifact(_) => {
                            serde_json::to_value(artifact).unwrap_or_default()
                        }
                    });
                }
            }
        }
        let payload = self.hook_payload(HookPoint::AfterTool, |p| {
            p.tool = Some(tool.clone());
            p.input = input;
            p.output = output;
            p.error = failed;
        });
        self.observe_hooks(payload)
    }

    /// Asks every hook at `payload`'s point, in registration order, and returns their
    /// verdicts other than allow. With `fail_closed`, a hook that errs, panics, times out
    /// or gives no reason for a deny denies, saying so.
    async fn ask(&self, payload: &Arc<HookPayload>, fail_closed: bool) -> Vec<HookRuling> {
        let mut rulings = Vec::new();
        let hooks = self.shared.hooks.at(payload.point);
        for spec in hooks.asked(payload.tool.as_ref()) {
            // A check that answers without a future (`HookSpec::from_check`) costs no box,
            // no timer and no future of `ask_one`'s.
            let answer = match ask_now(spec, payload) {
                Some(answer) => answer,
                None => ask_one(spec, payload).await,
            };
            take(spec, payload, answer, fail_closed, &mut rulings);
        }
        rulings
    }
}

/// Adds to `rulings` what `spec`'s `answer` at `payload`'s point says, unless it allows.
/// With `fail_closed`, a hook that failed denies, saying why; otherwise its failure is
/// only logged.
fn take(
    spec: &HookSpec,
    payload: &HookPayload,
    answer: Result<HookVerdict, String>,
    fail_closed: bool,
    rulings: &mut Vec<HookRuling>,
) {
    match answer {
        Ok(HookVerdict::Allow) => {}
        Ok(HookVerdict::Deny { reason }) => {
            let reason = if reason.trim().is_empty() {
                "it denied without giving a reason".to_owned()
            } else {
                reason
            };
            rulings.push(ruling(spec, HookOutcome::Deny, &reason));
        }
        Ok(HookVerdict::Narrow(narrowing)) => {
            rulings.push(ruling(
                spec,
                narrowing.outcome().clone(),
                narrowing.reason(),
            ));
        }
        Err(why) if fail_closed => {
            let reason = format!("{why}; hooks asked before an action fail closed");
            rulings.push(ruling(spec, HookOutcome::Deny, &reason));
        }
        Err(why) => {
            tracing::warn!(hook = %spec.id().name, point = %payload.point, %why, "a hook failed");
        }
    }
}

/// The verdict of a hook that answers at once, or why it has none (it panicked); `None`
/// for a hook that answers through a future.
fn ask_now(spec: &HookSpec, payload: &HookPayload) -> Option<Result<HookVerdict, String>> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| spec.hook().ask_now(payload))) {
        Ok(answer) => answer.map(Ok),
        Err(panic) => Some(Err(panicked(panic.as_ref()))),
    }
}

/// Why a hook that panicked with `panic` has no verdict.
fn panicked(panic: &(dyn std::any::Any + Send)) -> String {
    format!("it panicked: {}", panic_message(panic))
}

/// One hook's verdict, or why it has none: it failed, panicked or took too long.
async fn ask_one(spec: &HookSpec, payload: &Arc<HookPayload>) -> Result<HookVerdict, String> {
    let limit = spec.time_limit();
    let mut check = std::pin::pin!(AssertUnwindSafe(spec.hook().ask(payload)).catch_unwind());
    // A hook that answers at once (most in-process hooks) costs no timer.
    let answer = match check.as_mut().now_or_never() {
        Some(answer) => Ok(answer),
        None => tokio::time::timeout(limit, check).await,
    };
    match answer {
        Err(_) => Err(format!("it did not answer within {} ms", limit.as_millis())),
        Ok(Err(panic)) => Err(panicked(panic.as_ref())),
        Ok(Ok(Err(e))) => Err(format!("it failed: {e}")),
        Ok(Ok(Ok(verdict))) => Ok(verdict),
    }
}

/// The ledger's record of `spec`'s verdict.
fn ruling(spec: &HookSpec, outcome: HookOutcome, reason: &str) -> HookRuling {
    let id = spec.id();
    HookRuling {
        hook: id.name.clone(),
        command: id.command,
        script: id.script,
        outcome,
        reason: clip(reason),
    }
}

/// `text`, cut to [`MAX_REASON_CHARS`] (the cut marked).
fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_REASON_CHARS) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// Brings `used` (a payload's) to what `usage` says was used of each budget, leaving out
/// the budgets not used yet: in place, so that a map whose budgets stay the same keeps its
/// nodes.
fn used_now(used: &mut Spend, usage: &rein_run::BudgetUsage) {
    // One pass over both (each is ordered by name): update while the names agree.
    let mut held = used.iter_mut();
    let mut same = true;
    for (name, counter) in usage.iter().filter(|(_, c)| c.used > 0) {
        match held.next() {
            // A well-known budget's name is one static text, shared by every copy of it:
            // the same address is the same name, with no comparing of the text.
            Some((was, value)) if std::ptr::eq(was.as_str(), name.as_str()) || was == name => {
                *value = counter.used;
            }
            _ => {
                same = false;
                break;
            }
        }
    }
    if same && held.next().is_none() {
        return;
    }
    used.clear();
    used.extend(
        usage
            .iter()
            .filter(|(_, c)| c.used > 0)
            .map(|(name, c)| (name.clone(), c.used)),
    );
}
