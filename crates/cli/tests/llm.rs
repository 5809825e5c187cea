//! `rein run` with `"planner": {"llm": …}` against the loopback fake model server: a run
//! that completes, a tool error handed back to the model by default, a missing key variable
//! (exit 2, naming it), a model that never calls a function and an unreachable server
//! (exit 1, saying why).

mod support;

use rein_llm::fake::{Call, FakeServer, Reply};
use serde_json::{Value, json};
use support::{Outcome, Scratch, rein};

fn scenario(base_url: &str, provider_extra: &Value) -> String {
    let mut provider =
        json!({"api": "open_ai", "base_url": base_url, "model": "fake", "retries": 0});
    for (k, v) in provider_extra.as_object().unwrap() {
        provider[k] = v.clone();
    }
    json!({
        "goal": "Read notes.txt and report its first line",
        "workspace": "workspace",
        "tools": [{"builtin": "fs.list"}, {"builtin": "fs.read"}],
        "policies": {"budgets": {"tokens": 100000}, "on_violation": {"hand_back": {"limit": 2}}},
        "planner": {"llm": {"provider": provider, "planner": {"max_corrections": 1}}}
    })
    .to_string()
}

/// Runs `text` as a scenario off the async runtime (the fake server lives on it).
async fn run(scratch: &Scratch, text: &str) -> Outcome {
    let file = scratch.write("llm.json", text);
    let data = scratch.data();
    tokio::task::spawn_blocking(move || {
        Outcome::of(
            &rein()
                .arg("run")
                .arg(file)
                .arg("--data-dir")
                .arg(data)
                .env_remove("REIN_TEST_MISSING_KEY")
                .output()
                .unwrap(),
        )
    })
    .await
    .unwrap()
}

fn call(name: &str, args: &Value) -> Reply {
    Reply::openai_sse("", &[Call::new(name, args)], (90, 10), 5)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_reads_a_file_and_finishes() {
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        call("fs_read", &json!({"path": "notes.txt"})),
        call("transition", &json!({"to": "decide", "reason": "read"})),
        call(
            "finish",
            &json!({"summary": "read the notes", "result": {"ok": true}}),
        ),
    ])
    .await
    .unwrap();
    let scratch = Scratch::new();
    let outcome = run(
        &scratch,
        &scenario(&server.base_url(), &json!({"stream": true})),
    )
    .await;
    outcome.expect_code(0).stdout_has(&[
        "completed",
        "model      4 calls, 360 tokens in, 40 out",
        "tokens 400/100000",
    ]);
    assert_eq!(server.requests().len(), 4);
    // The tool result reached the model in the next prompt, answering its call.
    let prompt = server.requests()[2].told_since_last_turn();
    assert!(prompt.contains("notes.txt"), "{prompt}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_error_goes_back_to_the_model_unless_the_file_says_otherwise() {
    let replies = || {
        [
            call("transition", &json!({"to": "explore", "reason": "look"})),
            call("fs_read", &json!({"path": "missing.txt"})),
            call(
                "transition",
                &json!({"to": "decide", "reason": "not there"}),
            ),
            call(
                "finish",
                &json!({"summary": "no such file", "result": null}),
            ),
        ]
    };
    let file = |policies: Value, base_url: &str| {
        json!({
            "goal": "Read missing.txt",
            "workspace": "workspace",
            "tools": [{"builtin": "fs.read"}],
            "policies": policies,
            "planner": {"llm": {"provider": {"api": "open_ai", "base_url": base_url, "model": "fake", "retries": 0, "stream": true}}}
        })
        .to_string()
    };
    // Nothing said: a model gets the failure back and goes on.
    let server = FakeServer::start(replies()).await.unwrap();
    let scratch = Scratch::new();
    run(&scratch, &file(json!({}), &server.base_url()))
        .await
        .expect_code(0)
        .stdout_has(&["completed", "no such file"]);
    // Said: the run fails on the tool error.
    let server = FakeServer::start(replies()).await.unwrap();
    let said = json!({"on_tool_error": "fail"});
    run(&scratch, &file(said, &server.base_url()))
        .await
        .expect_code(1)
        .stdout_has(&["failed", "fs.read"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_key_variable_is_bad_input_naming_it() {
    let scratch = Scratch::new();
    let text = scenario(
        "http://127.0.0.1:9/v1",
        &json!({"api_key_env": "REIN_TEST_MISSING_KEY"}),
    );
    run(&scratch, &text)
        .await
        .expect_code(2)
        .stderr_has(&["REIN_TEST_MISSING_KEY", "planner.llm.provider"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn prose_only_and_unreachable_servers_fail_the_run_clearly() {
    let server = FakeServer::start([
        Reply::openai_text("I would rather chat."),
        Reply::openai_text("Still chatting."),
    ])
    .await
    .unwrap();
    let scratch = Scratch::new();
    run(&scratch, &scenario(&server.base_url(), &json!({})))
        .await
        .expect_code(1)
        .stdout_has(&["failed", "no usable function call"]);

    let url = {
        let gone = FakeServer::start([]).await.unwrap();
        let url = gone.base_url();
        gone.stop().await;
        url
    };
    run(&scratch, &scenario(&url, &json!({})))
        .await
        .expect_code(1)
        .stdout_has(&["failed", "cannot reach the model server"]);
}

#[test]
fn the_example_llm_scenario_is_valid() {
    let file = support::examples_dir().join("../llm/llm-agent.json");
    let outcome = Outcome::of(&rein().arg("validate").arg(&file).output().unwrap());
    outcome
        .expect_code(0)
        .stdout_has(&["valid", "planner: llm, local at http://127.0.0.1:8080/v1"]);
    let schema: Value = serde_json::from_str(
        &Outcome::of(&rein().args(["schema", "scenario"]).output().unwrap()).stdout,
    )
    .unwrap();
    let scenario: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(
        jsonschema::validator_for(&schema)
            .unwrap()
            .is_valid(&scenario)
    );
}

/// `rein inspect RUN --prompt STEP [--scenario FILE]` in `scratch`, off the async runtime
/// (`step` may carry more arguments: `"1 --call 2"`).
async fn inspect_prompt(
    scratch: &Scratch,
    id: &str,
    step: &str,
    file: Option<&std::path::Path>,
) -> Outcome {
    let (id, step, file, data) = (
        id.to_owned(),
        step.to_owned(),
        file.map(std::path::Path::to_owned),
        scratch.data(),
    );
    tokio::task::spawn_blocking(move || {
        let mut command = rein();
        command
            .args(["inspect", &id, "--prompt"])
            .args(step.split_whitespace());
        if let Some(file) = file {
            command.arg("--scenario").arg(file);
        }
        Outcome::of(&command.arg("--data-dir").arg(data).output().unwrap())
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn inspect_prompt_rebuilds_the_exact_request_a_step_sent() {
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        call("fs_read", &json!({"path": "notes.txt"})),
        call("transition", &json!({"to": "decide", "reason": "read"})),
        call(
            "finish",
            &json!({"summary": "read", "result": {"ok": true}}),
        ),
    ])
    .await
    .unwrap();
    let scratch = Scratch::new();
    let text = scenario(&server.base_url(), &json!({"stream": true}));
    run(&scratch, &text).await.expect_code(0);
    let id = scratch.new_run_id(&[]);
    let file = scratch.write("llm.json", &text);
    for step in 0..4 {
        let outcome = inspect_prompt(&scratch, &id, &step.to_string(), Some(&file)).await;
        outcome.expect_code(0).stdout_has(&["matches the ledger"]);
        // What was printed is byte for byte what the server received, pretty-printed.
        let printed = outcome.stdout.rsplit_once("\nrequest sha256").unwrap().0;
        let printed: Value = serde_json::from_str(printed).unwrap();
        assert_eq!(printed, server.requests()[step].json(), "step {step}");
    }
    // Without --scenario, the copy of the scenario `rein run` saved beside the run is used.
    inspect_prompt(&scratch, &id, "2", None)
        .await
        .expect_code(0)
        .stdout_has(&["matches the ledger"]);
    // Another planner configuration does not rebuild the recorded request: said so.
    let other = scratch.write(
        "other.json",
        &text.replace(
            "\"max_corrections\":1",
            "\"max_corrections\":1,\"prompt\":{\"system\":\"Be terse.\"}",
        ),
    );
    inspect_prompt(&scratch, &id, "1", Some(&other))
        .await
        .expect_code(4)
        .stderr_has(&[
            "hashes to",
            "the scenario's planner configuration is not the one the run used",
        ]);
    inspect_prompt(&scratch, &id, "9", Some(&file))
        .await
        .expect_code(2)
        .stderr_has(&["never planned step 9"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn inspect_prompt_rebuilds_a_call_after_a_correction() {
    let server = FakeServer::start([
        call("transition", &json!({"to": "explore", "reason": "look"})),
        // Prose: handed back; the step's second call carries the reply and the correction.
        Reply::openai_sse("I would read the notes.", &[], (90, 10), 5),
        call("fs_read", &json!({"path": "notes.txt"})),
        call("fail", &json!({"reason": "enough"})),
    ])
    .await
    .unwrap();
    let scratch = Scratch::new();
    let text = scenario(&server.base_url(), &json!({"stream": true}));
    run(&scratch, &text).await.expect_code(1);
    let id = scratch.new_run_id(&[]);
    let file = scratch.write("llm.json", &text);
    for (args, request) in [("1", 1), ("1 --call 1", 1), ("1 --call 2", 2), ("2", 3)] {
        let outcome = inspect_prompt(&scratch, &id, args, Some(&file)).await;
        outcome.expect_code(0).stdout_has(&["matches the ledger"]);
        let printed = outcome.stdout.rsplit_once("\nrequest sha256").unwrap().0;
        let printed: Value = serde_json::from_str(printed).unwrap();
        assert_eq!(printed, server.requests()[request].json(), "{args}");
    }
    inspect_prompt(&scratch, &id, "1 --call 3", Some(&file))
        .await
        .expect_code(2)
        .stderr_has(&["step 1 made 2 model call(s), not 3"]);
}

#[test]
fn the_planner_may_be_spelled_with_a_kind() {
    let scratch = Scratch::new();
    let mut value: Value =
        serde_json::from_str(&scenario("http://127.0.0.1:8080/v1", &json!({}))).unwrap();
    let llm = value["planner"]["llm"].take();
    value["planner"] =
        json!({"kind": "llm", "provider": llm["provider"], "planner": llm["planner"]});
    let file = scratch.write("kind.json", &value.to_string());
    Outcome::of(&rein().arg("validate").arg(&file).output().unwrap())
        .expect_code(0)
        .stdout_has(&["valid", "planner: llm, fake at http://127.0.0.1:8080/v1"]);
    let schema: Value = serde_json::from_str(
        &Outcome::of(&rein().args(["schema", "scenario"]).output().unwrap()).stdout,
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&value));

    // Another kind, or a kind without a provider, is refused by both.
    for (planner, says) in [
        (
            json!({"kind": "gpt", "provider": llm["provider"]}),
            "\"llm\"",
        ),
        (json!({"kind": "llm"}), "missing field `provider`"),
        (
            json!({"kind": "llm", "provider": llm["provider"], "scripted": []}),
            "give one planner",
        ),
    ] {
        value["planner"] = planner;
        assert!(!validator.is_valid(&value), "{value}");
        let file = scratch.write("bad-kind.json", &value.to_string());
        Outcome::of(&rein().arg("validate").arg(&file).output().unwrap())
            .expect_code(2)
            .stderr_has(&[says]);
    }
}

/// The `type` of every entry of run `id`'s ledger, and the entries themselves.
fn ledger_entries(scratch: &Scratch, id: &str) -> Vec<Value> {
    std::fs::read_to_string(scratch.ledger(id))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_a_model_call_cancels_it_and_starts_nothing_new() {
    // Before: Ctrl-C waited for the whole model call, then asked the model once more for a
    // wrap-up step and threw that reply away (resume paid for it again).
    let server = FakeServer::start([
        Reply::Hang,
        call("fail", &json!({"reason": "never asked before the resume"})),
    ])
    .await
    .unwrap();
    let scratch = Scratch::new();
    let text = scenario(
        &server.base_url(),
        &json!({"timeout": 30_000, "stream": true}),
    );
    let file = scratch.write("llm.json", &text);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .arg("run")
        .arg(file)
        .arg("--data-dir")
        .arg(scratch.data())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Polls (a guard, not a timing assertion) until the model call is in flight.
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while server.requests().is_empty() {
        assert!(std::time::Instant::now() < give_up, "no model call");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let pid = child.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let output = tokio::task::spawn_blocking(move || {
        let _ = child.stdin.take();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let outcome = Outcome::of(&output);
    outcome
        .expect_code(130)
        .stderr_has(&["interrupting run", "model call in flight is cancelled"]);
    assert_eq!(server.requests().len(), 1, "no other model call started");
    let id = scratch.new_run_id(&[]);
    let entries = ledger_entries(&scratch, &id);
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds[kinds.len() - 4..],
        [
            "planner_call",
            "budget_consumed",
            "interrupt",
            "run_interrupted"
        ],
        "{kinds:?}"
    );
    let charged = entries
        .iter()
        .find(|e| e["event"]["type"] == "planner_call")
        .unwrap();
    assert!(
        charged["event"]["call"]["finish_reason"]
            .as_str()
            .unwrap()
            .starts_with("cancelled"),
        "{charged}"
    );
    assert!(!kinds.contains(&"decision"), "{kinds:?}");

    // The run resumes where it stopped, with the next model call.
    let data = scratch.data();
    let resumed = tokio::task::spawn_blocking(move || {
        Outcome::of(
            &rein()
                .args(["resume", &id, "--data-dir"])
                .arg(data)
                .output()
                .unwrap(),
        )
    })
    .await
    .unwrap();
    resumed.stdout_has(&["never asked before the resume"]);
    assert_eq!(server.requests().len(), 2);
}

/// Every file under `dir`, read as text (lossy).
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn header_values_are_never_stored_and_may_come_from_the_environment() {
    let server = FakeServer::start([call("fail", &json!({"reason": "checked the headers"}))])
        .await
        .unwrap();
    let scratch = Scratch::new();
    let text = scenario(
        &server.base_url(),
        &json!({
            "stream": true,
            "extra_headers": [
                ["api-key", "s3cret-azure-key"],
                ["x-api-key", {"from_env": "REIN_TEST_HEADER_KEY"}],
            ]
        }),
    );
    let file = scratch.write("llm.json", &text);
    let data = scratch.data();
    let outcome = tokio::task::spawn_blocking(move || {
        Outcome::of(
            &rein()
                .arg("run")
                .arg(file)
                .arg("--data-dir")
                .arg(data)
                .env("REIN_TEST_HEADER_KEY", "s3cret-from-env")
                .output()
                .unwrap(),
        )
    })
    .await
    .unwrap();
    outcome.stdout_has(&["checked the headers"]);
    assert!(
        server.requests()[0].authorized,
        "x-api-key sent, read from the environment"
    );
    for (path, text) in files_under(&scratch.data()) {
        assert!(
            !text.contains("s3cret"),
            "{} holds a header value",
            path.display()
        );
    }
    // The stored copy still rebuilds the prompt: a request body carries no header.
    let (id, data) = (scratch.new_run_id(&[]), scratch.data());
    tokio::task::spawn_blocking(move || {
        Outcome::of(
            &rein()
                .args(["inspect", &id, "--prompt", "0", "--data-dir"])
                .arg(data)
                .env("REIN_TEST_HEADER_KEY", "s3cret-from-env")
                .output()
                .unwrap(),
        )
    })
    .await
    .unwrap()
    .expect_code(0);

    // Unset, the variable is named, and nothing runs.
    let file = scratch.write("llm.json", &text);
    let data = scratch.data();
    let outcome = tokio::task::spawn_blocking(move || {
        Outcome::of(
            &rein()
                .arg("run")
                .arg(file)
                .arg("--data-dir")
                .arg(data)
                .env_remove("REIN_TEST_HEADER_KEY")
                .output()
                .unwrap(),
        )
    })
    .await
    .unwrap();
    outcome
        .expect_code(2)
        .stderr_has(&["REIN_TEST_HEADER_KEY", "x-api-key"]);
}
