//! A long LLM run whose prompt is compacted, as a user of `rein` meets it: each compaction
//! is a `prompt_compacted` entry (what was left out, by hash, and the summary's hash), and
//! `rein inspect RUN --prompt` rebuilds every request byte for byte, the compacted retry
//! after "context exceeded" included.

mod support;

use rein_llm::fake::{Call, FakeServer, Reply};
use serde_json::{Value, json};
use support::{Outcome, Scratch, rein};

fn call(name: &str, args: &Value) -> Reply {
    Reply::openai_sse("", &[Call::new(name, args)], (90, 10), 5)
}

async fn rein_in(scratch: &Scratch, args: Vec<String>) -> Outcome {
    let data = scratch.data();
    tokio::task::spawn_blocking(move || {
        Outcome::of(
            &rein()
                .args(args)
                .arg("--data-dir")
                .arg(data)
                .output()
                .unwrap(),
        )
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn inspect_rebuilds_every_request_of_a_run_that_compacts() {
    let read = || call("fs_read", &json!({"path": "notes.txt"}));
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        read(),
        read(),
        read(),
        read(),
        read(),
        // Step 6's first request is refused as too long: compacted as at step 5 (the cut
        // moves two items at a time), it is no shorter, so the planner compacts harder and
        // sends it again.
        Reply::context_too_long(),
        call("fail", &json!({"reason": "enough"})),
    ])
    .await
    .unwrap();
    let scratch = Scratch::new();
    let text = json!({
        "goal": "Read notes.txt and report its first line",
        "workspace": "workspace",
        "tools": [{"builtin": "fs.read"}],
        "policies": {"budgets": {"tokens": 1_000_000}},
        "planner": {"llm": {
            "provider": {"api": "open_ai", "base_url": server.base_url(), "model": "fake", "retries": 0, "stream": true},
            // Over the limit from the first step: older results are summarised as the run grows.
            "planner": {"prompt": {"max_prompt_tokens": 1, "keep_last": 2}}
        }}
    })
    .to_string();
    let file = scratch.write("llm.json", &text);
    let file_arg = file.display().to_string();
    rein_in(&scratch, vec!["run".into(), file_arg.clone()])
        .await
        .expect_code(1);
    let id = scratch.new_run_id(&[]);

    // Each compaction is on the record before the attempt that sent it.
    let entries: Vec<Value> = std::fs::read_to_string(scratch.ledger(&id))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let compactions: Vec<&Value> = entries
        .iter()
        .map(|e| &e["event"])
        .filter(|e| e["type"] == "prompt_compacted")
        .collect();
    assert!(compactions.len() >= 2, "{compactions:?}");
    let last = compactions.last().unwrap();
    assert_eq!(last["step"], 6);
    let c = &last["compaction"];
    assert_eq!(c["reason"], "context_exceeded");
    assert_eq!(c["keep_last"], 1, "compacted harder: half the items kept");
    // Five results: the last one kept.
    assert_eq!(c["results"], 4, "{c}");
    assert_eq!(c["kept_from"], 4, "{c}");
    // Where it cut, not a hash for each message left out.
    assert!(c.get("dropped").is_none(), "{c}");
    assert_eq!(c["summary"].as_str().unwrap().len(), 64);
    assert!(c["tokens_after"].as_u64() < c["tokens_before"].as_u64());
    assert!(
        compactions
            .iter()
            .any(|e| e["compaction"]["reason"] == "over_limit")
    );

    // Every request rebuilds byte for byte: the compacted retry is step 6's second call.
    for (args, request) in [
        ("0", 0),
        ("1", 1),
        ("2", 2),
        ("3", 3),
        ("4", 4),
        ("5", 5),
        ("6", 6),
        ("6 --call 2", 7),
    ] {
        let mut command: Vec<String> = vec!["inspect".into(), id.clone(), "--prompt".into()];
        command.extend(args.split_whitespace().map(str::to_owned));
        command.extend(["--scenario".to_owned(), file_arg.clone()]);
        let outcome = rein_in(&scratch, command).await;
        outcome.expect_code(0).stdout_has(&["matches the ledger"]);
        let printed = outcome.stdout.split("\ncompacted: ").next().unwrap();
        let printed = printed
            .rsplit_once("\nrequest sha256")
            .map_or(printed, |p| p.0);
        let printed: Value = serde_json::from_str(printed).unwrap();
        assert_eq!(printed, server.requests()[request].json(), "{args}");
    }
    assert_eq!(server.requests().len(), 8);
}
