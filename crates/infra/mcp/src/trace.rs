//! The W3C trace context an MCP call carries when telemetry is on: in the request's `_meta`
//! (`traceparent`, the key the MCP specification reserves for it, on every transport) and,
//! over streamable HTTP, as a `traceparent` header too, for the HTTP-level tracing of
//! gateways and servers that read no `_meta`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rein_run::telemetry::{TRACEPARENT, TraceContext};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestMetaObject};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// Where a server's calls take their trace context from, if anywhere. Compared by
/// presence (a port has no identity to compare).
#[derive(Clone, Default)]
pub(crate) struct Tracing(Option<Arc<dyn TraceContext>>);

impl crate::ServerConfig {
    /// Sends the W3C trace context of the span each call runs in (rein's `execute_tool`
    /// span) with the call: `traceparent` in the request's `_meta`, and over HTTP as a
    /// header too (see `rein::otel::Telemetry::trace_context`).
    #[must_use]
    pub fn with_trace_context(mut self, context: Arc<dyn TraceContext>) -> Self {
        self.tracing = Tracing(Some(context));
        self
    }
}

impl Tracing {
    /// No trace context: calls carry none.
    pub(crate) const NONE: Self = Self(None);

    /// `meta` with the current span's `traceparent` added (a new one when there is none).
    pub(crate) fn meta(&self, meta: Option<RequestMetaObject>) -> Option<RequestMetaObject> {
        let Some(parent) = self.0.as_ref().and_then(|t| t.current()) else {
            return meta;
        };
        let mut meta = meta.unwrap_or_default();
        meta.0.set_traceparent(parent.to_string());
        Some(meta)
    }
}

impl fmt::Debug for Tracing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Tracing").field(&self.0.is_some()).finish()
    }
}

impl PartialEq for Tracing {
    fn eq(&self, other: &Self) -> bool {
        self.0.is_some() == other.0.is_some()
    }
}

impl Eq for Tracing {}

/// rmcp's reqwest client for streamable HTTP, adding to each posted request the
/// `traceparent` header its `_meta` carries. The request is sent by the transport's own
/// task, outside the span of the call, so the header is read off the message.
#[derive(Clone, Debug)]
pub(crate) struct TracedClient(reqwest::Client);

impl TracedClient {
    /// A client configured as rmcp's default one: no idle connections kept (a pooled
    /// connection stalls on delayed ACKs) and no redirect followed to another origin (it
    /// would replay the session id and the configured headers there) or that would drop
    /// the body.
    pub(crate) fn new() -> Result<Self, reqwest::Error> {
        const MAX_REDIRECTS: usize = 10;
        let policy = reqwest::redirect::Policy::custom(|attempt| {
            let keeps_body = matches!(
                attempt.status(),
                reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
            );
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if !keeps_body || !same_origin {
                attempt.stop()
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        });
        reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(policy)
            .build()
            .map(Self)
    }
}

/// `headers` with the `traceparent` of `message`'s `_meta`, if it has one.
fn with_traceparent(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return headers;
    };
    let meta = match &request.request {
        ClientRequest::CallToolRequest(r) => r.params.meta.as_ref(),
        ClientRequest::ReadResourceRequest(r) => r.params.meta.as_ref(),
        ClientRequest::GetPromptRequest(r) => r.params.meta.as_ref(),
        _ => None,
    };
    if let Some(value) = meta
        .and_then(|m| m.0.get_traceparent())
        .and_then(|v| HeaderValue::from_str(v).ok())
    {
        headers.insert(HeaderName::from_static(TRACEPARENT), value);
    }
    headers
}

impl StreamableHttpClient for TracedClient {
    type Error = reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        let headers = with_traceparent(&message, custom_headers);
        self.0
            .post_message(uri, message, session_id, auth_header, headers)
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        let headers = with_traceparent(&message, custom_headers);
        self.0.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            headers,
            max_sse_event_size,
        )
    }

    fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        let headers = with_traceparent(&message, custom_headers);
        self.0.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            headers,
            limits,
        )
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<Self::Error>>> + Send + '_ {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<
        Output = Result<
            BoxStream<'static, Result<Sse, SseError>>,
            StreamableHttpError<Self::Error>,
        >,
    > + Send
    + '_ {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<
        Output = Result<
            BoxStream<'static, Result<Sse, SseError>>,
            StreamableHttpError<Self::Error>,
        >,
    > + Send
    + '_ {
        self.0.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }
}
