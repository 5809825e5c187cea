//! Sub-runs: a `delegate` decision starts a child run — a full governed run with its own id,
//! ledger and policy snapshot — and drives it to its end before the parent's next step.
//!
//! One mechanism, in the ledgers: the parent records `child_started` (the carved budget,
//! made durable before the child's ledger exists), the child's second entry is `child_of`
//! (parent id, the parent's entry, depth), and the parent records `child_ended` (the
//! child's ledger head, outcome and spend) when the child ends. The projection of the
//! parent knows its open child, so a parent paused by its child, interrupted with it, or
//! stopped by a crash resumes the child first. Aborting the parent cancels the child (its
//! cancellation token is a child of the parent's); a graceful interrupt and steering notes
//! are forwarded to it; a narrowing waits until the child is settled.
//!
//! Each child is driven on a task of its own, which its parent awaits: a child's drive
//! polled inside its parent's would nest every level's futures inside the level above, and
//! a tree a few dozen levels deep would overflow the stack the root is polled on. A child
//! runs until its parent's deadline at the latest (its own is what the parent has left).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rein_ledger::{EntryKind, HookPoint, InterruptKind};
use rein_run::{
    ChildOutcome, DynPlanner, Failure, FailureKind, LedgerHead, PendingApproval, Run, RunId,
    RunStatus, Spend,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::child_task::ChildTask;
use crate::children::OpenChild;
use crate::driver::{Driver, Inbox};
use crate::error::{EngineError, NarrowingError, ProjectionError, RecordedPolicyError};
use crate::gate::HookRuled;
use crate::handle::{Control, Controls};
use crate::load::load_ledger;
use crate::narrow::PolicyNarrowing;
use crate::open;
use crate::record_first::{First, Next, Watch};
use crate::rejection::Rejection;
use crate::shared::{ActiveGuard, RunPolicy};

/// The child's driver and the guard marking it driven, or the child already over.
enum Opened {
    Driver(
        Box<Driver>,
        ActiveGuard,
        Option<mpsc::UnboundedSender<Control>>,
    ),
    Ended(Box<Run>),
    Paused {
        question: String,
        options: Vec<String>,
    },
}

/// The one answer a run paused on a durable approval below it takes, once the verdict is
/// given: it goes on. The answer is that run's own, never forwarded as its child's.
const GO_ON: &str = "resume";

/// The question a parent pauses on while a run below it waits for a verdict on `pending`:
/// where the tree waits, and how to go on.
fn approval_question(pending: &PendingApproval) -> String {
    format!(
        "child run {child} waits for approval of call `{tool}` (step {step}, input hash \
         {hash}): grant or deny it with Engine::approve or `rein approve {child}`, then \
         resume the paused run with the answer \"{GO_ON}\"",
        child = pending.run,
        tool = pending.tool,
        step = pending.step,
        hash = pending.input_hash,
    )
}

impl Driver {
    /// A child run is driven by the planner its `child_of` entry names, however it is
    /// resumed (through its parent, or directly).
    pub(crate) fn adopt_planner(&mut self) {
        if let Some(name) = self
            .rec
            .proj
            .tree
            .link
            .as_ref()
            .and_then(|l| l.planner.as_ref())
        {
            self.sub.planner = self.shared.planners.get(name).cloned();
        }
    }

    /// Applies a `delegate` decision: checks it, carves the budget, records
    /// `child_started` (durably), and drives the child to its end.
    pub(crate) async fn delegate(
        &mut self,
        goal: String,
        budget: &Spend,
        planner: Option<String>,
    ) -> Result<(), EngineError> {
        if self.interrupting {
            return self
                .rec
                .record(EntryKind::RunInterrupted {
                    reason: "interrupted through the run handle before the proposed delegation"
                        .into(),
                })
                .await;
        }
        if goal.trim().is_empty() {
            return self.reject(Rejection::EmptyDelegation).await;
        }
        if let Some(failure) = self.gate().overdue() {
            // The planner took what was left: no child starts after the deadline.
            return self.rec.fail(failure.kind, failure.message).await;
        }
        let depth = self.rec.proj.tree.depth().saturating_add(1);
        let limit = self.shared.config.max_depth;
        if depth > limit {
            return self
                .reject(Rejection::DelegationTooDeep { depth, limit })
                .await;
        }
        if let Some(name) = &planner
            && !self.shared.planners.contains_key(name)
        {
            let mut known: Vec<String> = self.shared.planners.keys().cloned().collect();
            known.sort();
            return self
                .reject(Rejection::UnknownPlanner {
                    name: name.clone(),
                    known,
                })
                .await;
        }
        if self.hooked(HookPoint::ChildStart, None) {
            let payload = self.hook_payload(HookPoint::ChildStart, |p| p.goal = Some(goal.clone()));
            let ruled = match self.rule_hooks(payload, None) {
                Some(ruling) => ruling.await?,
                None => HookRuled::default(),
            };
            if let Some(rejection) = ruled.denied {
                return self.reject(rejection).await;
            }
        }
        let carved = match self.gate().carve(budget) {
            Ok(carved) => carved,
            Err(exhausted) => return self.reject(Rejection::BudgetExhausted(exhausted)).await,
        };
        // A child named by no planner is driven by its parent's.
        let planner = planner.or_else(|| {
            self.rec
                .proj
                .tree
                .link
                .as_ref()
                .and_then(|l| l.planner.clone())
        });
        // The entry hands its values back: the open child is made of what was recorded.
        let recorded = self
            .rec
            .record_entry(EntryKind::ChildStarted {
                child: self.shared.ids.run_id(),
                goal,
                carved,
                planner,
            })
            .await?;
        let started = Some(recorded.head());
        let EntryKind::ChildStarted {
            child,
            goal,
            carved,
            planner,
        } = recorded.into_event()
        else {
            unreachable!("a child_started entry is recorded as one")
        };
        let open = OpenChild {
            child,
            goal,
            carved,
            planner,
            started,
        };
        // Durable before the child's ledger exists: a child is never on record without
        // its parent knowing it (which would let a resumed parent start a second one).
        self.rec.sync().await?;
        self.settle_child(open, None).await
    }

    /// Settles the child a reopened run left open (the first thing its drive does).
    pub(crate) async fn resume_open_child(&mut self) -> Result<(), EngineError> {
        match self.sub.resume.take() {
            Some((open, answer)) if self.rec.status() == RunStatus::Running => {
                self.settle_child(open, answer.as_deref()).await
            }
            _ => Ok(()),
        }
    }

    /// Drives the open child (starting it, resuming it, or reading how it ended) and
    /// records what its end, pause or interrupt means for this run.
    ///
    /// Boxed, and `Send` by its signature: a child's drive (spawned from here) may delegate
    /// again, so proving this future `Send` takes this future's own type.
    fn settle_child<'a>(
        &'a mut self,
        open: OpenChild,
        answer: Option<&'a str>,
    ) -> Pin<Box<dyn Future<Output = Result<(), EngineError>> + Send + 'a>> {
        Box::pin(async move {
            let opened = self.open_child(&open, answer).await?;
            let run = match opened {
                Opened::Ended(run) => *run,
                Opened::Paused { question, options } => {
                    return self.pause_for(question, options).await;
                }
                Opened::Driver(child, guard, child_tx) => {
                    self.drive_child(*child, guard, child_tx).await?
                }
            };
            match run.status() {
                RunStatus::Completed | RunStatus::Failed => self.end_child(&run).await,
                RunStatus::Paused => {
                    // The parent's question says where the tree waits: for a verdict on
                    // the child's call (an answer is not one), or for the child's answer.
                    let (question, options) = match (run.pending_approval(), run.pending_question())
                    {
                        (Some(pending), _) => (approval_question(pending), vec![GO_ON.to_owned()]),
                        (None, Some(p)) if !p.question.trim().is_empty() => {
                            (p.question.clone(), p.options.clone())
                        }
                        _ => (format!("child run {} is paused", run.id()), Vec::new()),
                    };
                    self.pause_for(question, options).await
                }
                _ => {
                    self.rec
                        .record(EntryKind::RunInterrupted {
                            reason: format!(
                                "child run {} stopped before its end; resuming this run resumes it",
                                run.id()
                            ),
                        })
                        .await
                }
            }
        })
    }

    /// The child's ends of its control channels: abort and stop signals children of this
    /// run's (an abort of this run aborts the child in flight), controls forwarded from this
    /// run's handle, events to this run's subscribers (each entry names the child's run id).
    fn child_controls(&self) -> (Option<mpsc::UnboundedSender<Control>>, Option<Controls>) {
        let Some(inbox) = self.inbox.as_ref() else {
            return (None, None);
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let controls = Controls {
            rx,
            cancel: inbox.signals.cancel.child_token(),
            stop: inbox.signals.stop.child_token(),
            events: self.rec.log.events.as_ref().map(|e| e.sender().clone()),
        };
        // Without a handle of its own, this run has no controls to forward.
        (inbox.rx.is_some().then_some(tx), Some(controls))
    }

    async fn open_child(
        &self,
        open: &OpenChild,
        answer: Option<&str>,
    ) -> Result<Opened, EngineError> {
        let (tx, controls) = self.child_controls();
        let planner = match &open.planner {
            Some(name) => self.shared.planners.get(name).cloned(),
            None => None,
        };
        let reopened = open::reopen(&self.shared, &open.child, answer, controls).await;
        let (mut driver, guard) = match reopened {
            Ok(opened) => opened,
            Err(EngineError::RunNotFound { .. }) => return self.start_child(open, planner).await,
            Err(EngineError::RunFinished { .. }) => {
                let ledger = load_ledger(&self.shared, &open.child).await?.loaded.ledger;
                let (budget, _) = open::recorded_policy(&self.shared, &open.child, &ledger)?;
                let run = open::rebuild(&open.child, &ledger, budget)?.run;
                return Ok(Opened::Ended(Box::new(run)));
            }
            Err(EngineError::AwaitingAnswer {
                question, options, ..
            }) => return Ok(Opened::Paused { question, options }),
            Err(EngineError::AwaitingApproval { pending, .. }) => {
                return Ok(Opened::Paused {
                    question: approval_question(&pending),
                    options: vec![GO_ON.to_owned()],
                });
            }
            Err(e) => return Err(e),
        };
        driver.sub.planner = planner;
        if driver.rec.proj.tree.link.is_none() {
            // The process stopped between the child's first entry and its link.
            let link = self.link_for(open)?;
            driver.rec.record(link).await?;
        }
        Ok(Opened::Driver(Box::new(driver), guard, tx))
    }

    async fn start_child(
        &self,
        open: &OpenChild,
        planner: Option<Arc<dyn DynPlanner>>,
    ) -> Result<Opened, EngineError> {
        let guard = self.shared.acquire(&open.child)?;
        let mut snapshot = self.policy.snapshot.clone();
        // The child's deadline is what this run has left: a tree ends by its root's.
        if let (Some(deadline), Some(left)) = (snapshot.deadline, self.remaining()) {
            let left = left.max(Duration::from_millis(1));
            snapshot.deadline =
                Some(rein_policy::Deadline::new(left).counting_paused(deadline.count_paused()));
        }
        snapshot.budget = open
            .carved
            .iter()
            .fold(rein_policy::Budget::new(), |b, (name, &limit)| {
                b.with_limit(name.clone(), limit)
            });
        let policy = RunPolicy::new(snapshot, self.shared.tools.specs()).map_err(|e| {
            EngineError::InvalidRecordedPolicy {
                id: open.child.clone(),
                source: RecordedPolicyError::Eligibility(e),
            }
        })?;
        let policy = Arc::new(policy);
        // The child sees the parent's run variables (what the parent was given, not what it
        // found out: that reaches the child only through its goal).
        let started = EntryKind::RunStarted {
            goal: open.goal.clone(),
            vars: self.rec.proj.run.vars().clone(),
            policy: Arc::clone(&policy.value),
        };
        let link = self.link_for(open)?;
        let (tx, controls) = self.child_controls();
        let mut driver = Driver::start(
            Arc::clone(&self.shared),
            policy,
            started,
            open.child.clone(),
            controls,
        )
        .await?;
        driver.rec.record(link).await?;
        driver.rec.save().await?;
        driver.sub.planner = planner;
        Ok(Opened::Driver(Box::new(driver), guard, tx))
    }

    /// The `child_of` entry for `open`: this run, its `child_started` entry, the depth.
    fn link_for(&self, open: &OpenChild) -> Result<EntryKind, EngineError> {
        let started = open
            .started
            .ok_or_else(|| EngineError::InconsistentLedger {
                id: self.rec.id().clone(),
                seq: self.rec.log.len(),
                source: Box::new(ProjectionError::ChildMismatch {
                    open: None,
                    entry: open.child.clone(),
                }),
            })?;
        Ok(EntryKind::ChildOf {
            parent: self.rec.id().clone(),
            parent_head: started,
            depth: self.rec.proj.tree.depth().saturating_add(1),
            planner: open.planner.clone(),
        })
    }

    /// Drives the child on its own task (see the module's docs), forwarding this run's
    /// controls to it meanwhile.
    async fn drive_child(
        &mut self,
        child: Driver,
        guard: ActiveGuard,
        tx: Option<mpsc::UnboundedSender<Control>>,
    ) -> Result<Run, EngineError> {
        let mut fut = ChildTask::spawn(child, guard);
        let mut inbox: Option<Inbox> = self.inbox.take();
        let mut deferred: Vec<(PolicyNarrowing, oneshot::Sender<Result<(), NarrowingError>>)> =
            Vec::new();
        // The child's end first: controls that arrive with it are this run's to handle.
        let mut watch = Watch::new(None, First::Work);
        let result = loop {
            let (Some(rx), Some(tx)) = (inbox.as_mut().and_then(|i| i.rx.as_mut()), tx.as_ref())
            else {
                break fut.await;
            };
            let control = match watch
                .next(Pin::<&mut ChildTask>::new(&mut fut), Some(rx))
                .await
            {
                Next::Done(run) => break run,
                Next::Message(control) => Some(control),
                // Neither is watched here: the child gives up on them itself.
                Next::Aborted | Next::Stopped => None,
            };
            match control {
                None => break fut.await,
                Some(Control::Interrupt) => {
                    let _ = tx.send(Control::Interrupt);
                    if !self.interrupting {
                        self.interrupting = true;
                        if let Err(e) = self
                            .rec
                            .record(EntryKind::Interrupt {
                                kind: InterruptKind::Graceful,
                            })
                            .await
                        {
                            self.inbox = inbox;
                            return Err(e);
                        }
                    }
                }
                Some(Control::Steer(note)) => {
                    let _ = tx.send(Control::Steer(note));
                }
                Some(Control::Narrow(narrowing, reply)) => deferred.push((narrowing, reply)),
            }
        };
        self.inbox = inbox;
        for (narrowing, reply) in deferred {
            let narrowed = self.narrow(&narrowing).await?;
            let _ = reply.send(narrowed);
        }
        result
    }

    /// Records the child's end: its head, outcome and spend (charged to this run).
    async fn end_child(&mut self, run: &Run) -> Result<(), EngineError> {
        let head = match run.ledger_head() {
            Some(head) => head,
            None => child_head(self, run.id()).await?,
        };
        let outcome = match run.status() {
            RunStatus::Completed => ChildOutcome::Completed {
                summary: run.summary().unwrap_or_default().to_owned(),
                result: run.result().cloned().unwrap_or(Value::Null),
            },
            _ => ChildOutcome::Failed {
                failure: run.failure().cloned().unwrap_or_else(|| {
                    Failure::new(FailureKind::StoreError, "the child ended without a reason")
                }),
            },
        };
        let spent: Spend = run
            .usage()
            .iter()
            .filter(|(_, c)| c.committed_or_reserved() > 0)
            .map(|(name, c)| (name.clone(), c.committed_or_reserved()))
            .collect();
        self.rec
            .record(EntryKind::ChildEnded {
                child: run.id().clone(),
                head,
                outcome,
                spent,
            })
            .await?;
        if self.hooked(HookPoint::ChildEnd, None) {
            let (child, status, error) = (
                run.id().clone(),
                run.status(),
                run.failure().map(|f| f.message.clone()),
            );
            let payload = self.hook_payload(HookPoint::ChildEnd, |p| {
                p.child = Some(child);
                p.status = Some(status);
                p.error = error;
            });
            self.observe_hooks(payload).await;
        }
        Ok(())
    }

    /// Pauses this run on its child's question: answering this run answers the child.
    async fn pause_for(
        &mut self,
        question: String,
        options: Vec<String>,
    ) -> Result<(), EngineError> {
        self.rec
            .record(EntryKind::HumanInputRequested {
                question: question.clone(),
                options,
            })
            .await?;
        self.rec.record(EntryKind::RunPaused { question }).await
    }
}

async fn child_head(driver: &Driver, id: &RunId) -> Result<LedgerHead, EngineError> {
    let loaded = load_ledger(&driver.shared, id).await?;
    loaded
        .loaded
        .ledger
        .head()
        .ok_or_else(|| EngineError::RunNotFound { id: id.clone() })
}
