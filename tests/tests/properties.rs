//! Property tests over random decision scripts through the facade: whatever a planner
//! proposes, and wherever a full disk stops the process, budgets are never exceeded, every
//! ledger verifies, no non-idempotent tool runs twice, and a finished run never changes.

mod chaos;

use std::sync::Arc;

use chaos::{Counter, Faults, Faulty, assert_chain, count, counted};
use proptest::prelude::*;
use rein::ledger::EntryKind;
use rein::policy::{OnToolError, OnViolation};
use rein::run::BudgetName;
use rein::store::{LedgerStore, MemoryArtifactStore, MemoryLedgerStore, MemoryRunStore};
use rein::{
    Annotations, Decision, Engine, EngineError, Run, RunId, RunSpec, RunStatus, ScriptStep,
    ScriptedPlanner, State, ToolError, json,
};

/// One proposed decision, in a form proptest can shrink.
#[derive(Debug, Clone)]
enum Step {
    Go(State),
    Call(usize, u8),
    Ask,
    Finish,
    Fail,
}

const TOOLS: [&str; 4] = ["look", "write", "put", "flaky"];

fn step() -> impl Strategy<Value = Step> {
    let state = prop::sample::select(vec![
        State::Intake,
        State::Explore,
        State::Decide,
        State::Act,
        State::Validate,
        State::Done,
        State::Failed,
    ]);
    prop_oneof![
        4 => state.prop_map(Step::Go),
        5 => (0..TOOLS.len() + 1, any::<u8>()).prop_map(|(t, n)| Step::Call(t, n)),
        1 => Just(Step::Ask),
        1 => Just(Step::Finish),
        1 => Just(Step::Fail),
    ]
}

fn decision(step: &Step) -> Decision {
    match step {
        Step::Go(to) => Decision::transition(*to, "random"),
        // Index TOOLS.len() is a tool nobody registered.
        Step::Call(t, n) => Decision::call_tool(
            TOOLS.get(*t).copied().unwrap_or("ghost"),
            json!({ "n": n }),
            "random",
        ),
        Step::Ask => Decision::ask_human("go on?", ["yes", "no"]),
        Step::Finish => Decision::finish("random", json!({"ok": true})),
        Step::Fail => Decision::fail("random"),
    }
}

/// The parameters of one generated run.
#[derive(Debug, Clone)]
struct Scenario {
    script: Vec<Step>,
    tool_calls: u64,
    max_steps: u32,
    hand_back: bool,
    tool_errors_back: bool,
    /// Every append after this many fails (a full disk), then a healthy engine resumes.
    disk_full_after: Option<u64>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop::collection::vec(step(), 0..24),
        0u64..6,
        1u32..30,
        any::<bool>(),
        any::<bool>(),
        prop::option::of(0u64..60),
    )
        .prop_map(
            |(script, tool_calls, max_steps, hand_back, tool_errors_back, disk_full_after)| {
                Scenario {
                    script,
                    tool_calls,
                    max_steps,
                    hand_back,
                    tool_errors_back,
                    disk_full_after,
                }
            },
        )
}

struct Counters {
    look: Counter,
    write: Counter,
    put: Counter,
    flaky: Counter,
}

fn engine(
    s: &Scenario,
    ledgers: Faulty<MemoryLedgerStore>,
    runs: Faulty<MemoryRunStore>,
    artifacts: Faulty<MemoryArtifactStore>,
) -> (Engine, Counters) {
    let (look, look_n) = counted("look", Annotations::read_only());
    let (write, write_n) = counted("write", Annotations::side_effecting());
    let (put, put_n) = counted("put", Annotations::side_effecting().with_idempotent(true));
    // Fails every other call with a transient error: retries (idempotent) and failures.
    let flaky_n = Counter::default();
    let hits = flaky_n.clone();
    let flaky = rein::FnTool::builder("flaky")
        .annotations(Annotations::read_only())
        .handler(move |_| {
            hits.hit();
            let odd = hits.get() % 2 == 1;
            async move {
                if odd {
                    Err(ToolError::transient("flaky"))
                } else {
                    Ok(json!(1))
                }
            }
        })
        .build()
        .expect("tool");
    let mut builder = Engine::builder()
        .tool(look)
        .tool(write)
        .tool(put)
        .tool(flaky)
        .planner(ScriptedPlanner::new(
            s.script.iter().map(|st| ScriptStep::any(decision(st))),
        ))
        .budget("tool_calls", s.tool_calls)
        .max_steps(s.max_steps)
        .ledger_store(ledgers)
        .run_store(runs)
        .artifact_store(artifacts);
    if s.hand_back {
        builder = builder.on_violation(OnViolation::HandBack { limit: 3 });
    }
    if s.tool_errors_back {
        builder = builder.on_tool_error(OnToolError::HandBack);
    }
    let counters = Counters {
        look: look_n,
        write: write_n,
        put: put_n,
        flaky: flaky_n,
    };
    (builder.build().expect("engine"), counters)
}

/// Drives the run to an end: answers "yes" to every question, at most a few times.
async fn drive(
    engine: &Engine,
    id: &RunId,
    first: Result<Run, EngineError>,
) -> Result<Run, EngineError> {
    let mut run = first?;
    for _ in 0..4 {
        if run.status() != RunStatus::Paused {
            break;
        }
        run = engine.resume_with_input(id, "yes").await?;
    }
    Ok(run)
}

async fn check(s: Scenario) -> Result<(), TestCaseError> {
    let id: RunId = "prop".parse().expect("id");
    let ledgers = Arc::new(MemoryLedgerStore::new());
    let runs = Arc::new(MemoryRunStore::new());
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let faults = Faults::new();
    if let Some(n) = s.disk_full_after {
        faults.disk_full_after(n);
    }
    let (first, c1) = engine(
        &s,
        Faulty::new(&ledgers, &faults),
        Faulty::new(&runs, &faults),
        Faulty::new(&artifacts, &faults),
    );
    let result = first.run(RunSpec::new("random").with_id(id.clone())).await;
    let result = drive(&first, &id, result).await;
    if let Err(e) = &result {
        prop_assert!(
            matches!(e, EngineError::LedgerStore(_)),
            "only the injected fault stops a run: {e}"
        );
    }
    // A healthy process takes over whatever the fault left.
    let (second, c2) = engine(
        &s,
        Faulty::new(&ledgers, &Faults::new()),
        Faulty::new(&runs, &Faults::new()),
        Faulty::new(&artifacts, &Faults::new()),
    );
    let run = match result {
        Ok(run) => Some(run),
        Err(_) => match second.resume(&id).await {
            Err(EngineError::RunNotFound { .. } | EngineError::RunFinished { .. }) => None,
            Err(EngineError::AwaitingAnswer { .. }) => Some(
                drive(&second, &id, second.resume_with_input(&id, "yes").await)
                    .await
                    .map_err(|e| TestCaseError::fail(e.to_string()))?,
            ),
            other => Some(
                drive(&second, &id, other)
                    .await
                    .map_err(|e| TestCaseError::fail(e.to_string()))?,
            ),
        },
    };
    let Ok(loaded) = ledgers.load(&id).await else {
        prop_assert_eq!(
            s.disk_full_after,
            Some(0),
            "only a fault before the first entry leaves no ledger"
        );
        return Ok(());
    };
    let ledger = loaded.ledger;
    assert_chain(&ledger);

    // Budgets: never over the limit, counted in the ledger as they are in the run.
    let consumed: u64 = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::BudgetConsumed { name, amount, .. } if *name == BudgetName::TOOL_CALLS => {
                Some(*amount)
            }
            _ => None,
        })
        .sum();
    prop_assert!(
        consumed <= s.tool_calls,
        "consumed {} of {}",
        consumed,
        s.tool_calls
    );
    let decisions = count(&ledger, "decision") as u32;
    prop_assert!(
        decisions <= s.max_steps,
        "{} decisions, max {}",
        decisions,
        s.max_steps
    );
    let calls = count(&ledger, "tool_call") as u64;
    prop_assert!(
        calls <= s.tool_calls,
        "{} calls with a budget of {}",
        calls,
        s.tool_calls
    );

    // Executions: never without a recorded call; the non-idempotent one never twice.
    let of = |tool: &str| {
        ledger
            .entries()
            .iter()
            .filter(
                |e| matches!(e.event(), EntryKind::ToolCall { tool: t, .. } if t.as_str() == tool),
            )
            .count()
    };
    // Every attempt, retries included, is charged and recorded before it runs, so even a
    // crash in the middle of a retrying call leaves no execution without its call.
    for (tool, a, b) in [
        ("look", &c1.look, &c2.look),
        ("write", &c1.write, &c2.write),
        ("put", &c1.put, &c2.put),
        ("flaky", &c1.flaky, &c2.flaky),
    ] {
        prop_assert!(
            a.get() + b.get() <= of(tool),
            "{}: {} executions, {} calls",
            tool,
            a.get() + b.get(),
            of(tool)
        );
    }
    let write_inputs: Vec<_> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolCall { tool, attempt, .. } if tool.as_str() == "write" => Some(*attempt),
            _ => None,
        })
        .collect();
    prop_assert!(
        write_inputs.iter().all(|&a| a == 1),
        "a non-idempotent call is never retried: {:?}",
        write_inputs
    );

    // The run the engine reports is the ledger's, and a finished run never changes.
    let rebuilt = second
        .load_run(&id)
        .await
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    if let Some(run) = &run {
        prop_assert_eq!(&rebuilt, run);
    }
    if rebuilt.is_finished() {
        let before = ledger.clone();
        let err = second.resume(&id).await.expect_err("finished");
        prop_assert!(matches!(err, EngineError::RunFinished { .. }), "{}", err);
        let err = second
            .resume_with_input(&id, "yes")
            .await
            .expect_err("finished");
        prop_assert!(matches!(err, EngineError::RunFinished { .. }), "{}", err);
        let after = ledgers.load(&id).await.expect("loads").ledger;
        prop_assert_eq!(after, before);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn budgets_hold_ledgers_verify_and_finished_runs_never_change(s in scenario()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
        rt.block_on(check(s))?;
    }
}
