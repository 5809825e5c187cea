//! `rein inspect RUN --prompt STEP` on a follow-up: the request its model call sent opens
//! with the earlier runs of its conversation, and the command rebuilds it from their
//! ledgers (each verified, each link checked) and matches the hash the ledger recorded.

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

/// `rein ARGS --data-dir DATA`.
fn rein_in(scratch: &Scratch, args: &[&str]) -> assert_cmd::Command {
    let mut command = rein();
    command.args(args).arg("--data-dir").arg(scratch.data());
    command
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follow_ups_prompt_is_rebuilt_with_its_conversation_and_matches_the_ledger() {
    let finish = |summary: &str| {
        call(
            "finish",
            &json!({"summary": summary, "result": {"ok": true}}),
        )
    };
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        call("fs_read", &json!({"path": "notes.txt"})),
        call("transition", &json!({"to": "decide", "reason": "read"})),
        finish("read the notes"),
        call("transition", &json!({"to": "explore", "reason": "again"})),
        call("transition", &json!({"to": "decide", "reason": "known"})),
        finish("said it again"),
    ])
    .await
    .unwrap();
    let text = json!({
        "goal": "Read notes.txt and report its first line",
        "workspace": "workspace",
        "tools": [{"builtin": "fs.read"}],
        "policies": {"budgets": {"tokens": 100000}},
        "planner": {"llm": {"provider": {
            "api": "open_ai", "base_url": server.base_url(), "model": "fake", "retries": 0
        }}}
    })
    .to_string();
    let scratch = Scratch::new();
    let file = scratch.write("llm.json", &text);
    let mut first = rein();
    first
        .arg("run")
        .arg(&file)
        .arg("--data-dir")
        .arg(scratch.data());
    blocking(first).await.expect_code(0);
    let previous = scratch.new_run_id(&[]);
    let before = scratch.run_ids();
    blocking(rein_in(
        &scratch,
        &["run", "--follow-up", &previous, "--goal", "say it again"],
    ))
    .await
    .expect_code(0);
    let id = scratch.new_run_id(&before);
    assert_eq!(server.requests().len(), 7);

    // Every model call of the follow-up, from the saved scenario copy: the same body it
    // sent, the first run's goal and tool result in it.
    for (step, sent) in [(0, 4), (1, 5), (2, 6)] {
        let outcome = blocking(rein_in(
            &scratch,
            &["inspect", &id, "--prompt", &step.to_string()],
        ))
        .await;
        outcome.expect_code(0).stdout_has(&["matches the ledger"]);
        let printed = outcome.stdout.rsplit_once("\nrequest sha256").unwrap().0;
        let printed: Value = serde_json::from_str(printed).unwrap();
        assert_eq!(printed, server.requests()[sent].json(), "step {step}");
        let body = printed.to_string();
        assert!(
            body.contains("Read notes.txt and report its first line")
                && body.contains("say it again"),
            "{body}"
        );
    }

    // An earlier run whose ledger was tampered with is refused, naming it (exit 4).
    let path = scratch.ledger(&previous);
    let ledger = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        ledger.replacen("report its first line", "say nothing", 1),
    )
    .unwrap();
    blocking(rein_in(&scratch, &["inspect", &id, "--prompt", "0"]))
        .await
        .expect_code(4)
        .stderr_has(&["the conversation is broken", &previous]);
}
