//! Helpers the scenario tests share: tools that count, block or fail; scripts that walk the
//! default transition table; and ledger queries. Everything goes through the facade.

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

pub(crate) mod dialogue;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rein::ledger::{Entry, EntryKind, Violation};
use rein::run::BudgetName;
use rein::{
    Annotations, Decision, FnTool, Ledger, ScriptStep, ScriptedPlanner, State, ToolError, Value,
    json,
};
use tokio::sync::Notify;

/// Counts how often a tool's handler ran.
#[derive(Debug, Clone, Default)]
pub(crate) struct Probe(Arc<AtomicUsize>);

impl Probe {
    /// How many times the handler ran.
    pub(crate) fn calls(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    fn hit(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A tool whose handler answers with `respond(input)`, counting its calls. The other tool
/// helpers are this one with a fixed answer.
pub(crate) fn counting(
    name: &str,
    description: &str,
    annotations: Annotations,
    respond: impl Fn(Value) -> Result<Value, ToolError> + Send + Sync + 'static,
) -> (FnTool, Probe) {
    let probe = Probe::default();
    let counter = probe.clone();
    let tool = FnTool::builder(name)
        .description(description)
        .annotations(annotations)
        .handler(move |input: Value| {
            counter.hit();
            let answer = respond(input);
            async move { answer }
        })
        .build()
        .expect("a valid tool");
    (tool, probe)
}

/// A tool that answers `{"echo": input}` and counts its calls.
pub(crate) fn echo(name: &str, annotations: Annotations) -> (FnTool, Probe) {
    counting(name, "echoes its input", annotations, |input| {
        Ok(json!({ "echo": input }))
    })
}

/// A tool that answers `output` whatever the input, and counts its calls.
pub(crate) fn constant(name: &str, annotations: Annotations, output: Value) -> (FnTool, Probe) {
    counting(name, "", annotations, move |_| Ok(output.clone()))
}

/// A tool that always fails with `error`, and counts its calls.
pub(crate) fn failing(name: &str, annotations: Annotations, error: ToolError) -> (FnTool, Probe) {
    counting(name, "", annotations, move |_| Err(error.clone()))
}

/// Grants staging deployments (`{"env": "staging"}`), denies the rest, signed `ops`.
#[derive(Debug)]
pub(crate) struct StagingOnly;

impl rein::Approver for StagingOnly {
    async fn decide(
        &self,
        request: &rein::ApprovalRequest,
    ) -> Result<rein::ApprovalResponse, rein::ApproverError> {
        Ok(if request.input()["env"] == "staging" {
            rein::ApprovalResponse::grant(request, "ops", "staging is fine")
        } else {
            rein::ApprovalResponse::deny(request, "ops", "prod is frozen")
        })
    }
}

/// Lets a test hold a tool call in flight: the tool signals `entered`, then waits for
/// `release`. Permits are stored, so neither side can miss the other.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gate {
    entered: Arc<Notify>,
    release: Arc<Notify>,
}

impl Gate {
    /// Waits until a call has entered the tool.
    pub(crate) async fn entered(&self) {
        self.entered.notified().await;
    }

    /// Lets one waiting (or the next) call return.
    pub(crate) fn release(&self) {
        self.release.notify_one();
    }
}

/// A tool that blocks in every call until its gate releases it, then answers `{"done": true}`.
pub(crate) fn gated(name: &str, annotations: Annotations) -> (FnTool, Gate, Probe) {
    let (gate, probe) = (Gate::default(), Probe::default());
    let (g, counter) = (gate.clone(), probe.clone());
    let tool = FnTool::builder(name)
        .annotations(annotations)
        .handler(move |_: Value| {
            counter.hit();
            let g = g.clone();
            async move {
                g.entered.notify_one();
                g.release.notified().await;
                Ok(json!({ "done": true }))
            }
        })
        .build()
        .expect("a valid tool");
    (tool, gate, probe)
}

/// Script steps that walk the default transition table from intake to `target`.
pub(crate) fn walk_to(target: State) -> Vec<ScriptStep> {
    let path = [
        State::Intake,
        State::Explore,
        State::Decide,
        State::Act,
        State::Validate,
    ];
    let end = path
        .iter()
        .position(|&s| s == target)
        .expect("a working state");
    path.windows(2)
        .take(end)
        .map(|w| ScriptStep::expect(w[0], Decision::transition(w[1], "walk")))
        .collect()
}

/// A script: walk to explore, take `middle` there, then move to decide and finish with
/// `summary` (and the result `{"by": summary}`).
pub(crate) fn explore_script(middle: Vec<Decision>, summary: &str) -> ScriptedPlanner {
    let mut steps = walk_to(State::Explore);
    steps.extend(
        middle
            .into_iter()
            .map(|d| ScriptStep::expect(State::Explore, d)),
    );
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::transition(State::Decide, "enough"),
    ));
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::finish(summary, json!({ "by": summary })),
    ));
    ScriptedPlanner::new(steps)
}

/// A delegation's carve of `n` `tool_calls`.
pub(crate) fn calls(n: u64) -> [(BudgetName, u64); 1] {
    [(BudgetName::TOOL_CALLS, n)]
}

/// The names of the ledger's entry kinds, in order.
pub(crate) fn kinds(ledger: &Ledger) -> Vec<&'static str> {
    ledger.entries().iter().map(|e| e.event().name()).collect()
}

/// The children `ledger` started (its `child_started` entries), in order.
pub(crate) fn started_children(ledger: &Ledger) -> Vec<rein::RunId> {
    ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ChildStarted { child, .. } => Some(child.clone()),
            _ => None,
        })
        .collect()
}

/// How many entries of kind `name` the ledger holds.
pub(crate) fn count(ledger: &Ledger, name: &str) -> usize {
    ledger
        .entries()
        .iter()
        .filter(|e| e.event().name() == name)
        .count()
}

/// The entries of kind `name`.
pub(crate) fn entries<'a>(ledger: &'a Ledger, name: &str) -> Vec<&'a Entry> {
    ledger
        .entries()
        .iter()
        .filter(|e| e.event().name() == name)
        .collect()
}

/// Every policy violation recorded: which rule, and whether it was handed back.
pub(crate) fn violations(ledger: &Ledger) -> Vec<(Violation, bool)> {
    ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::PolicyViolation {
                violation,
                handed_back,
                ..
            } => Some((*violation, *handed_back)),
            _ => None,
        })
        .collect()
}

/// Checks the chain and that sequence numbers run 1, 2, 3, … with no gap.
pub(crate) fn assert_chain(ledger: &Ledger) {
    ledger.verify().expect("the ledger verifies");
    let seqs: Vec<u64> = ledger.entries().iter().map(Entry::seq).collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "sequence numbers are contiguous from 1");
    assert!(
        ledger
            .entries()
            .iter()
            .all(|e| e.run_id() == ledger.run_id()),
        "every entry names the ledger's run"
    );
}

/// A ledger store over a shared [`rein::store::MemoryLedgerStore`] that can "crash": once an entry
/// matching `crash_after` is stored, it silently stores nothing more — as if the process died
/// right after writing that entry. Another engine over the same inner store then sees the
/// ledger exactly as the crash left it.
#[derive(Clone)]
pub(crate) struct CrashingLedgers {
    pub(crate) inner: Arc<rein::store::MemoryLedgerStore>,
    crashed: Arc<std::sync::atomic::AtomicBool>,
    crash_after: Option<fn(&Entry) -> bool>,
}

impl std::fmt::Debug for CrashingLedgers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrashingLedgers")
            .field("crashed", &self.crashed)
            .finish_non_exhaustive()
    }
}

impl CrashingLedgers {
    /// A store that stops persisting after the first entry `crash_after` accepts.
    pub(crate) fn crashing_after(crash_after: fn(&Entry) -> bool) -> Self {
        Self {
            inner: Arc::default(),
            crashed: Arc::default(),
            crash_after: Some(crash_after),
        }
    }

    /// A store that never crashes, over the same entries as `self`: the next process.
    pub(crate) fn restarted(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            crashed: Arc::default(),
            crash_after: None,
        }
    }

    /// Whether the simulated crash happened.
    pub(crate) fn has_crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }
}

impl rein::store::LedgerStore for CrashingLedgers {
    async fn append(&self, entry: &Entry) -> Result<(), rein::store::LedgerStoreError> {
        if self.has_crashed() {
            return Ok(());
        }
        self.inner.append(entry).await?;
        if self.crash_after.is_some_and(|crash| crash(entry)) {
            self.crashed.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    async fn sync(&self, run_id: &rein::RunId) -> Result<(), rein::store::LedgerStoreError> {
        if self.has_crashed() {
            return Ok(());
        }
        self.inner.sync(run_id).await
    }

    async fn load(
        &self,
        run_id: &rein::RunId,
    ) -> Result<rein::ledger::LoadedLedger, rein::store::LedgerStoreError> {
        self.inner.load(run_id).await
    }

    async fn list(&self) -> Result<Vec<rein::RunId>, rein::store::LedgerStoreError> {
        self.inner.list().await
    }
}
