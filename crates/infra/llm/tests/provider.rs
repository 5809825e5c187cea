//! Both APIs, streamed and not, against the loopback fake server: replies, cut streams,
//! parallel calls, and every failure a server can produce.

use std::time::Duration;

use rein_llm::fake::{Call, FakeServer, Received, Reply};
use rein_llm::{
    Api, ChatRequest, Completion, FunctionDef, HttpProvider, LlmError, Message, Provider,
    ProviderConfig, Usage,
};
use serde_json::json;

fn request() -> ChatRequest {
    ChatRequest {
        system: "you are terse".into(),
        messages: vec![Message::User {
            text: "list then read".into(),
        }],
        functions: vec![FunctionDef {
            name: "fs_read".into(),
            description: "reads a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
    }
}

/// Calls a fresh fake server scripted with `replies` once, under `config` adjusted by
/// `tweak`; returns the outcome and what the server received.
async fn check(
    api: Api,
    stream: bool,
    replies: Vec<Reply>,
    tweak: impl FnOnce(ProviderConfig) -> ProviderConfig,
) -> (Result<Completion, LlmError>, Vec<Received>) {
    let server = FakeServer::start(replies).await.unwrap();
    let config =
        tweak(ProviderConfig::new(api, server.base_url(), "fake-model").with_stream(stream));
    let provider = HttpProvider::with_key(config, Some("sk-test-secret")).unwrap();
    let outcome = provider.complete(&request()).await;
    (outcome, server.requests())
}

fn same(c: ProviderConfig) -> ProviderConfig {
    c
}

const HEAVY: &str = "héllo wörld ✓ 日本語 🎉";

fn calls() -> Vec<Call> {
    vec![
        Call::new("fs_list", &json!({"path": "."})),
        Call::new("fs_read", &json!({"path": "ré/sumé ✓.txt"})),
    ]
}

#[tokio::test]
async fn openai_parallel_calls_non_streamed() {
    let (out, received) = check(
        Api::OpenAi,
        false,
        vec![Reply::openai_calls(&calls(), (40, 12))],
        same,
    )
    .await;
    let c = out.unwrap();
    let names: Vec<&str> = c.response.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["fs_list", "fs_read"]);
    assert_eq!(
        c.response.usage,
        Usage {
            input_tokens: 40,
            output_tokens: 12,
            ..Usage::default()
        }
    );
    assert_eq!(received[0].path, "/v1/chat/completions");
    assert!(received[0].authorized);
    let body = received[0].json();
    assert_eq!(body["tools"][0]["function"]["name"], "fs_read");
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(
        c.request_hash,
        rein_run::Digest::of_bytes(&received[0].body)
    );
}

#[tokio::test]
async fn anthropic_parallel_calls_non_streamed() {
    let (out, received) = check(
        Api::Anthropic,
        false,
        vec![Reply::anthropic("I will look.", &calls(), (50, 9))],
        same,
    )
    .await;
    let c = out.unwrap();
    assert_eq!(c.response.text, "I will look.");
    assert_eq!(c.response.calls.len(), 2);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&c.response.calls[1].arguments).unwrap()["path"],
        "ré/sumé ✓.txt"
    );
    assert_eq!(c.response.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(received[0].path, "/v1/messages");
    // The system prompt is a block marked for the prompt cache (with the tools before it).
    let body = received[0].json();
    assert_eq!(body["system"][0]["text"], "you are terse");
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
}

#[tokio::test]
async fn sse_cut_mid_utf8_and_mid_json_reassembles_for_both_apis() {
    for piece in [1, 3, 7, 64] {
        let (out, _) = check(
            Api::OpenAi,
            true,
            vec![Reply::openai_sse(HEAVY, &calls(), (21, 8), piece)],
            same,
        )
        .await;
        let c = out.unwrap();
        assert_eq!(c.response.text, HEAVY, "piece {piece}");
        assert_eq!(
            c.response.calls[1].arguments,
            calls()[1].arguments,
            "piece {piece}"
        );
        assert_eq!(
            c.response.usage,
            Usage {
                input_tokens: 21,
                output_tokens: 8,
                ..Usage::default()
            },
            "the final usage chunk"
        );

        let (out, _) = check(
            Api::Anthropic,
            true,
            vec![Reply::anthropic_sse(HEAVY, &calls(), (33, 4), piece)],
            same,
        )
        .await;
        let c = out.unwrap();
        assert_eq!(c.response.text, HEAVY, "piece {piece}");
        assert_eq!(
            c.response.calls[0].arguments,
            calls()[0].arguments,
            "piece {piece}"
        );
        assert_eq!(
            c.response.usage,
            Usage {
                input_tokens: 33,
                output_tokens: 4,
                ..Usage::default()
            }
        );
    }
}

#[tokio::test(start_paused = true)]
async fn rate_limited_then_success_waits_what_the_server_asked() {
    let started = tokio::time::Instant::now();
    let (out, received) = check(
        Api::OpenAi,
        false,
        vec![Reply::rate_limited(7), Reply::openai_text("ok")],
        same,
    )
    .await;
    assert_eq!(out.unwrap().response.text, "ok");
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].body, received[1].body, "the same request again");
    // Virtual time (paused clock): the retry waited the 7 s of Retry-After, not the 500 ms backoff.
    assert!(
        started.elapsed() >= Duration::from_secs(7),
        "{:?}",
        started.elapsed()
    );
}

/// A 429 whose `Retry-After` is an HTTP date `ahead` from now (wall clock).
fn rate_limited_until(ahead: Duration) -> Reply {
    Reply::Status {
        status: 429,
        headers: vec![(
            "retry-after".into(),
            httpdate::fmt_http_date(std::time::SystemTime::now() + ahead),
        )],
        body: r#"{"error":{"message":"rate limited"}}"#.into(),
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_date_is_waited_for_within_the_bound() {
    let started = tokio::time::Instant::now();
    let (out, received) = check(
        Api::OpenAi,
        false,
        vec![
            rate_limited_until(Duration::from_secs(200)),
            Reply::openai_text("ok"),
        ],
        // Above the default bound (120 s), within this one.
        |c| c.with_max_retry_after(Duration::from_secs(300)),
    )
    .await;
    assert_eq!(out.unwrap().response.text, "ok");
    assert_eq!(received.len(), 2);
    // The date has whole seconds and is read against the wall clock a moment later: the
    // wait is a little under 200 s of virtual time, far above the 500 ms backoff.
    assert!(
        (Duration::from_secs(150)..=Duration::from_secs(200)).contains(&started.elapsed()),
        "{:?}",
        started.elapsed()
    );

    // A date further away than the configured bound: no retry, the wait is reported.
    let (out, received) = check(
        Api::OpenAi,
        false,
        vec![
            rate_limited_until(Duration::from_secs(600)),
            Reply::openai_text("never asked"),
        ],
        |c| c.with_max_retry_after(Duration::from_secs(300)),
    )
    .await;
    let Err(LlmError::RateLimited {
        retry_after: Some(wait),
    }) = out
    else {
        panic!("expected a rate limit, got {out:?}");
    };
    assert!(wait > Duration::from_secs(300), "{wait:?}");
    assert_eq!(received.len(), 1);
}

#[tokio::test]
async fn unauthorized_names_the_variable_and_never_the_key() {
    for status in [401, 403] {
        let (out, received) = check(
            Api::Anthropic,
            false,
            vec![Reply::status(status, "invalid x-api-key")],
            |c| c.with_api_key_env("MY_MODEL_KEY"),
        )
        .await;
        let e = out.unwrap_err();
        assert_eq!(
            e,
            LlmError::Unauthorized {
                status,
                var: "MY_MODEL_KEY".into()
            }
        );
        assert!(e.to_string().contains("MY_MODEL_KEY"), "{e}");
        assert!(!e.to_string().contains("sk-test"), "{e}");
        assert_eq!(received.len(), 1, "never retried");
    }
}

#[tokio::test]
async fn a_missing_key_variable_is_a_typed_error() {
    let config = ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:9/v1", "m")
        .with_api_key_env("REIN_LLM_TEST_SURELY_UNSET_VAR");
    let e = HttpProvider::new(config).unwrap_err();
    assert_eq!(
        e,
        LlmError::MissingKey {
            var: "REIN_LLM_TEST_SURELY_UNSET_VAR".into()
        }
    );
}

#[tokio::test(start_paused = true)]
async fn server_errors_are_retried_then_open_the_breaker() {
    let server = FakeServer::start([
        Reply::status(500, "boom"),
        Reply::status(502, "boom"),
        Reply::status(503, "boom"),
        Reply::openai_text("never reached"),
    ])
    .await
    .unwrap();
    let mut config = ProviderConfig::new(Api::OpenAi, server.base_url(), "m").with_retries(2);
    config.breaker_failures = 1;
    let provider = HttpProvider::with_key(config, None).unwrap();
    let e = provider.complete(&request()).await.unwrap_err();
    assert!(matches!(e, LlmError::Server { status: 503, .. }), "{e}");
    assert_eq!(server.requests().len(), 3, "one call, three attempts");
    let e = provider.complete(&request()).await.unwrap_err();
    assert_eq!(e, LlmError::CircuitOpen { failures: 1 });
    assert_eq!(server.requests().len(), 3, "an open circuit sends nothing");
    // After the open window, one probe goes through and closes it.
    tokio::time::advance(Duration::from_secs(31)).await;
    assert_eq!(
        provider.complete(&request()).await.unwrap().response.text,
        "never reached"
    );
}

#[tokio::test(start_paused = true)]
async fn a_hung_server_times_out_streamed_or_not() {
    let (out, received) = check(Api::OpenAi, false, vec![Reply::Hang], |c| {
        c.with_timeout(Duration::from_secs(5)).with_retries(0)
    })
    .await;
    assert_eq!(out.unwrap_err(), LlmError::Timeout(Duration::from_secs(5)));
    assert_eq!(received.len(), 1);

    let Reply::Sse { chunks, .. } = Reply::openai_sse("partial", &[], (1, 1), 16) else {
        unreachable!()
    };
    let half = chunks[..chunks.len() / 2].to_vec();
    let (out, _) = check(
        Api::OpenAi,
        true,
        vec![Reply::Sse {
            chunks: half,
            hang: true,
        }],
        |c| c.with_timeout(Duration::from_secs(5)).with_retries(0),
    )
    .await;
    assert_eq!(out.unwrap_err(), LlmError::Timeout(Duration::from_secs(5)));
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_attempt_is_retried() {
    // A timed-out attempt used nothing of its reply: safe to send again, and it is.
    let (out, received) = check(
        Api::OpenAi,
        false,
        vec![Reply::Hang, Reply::openai_text("ok")],
        |c| c.with_timeout(Duration::from_secs(5)).with_retries(1),
    )
    .await;
    assert_eq!(out.unwrap().response.text, "ok");
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].body, received[1].body, "the same request again");
}

#[tokio::test]
async fn context_too_long_is_its_own_error() {
    let (out, received) = check(Api::OpenAi, false, vec![Reply::context_too_long()], same).await;
    assert!(matches!(out.unwrap_err(), LlmError::ContextTooLong { .. }));
    assert_eq!(received.len(), 1);
}

#[tokio::test]
async fn hostile_replies_are_bounded_typed_errors() {
    // Ten megabytes of prose, against a 1 MiB limit.
    let prose = "lorem ipsum ".repeat(900_000);
    let small = |mut c: ProviderConfig| {
        c.max_reply_bytes = 1 << 20;
        c
    };
    let (out, _) = check(Api::OpenAi, false, vec![Reply::openai_text(&prose)], small).await;
    assert_eq!(out.unwrap_err(), LlmError::TooLarge { limit: 1 << 20 });
    let sse = Reply::openai_sse(&prose, &[], (1, 1), 65_536);
    let (out, _) = check(Api::OpenAi, true, vec![sse], small).await;
    assert_eq!(out.unwrap_err(), LlmError::TooLarge { limit: 1 << 20 });

    // Invalid UTF-8, streamed or not.
    let (out, _) = check(
        Api::OpenAi,
        false,
        vec![Reply::Raw(
            b"{\"choices\":[{\"message\":{\"content\":\"\xff\xfe\"}}]}".to_vec(),
        )],
        same,
    )
    .await;
    assert!(matches!(out.unwrap_err(), LlmError::Malformed { .. }));
    let (out, _) = check(
        Api::OpenAi,
        true,
        vec![Reply::sse_pieces(b"data: {\"x\":\"\xff\"}\n\n", 4)],
        same,
    )
    .await;
    assert!(matches!(out.unwrap_err(), LlmError::Malformed { .. }));

    // Not the API at all, and a stream that just stops.
    let (out, _) = check(
        Api::Anthropic,
        false,
        vec![Reply::Json(json!({"content": [{"type": "tool_use"}]}))],
        same,
    )
    .await;
    let e = out.unwrap_err();
    assert!(matches!(e, LlmError::Malformed { .. }), "{e}");
    assert!(e.to_string().len() < 600, "bounded: {e}");
    let (out, _) = check(
        Api::Anthropic,
        true,
        vec![Reply::sse_pieces(
            b"event: ping\ndata: {\"type\":\"ping\"}\n\n",
            8,
        )],
        same,
    )
    .await;
    assert!(matches!(out.unwrap_err(), LlmError::Malformed { .. }));
}

#[tokio::test]
async fn an_unreachable_server_is_a_connection_error() {
    let server = FakeServer::start([]).await.unwrap();
    let url = server.base_url();
    server.stop().await;
    let config = ProviderConfig::new(Api::OpenAi, url.clone(), "m").with_retries(0);
    let e = HttpProvider::with_key(config, None)
        .unwrap()
        .complete(&request())
        .await
        .unwrap_err();
    assert!(
        matches!(&e, LlmError::Connection { url: u, .. } if u.starts_with(&url)),
        "{e}"
    );
}

#[tokio::test]
async fn a_key_echoed_back_by_the_server_is_scrubbed_from_errors() {
    for status in [400, 500] {
        let (out, _) = check(
            Api::OpenAi,
            false,
            vec![Reply::status(status, "bad request from key sk-test-secret")],
            |c| c.with_retries(0),
        )
        .await;
        let e = out.unwrap_err().to_string();
        assert!(!e.contains("sk-test-secret"), "{e}");
        assert!(e.contains("[redacted]"), "{e}");
    }
}

/// A one-shot server that answers `status 200` with `content_type`, writes `first` as the
/// first chunk of a chunked body, then closes the connection mid-body.
fn cut_off_server(content_type: &'static str, first: &'static str) -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        // The request: headers, then its body (as long as Content-Length says).
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = socket.read(&mut buf).unwrap();
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen).to_ascii_lowercase();
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if seen.len() >= end + 4 + length {
                    break;
                }
            }
            if n == 0 {
                break;
            }
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n",
            first.len()
        );
        socket.write_all(head.as_bytes()).unwrap();
        socket.flush().unwrap();
        // Dropped here: the body ends without its last chunk.
    });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn a_reply_cut_off_mid_way_says_so_streamed_or_not() {
    for (stream, content_type, first) in [
        (
            true,
            "text/event-stream",
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"},\"index\":0}]}\n\n",
        ),
        (false, "application/json", "{\"choices\": [{\"mess"),
    ] {
        let url = cut_off_server(content_type, first);
        let config = ProviderConfig::new(Api::OpenAi, url, "m")
            .with_stream(stream)
            .with_retries(0);
        let provider = HttpProvider::with_key(config, None).unwrap();
        let e = provider.complete(&request()).await.unwrap_err();
        assert!(matches!(e, LlmError::ReplyCut { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains("cut its reply off mid-way") && !text.contains("cannot reach"),
            "{text}"
        );
        assert!(e.is_transient(), "nothing of it was used: safe to retry");
    }
}
