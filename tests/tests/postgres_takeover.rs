//! A run taken over mid-step on `PostgreSQL`: worker A is held at a failpoint inside a tool
//! call; its lease is expired in SQL (no sleeping); worker B takes the run over with the
//! next fencing token and resumes it by the ledger-first rules; A, released, is fenced out
//! and appends nothing more. The ledger verifies and shows one token per stretch. Runs
//! against the `PostgreSQL` test cluster (`make pg-start`, or `REIN_TEST_PG_URL`;
//! docs/POSTGRES.md).

mod support;

use std::path::Path;
use std::time::Duration;

use rein::postgres::{PgConfig, PgStores};
use rein::{
    Annotations, Decision, Engine, RunId, RunSpec, RunStatus, ScriptStep, ScriptedPlanner, State,
    json,
};
use support::{echo, gated, walk_to};
use tokio_postgres::NoTls;

fn url() -> String {
    if let Ok(url) = std::env::var("REIN_TEST_PG_URL")
        && !url.trim().is_empty()
    {
        return url.trim().to_owned();
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pg/url");
    match std::fs::read_to_string(&file) {
        Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
        _ => panic!(
            "the PostgreSQL tests need a database: run `make pg-start`, or set \
             REIN_TEST_PG_URL to a postgres:// url; `make test` does the first for you"
        ),
    }
}

async fn sql() -> tokio_postgres::Client {
    let (client, connection) = url()
        .parse::<tokio_postgres::Config>()
        .unwrap()
        .connect(NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

fn script() -> ScriptedPlanner {
    let mut steps = walk_to(State::Act);
    steps.extend([
        ScriptStep::expect(State::Act, Decision::call_tool("task", json!({}), "do it")),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
        ScriptStep::expect(State::Validate, Decision::finish("done", json!("ok"))),
    ]);
    ScriptedPlanner::new(steps)
}

fn engine(stores: &PgStores, task: rein::FnTool) -> Engine {
    Engine::builder()
        .planner(script())
        .run_store(stores.runs().clone())
        .ledger_store(stores.ledgers().clone())
        .artifact_store(stores.artifacts().clone())
        .tool(task)
        .budget("tool_calls", 5)
        .build()
        .expect("engine builds")
}

const TTL: Duration = Duration::from_secs(600);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_held_past_its_lease_is_fenced_out_and_the_new_holder_finishes_the_run() {
    let config = PgConfig::from_url(&url()).unwrap();
    let (a, b) = (
        PgStores::connect(config.clone()).await.unwrap(),
        PgStores::connect(config).await.unwrap(),
    );
    let sql = sql().await;
    let annotations = Annotations::side_effecting().with_idempotent(true);
    let (slow_task, gate, a_calls) = gated("task", annotations);
    let (task, b_calls) = echo("task", annotations);
    let (engine_a, engine_b) = (engine(&a, slow_task), engine(&b, task));

    for round in 0..3 {
        let id: RunId = format!("takeover-{}-{round}", std::process::id())
            .parse()
            .unwrap();
        let lease_a = a.acquire_lease(&id, "worker-a", TTL).await.unwrap();
        let handle = engine_a
            .start(RunSpec::new("taken over").with_id(id.clone()))
            .await
            .unwrap();
        gate.entered().await; // A is mid-step, inside the tool call.

        sql.execute(
            "UPDATE rein_leases SET expires_at = now() - interval '1 second' WHERE run_id = $1",
            &[&id.as_str()],
        )
        .await
        .unwrap();
        let lease_b = b.acquire_lease(&id, "worker-b", TTL).await.unwrap();
        assert_eq!(lease_b.token(), lease_a.token() + 1);
        let finished = engine_b.resume(&id).await.expect("B resumes the run");
        assert_eq!(finished.status(), RunStatus::Completed);

        // A is released: its tool returns, and its next write is refused.
        gate.release();
        let err = handle
            .wait()
            .await
            .expect_err("A cannot record anything more");
        assert!(err.to_string().contains("fenced out"), "{err}");

        let stored = engine_b.ledger(&id).await.unwrap();
        stored.verify().unwrap();
        assert_eq!(
            stored.entries().last().unwrap().seq() as usize,
            stored.len()
        );
        let tokens: Vec<i64> = sql
            .query(
                "SELECT fencing_token FROM rein_ledger WHERE run_id = $1 ORDER BY seq",
                &[&id.as_str()],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let (ta, tb) = (lease_a.token() as i64, lease_b.token() as i64);
        let switch = tokens.iter().position(|&t| t == tb).expect("B wrote");
        assert!(switch > 0, "A wrote before the takeover");
        assert!(
            tokens[..switch].iter().all(|&t| t == ta) && tokens[switch..].iter().all(|&t| t == tb),
            "one token per stretch: {tokens:?}"
        );
        b.release_lease(&lease_b).await.unwrap();
    }
    // The idempotent call in doubt was retried by B; A's ran once per round.
    assert_eq!((a_calls.calls(), b_calls.calls()), (3, 3));
}
