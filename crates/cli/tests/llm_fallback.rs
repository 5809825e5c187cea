//! `rein run` with an LLM planner's `"fallbacks"` against two loopback fake servers: a
//! primary that fails with 503 hands each call to the fallback, the ledger names the model
//! each attempt went to and the one that answered, and `rein inspect --prompt` still
//! rebuilds and verifies a call's request.

mod support;

use rein_llm::fake::{Call, FakeServer, Reply};
use serde_json::{Value, json};
use support::{Outcome, Scratch, rein};

fn call(name: &str, args: &Value) -> Reply {
    Reply::openai_calls(&[Call::new(name, args)], (90, 10))
}

async fn blocking(command: assert_cmd::Command) -> Outcome {
    let mut command = command;
    tokio::task::spawn_blocking(move || Outcome::of(&command.output().unwrap()))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_primary_hands_each_call_to_the_fallback_on_the_record() {
    // Out of script, the primary answers 500 to every request.
    let primary = FakeServer::start([Reply::status(503, "unavailable")])
        .await
        .unwrap();
    let spare = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        call("transition", &json!({"to": "decide", "reason": "seen"})),
        call(
            "finish",
            &json!({"summary": "done", "result": {"ok": true}}),
        ),
    ])
    .await
    .unwrap();
    let text = json!({
        "goal": "Report",
        "workspace": "workspace",
        "tools": [{"builtin": "fs.read"}],
        "policies": {"budgets": {"tokens": 100000}},
        "planner": {"llm": {
            "provider": {"api": "open_ai", "base_url": primary.base_url(), "model": "big", "retries": 0},
            "fallbacks": [{"api": "open_ai", "base_url": spare.base_url(), "model": "spare", "retries": 0}]
        }}
    })
    .to_string();
    let scratch = Scratch::new();
    let file = scratch.write("llm.json", &text);
    let mut command = rein();
    command
        .arg("run")
        .arg(&file)
        .arg("--data-dir")
        .arg(scratch.data());
    blocking(command)
        .await
        .expect_code(0)
        .stdout_has(&["completed"]);
    assert_eq!(primary.requests().len(), 3);
    assert_eq!(spare.requests().len(), 3);

    let id = scratch.new_run_id(&[]);
    let models: Vec<(String, String)> = std::fs::read_to_string(scratch.ledger(&id))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter_map(|e| {
            let event = &e["event"];
            let named = match event["type"].as_str()? {
                "planner_attempt" => &event["attempt"],
                "planner_call" => &event["call"],
                _ => return None,
            };
            Some((
                event["type"].as_str()?.to_owned(),
                named["model"].as_str()?.to_owned(),
            ))
        })
        .collect();
    let step = [
        ("planner_attempt".to_owned(), "big".to_owned()),
        ("planner_attempt".to_owned(), "spare".to_owned()),
        ("planner_call".to_owned(), "spare".to_owned()),
    ];
    assert_eq!(models, [step.clone(), step.clone(), step].concat());

    // A call's first attempt (to the primary) is rebuilt and matches the record.
    let mut command = rein();
    command
        .args(["inspect", &id, "--prompt", "1", "--scenario"])
        .arg(&file)
        .arg("--data-dir")
        .arg(scratch.data());
    let outcome = blocking(command).await;
    outcome.expect_code(0).stdout_has(&["matches the ledger"]);
    let printed = outcome.stdout.rsplit_once("\nrequest sha256").unwrap().0;
    let printed: Value = serde_json::from_str(printed).unwrap();
    assert_eq!(printed, primary.requests()[1].json());
}
