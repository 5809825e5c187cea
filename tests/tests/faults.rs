//! Fault injection at the store layer: a full disk at every append position, a failing
//! fsync at every sync, unreadable ledgers and snapshots, failing artifact writes — over the
//! memory stores and the filesystem stores.
//!
//! For every fault the engine must (1) return a typed store error (`EngineError::LedgerStore`,
//! `RunStore` or `ArtifactStore`), never carry on as if the write had happened: no tool runs
//! unless its `tool_call` entry is stored (and, for a non-idempotent tool, synced); (2) leave
//! what it had written untouched: the inner store's ledger verifies and holds exactly the
//! entries written before the fault; (3) let a healthy engine over the same stores finish
//! the run as DESIGN.md §3 says — the same outcome as a run without the fault, except a
//! non-idempotent call left in doubt, which fails the run and never runs twice.

mod chaos;

use std::io;
use std::sync::Arc;

use chaos::{Counter, Faults, Faulty, assert_chain, counted};
use rein::clock::ManualClock;
use rein::ledger::{Entry, EntryKind};
use rein::run::FailureKind;
use rein::store::{
    ArtifactError, FsStores, FsyncPolicy, LedgerStore, LedgerStoreError, MemoryArtifactStore,
    MemoryLedgerStore, MemoryRunStore, RunStore, RunStoreError,
};
use rein::{
    Annotations, Decision, Engine, EngineError, Ledger, Run, RunId, RunSpec, RunStatus, ScriptStep,
    ScriptedPlanner, State, json,
};

/// Looks something up, then in `act` writes (not idempotent) and puts (idempotent), then
/// finishes: every kind of tool call, in the order a real run makes them.
fn script() -> ScriptedPlanner {
    ScriptedPlanner::new([
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("look", json!({"q": 1}), "read first"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "seen")),
        ScriptStep::expect(State::Decide, Decision::transition(State::Act, "go")),
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("write", json!({"n": 1}), "the side effect"),
        ),
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("put", json!({"n": 2}), "an idempotent one"),
        ),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(
            State::Validate,
            Decision::finish("done", json!({"ok": true})),
        ),
    ])
}

/// The three counted tools of [`script`].
struct Tools {
    look: Counter,
    write: Counter,
    put: Counter,
}

impl Tools {
    fn total(&self) -> usize {
        self.look.get() + self.write.get() + self.put.get()
    }

    fn of(&self, tool: &str) -> usize {
        match tool {
            "look" => self.look.get(),
            "write" => self.write.get(),
            "put" => self.put.get(),
            other => panic!("no tool {other}"),
        }
    }
}

/// An engine over `ledgers`, `runs` and `artifacts` with the counted tools of [`script`].
fn engine<L, R, A>(ledgers: L, runs: R, artifacts: A) -> (Engine, Tools)
where
    L: LedgerStore,
    R: RunStore,
    A: rein::store::ArtifactStore,
{
    let (look, look_n) = counted("look", Annotations::read_only());
    let (write, write_n) = counted("write", Annotations::side_effecting());
    let (put, put_n) = counted("put", Annotations::side_effecting().with_idempotent(true));
    let engine = Engine::builder()
        .tool(look)
        .tool(write)
        .tool(put)
        .planner(script())
        .budget("tool_calls", 10)
        .clock(ManualClock::starting_at(1_700_000_000_000).with_step(1))
        .ledger_store(ledgers)
        .run_store(runs)
        .artifact_store(artifacts)
        .build()
        .expect("engine builds");
    let tools = Tools {
        look: look_n,
        write: write_n,
        put: put_n,
    };
    (engine, tools)
}

fn run_id() -> RunId {
    "faulty-run".parse().expect("a valid id")
}

fn spec() -> RunSpec {
    RunSpec::new("survive the disk").with_id(run_id())
}

/// In-memory stores shared between a faulty engine and the healthy one that recovers.
struct Memory {
    ledgers: Arc<MemoryLedgerStore>,
    runs: Arc<MemoryRunStore>,
    artifacts: Arc<MemoryArtifactStore>,
}

impl Memory {
    fn new() -> Self {
        Self {
            ledgers: Arc::default(),
            runs: Arc::default(),
            artifacts: Arc::default(),
        }
    }

    fn engine(&self, faults: &Arc<Faults>) -> (Engine, Tools) {
        engine(
            Faulty::new(&self.ledgers, faults),
            Faulty::new(&self.runs, faults),
            Faulty::new(&self.artifacts, faults),
        )
    }

    /// What the inner store holds for the run: `None` if no ledger exists.
    async fn stored(&self) -> Option<Ledger> {
        match self.ledgers.load(&run_id()).await {
            Ok(loaded) => {
                assert_eq!(loaded.torn_tail, None);
                Some(loaded.ledger)
            }
            Err(LedgerStoreError::NotFound { .. }) => None,
            Err(e) => panic!("the inner ledger must load after a fault: {e}"),
        }
    }
}

/// The run and ledger without any fault: what every recovered run must end like.
async fn baseline() -> (Run, Ledger) {
    let memory = Memory::new();
    let (engine, tools) = memory.engine(&Faults::new());
    let run = engine.run(spec()).await.expect("the healthy run");
    assert_eq!(run.status(), RunStatus::Completed);
    assert_eq!(
        (tools.look.get(), tools.write.get(), tools.put.get()),
        (1, 1, 1)
    );
    let ledger = engine.ledger(run.id()).await.expect("its ledger");
    (run, ledger)
}

/// How many `tool_call` entries for `tool` are in `entries`.
fn calls_of(entries: &[Entry], tool: &str) -> usize {
    entries
        .iter()
        .filter(|e| matches!(e.event(), EntryKind::ToolCall { tool: t, .. } if t.as_str() == tool))
        .count()
}

/// The `tool_call` entry `entries` ends with, if it ends with one: (tool, idempotent).
fn trailing_call(entries: &[Entry]) -> Option<(String, bool)> {
    match entries.last().map(Entry::event) {
        Some(EntryKind::ToolCall {
            tool, idempotent, ..
        }) => Some((tool.to_string(), *idempotent)),
        _ => None,
    }
}

fn io_kind(err: &EngineError) -> Option<io::ErrorKind> {
    let (EngineError::LedgerStore(LedgerStoreError::Io { source, .. })
    | EngineError::RunStore(RunStoreError::Io { source, .. })
    | EngineError::ArtifactStore(ArtifactError::Io { source, .. })) = err
    else {
        return None;
    };
    Some(source.kind())
}

/// The fault counters after one healthy run: how many appends, syncs and saves a run makes.
async fn counted_run() -> Arc<Faults> {
    let memory = Memory::new();
    let faults = Faults::new();
    memory
        .engine(&faults)
        .0
        .run(spec())
        .await
        .expect("counting run");
    faults
}

/// Resumes the run on a healthy engine over what the faulty one left and checks DESIGN.md §3:
/// the same outcome as `expected`, unless the stored ledger ends in a non-idempotent call,
/// which is in doubt and fails the run without running the tool again.
async fn recover(memory: &Memory, faulty: &Tools, expected: &Run, why: &str) {
    let Some(before) = memory.stored().await else {
        let (healthy, _) = memory.engine(&Faults::new());
        let err = healthy.resume(&run_id()).await.expect_err(why);
        assert!(
            matches!(err, EngineError::RunNotFound { .. }),
            "{why}: {err}"
        );
        return;
    };
    let (healthy, tools) = memory.engine(&Faults::new());
    let in_doubt = trailing_call(before.entries());
    let result = healthy.resume(&run_id()).await;
    let finished = before.entries().iter().any(|e| {
        matches!(
            e.event(),
            EntryKind::RunCompleted { .. } | EntryKind::RunFailed { .. }
        )
    });
    if finished {
        let err = result.expect_err(why);
        assert!(
            matches!(err, EngineError::RunFinished { .. }),
            "{why}: {err}"
        );
        let after = memory.stored().await.expect("still there");
        assert_eq!(
            after, before,
            "{why}: resuming a finished run changes nothing"
        );
        return;
    }
    let run = result.unwrap_or_else(|e| panic!("{why}: resume failed: {e}"));
    let after = memory.stored().await.expect("the ledger");
    assert_chain(&after);
    assert_eq!(
        &after.entries()[..before.len()],
        before.entries(),
        "{why}: resume only appends"
    );
    // No tool ever ran more often than the ledger has calls for it, and the non-idempotent
    // one at most once over both processes.
    for tool in ["look", "put"] {
        assert_eq!(
            faulty.of(tool) + tools.of(tool),
            calls_of(after.entries(), tool),
            "{why}: executions of {tool} match the recorded calls"
        );
    }
    // The non-idempotent one: at most once over both processes, and never without its call
    // on record (a call whose marker could not be synced never ran, and stays in doubt).
    let writes = faulty.write.get() + tools.write.get();
    assert!(writes <= 1, "{why}: write ran twice");
    assert!(
        writes <= calls_of(after.entries(), "write"),
        "{why}: write ran unrecorded"
    );
    match in_doubt {
        Some((tool, false)) => {
            assert_eq!(run.status(), RunStatus::Failed, "{why}");
            let failure = run.failure().expect("a failure");
            assert_eq!(
                failure.kind,
                FailureKind::InDoubtToolCall,
                "{why}: {failure:?}"
            );
            assert!(failure.message.contains(&tool), "{why}: {failure:?}");
        }
        _ => {
            assert_eq!(
                run.status(),
                expected.status(),
                "{why}: {:?}",
                run.failure()
            );
            assert_eq!(run.result(), expected.result(), "{why}");
            assert_eq!(run.state(), expected.state(), "{why}");
        }
    }
}

// Paused time: the entries are compared with the baseline run's whole, and a tool's
// `duration_ms` is measured on tokio's clock — real time would make them differ under load.
#[tokio::test(start_paused = true)]
async fn a_full_disk_at_every_append_stops_the_run_and_keeps_what_was_written() {
    let (expected, full) = baseline().await;
    let total = full.len() as u64;
    for n in 0..=total {
        let why = format!("disk full after {n} of {total} appends");
        let memory = Memory::new();
        let faults = Faults::new();
        faults.disk_full_after(n);
        let (engine, tools) = memory.engine(&faults);
        let result = engine.run(spec()).await;
        if n == total {
            assert_eq!(result.expect(&why).status(), RunStatus::Completed);
        } else {
            let err = result.expect_err(&why);
            assert_eq!(
                io_kind(&err),
                Some(io::ErrorKind::StorageFull),
                "{why}: {err}"
            );
            assert!(matches!(err, EngineError::LedgerStore(_)), "{why}: {err}");
        }
        // Exactly the entries written before the fault, untouched.
        let stored = memory.stored().await;
        let prefix = &full.entries()[..n as usize];
        match &stored {
            None => assert_eq!(n, 0, "{why}: the ledger vanished"),
            Some(ledger) => {
                assert_chain(ledger);
                assert_eq!(ledger.entries(), prefix, "{why}");
            }
        }
        // No tool ran without its call on record; every recorded call ran.
        for tool in ["look", "write", "put"] {
            assert_eq!(tools.of(tool), calls_of(prefix, tool), "{why}: {tool}");
        }
        recover(&memory, &tools, &expected, &why).await;
    }
}

#[tokio::test]
async fn a_failing_fsync_at_every_sync_stops_the_run_before_the_next_side_effect() {
    let (expected, _) = baseline().await;
    let syncs = counted_run().await.syncs();
    assert!(syncs > 5, "a run syncs at every step: {syncs}");
    for k in 1..=syncs {
        let why = format!("fsync {k} of {syncs} fails");
        let memory = Memory::new();
        let faults = Faults::new();
        faults.fail_sync_from(k);
        let (engine, tools) = memory.engine(&faults);
        let err = engine.run(spec()).await.expect_err(&why);
        assert!(
            matches!(err, EngineError::LedgerStore(LedgerStoreError::Io { .. })),
            "{why}: {err}"
        );
        let stored = memory
            .stored()
            .await
            .expect("entries were appended before the sync");
        assert_chain(&stored);
        // The run stopped at the failed sync: nothing was appended after it...
        assert_eq!(faults.syncs(), k, "{why}: no sync after the failed one");
        // ...and a non-idempotent call whose marker could not be synced never ran.
        let entries = stored.entries();
        for tool in ["look", "put"] {
            assert_eq!(tools.of(tool), calls_of(entries, tool), "{why}: {tool}");
        }
        let unsynced_write = trailing_call(entries) == Some(("write".into(), false));
        assert_eq!(
            tools.write.get(),
            calls_of(entries, "write") - usize::from(unsynced_write),
            "{why}: write ran though its call was not durable"
        );
        recover(&memory, &tools, &expected, &why).await;
    }
}

#[tokio::test]
async fn an_unreadable_ledger_fails_resume_and_reads_with_a_typed_error_and_changes_nothing() {
    let memory = Memory::new();
    let faults = Faults::new();
    faults.fail_sync_from(1);
    let (engine, _) = memory.engine(&faults);
    engine
        .run(spec())
        .await
        .expect_err("stopped at the first sync");
    let before = memory.stored().await.expect("a ledger");
    faults.fail_sync_from(0).fail_load(true);
    let appends = faults.appends();
    for result in [
        engine.resume(&run_id()).await.map(|_| ()),
        engine.resume_with_input(&run_id(), "yes").await.map(|_| ()),
        engine.ledger(&run_id()).await.map(|_| ()),
        engine.load_run(&run_id()).await.map(|_| ()),
    ] {
        let err = result.expect_err("the read fails");
        assert!(
            matches!(err, EngineError::LedgerStore(LedgerStoreError::Io { .. })),
            "{err}"
        );
        assert!(err.to_string().contains("injected"), "{err}");
    }
    // A new run with a chosen id must not start over a ledger it cannot read.
    let err = engine.run(spec()).await.expect_err("the id may be taken");
    assert!(matches!(err, EngineError::RunExists { .. }), "{err}");
    assert_eq!(faults.appends(), appends, "nothing was appended");
    assert_eq!(memory.stored().await.expect("a ledger"), before);
    // Once the disk reads again, the run resumes.
    faults.fail_load(false);
    let run = engine.resume(&run_id()).await.expect("resumes");
    assert_eq!(run.status(), RunStatus::Completed);
}

// Paused time: the entries are compared with the baseline run's whole, and a tool's
// `duration_ms` is measured on tokio's clock — real time would make them differ under load.
#[tokio::test(start_paused = true)]
async fn a_failing_snapshot_save_is_a_run_store_error_and_the_ledger_stays_the_truth() {
    let (expected, full) = baseline().await;
    let saves = counted_run().await.saves();
    for n in 0..saves {
        let why = format!("snapshot save fails after {n} of {saves}");
        let memory = Memory::new();
        let faults = Faults::new();
        faults.fail_save_after(n);
        let (engine, tools) = memory.engine(&faults);
        let err = engine.run(spec()).await.expect_err(&why);
        assert!(
            matches!(err, EngineError::RunStore(RunStoreError::Io { .. })),
            "{why}: {err}"
        );
        assert_eq!(io_kind(&err), Some(io::ErrorKind::StorageFull), "{why}");
        let stored = memory.stored().await.expect("a ledger");
        assert_chain(&stored);
        assert_eq!(stored.entries(), &full.entries()[..stored.len()], "{why}");
        for tool in ["look", "write", "put"] {
            assert_eq!(tools.of(tool), calls_of(stored.entries(), tool), "{why}");
        }
        recover(&memory, &tools, &expected, &why).await;
    }
    // A failing snapshot read does not stop the engine: the ledger is the source of truth.
    let memory = Memory::new();
    let faults = Faults::new();
    let (engine, _) = memory.engine(&faults);
    let run = engine.run(spec()).await.expect("runs");
    faults.fail_run_load(true);
    assert_eq!(
        engine.load_run(run.id()).await.expect("from the ledger"),
        run
    );
}

/// A snapshot the store fails to read may hold the ledger head that proves a cut: resume
/// refuses with the store's error and writes nothing, rather than overwrite it. A healthy
/// store then resumes as usual.
#[tokio::test(start_paused = true)]
async fn resume_refuses_when_the_snapshot_cannot_be_read_and_writes_nothing() {
    let (expected, full) = baseline().await;
    let memory = Memory::new();
    let faults = Faults::new();
    faults.disk_full_after(full.len() as u64 / 2);
    let (engine, tools) = memory.engine(&faults);
    engine.run(spec()).await.expect_err("the disk fills up");
    let before = memory.stored().await.expect("a ledger");
    let snapshot = RunStore::load(&*memory.runs, &run_id())
        .await
        .expect("a snapshot");

    let unreadable = Faults::new();
    unreadable.fail_run_load(true);
    let (engine, _) = memory.engine(&unreadable);
    let err = engine.resume(&run_id()).await.expect_err("refused");
    assert!(
        matches!(err, EngineError::RunStore(RunStoreError::Io { .. })),
        "{err}"
    );
    assert_eq!(
        memory.stored().await.expect("a ledger"),
        before,
        "ledger untouched"
    );
    assert_eq!(
        RunStore::load(&*memory.runs, &run_id())
            .await
            .expect("a snapshot"),
        snapshot,
        "snapshot untouched"
    );
    recover(&memory, &tools, &expected, "after the store heals").await;
}

#[tokio::test]
async fn a_failing_artifact_write_stops_the_run_after_the_call_and_resume_follows_the_in_doubt_rule()
 {
    for idempotent in [false, true] {
        let tool = if idempotent { "put" } else { "write" };
        let why = format!("artifact put fails for {tool}");
        let memory = Memory::new();
        let faults = Faults::new();
        faults.fail_put(true);
        let build = |faults: &Arc<Faults>| {
            let annotations = Annotations::side_effecting().with_idempotent(idempotent);
            let (big, runs) = chaos::counted_with(
                tool,
                annotations,
                json!({"type": "object"}),
                |_| json!({"blob": "x".repeat(4096)}),
            );
            let engine = Engine::builder()
                .tool(big)
                .planner(ScriptedPlanner::new([
                    ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "a")),
                    ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "b")),
                    ScriptStep::expect(State::Decide, Decision::transition(State::Act, "c")),
                    ScriptStep::expect(
                        State::Act,
                        Decision::call_tool(tool, json!({}), "big output"),
                    ),
                    ScriptStep::expect(State::Act, Decision::transition(State::Validate, "ok")),
                    ScriptStep::expect(State::Validate, Decision::finish("done", json!(1))),
                ]))
                .inline_output_limit(1024)
                .ledger_store(Faulty::new(&memory.ledgers, faults))
                .run_store(Faulty::new(&memory.runs, faults))
                .artifact_store(Faulty::new(&memory.artifacts, faults))
                .build()
                .expect("engine builds");
            (engine, runs)
        };
        let (engine, runs) = build(&faults);
        let err = engine.run(spec()).await.expect_err(&why);
        assert!(
            matches!(err, EngineError::ArtifactStore(ArtifactError::Io { .. })),
            "{why}: {err}"
        );
        assert_eq!(io_kind(&err), Some(io::ErrorKind::StorageFull), "{why}");
        assert_eq!(runs.get(), 1, "{why}: the tool ran once");
        let stored = memory.stored().await.expect("a ledger");
        assert_chain(&stored);
        assert_eq!(
            trailing_call(stored.entries()),
            Some((tool.to_owned(), idempotent)),
            "{why}"
        );

        let (healthy, reruns) = build(&Faults::new());
        let run = healthy.resume(&run_id()).await.expect(&why);
        if idempotent {
            assert_eq!(
                run.status(),
                RunStatus::Completed,
                "{why}: {:?}",
                run.failure()
            );
            assert_eq!(reruns.get(), 1, "{why}: an idempotent call is retried");
        } else {
            assert_eq!(run.status(), RunStatus::Failed, "{why}");
            assert_eq!(
                run.failure().map(|f| f.kind),
                Some(FailureKind::InDoubtToolCall)
            );
            assert_eq!(reruns.get(), 0, "{why}: a call in doubt never runs twice");
        }
        assert_chain(&healthy.ledger(&run_id()).await.expect("ledger"));
    }
}

/// The filesystem stores under faults: a full disk at every append and a failing fsync
/// at every sync, then a fresh process (new `FsStores`) over the same directory resumes.
// Paused time, as above: entries are compared with the baseline's whole. Tokio holds its
// paused clock while the stores' blocking I/O runs, so no timeout fires early.
#[tokio::test(start_paused = true)]
async fn filesystem_stores_under_faults_keep_a_verifying_ledger_and_resume() {
    let (expected, full) = baseline().await;
    let total = full.len() as u64;
    for (label, arm) in [("disk full", 0u8), ("fsync fails", 1u8)] {
        for n in 0..total {
            let why = format!("fs: {label} at {n}");
            let dir = tempfile::tempdir().expect("tempdir");
            let faults = Faults::new();
            match arm {
                0 => faults.disk_full_after(n),
                _ => faults.fail_sync_from(n + 1),
            };
            let tools = {
                let stores = FsStores::open(dir.path()).expect("stores");
                let (runs, ledgers, artifacts) = stores.into_parts();
                let (engine, tools) = engine(
                    Faulty::new(&Arc::new(ledgers), &faults),
                    Faulty::new(&Arc::new(runs), &faults),
                    Faulty::new(&Arc::new(artifacts), &faults),
                );
                let result = engine.run(spec()).await;
                match result {
                    Err(EngineError::LedgerStore(LedgerStoreError::Io { .. })) => {}
                    Ok(run) if arm == 1 && n + 1 > faults.syncs() => {
                        assert_eq!(run.status(), RunStatus::Completed, "{why}");
                    }
                    other => panic!("{why}: {other:?}"),
                }
                tools
            };
            // A new process: fresh stores over the directory.
            let stores = FsStores::open(dir.path()).expect("reopen");
            let before = match stores.ledgers().load(&run_id()).await {
                Ok(loaded) => Some(loaded.ledger),
                Err(LedgerStoreError::NotFound { .. }) => None,
                Err(e) => panic!("{why}: the ledger must load: {e}"),
            };
            if let Some(before) = &before {
                assert_chain(before);
                assert_eq!(before.entries(), &full.entries()[..before.len()], "{why}");
            }
            let (runs, ledgers, artifacts) = stores.into_parts();
            let (healthy, again) = engine(ledgers, runs, artifacts);
            match healthy.resume(&run_id()).await {
                Err(EngineError::RunNotFound { .. }) => assert!(before.is_none(), "{why}"),
                Err(EngineError::RunFinished { .. }) => {}
                Err(e) => panic!("{why}: {e}"),
                Ok(run) => {
                    let before = before.expect("a ledger");
                    if trailing_call(before.entries()) == Some(("write".into(), false)) {
                        assert_eq!(
                            run.failure().map(|f| f.kind),
                            Some(FailureKind::InDoubtToolCall)
                        );
                    } else {
                        assert_eq!(
                            run.status(),
                            expected.status(),
                            "{why}: {:?}",
                            run.failure()
                        );
                        assert_eq!(run.result(), expected.result(), "{why}");
                    }
                    assert!(
                        tools.write.get() + again.write.get() <= 1,
                        "{why}: write ran twice"
                    );
                    let ledger = healthy.ledger(&run_id()).await.expect("ledger");
                    assert_chain(&ledger);
                    for tool in ["look", "put"] {
                        let runs = tools.of(tool) + again.of(tool);
                        assert_eq!(runs, calls_of(ledger.entries(), tool), "{why}: {tool}");
                    }
                    let writes = tools.write.get() + again.write.get();
                    assert!(writes <= calls_of(ledger.entries(), "write"), "{why}");
                }
            }
        }
    }
}

#[tokio::test]
async fn faults_survive_the_fs_ledger_under_every_fsync_policy() {
    // The full disk hits a filesystem store directly: the failed append leaves no partial
    // line, whatever the policy.
    for policy in [
        FsyncPolicy::EveryEntry,
        FsyncPolicy::EveryStep,
        FsyncPolicy::Relaxed,
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let faults = Faults::new();
        faults.disk_full_after(6);
        let stores = open_fs(dir.path(), policy);
        let (runs, ledgers, artifacts) = stores.into_parts();
        let (engine, tools) = engine(
            Faulty::new(&Arc::new(ledgers), &faults),
            Faulty::new(&Arc::new(runs), &faults),
            Faulty::new(&Arc::new(artifacts), &faults),
        );
        engine.run(spec()).await.expect_err("disk full");
        let reopened = FsStores::open(dir.path()).expect("reopen");
        let loaded = reopened.ledgers().load(&run_id()).await.expect("loads");
        assert_eq!(loaded.torn_tail, None, "{policy:?}");
        assert_eq!(loaded.ledger.len(), 6, "{policy:?}");
        assert_eq!(
            tools.total(),
            calls_of(loaded.ledger.entries(), "look"),
            "{policy:?}"
        );
    }
}

/// Opens filesystem stores under `dir` with `policy` (`FsConfig` is not in the facade, so
/// its type is taken from `FsStores::open_with`).
fn open_fs(dir: &std::path::Path, policy: FsyncPolicy) -> FsStores {
    configure(|c| FsStores::open_with(dir, c), |c| c.with_fsync(policy)).expect("stores")
}

fn configure<C: Default, T>(open: impl FnOnce(C) -> T, set: impl FnOnce(C) -> C) -> T {
    open(set(C::default()))
}

// ---- retries: every attempt charged and recorded before it runs ---------------------------------

/// Explores with one call of `flaky` (idempotent), then finishes.
fn retry_script() -> ScriptedPlanner {
    ScriptedPlanner::new([
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("flaky", json!({"q": 7}), "flaky upstream"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "seen")),
        ScriptStep::expect(State::Decide, Decision::finish("done", json!({"ok": true}))),
    ])
}

/// What `flaky` saw of the stored ledger each time it ran: the kinds of the last entries.
type Seen = Arc<std::sync::Mutex<Vec<Vec<&'static str>>>>;

/// An engine over `memory` whose `flaky` tool (read-only, so idempotent and retried up to
/// three times without backoff) fails transiently on its first two executions over all
/// engines sharing `runs`, then answers; each execution first notes the tail of the ledger
/// stored in `memory`, as it is when the attempt starts.
fn retry_engine(memory: &Memory, faults: &Arc<Faults>, runs: &Counter, seen: &Seen) -> Engine {
    let (ledgers, runs, seen) = (Arc::clone(&memory.ledgers), runs.clone(), Arc::clone(seen));
    let flaky = rein::FnTool::builder("flaky")
        .annotations(Annotations::read_only())
        .handler(move |input: rein::Value| {
            let (ledgers, runs, seen) = (Arc::clone(&ledgers), runs.clone(), Arc::clone(&seen));
            async move {
                let stored = ledgers.load(&run_id()).await.expect("the ledger so far");
                let tail = stored.ledger.entries().iter().rev().take(3).rev();
                seen.lock()
                    .expect("not poisoned")
                    .push(tail.map(|e| e.event().name()).collect());
                runs.hit();
                if runs.get() <= 2 {
                    Err(rein::ToolError::transient("upstream 503"))
                } else {
                    Ok(json!({"echo": input}))
                }
            }
        })
        .build()
        .expect("a valid tool");
    Engine::builder()
        .tool(flaky)
        .planner(retry_script())
        .budget("tool_calls", 10)
        .resilience(rein::resilience::ResilienceConfig {
            retry: rein::resilience::RetryConfig {
                max_attempts: 3.try_into().expect("non-zero"),
                min_backoff: std::time::Duration::ZERO,
                max_backoff: std::time::Duration::ZERO,
                ..rein::resilience::RetryConfig::default()
            },
            ..rein::resilience::ResilienceConfig::default()
        })
        .clock(ManualClock::starting_at(1_700_000_000_000).with_step(1))
        .ledger_store(Faulty::new(&memory.ledgers, faults))
        .run_store(Faulty::new(&memory.runs, faults))
        .artifact_store(Faulty::new(&memory.artifacts, faults))
        .build()
        .expect("engine builds")
}

/// The `tool_calls` units the ledger charged.
fn tool_calls_used(entries: &[Entry]) -> usize {
    entries
        .iter()
        .filter(|e| {
            matches!(e.event(), EntryKind::BudgetConsumed { name, .. } if *name == rein::run::BudgetName::TOOL_CALLS)
        })
        .count()
}

/// Every retry announced in `entries` (`tool_error` with `will_retry`) is followed by its
/// charge and its call, numbered one up; every call comes right after its charge; calls are
/// numbered 1, 2, 3… — the order charge → call → error or result, for every attempt. A
/// resume's `run_resumed` between them does not count; the ledger may end anywhere.
fn assert_retry_order(entries: &[Entry], why: &str) {
    let events: Vec<&EntryKind> = entries
        .iter()
        .map(Entry::event)
        .filter(|e| !matches!(e, EntryKind::RunResumed { .. }))
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e.name()).collect();
    let mut next_call = 1;
    for (i, event) in events.iter().enumerate() {
        match event {
            EntryKind::ToolError {
                attempt,
                will_retry: true,
                ..
            } => match (events.get(i + 1), events.get(i + 2)) {
                (
                    Some(EntryKind::BudgetConsumed { .. }),
                    Some(EntryKind::ToolCall { attempt: next, .. }),
                ) => {
                    assert_eq!(*next, attempt + 1, "{why}: {kinds:?}");
                }
                (None, _) | (Some(EntryKind::BudgetConsumed { .. }), None) => {}
                _ => panic!("{why}: a retry without its charge and call: {kinds:?}"),
            },
            EntryKind::ToolCall { attempt, .. } => {
                assert_eq!(*attempt, next_call, "{why}: {kinds:?}");
                next_call += 1;
                assert!(
                    matches!(
                        events.get(i.wrapping_sub(1)),
                        Some(EntryKind::BudgetConsumed { .. })
                    ),
                    "{why}: call {attempt} not right after its charge: {kinds:?}"
                );
            }
            EntryKind::ToolResult { attempt, .. }
            | EntryKind::ToolError {
                attempt,
                will_retry: false,
                ..
            } => assert_eq!(*attempt + 1, next_call, "{why}: {kinds:?}"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn every_retry_is_charged_and_recorded_before_it_runs() {
    let memory = Memory::new();
    let (runs, seen) = (Counter::default(), Seen::default());
    let engine = retry_engine(&memory, &Faults::new(), &runs, &seen);
    let run = engine.run(spec()).await.expect("the run");
    assert_eq!(run.status(), RunStatus::Completed);
    let ledger = memory.stored().await.expect("the ledger");
    assert_chain(&ledger);
    assert_eq!(runs.get(), 3);
    // When each attempt started, the store already held its charge and its call — and,
    // for a retry, the failure before it, marked as retried.
    assert_eq!(
        *seen.lock().expect("not poisoned"),
        [
            vec!["decision", "budget_consumed", "tool_call"],
            vec!["tool_error", "budget_consumed", "tool_call"],
            vec!["tool_error", "budget_consumed", "tool_call"],
        ]
    );
    assert_retry_order(ledger.entries(), "no fault");
    assert_eq!(calls_of(ledger.entries(), "flaky"), 3);
    assert_eq!(tool_calls_used(ledger.entries()), 3);
    let retried: Vec<(u32, bool)> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolError {
                attempt,
                will_retry,
                ..
            } => Some((*attempt, *will_retry)),
            _ => None,
        })
        .collect();
    assert_eq!(retried, [(1, true), (2, true)]);
}

#[tokio::test]
async fn a_full_disk_during_retries_stops_them_and_resume_finishes_the_call() {
    let baseline = {
        let memory = Memory::new();
        let engine = retry_engine(
            &memory,
            &Faults::new(),
            &Counter::default(),
            &Seen::default(),
        );
        engine.run(spec()).await.expect("the healthy run");
        memory.stored().await.expect("the ledger")
    };
    let first_call = baseline
        .entries()
        .iter()
        .position(|e| matches!(e.event(), EntryKind::ToolCall { .. }))
        .expect("a call");
    let result = baseline
        .entries()
        .iter()
        .position(|e| matches!(e.event(), EntryKind::ToolResult { .. }))
        .expect("a result");
    // A full disk at every append from the first attempt's charge to the result: among them
    // the second attempt's `tool_call` (the retry must not run), the first attempt's
    // failure (the retry must not start), the retry's charge.
    for n in first_call - 1..=result {
        let at = baseline.entries()[n].event().name();
        let why = format!("disk full at append {n} ({at})");
        let memory = Memory::new();
        let faults = Faults::new();
        faults.disk_full_after(n as u64);
        let (runs, seen) = (Counter::default(), Seen::default());
        let err = retry_engine(&memory, &faults, &runs, &seen)
            .run(spec())
            .await
            .expect_err(&why);
        assert_eq!(
            io_kind(&err),
            Some(io::ErrorKind::StorageFull),
            "{why}: {err}"
        );
        let stored = memory.stored().await.expect("the ledger so far");
        assert_chain(&stored);
        // What was written before the fault, as the healthy run wrote it (durations aside).
        let names =
            |entries: &[Entry]| entries.iter().map(|e| e.event().name()).collect::<Vec<_>>();
        assert_eq!(
            names(stored.entries()),
            names(&baseline.entries()[..n]),
            "{why}"
        );
        // Every attempt that ran has its call on record, and was charged; only a charge whose
        // call could not be written is paid without an attempt (never the other way round).
        let executed = runs.get();
        assert_eq!(executed, calls_of(stored.entries(), "flaky"), "{why}");
        let unspent = usize::from(matches!(
            stored.entries().last().map(Entry::event),
            Some(EntryKind::BudgetConsumed { .. })
        ));
        assert_eq!(
            tool_calls_used(stored.entries()),
            executed + unspent,
            "{why}"
        );
        assert_retry_order(stored.entries(), &why);

        // A healthy process finishes the call: retried as a new, charged attempt.
        let healthy = retry_engine(&memory, &Faults::new(), &runs, &seen);
        let run = healthy.resume(&run_id()).await.expect(&why);
        assert_eq!(
            run.status(),
            RunStatus::Completed,
            "{why}: {:?}",
            run.failure()
        );
        assert_eq!(run.result(), Some(&json!({"ok": true})), "{why}");
        let after = memory.stored().await.expect("the ledger");
        after.verify().expect("the resumed ledger verifies");
        assert_eq!(
            &after.entries()[..n],
            stored.entries(),
            "{why}: resume only appends"
        );
        let executed = runs.get();
        assert_eq!(executed, calls_of(after.entries(), "flaky"), "{why}");
        assert_eq!(executed, tool_calls_used(after.entries()), "{why}");
        assert_retry_order(after.entries(), &why);
    }
}
