//! The span of one model call (`chat {model}`), fielded per the `GenAI` conventions
//! ([`rein_run::telemetry`] names them), and what is recorded on it from the reply.
//!
//! A plain `tracing` span with the `rein::telemetry` target: with no subscriber interested
//! it builds nothing. The prompt and the reply are content, sent only as a `rein::content`
//! event that an exporter leaves out unless content capture is on. Headers (the API key
//! among them) are never recorded, nor the user part of the server's URL.

use rein_run::telemetry::{
    CACHE_CREATION_TOKENS, CACHE_READ_TOKENS, CHAT, CONTENT_TARGET, ERROR_TYPE, FINISH_REASONS,
    INFERENCE_DETAILS, INPUT_MESSAGES, INPUT_TOKENS, OP_CHAT, OPERATION_NAME, OTEL_KIND, OTEL_NAME,
    OTEL_STATUS_CODE, OUTPUT_MESSAGES, OUTPUT_TOKENS, PROVIDER_NAME, REQUEST_MODEL, RESPONSE_MODEL,
    SERVER_ADDRESS, SERVER_PORT, TARGET, int,
};
use tracing::Span;
use tracing::field::Empty;

use crate::error::LlmError;
use crate::provider::Completion;

/// The span of a call of `provider`'s `model` at `url`.
pub(crate) fn chat_span(provider: &str, model: &str, url: &str) -> Span {
    let (host, port) = host_port(url);
    tracing::info_span!(
        target: TARGET,
        CHAT,
        { OTEL_NAME } = %format_args!("{OP_CHAT} {model}"),
        { OTEL_KIND } = "client",
        { OPERATION_NAME } = OP_CHAT,
        { PROVIDER_NAME } = provider,
        { REQUEST_MODEL } = model,
        { RESPONSE_MODEL } = Empty,
        { SERVER_ADDRESS } = host,
        { SERVER_PORT } = i64::from(port),
        { FINISH_REASONS } = Empty,
        { INPUT_TOKENS } = Empty,
        { OUTPUT_TOKENS } = Empty,
        { CACHE_READ_TOKENS } = Empty,
        { CACHE_CREATION_TOKENS } = Empty,
        { OTEL_STATUS_CODE } = Empty,
        { ERROR_TYPE } = Empty,
    )
}

/// The request body as content (inside the call's span).
pub(crate) fn request_content(body: &[u8]) {
    tracing::event!(
        name: INFERENCE_DETAILS,
        target: CONTENT_TARGET,
        tracing::Level::TRACE,
        { { INPUT_MESSAGES } = %String::from_utf8_lossy(body) }
    );
}

/// Records how the call ended on its span: usage and finish reason, or the error's class.
pub(crate) fn record_outcome(span: &Span, outcome: &Result<Completion, LlmError>) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Ok(completion) => {
            let response = &completion.response;
            let usage = &response.usage;
            span.record(INPUT_TOKENS, int(usage.input_tokens));
            span.record(OUTPUT_TOKENS, int(usage.output_tokens));
            span.record(CACHE_READ_TOKENS, int(usage.cache_read_tokens));
            span.record(CACHE_CREATION_TOKENS, int(usage.cache_write_tokens));
            if let Some(reason) = &response.finish_reason {
                span.record(FINISH_REASONS, reason.as_str());
            }
            if let Some(model) = &response.model {
                span.record(RESPONSE_MODEL, model.as_str());
            }
            span.in_scope(|| {
                tracing::event!(
                    name: INFERENCE_DETAILS,
                    target: CONTENT_TARGET,
                    tracing::Level::TRACE,
                    { { OUTPUT_MESSAGES } = %Reply(response) }
                );
            });
        }
        Err(error) => {
            span.record(OTEL_STATUS_CODE, "error");
            span.record(ERROR_TYPE, error_type(error));
        }
    }
}

/// The class of an error: its variant's name, none of its data (which may quote a server).
fn error_type(error: &LlmError) -> String {
    let debug = format!("{error:?}");
    let end = debug
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(debug.len());
    debug[..end].to_owned()
}

/// The host and port of `url`, without its scheme, user part, path or query.
fn host_port(url: &str) -> (&str, u16) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let default = if scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        80
    };
    // A bracketed IPv6 address keeps its colons.
    match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().unwrap_or(default)),
        _ => (authority, default),
    }
}

/// A reply as content: its text and the functions it called.
struct Reply<'a>(&'a crate::chat::ChatResponse);

impl std::fmt::Display for Reply<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let calls: Vec<_> = self
            .0
            .calls
            .iter()
            .map(|c| serde_json::json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
            .collect();
        let value = serde_json::json!({"text": self.0.text, "calls": calls});
        write!(f, "{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_address_leaves_out_scheme_user_and_path() {
        assert_eq!(
            host_port("https://api.example.com/v1/chat"),
            ("api.example.com", 443)
        );
        assert_eq!(
            host_port("http://user:secret@127.0.0.1:8080/v1"),
            ("127.0.0.1", 8080)
        );
        assert_eq!(host_port("http://[::1]:9000/x"), ("[::1]", 9000));
        assert_eq!(host_port("http://[::1]/x"), ("[::1]", 80));
    }

    #[test]
    fn an_error_type_is_the_variant_name_only() {
        let error = LlmError::Server {
            status: 500,
            excerpt: "secret body".into(),
        };
        assert_eq!(error_type(&error), "Server");
    }
}
