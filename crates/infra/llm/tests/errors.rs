//! `LlmError` keeps the error that caused it as its source (the HTTP client's, a parser's,
//! the file system's), and no link of that chain shows a secret.

use std::error::Error as _;

use rein_llm::fake::{FakeServer, Reply};
use rein_llm::{
    Api, ChatRequest, HeaderSource, HttpProvider, LlmError, Message, Provider, ProviderConfig,
    Replayer,
};
use serde_json::json;

fn request() -> ChatRequest {
    ChatRequest {
        system: "you are terse".into(),
        messages: vec![Message::User {
            text: "hello".into(),
        }],
        functions: Vec::new(),
    }
}

/// Every link of `e`'s chain as text, `Debug` of the whole included.
fn chain(e: &LlmError) -> Vec<String> {
    let mut shown = vec![e.to_string(), format!("{e:?}")];
    let mut next = e.source();
    while let Some(s) = next {
        shown.push(s.to_string());
        next = s.source();
    }
    shown
}

#[tokio::test]
async fn a_connection_error_keeps_the_http_clients_error_as_its_source() {
    let server = FakeServer::start([]).await.unwrap();
    let url = server.base_url();
    server.stop().await;
    let config = ProviderConfig::new(Api::OpenAi, url, "m").with_retries(0);
    let e = HttpProvider::with_key(config, None)
        .unwrap()
        .complete(&request())
        .await
        .unwrap_err();
    assert!(matches!(e, LlmError::Connection { .. }), "{e}");
    let source = e.source().expect("the HTTP client's error");
    assert!(
        source.downcast_ref::<reqwest::Error>().is_some(),
        "{source:?}"
    );
    // What failed below it (the refused connection) is in the chain, not lost in a string.
    assert!(chain(&e).len() > 3, "{:?}", chain(&e));
}

#[tokio::test]
async fn a_malformed_reply_keeps_the_parsers_error_as_its_source() {
    for api in [Api::OpenAi, Api::Anthropic] {
        for stream in [false, true] {
            let reply = if stream {
                Reply::sse_pieces(b"data: {not json\n\n", 64)
            } else {
                Reply::Json(json!({"choices": 3, "content": 3}))
            };
            let server = FakeServer::start([reply]).await.unwrap();
            let config = ProviderConfig::new(api, server.base_url(), "m")
                .with_stream(stream)
                .with_retries(0);
            let e = HttpProvider::with_key(config, None)
                .unwrap()
                .complete(&request())
                .await
                .unwrap_err();
            assert!(
                matches!(e, LlmError::Malformed { .. }),
                "{api:?} {stream}: {e}"
            );
            let source = e.source().expect("the parser's error");
            assert!(
                source.downcast_ref::<serde_json::Error>().is_some(),
                "{api:?} {stream}: {source:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_key_a_parser_quotes_from_a_reply_is_in_no_link_of_the_chain() {
    for api in [Api::OpenAi, Api::Anthropic] {
        let server = FakeServer::start([Reply::Json(
            json!({"choices": "sk-test-secret", "content": "sk-test-secret"}),
        )])
        .await
        .unwrap();
        let config = ProviderConfig::new(api, server.base_url(), "m").with_retries(0);
        let e = HttpProvider::with_key(config, Some("sk-test-secret"))
            .unwrap()
            .complete(&request())
            .await
            .unwrap_err();
        assert!(matches!(e, LlmError::Malformed { .. }), "{e}");
        let shown = chain(&e);
        assert!(shown.len() >= 3, "the cause stays in the chain: {shown:?}");
        for text in shown {
            assert!(!text.contains("sk-test-secret"), "{api:?}: {text}");
        }
    }
}

#[test]
fn a_header_that_cannot_be_sent_is_a_typed_error_that_never_shows_its_value() {
    let config = ProviderConfig {
        extra_headers: vec![("x-token".into(), HeaderSource::from("tok\nsecret-1"))],
        ..ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:9/v1", "m")
    };
    let e = HttpProvider::with_key(config, None).unwrap_err();
    assert!(
        matches!(&e, LlmError::HeaderValue { header, .. } if header == "x-token"),
        "{e}"
    );
    assert!(e.source().is_some(), "{e:?}");
    for text in chain(&e) {
        assert!(!text.contains("secret-1"), "{text}");
    }

    let config = ProviderConfig {
        extra_headers: vec![("bad header".into(), HeaderSource::from("v"))],
        ..ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:9/v1", "m")
    };
    let e = HttpProvider::with_key(config, None).unwrap_err();
    assert!(
        matches!(&e, LlmError::HeaderName { header, .. } if header == "bad header"),
        "{e}"
    );
    assert!(
        e.to_string().contains("`bad header` is not a header name"),
        "{e}"
    );

    let config = ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:9/v1", "m")
        .with_api_key_env("REIN_TEST_BAD_KEY");
    let e = HttpProvider::with_key(config, Some("sk-\nsecret-2")).unwrap_err();
    assert!(
        matches!(&e, LlmError::KeyNotHeaderSafe { var, .. } if var == "REIN_TEST_BAD_KEY"),
        "{e}"
    );
    for text in chain(&e) {
        assert!(!text.contains("secret-2"), "{text}");
    }
}

#[test]
fn a_cassette_that_is_not_one_says_which_line_and_keeps_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let config = ProviderConfig::new(Api::OpenAi, "http://127.0.0.1:9/v1", "m");

    let missing = dir.path().join("missing.jsonl");
    let e = Replayer::open(&missing, config.clone()).unwrap_err();
    assert!(matches!(e, LlmError::Cassette { .. }), "{e}");
    let source = e.source().expect("the I/O error");
    assert_eq!(
        source
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind),
        Some(std::io::ErrorKind::NotFound)
    );

    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "\n{\"provider\": 1}\n").unwrap();
    let e = Replayer::open(&bad, config).unwrap_err();
    assert!(matches!(e, LlmError::CassetteLine { line: 2, .. }), "{e}");
    assert!(e.to_string().contains("line 2"), "{e}");
    assert!(
        e.source()
            .is_some_and(|s| s.downcast_ref::<serde_json::Error>().is_some()),
        "{e:?}"
    );
}
