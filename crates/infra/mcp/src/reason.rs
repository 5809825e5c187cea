//! Why an MCP exchange failed, in words a user can act on: rmcp's errors wrap the real cause
//! in layers named after its internal types (`Transport [rmcp::transport::worker::…] error:
//! Transport fatal Client error: …`), and hide the cause of an HTTP failure (the refused
//! connection) behind the client's error. This unwraps those layers and keeps the causes.

use std::error::Error;

use rmcp::service::{ClientInitializeError, ServerInitializeError, ServiceError};
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
};
use rmcp::transport::worker::WorkerQuitReason;

use crate::config::redacted_url;

/// The error of rein's streamable HTTP transport (rmcp's client over reqwest).
type HttpError = StreamableHttpError<reqwest::Error>;

/// How rein's streamable HTTP transport ends.
type HttpQuit = WorkerQuitReason<HttpError>;

/// Why a handshake failed.
pub(crate) enum HandshakeFailure {
    /// The HTTP server refused rein's credentials (or their absence) with this status.
    Refused(u16),
    /// Anything else, described.
    Other(String),
    /// A listing handed out cursors for more than [`crate::MAX_PAGES`] pages.
    TooManyPages(&'static str),
}

/// What went wrong during the handshake.
pub(crate) fn handshake(error: &ClientInitializeError) -> HandshakeFailure {
    if let Some(status) = refused_status(error) {
        return HandshakeFailure::Refused(status);
    }
    HandshakeFailure::Other(describe(error))
}

/// The HTTP status an authorization failure anywhere in `error`'s chain carries.
pub(crate) fn refused_status(error: &(dyn Error + 'static)) -> Option<u16> {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.is::<AuthRequiredError>() {
            return Some(401);
        }
        if e.is::<InsufficientScopeError>() {
            return Some(403);
        }
        next = inner(e).or_else(|| e.source());
    }
    None
}

/// `error` and its causes, joined by `: `, without rmcp's wrapper layers; a cause whose
/// text the previous one already holds is left out.
pub(crate) fn describe(error: &(dyn Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(wrapped) = inner(e) {
            next = Some(wrapped);
            continue;
        }
        next = e.source();
        let mut text = own_text(e).unwrap_or_else(|| e.to_string());
        // reqwest names the URL, query included: show it as the configuration is shown.
        if let Some(url) = e
            .downcast_ref::<reqwest::Error>()
            .and_then(reqwest::Error::url)
        {
            text = text.replace(url.as_str(), &redacted_url(url.as_str()));
        }
        if !parts.last().is_some_and(|last| last.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

/// The error a wrapper layer of rmcp's stands for, if `error` is one.
fn inner<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a (dyn Error + 'static)> {
    if let Some(dynamic) = error.downcast_ref::<DynamicTransportError>() {
        return Some(dynamic.error.as_ref());
    }
    if let Some(WorkerQuitReason::Fatal { error, .. }) = error.downcast_ref::<HttpQuit>() {
        return Some(error);
    }
    match error.downcast_ref::<HttpError>() {
        Some(StreamableHttpError::Client(client)) => return Some(client),
        Some(StreamableHttpError::HttpStatus(status)) => return Some(status),
        _ => {}
    }
    match error.downcast_ref::<ClientInitializeError>() {
        Some(ClientInitializeError::TransportError { error, .. }) => return Some(error),
        Some(ClientInitializeError::LegacyFallbackFailed { fallback, .. }) => {
            return Some(&**fallback);
        }
        _ => {}
    }
    if let Some(ServerInitializeError::TransportError { error, .. }) =
        error.downcast_ref::<ServerInitializeError>()
    {
        return Some(error);
    }
    match error.downcast_ref::<ServiceError>() {
        Some(ServiceError::TransportSend(error)) => Some(error),
        _ => None,
    }
}

/// rein's own words for an error whose text is rmcp's jargon or too long to show.
fn own_text(error: &(dyn Error + 'static)) -> Option<String> {
    if let Some(io) = error.downcast_ref::<std::io::Error>()
        && io.kind() == std::io::ErrorKind::BrokenPipe
    {
        // Writing to a child that has exited: the same end as reading its closed stdout.
        return Some("the connection closed (a broken pipe)".to_owned());
    }
    if let Some(status) = error.downcast_ref::<HttpStatusError>() {
        return Some(format!("it answered HTTP {}", status.status));
    }
    if let Some(init) = error.downcast_ref::<ClientInitializeError>() {
        return match init {
            ClientInitializeError::ExpectedInitResponse(_)
            | ClientInitializeError::ExpectedInitResult(_) => Some(
                "it answered the initialize request with something other than its result"
                    .to_owned(),
            ),
            ClientInitializeError::ConnectionClosed(_) => {
                Some("the connection closed before it answered".to_owned())
            }
            ClientInitializeError::JsonRpcError(data) => Some(format!(
                "it refused the initialize request: {}",
                data.message
            )),
            _ => None,
        };
    }
    match error.downcast_ref::<ServerInitializeError>() {
        Some(ServerInitializeError::ExpectedInitializeRequest(_)) => {
            return Some("it sent something other than an initialize request".to_owned());
        }
        Some(ServerInitializeError::ConnectionClosed(_)) => {
            return Some("the connection closed before it initialized".to_owned());
        }
        _ => {}
    }
    match error.downcast_ref::<ServiceError>() {
        Some(ServiceError::TransportClosed) => Some("the connection closed".to_owned()),
        Some(ServiceError::McpError(data)) => {
            Some(format!("it answered an error: {}", data.message))
        }
        _ => match error.downcast_ref::<HttpQuit>() {
            Some(WorkerQuitReason::TransportClosed | WorkerQuitReason::HandlerTerminated) => {
                Some("the connection closed".to_owned())
            }
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::any::TypeId;

    use super::*;

    #[test]
    fn transport_wrappers_leave_only_the_cause() {
        let io = std::io::Error::other("disk on fire");
        let dynamic = DynamicTransportError::from_parts(
            "rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client>>",
            TypeId::of::<()>(),
            Box::new(io),
        );
        let error = ClientInitializeError::TransportError {
            error: dynamic,
            context: "send initialize request".into(),
        };
        let text = describe(&error);
        assert_eq!(text, "disk on fire");
        let service = ServiceError::TransportSend(DynamicTransportError::from_parts(
            "rmcp::transport::async_rw::AsyncRwTransport",
            TypeId::of::<()>(),
            Box::new(HttpQuit::fatal(
                HttpError::HttpStatus(HttpStatusError::new(503, None)),
                "send",
            )),
        ));
        assert_eq!(describe(&service), "it answered HTTP 503");
        let serving = ServerInitializeError::TransportError {
            error: DynamicTransportError::from_parts(
                "rmcp::transport::async_rw::AsyncRwTransport",
                TypeId::of::<()>(),
                Box::new(std::io::Error::other("stdout is gone")),
            ),
            context: "send initialize response".into(),
        };
        assert_eq!(describe(&serving), "stdout is gone");
    }

    #[test]
    fn an_auth_challenge_is_a_refusal_with_its_status() {
        let error = ClientInitializeError::TransportError {
            error: DynamicTransportError::from_parts(
                "rmcp::transport::worker::WorkerTransport",
                TypeId::of::<()>(),
                Box::new(HttpQuit::fatal(
                    HttpError::AuthRequired(AuthRequiredError::new("Bearer".to_owned())),
                    "send initialize request",
                )),
            ),
            context: "send initialize request".into(),
        };
        assert!(matches!(handshake(&error), HandshakeFailure::Refused(401)));
        let call = ServiceError::TransportSend(DynamicTransportError::from_parts(
            "rmcp::transport::worker::WorkerTransport",
            TypeId::of::<()>(),
            Box::new(HttpQuit::fatal(
                HttpError::InsufficientScope(InsufficientScopeError::new(
                    "Bearer scope=\"write\"".to_owned(),
                    Some("write".to_owned()),
                )),
                "send request",
            )),
        ));
        assert_eq!(refused_status(&call), Some(403));
    }
}
