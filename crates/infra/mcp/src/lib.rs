//! rein's MCP adapter: the tools of any MCP server, imported as governed rein tools.
//!
//! [`McpServer::connect`] starts a server as a child process (stdio) or reaches it over
//! streamable HTTP ([`Transport`]), completes the MCP handshake within a timeout, lists all
//! its tools (every page) and imports each as a rein tool named `SERVER.TOOL`
//! ([`McpTool`]). A server tool name rein does not accept is mapped (and
//! [`ImportedTool::was_mapped`] says so); two tools that map to one name are an error.
//!
//! Its resources and prompts, when it has some, become two more read-only tools:
//! `SERVER.read_resource` (a URI in, the contents out; the description names the resources
//! and URI templates) and `SERVER.get_prompt` (a prompt's name and arguments in, its
//! messages out). `exclude` and `tools` name them `resources/read` and `prompts/get`.
//! Every listing follows the server's cursors for at most [`MAX_PAGES`] pages.
//!
//! MCP's hints become [`rein_tool::Annotations`] ([`Hints::annotations`]): a missing hint
//! takes MCP's cautious default (not read-only, destructive, not idempotent, open world), so
//! an unannotated tool runs only in `act` and falls under the approval policy. Operators
//! override hints per server or per tool ([`AnnotationOverride`]), only narrowing unless
//! they set `widen`.
//!
//! A dead stdio server turns into transient tool errors (with the tail of its stderr) and
//! is restarted with exponential backoff on a later call; [`McpServer::shutdown`] closes the
//! child and waits for it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use rein_mcp::{McpServer, ServerConfig};
//! let server = McpServer::connect(ServerConfig::http("docs".parse()?, "http://127.0.0.1:8080/mcp")).await?;
//! for tool in server.imported().iter() {
//!     let a = tool.annotations();
//!     println!("{}: read_only={} destructive={}", tool.name(), a.is_read_only(), a.is_destructive());
//! }
//! # Ok(()) }
//! ```

mod annotations;
mod asks;
mod catalog;
mod client;
mod config;
mod content;
mod error;
mod handler;
mod in_flight;
mod inbound;
mod link;
mod names;
mod oauth;
mod oauth_config;
mod oauth_error;
mod offer;
mod reason;
mod serve;
mod table;
mod trace;

pub use annotations::{AnnotationOverride, Hints, WideningOverride};
pub use catalog::MAX_PAGES;
pub use client::{McpServer, McpTool};
pub use config::{ServerConfig, ServerName, ServerNameError, Transport};
pub use error::McpError;
pub use oauth::login;
pub use oauth_config::OAuth;
pub use oauth_error::OAuthError;
pub use offer::{Progress, ServedPrompt, ServedResource};
pub use serve::{Governor, Refusal, ServeError, Session, TOOLS_PAGE, serve_http, serve_stdio};
pub use table::ImportedTool;

/// How rein names itself to an MCP peer (`clientInfo`, `serverInfo`): `rein` and its version.
fn implementation() -> rmcp::model::Implementation {
    rmcp::model::Implementation::new("rein", env!("CARGO_PKG_VERSION"))
}
