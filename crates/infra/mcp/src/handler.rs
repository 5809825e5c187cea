//! rein's side of a session with a server it imports: what it says of itself in
//! `initialize`, and its answers to the server's own requests — the list-changed note, the
//! roots (the scenario's workspace), and a refusal, with its reason, of sampling and
//! elicitation.

// SEP-2577 deprecates roots and sampling, but servers still send both: rein answers them
// until rmcp drops their types.
#![expect(
    deprecated,
    reason = "roots and sampling are deprecated by SEP-2577, still sent"
)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ErrorCode, ListRootsResult, Root, RootsCapabilities,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use tokio::sync::watch;

/// Why rein does not sample for a server.
const NO_SAMPLING: &str = "rein offers no sampling: a model call made for a server would escape the run's budgets, policies and ledger";

/// Why rein does not answer elicitation.
const NO_ELICITATION: &str = "rein answers no elicitation: a governed run takes input only from its planner, its approver and `rein resume`; give the tool what it needs in its arguments";

/// Our side of the MCP session with one server.
#[derive(Clone)]
pub(crate) struct Handler {
    /// Counts the server's `tools/list_changed` notifications.
    pub(crate) changes: watch::Sender<u64>,
    /// The directories the server may work in, as `roots/list` answers them.
    pub(crate) roots: Vec<PathBuf>,
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
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            NO_SAMPLING,
            None,
        ))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            NO_ELICITATION,
            None,
        ))
    }

    fn get_info(&self) -> ClientConfig {
        // Roots only when there are some; never sampling or elicitation.
        let mut capabilities = ClientCapabilities::default();
        if !self.roots.is_empty() {
            capabilities.roots = Some(RootsCapabilities::default());
        }
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
