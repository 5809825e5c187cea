//! `--otlp` and the standard `OTEL_*` variables: a run's spans reach a collector under the
//! service name asked for, its model calls carry their span's `traceparent`, a malformed
//! endpoint is bad input before anything runs, and an unreachable collector never fails a
//! run (it is reported once, at the end).

mod support;

use rein_llm::fake::{Call, FakeServer, Reply};
use rein_otel::receiver::{Receiver, attribute};
use serde_json::json;
use support::{Outcome, Scratch, rein};

/// `rein run happy-path.json` with `args` before the subcommand and `env` set.
fn run(scratch: &Scratch, args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let mut cmd = rein();
    cmd.env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_SERVICE_NAME");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd
        .args(args)
        .arg("run")
        .arg(scratch.scenario("happy-path.json"))
        .arg("--data-dir")
        .arg(scratch.data())
        .output()
        .unwrap();
    Outcome::of(&output)
}

#[test]
fn a_run_exports_its_trace_to_the_collector_named_by_the_flag() {
    let scratch = Scratch::new();
    let receiver = Receiver::start().unwrap();
    let out = run(
        &scratch,
        &["--otlp", &receiver.url()],
        &[("OTEL_SERVICE_NAME", "notes-agent")],
    );
    out.expect_code(0);
    assert!(!out.stderr.contains("telemetry"), "{}", out.stderr);
    let requests = receiver.trace_requests();
    let resource = requests[0].resource_spans[0]
        .resource
        .as_ref()
        .expect("a resource");
    assert_eq!(
        attribute(&resource.attributes, "service.name").as_deref(),
        Some("notes-agent")
    );
    let names: Vec<String> = receiver.spans().into_iter().map(|s| s.name).collect();
    for name in [
        "invoke_agent rein",
        "execute_tool fs.list",
        "execute_tool fs.write",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
}

#[test]
fn the_standard_variable_turns_export_on() {
    let scratch = Scratch::new();
    let receiver = Receiver::start().unwrap();
    run(
        &scratch,
        &[],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.url())],
    )
    .expect_code(0);
    assert!(
        receiver
            .spans()
            .iter()
            .any(|s| s.name == "invoke_agent rein")
    );
}

#[test]
fn a_malformed_endpoint_is_bad_input_before_anything_runs() {
    let scratch = Scratch::new();
    let out = run(&scratch, &["--otlp", "localhost:4318"], &[]);
    out.expect_code(2);
    assert!(
        out.stderr.contains(
            "--otlp: invalid OTLP endpoint `localhost:4318`: its scheme must be http or https"
        ),
        "{}",
        out.stderr
    );
    assert!(!scratch.data().exists(), "nothing ran");

    let out = run(
        &scratch,
        &[],
        &[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://ops:hunter2@collector:4318",
        )],
    );
    out.expect_code(2);
    assert!(out.stderr.contains("credentials"), "{}", out.stderr);
    assert!(!out.stderr.contains("hunter2"), "{}", out.stderr);
}

#[test]
fn an_unreachable_collector_never_fails_the_run() {
    let scratch = Scratch::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let out = run(
        &scratch,
        &["--otlp", &format!("http://127.0.0.1:{port}")],
        &[],
    );
    out.expect_code(0);
    assert!(
        out.stderr.contains("warning: telemetry:") && out.stderr.contains("failed to send"),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn with_otlp_a_model_call_carries_the_traceparent_of_its_exported_chat_span() {
    let server = FakeServer::start([Reply::openai_calls(
        &[Call::new("fail", &json!({"reason": "nothing to do"}))],
        (10, 5),
    )])
    .await
    .unwrap();
    let receiver = Receiver::start().unwrap();
    let scratch = Scratch::new();
    let file = scratch.write(
        "llm.json",
        &json!({
            "goal": "Nothing to do",
            "planner": {"llm": {"provider": {"api": "open_ai", "base_url": server.base_url(),
                                             "model": "fake", "retries": 0}}}
        })
        .to_string(),
    );
    let (data, url) = (scratch.data(), receiver.url());
    let out = tokio::task::spawn_blocking(move || {
        let output = rein()
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .args(["--otlp", &url, "run"])
            .arg(file)
            .arg("--data-dir")
            .arg(data)
            .output()
            .unwrap();
        Outcome::of(&output)
    })
    .await
    .unwrap();
    out.expect_code(1);
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    let header = sent[0].traceparent.clone().expect("a traceparent header");
    let parts: Vec<&str> = header.split('-').collect();
    assert_eq!(parts.len(), 4, "{header}");
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let chat = receiver
        .spans()
        .into_iter()
        .find(|s| s.name == "chat fake")
        .expect("the chat span was exported");
    assert_eq!(
        (parts[1], parts[2]),
        (hex(&chat.trace_id).as_str(), hex(&chat.span_id).as_str())
    );
}
