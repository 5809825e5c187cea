//! A bounded load test on loopback: 10,000 runs in a data directory (generated directly by
//! an engine with relaxed fsync), and the runs list, a later page of it, the waiting filter
//! and the inbox still answer with one page each — never all the runs at once. Timing
//! figures belong in docs/BENCHMARKS.md, not here.

mod support;

use axum::http::StatusCode;
use rein::store::FsyncPolicy;
use rein::{Decision, Engine, RunStatus, ScriptStep, ScriptedPlanner, State};
use support::{console, get};

/// How many runs the store holds, and how many of them wait for an answer.
const RUNS: usize = 10_000;
const WAITING: usize = 10;

/// An engine on `dir` whose runs end at once (a failing first step), or ask a question.
fn engine(dir: &std::path::Path, asks: bool) -> Engine {
    let step = if asks {
        Decision::ask_human("go on?", ["yes", "no"])
    } else {
        Decision::fail("done at once")
    };
    Engine::builder()
        .planner(ScriptedPlanner::new([ScriptStep::expect(
            State::Intake,
            step,
        )]))
        .filesystem_with(dir, FsyncPolicy::Relaxed)
        .build()
        .expect("engine builds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_runs_are_listed_and_waited_on_one_page_at_a_time() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let quick = engine(dir.path(), false);
    let asking = engine(dir.path(), true);
    let mut tasks = tokio::task::JoinSet::new();
    let mut paused = 0;
    for n in 0..RUNS {
        let engine = if n % (RUNS / WAITING) == 0 {
            asking.clone()
        } else {
            quick.clone()
        };
        tasks.spawn(async move { engine.run(format!("run {n}")).await.map(|r| r.status()) });
        // Bounded: at most 64 runs in flight while the store fills. Every run is counted,
        // whichever join sees it end.
        while tasks.len() >= 64 {
            let done = tasks.join_next().await.expect("a task");
            if done.expect("joined").expect("a run") == RunStatus::Paused {
                paused += 1;
            }
        }
    }
    while let Some(done) = tasks.join_next().await {
        if done.expect("joined").expect("a run") == RunStatus::Paused {
            paused += 1;
        }
    }
    assert_eq!(paused, WAITING);

    let app = console(dir.path(), None, false).router();
    for _ in 0..2 {
        // The first listing builds the run index; the second reads it.
        let list = get(&app, "/", None).await;
        assert_eq!(list.status, StatusCode::OK);
        assert!(
            list.body.contains(&format!("{RUNS} runs · page 1 of 200")),
            "{}",
            &list.body[..2000.min(list.body.len())]
        );
        assert_eq!(list.body.matches("<tr><td><a href=\"/runs/").count(), 50);
    }
    let last = get(&app, "/?page=200", None).await.body;
    assert_eq!(last.matches("<tr><td><a href=\"/runs/").count(), 50);
    let waiting = get(&app, "/?status=waiting", None).await.body;
    assert!(
        waiting.contains(&format!("{WAITING} runs · page 1 of 1")),
        "{waiting}"
    );
    let inbox = get(&app, "/inbox", None).await.body;
    assert!(
        inbox.contains(&format!("{WAITING} runs waiting for a person")),
        "{inbox}"
    );
}
