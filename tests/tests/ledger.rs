//! Ledger completeness and integrity: every decision, transition, call, result, error,
//! approval, budget event, human input, violation, steering note and interrupt is recorded,
//! in a hash chain that verifies untouched and fails on any edit, drop, reorder or insertion;
//! and whole entries cut from its end, which the chain alone cannot see, are refused when the
//! run's snapshot was saved after them.

mod support;

use std::collections::BTreeSet;

use proptest::prelude::*;
use rein::ledger::{Entry, EntryKind, Problem};
use rein::policy::{OnToolError, OnViolation};
use rein::store::{LedgerStore, LedgerStoreError};
use rein::{
    Annotations, Decision, Engine, EngineError, Ledger, RunStatus, ScriptStep, ScriptedPlanner,
    State, ToolError, Value, json,
};
use support::{StagingOnly, assert_chain, count, echo, failing, walk_to};

fn engine(script: Vec<ScriptStep>) -> Engine {
    let (read, _) = echo("read", Annotations::read_only());
    let (broken, _) = failing(
        "broken",
        Annotations::read_only(),
        ToolError::failed("nope"),
    );
    let (deploy, _) = echo("deploy", Annotations::destructive());
    Engine::builder()
        .tool(read)
        .tool(broken)
        .tool(deploy)
        .approver(StagingOnly)
        .budget("tool_calls", 3)
        .on_violation(OnViolation::HandBack { limit: 5 })
        .on_tool_error(OnToolError::HandBack)
        .planner(ScriptedPlanner::new(script))
        .build()
        .expect("engine builds")
}

/// A run that does a bit of everything: reads, fails a call, asks a human, is steered, gets
/// one approval and one denial, runs out of budget, and completes.
async fn eventful_ledger() -> Ledger {
    let call = |tool: &str, input: Value| Decision::call_tool(tool, input, "because");
    let mut steps = walk_to(State::Explore);
    steps.extend([
        ScriptStep::expect(State::Explore, call("read", json!({}))),
        ScriptStep::expect(State::Explore, call("broken", json!({}))),
        ScriptStep::expect(
            State::Explore,
            Decision::ask_human("Deploy?", ["go", "stop"]),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "go")),
        ScriptStep::expect(State::Decide, Decision::transition(State::Act, "go")),
        ScriptStep::expect(State::Act, call("deploy", json!({"env": "staging"}))),
        ScriptStep::expect(State::Act, call("deploy", json!({"env": "prod"}))),
        ScriptStep::expect(State::Act, call("read", json!({"again": true}))),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(State::Validate, Decision::finish("done", json!("ok"))),
    ]);
    let engine = engine(steps);
    let paused = engine.run("everything").await.expect("run");
    assert_eq!(paused.status(), RunStatus::Paused);
    let handle = engine
        .start_resume(paused.id(), Some("go"))
        .await
        .expect("resume");
    handle.steer("prefer staging");
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
    engine.ledger(run.id()).await.expect("ledger")
}

/// A run interrupted at once, resumed, then given up by its planner.
async fn interrupted_ledger() -> Ledger {
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::fail("give up"),
    ));
    let engine = engine(steps);
    let handle = engine.start("interrupted").await.expect("start");
    handle.interrupt();
    let run = handle.await.expect("run");
    assert_eq!(run.status(), RunStatus::Interrupted);
    let run = engine.resume(run.id()).await.expect("resume");
    assert_eq!(run.status(), RunStatus::Failed);
    engine.ledger(run.id()).await.expect("ledger")
}

const EVERY_KIND: [&str; 21] = [
    "run_started",
    "run_paused",
    "run_resumed",
    "run_completed",
    "run_failed",
    "decision",
    "transition",
    "tool_call",
    "tool_result",
    "tool_error",
    "approval_requested",
    "approval_granted",
    "approval_denied",
    "budget_consumed",
    "budget_exhausted",
    "human_input_requested",
    "human_input_received",
    "policy_violation",
    "steering",
    "run_interrupted",
    "interrupt",
];

#[tokio::test]
async fn every_kind_of_event_is_recorded() {
    let ledgers = [eventful_ledger().await, interrupted_ledger().await];
    let mut seen = BTreeSet::new();
    for ledger in &ledgers {
        assert_chain(ledger);
        seen.extend(support::kinds(ledger));
    }
    let every: BTreeSet<&str> = EVERY_KIND.into_iter().collect();
    assert_eq!(seen, every);
}

#[tokio::test]
async fn each_decision_is_recorded_before_what_follows_from_it() {
    let ledger = eventful_ledger().await;
    let entries = ledger.entries();
    // Decisions are numbered 0, 1, 2, … in order.
    let steps: Vec<u32> = entries
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::Decision { step, .. } => Some(*step),
            _ => None,
        })
        .collect();
    assert_eq!(steps, (0..steps.len() as u32).collect::<Vec<_>>());
    // Every transition, call, approval request and violation comes after a decision, and
    // every call is settled by a result or an error right after it.
    for (i, entry) in entries.iter().enumerate() {
        let name = entry.event().name();
        if matches!(
            name,
            "transition" | "tool_call" | "approval_requested" | "policy_violation"
        ) {
            assert!(
                entries[..i].iter().any(|e| e.event().name() == "decision"),
                "{name} at {i} follows a decision"
            );
        }
        if name == "tool_call" {
            let next = entries.get(i + 1).map(|e| e.event().name());
            assert!(
                matches!(next, Some("tool_result" | "tool_error")),
                "call at {i} is settled: {next:?}"
            );
        }
        if name == "approval_requested" {
            let next = entries.get(i + 1).map(|e| e.event().name());
            assert!(
                matches!(next, Some("approval_granted" | "approval_denied")),
                "request at {i} is answered: {next:?}"
            );
        }
    }
    // Each budget charge says how much has been used so far.
    let used: Vec<u64> = entries
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::BudgetConsumed { used, .. } => Some(*used),
            _ => None,
        })
        .collect();
    assert_eq!(used, [1, 2, 3]);
    assert_eq!(count(&ledger, "budget_exhausted"), 1);
    // Every entry names the state the run was in when it was written. A terminal state is
    // entered by the run_completed / run_failed entry that follows the transition.
    let mut state = State::Intake;
    for entry in entries {
        assert_eq!(entry.state(), state, "entry {}", entry.seq());
        match entry.event() {
            EntryKind::Transition { to, .. } if !to.is_terminal() => state = *to,
            EntryKind::RunCompleted { .. } => state = State::Done,
            _ => {}
        }
    }
    assert_eq!(state, State::Done);
}

/// What a test does to a recorded ledger.
#[derive(Debug, Clone)]
enum Tamper {
    Nothing,
    Edit(usize),
    Drop(usize),
    Swap(usize, usize),
    Duplicate(usize),
}

fn apply(tamper: &Tamper, entries: &mut Vec<Entry>) {
    let n = entries.len();
    match *tamper {
        Tamper::Nothing => {}
        Tamper::Edit(i) => {
            let mut value = serde_json::to_value(&entries[i % n]).expect("json");
            value["at"] = json!(value["at"].as_u64().expect("at") + 1);
            entries[i % n] = serde_json::from_value(value).expect("an entry");
        }
        Tamper::Drop(i) => {
            entries.remove(i % n);
        }
        Tamper::Swap(i, j) => entries.swap(i % n, j % n),
        Tamper::Duplicate(i) => {
            let copy = entries[i % n].clone();
            entries.insert(i % n, copy);
        }
    }
}

fn tamper() -> impl Strategy<Value = Tamper> {
    prop_oneof![
        Just(Tamper::Nothing),
        any::<usize>().prop_map(Tamper::Edit),
        any::<usize>().prop_map(Tamper::Drop),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Tamper::Swap(i, j)),
        any::<usize>().prop_map(Tamper::Duplicate),
    ]
}

fn recorded() -> &'static Ledger {
    static LEDGER: std::sync::OnceLock<Ledger> = std::sync::OnceLock::new();
    LEDGER.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(eventful_ledger())
    })
}

proptest! {
    /// A ledger verifies if and only if nobody touched it — except that a chain alone cannot
    /// tell its last entries were cut off: a truncated ledger is a valid, shorter ledger.
    /// (The engine catches a cut behind the head its run snapshot records; see
    /// `a_ledger_cut_behind_its_snapshot_is_refused_and_left_as_it_is`.)
    #[test]
    fn a_ledger_verifies_iff_untouched(tamper in tamper()) {
        let ledger = recorded();
        let mut entries = ledger.entries().to_vec();
        apply(&tamper, &mut entries);
        let untouched = entries == ledger.entries();
        let truncated = entries.len() < ledger.len() && ledger.entries().starts_with(&entries);
        let verified = Ledger::from_entries(ledger.run_id().clone(), entries);
        prop_assert_eq!(verified.is_ok(), untouched || truncated, "{:?}", tamper);
        if let (Tamper::Edit(i), Err(e)) = (&tamper, &verified) {
            prop_assert_eq!(e.seq, (i % ledger.len()) as u64 + 1);
            prop_assert_eq!(&e.problem, &Problem::Edited);
        }
    }
}

#[tokio::test]
async fn a_tampered_ledger_on_disk_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (run, build) = paused_on_disk(dir.path()).await;

    let path = rein::store::FsStores::open(dir.path())
        .expect("stores")
        .ledgers()
        .ledger_path(run.id());
    let text = std::fs::read_to_string(&path).expect("ledger file");
    std::fs::write(&path, text.replacen("\"anchor\"", "\"tampered\"", 1)).expect("write");

    let engine = build();
    let refused = engine.ledger(run.id()).await;
    assert!(
        matches!(
            refused,
            Err(EngineError::LedgerStore(LedgerStoreError::Broken { .. }))
        ),
        "{refused:?}"
    );
    let refused = engine.resume_with_input(run.id(), "yes").await;
    assert!(
        matches!(
            refused,
            Err(EngineError::LedgerStore(LedgerStoreError::Broken { .. }))
        ),
        "{refused:?}"
    );
}

/// Starting a run under the id of one whose ledger was emptied, while its snapshot names a
/// later head, is refused: the snapshot is the proof of the cut, and it is left as it is.
#[tokio::test]
async fn a_chosen_id_whose_ledger_was_emptied_behind_its_snapshot_is_not_reused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (run, build) = paused_on_disk(dir.path()).await;
    let stores = rein::store::FsStores::open(dir.path()).expect("stores");
    let snapshot_path = stores.runs().snapshot_path(run.id());
    let snapshot = std::fs::read(&snapshot_path).expect("snapshot");
    std::fs::write(stores.ledgers().ledger_path(run.id()), b"").expect("empty the ledger");

    let refused = build()
        .run(rein::RunSpec::new("again").with_id(run.id().clone()))
        .await;
    let Err(EngineError::LedgerBehindSnapshot { id, head, last }) = &refused else {
        panic!("expected LedgerBehindSnapshot, got {refused:?}");
    };
    assert_eq!((id, Some(*head), *last), (run.id(), run.ledger_head(), 0));
    assert_eq!(std::fs::read(&snapshot_path).expect("snapshot"), snapshot);
}

/// A crash between a run's last ledger commit and its snapshot save leaves the snapshot
/// behind a ledger that ended: opening the run brings the snapshot up to date, so that a
/// listing (which reads snapshots) says what the ledger says, and nothing is appended.
#[tokio::test]
async fn a_snapshot_left_behind_a_finished_ledger_is_saved_again_when_the_run_is_opened() {
    use rein::store::RunStore;
    let dir = tempfile::tempdir().expect("tempdir");
    let (run, build) = paused_on_disk(dir.path()).await;
    let stores = rein::store::FsStores::open(dir.path()).expect("stores");
    let paused = stores
        .runs()
        .load(run.id())
        .await
        .expect("the paused snapshot");
    let done = build()
        .resume_with_input(run.id(), "yes")
        .await
        .expect("resumes");
    assert_eq!(done.status(), RunStatus::Completed);
    // The crash: the ledger ends the run, the snapshot still says it waits.
    stores.runs().save(&paused).await.expect("saved back");
    let entries = build().ledger(run.id()).await.expect("a ledger").len();

    let refused = build().resume(run.id()).await;
    assert!(
        matches!(
            refused,
            Err(EngineError::RunFinished {
                status: RunStatus::Completed,
                ..
            })
        ),
        "{refused:?}"
    );
    let repaired = stores.runs().load(run.id()).await.expect("a snapshot");
    assert_eq!(repaired.status(), RunStatus::Completed);
    assert_eq!(repaired.ledger_head(), done.ledger_head());
    assert_eq!(
        build().ledger(run.id()).await.expect("a ledger").len(),
        entries
    );
}

#[tokio::test]
async fn a_lost_snapshot_is_saved_again_only_once_the_resume_that_reports_it_is_recorded() {
    use rein::store::{LedgerStore, LedgerStoreError, RunStore};
    /// The filesystem ledger of a process killed as it writes `run_resumed`.
    #[derive(Debug)]
    struct KilledAtResume(rein::store::FsLedgerStore);
    impl LedgerStore for KilledAtResume {
        async fn append(&self, entry: &rein::ledger::Entry) -> Result<(), LedgerStoreError> {
            if matches!(entry.event(), EntryKind::RunResumed { .. }) {
                return Err(LedgerStoreError::Io {
                    context: "appending".into(),
                    source: std::io::Error::other("killed"),
                });
            }
            self.0.append(entry).await
        }
        async fn sync(&self, run_id: &rein::RunId) -> Result<(), LedgerStoreError> {
            self.0.sync(run_id).await
        }
        async fn load(
            &self,
            run_id: &rein::RunId,
        ) -> Result<rein::ledger::LoadedLedger, LedgerStoreError> {
            self.0.load(run_id).await
        }
        async fn list(&self) -> Result<Vec<rein::RunId>, LedgerStoreError> {
            self.0.list().await
        }
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let (run, build) = paused_on_disk(dir.path()).await;
    let stores = rein::store::FsStores::open(dir.path()).expect("stores");
    std::fs::remove_file(stores.runs().snapshot_path(run.id())).expect("the snapshot is lost");

    let killed = Engine::builder()
        .planner(ScriptedPlanner::new(Vec::new()))
        .filesystem(dir.path())
        .ledger_store(KilledAtResume(
            // Stores of their own, which the killed process's end closes.
            rein::store::FsStores::open(dir.path())
                .expect("stores")
                .ledgers()
                .clone(),
        ))
        .build()
        .expect("engine builds")
        .resume_with_input(run.id(), "yes")
        .await;
    assert!(
        matches!(killed, Err(EngineError::LedgerStore(_))),
        "{killed:?}"
    );
    // Saved before `run_resumed` was written, the snapshot would hide the loss from the
    // next resume, and no entry would ever say the run was rebuilt.
    assert!(
        stores.runs().load(run.id()).await.is_err(),
        "nothing was saved before the resume was recorded"
    );

    // The answer was recorded before the kill: the run goes on without another.
    let done = build().resume(run.id()).await.expect("resumes");
    assert_eq!(done.status(), RunStatus::Completed);
    let ledger = build().ledger(run.id()).await.expect("ledger");
    let note = resumed_note(&ledger);
    assert!(note.contains("rebuilt from its ledger"), "{note}");
    let saved = stores.runs().load(run.id()).await.expect("saved again");
    assert_eq!(saved.ledger_head(), ledger.head());
}

/// The note of the ledger's first `run_resumed` entry.
fn resumed_note(ledger: &Ledger) -> String {
    ledger
        .entries()
        .iter()
        .find_map(|e| match e.event() {
            EntryKind::RunResumed { note } => Some(note.clone()),
            _ => None,
        })
        .expect("a run_resumed entry")
}

/// A paused run in filesystem stores under `dir`, and how to build its engine again.
async fn paused_on_disk(dir: &std::path::Path) -> (rein::Run, impl Fn() -> Engine + use<>) {
    let mut steps = walk_to(State::Decide);
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::ask_human("Finish?", ["yes"]),
    ));
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::finish("done", json!(1)),
    ));
    let dir = dir.to_path_buf();
    let build = move || {
        Engine::builder()
            .planner(ScriptedPlanner::new(steps.clone()))
            .filesystem(&dir)
            .build()
            .expect("engine builds")
    };
    let run = build().run("anchor").await.expect("run");
    assert_eq!(run.status(), RunStatus::Paused);
    (run, build)
}

#[tokio::test]
async fn a_ledger_cut_behind_its_snapshot_is_refused_and_left_as_it_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (run, build) = paused_on_disk(dir.path()).await;
    let stores = rein::store::FsStores::open(dir.path()).expect("stores");
    let path = stores.ledgers().ledger_path(run.id());
    let original = std::fs::read(&path).expect("ledger file");
    let head = run
        .ledger_head()
        .expect("a saved run names its ledger head");
    let lines = original.split_inclusive(|&b| b == b'\n').count();
    assert_eq!(
        head.seq, lines as u64,
        "the snapshot was saved after the last entry"
    );
    let snapshot = std::fs::read(stores.runs().snapshot_path(run.id())).expect("snapshot");

    // Cut the last two whole lines: what is left is a shorter chain that verifies.
    let keep: usize = original
        .split_inclusive(|&b| b == b'\n')
        .take(lines - 2)
        .map(<[u8]>::len)
        .sum();
    std::fs::write(&path, &original[..keep]).expect("write");
    let cut = stores
        .ledgers()
        .load(run.id())
        .await
        .expect("a valid chain");
    assert_eq!(cut.ledger.len(), lines - 2);
    assert!(cut.torn_tail.is_none());

    let engine = build();
    let refused = engine.resume_with_input(run.id(), "yes").await;
    let Err(err @ EngineError::LedgerBehindSnapshot { id, head: h, last }) = &refused else {
        panic!("expected LedgerBehindSnapshot, got {refused:?}");
    };
    assert_eq!((id, *h, *last), (run.id(), head, head.seq - 2));
    assert_eq!(
        err.to_string(),
        format!(
            "the ledger of run {} falls short of the run's snapshot: the snapshot was saved after \
             ledger entry {} (hash {}), but the ledger ends at entry {}: its last entries were \
             cut; restore the ledger from a backup (it was left as it is: nothing was written to \
             it or cut from it)",
            run.id(),
            head.seq,
            head.hash,
            head.seq - 2
        )
    );
    // Every way of loading the run refuses it alike, and nothing is written.
    assert!(matches!(
        engine.resume(run.id()).await,
        Err(EngineError::LedgerBehindSnapshot { .. })
    ));
    assert!(matches!(
        engine.ledger(run.id()).await,
        Err(EngineError::LedgerBehindSnapshot { .. })
    ));
    assert!(matches!(
        engine.load_run(run.id()).await,
        Err(EngineError::LedgerBehindSnapshot { .. })
    ));
    assert_eq!(std::fs::read(&path).expect("read"), &original[..keep]);
    assert_eq!(
        std::fs::read(stores.runs().snapshot_path(run.id())).expect("read"),
        snapshot
    );

    // Restored from a backup, the run resumes and completes.
    std::fs::write(&path, &original).expect("restore");
    let done = build()
        .resume_with_input(run.id(), "yes")
        .await
        .expect("resumes");
    assert_eq!(done.status(), RunStatus::Completed);
}

#[tokio::test]
async fn the_last_entry_rewritten_behind_the_snapshot_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (run, build) = paused_on_disk(dir.path()).await;
    let stores = rein::store::FsStores::open(dir.path()).expect("stores");
    let path = stores.ledgers().ledger_path(run.id());
    let text = std::fs::read_to_string(&path).expect("ledger file");
    let mut entries: Vec<Entry> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("an entry"))
        .collect();
    // Re-seal the last entry with other content: the chain still verifies.
    let last = entries.pop().expect("entries");
    let mut ledger = Ledger::from_entries(run.id().clone(), entries).expect("a chain");
    ledger.append(
        last.at(),
        last.state(),
        EntryKind::Steering {
            note: "forged".into(),
        },
    );
    let forged: String = ledger.entries().iter().map(Entry::to_json_line).collect();
    std::fs::write(&path, &forged).expect("write");

    let refused = build().resume_with_input(run.id(), "yes").await;
    let Err(err @ EngineError::LedgerBehindSnapshot { last, head, .. }) = &refused else {
        panic!("expected LedgerBehindSnapshot, got {refused:?}");
    };
    assert_eq!(*last, head.seq);
    assert!(err.to_string().contains("has another hash"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), forged);
}

#[tokio::test]
async fn a_snapshot_saved_before_ledger_heads_still_loads_and_resumes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (run, build) = paused_on_disk(dir.path()).await;
    let stores = rein::store::FsStores::open(dir.path()).expect("stores");
    let snapshot = stores.runs().snapshot_path(run.id());
    let mut json: Value =
        serde_json::from_slice(&std::fs::read(&snapshot).expect("snapshot")).expect("json");
    assert!(json["ledger_head"].is_object(), "{json}");
    json.as_object_mut()
        .expect("an object")
        .remove("ledger_head");
    std::fs::write(&snapshot, serde_json::to_vec(&json).expect("json")).expect("write");

    let old = rein::store::RunStore::load(stores.runs(), run.id())
        .await
        .expect("an old snapshot loads");
    assert_eq!(old.ledger_head(), None);
    assert_eq!(old.steps(), run.steps());
    // Without a head there is nothing to check the ledger against: it loads as before,
    // and the next save records the head.
    let done = build()
        .resume_with_input(run.id(), "yes")
        .await
        .expect("resumes");
    assert_eq!(done.status(), RunStatus::Completed);
    let saved = rein::store::RunStore::load(stores.runs(), run.id())
        .await
        .expect("saved");
    let ledger = build().ledger(run.id()).await.expect("ledger");
    assert_eq!(saved.ledger_head(), ledger.head());
}

#[tokio::test]
async fn an_unreadable_snapshot_does_not_stop_resume_and_the_skipped_check_is_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (run, build) = paused_on_disk(dir.path()).await;
    let stores = rein::store::FsStores::open(dir.path()).expect("stores");
    std::fs::write(stores.runs().snapshot_path(run.id()), b"{ not json").expect("write");
    let done = build()
        .resume_with_input(run.id(), "yes")
        .await
        .expect("the ledger is the source of truth");
    assert_eq!(done.status(), RunStatus::Completed);
    let ledger = build().ledger(run.id()).await.expect("ledger");
    let note = resumed_note(&ledger);
    assert!(
        note.contains("the run snapshot could not be read, so the ledger was not checked"),
        "{note}"
    );
}
