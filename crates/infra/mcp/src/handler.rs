//! rein's side of a session with a server it imports: what it says of itself in
//! `initialize`, and its answers to the server's own requests — the list-changed note, the
//! roots (the scenario's workspace), and sampling and elicitation through the operator's
//! ports (`asks.rs`), refused with a reason without them.

// SEP-2577 deprecates roots and sampling, but servers still send both: rein answers them
// until rmcp drops their types.
#![expect(
    deprecated,
    reason = "roots and sampling are deprecated by SEP-2577, still sent"
)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_tool::ToolNotice;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ListRootsResult, LoggingMessageNotificationParam,
    ProgressNotificationParam, Root, RootsCapabilities,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use tokio::sync::watch;

use crate::in_flight::{During, InFlight};

/// Our side of the MCP session with one server.
#[derive(Clone)]
pub(crate) struct Handler {
    /// Counts the server's `tools/list_changed` notifications.
    pub(crate) changes: watch::Sender<u64>,
    /// The directories the server may work in, as `roots/list` answers them.
    pub(crate) roots: Vec<PathBuf>,
    /// The server's name, for the ports to say who asks.
    pub(crate) server: String,
    /// The ports answering elicitation and sampling (none: refused with a reason).
    pub(crate) asks: crate::asks::Asks,
    /// The governed calls in flight on this connection, with the runs they belong to.
    pub(crate) in_flight: Arc<InFlight>,
}

fn parsed<T: serde::de::DeserializeOwned>(
    value: Result<serde_json::Value, ErrorData>,
) -> Result<T, ErrorData> {
    serde_json::from_value(value?).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changes.send_modify(|n| *n += 1);
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(
            self.roots
                .iter()
                .map(|dir| Root::new(file_uri(dir)).with_name("workspace"))
                .collect(),
        ))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let params = serde_json::to_value(params).unwrap_or_default();
        parsed(crate::asks::sample(&self.asks, &self.in_flight, &self.server, params).await)
    }

    /// Progress: passed on to the run of the call in flight when exactly one is (rmcp
    /// puts a progress token of its own on each request and does not say which).
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let During::One(scope) = self.in_flight.during() {
            scope.notice(ToolNotice::Progress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }

    /// A log line: passed on to the run of the call in flight when exactly one is (a log
    /// line names no call, and one run's subscribers must not see another run's).
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let During::One(scope) = self.in_flight.during() {
            let level = serde_json::to_value(params.level)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            scope.notice(ToolNotice::Log {
                level,
                logger: params.logger,
                data: params.data,
            });
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let params = serde_json::to_value(request).unwrap_or_default();
        parsed(crate::asks::elicit(&self.asks, &self.server, params).await)
    }

    fn get_info(&self) -> ClientConfig {
        // Roots only when there are some; sampling and elicitation only with their ports.
        let mut capabilities = ClientCapabilities::default();
        if !self.roots.is_empty() {
            capabilities.roots = Some(RootsCapabilities::default());
        }
        let mut declared = serde_json::to_value(&capabilities).unwrap_or_default();
        if self.asks.elicitor.is_some() {
            declared["elicitation"] = serde_json::json!({"form": {}});
        }
        if self.asks.samples() {
            declared["sampling"] = serde_json::json!({});
        }
        let capabilities = serde_json::from_value(declared).unwrap_or(capabilities);
        ClientConfig::new(capabilities, crate::implementation())
    }
}

/// The `file://` URI of the absolute path `dir`: every byte but unreserved characters, `/`
/// and `:` (a drive letter's) percent-encoded (RFC 3986; RFC 8089 for the form).
fn file_uri(dir: &Path) -> String {
    let text = dir.to_string_lossy();
    let path = if cfg!(windows) {
        format!("/{}", text.replace('\\', "/"))
    } else {
        text.into_owned()
    };
    let mut uri = String::from("file://");
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/' | b':') {
            uri.push(char::from(byte));
        } else {
            let _ = write!(uri, "%{byte:02X}");
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_directory_becomes_a_percent_encoded_file_uri() {
        assert_eq!(
            file_uri(Path::new("/srv/my work/ä")),
            "file:///srv/my%20work/%C3%A4"
        );
    }
}
