//! `McpError`: why an MCP server's tools could not be imported.

use std::time::Duration;

use rein_tool::ToolNameError;

use crate::{ServerName, annotations::WideningOverride};

/// Why connecting to an MCP server or importing its tools failed. Every message names the
/// server and says what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// OAuth could not give rein a token for the server.
    #[error(transparent)]
    OAuth(#[from] crate::oauth_error::OAuthError),
    /// The stdio command is empty.
    #[error(
        "mcp server `{server}` has an empty `command`; give the program and its arguments, e.g. [\"node\", \"server.js\"]"
    )]
    EmptyCommand {
        /// The server.
        server: ServerName,
    },
    /// The stdio command could not be started.
    #[error(
        "mcp server `{server}`: could not start `{program}`: {source}; check the server's `command` (the reference servers are installed by `make mcp-servers`)"
    )]
    Spawn {
        /// The server.
        server: ServerName,
        /// The program that did not start.
        program: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A header name or value in the HTTP configuration is not valid HTTP.
    #[error(
        "mcp server `{server}`: header `{header}` is not a valid HTTP header name or value; fix it in the server's `headers`"
    )]
    InvalidHeader {
        /// The server.
        server: ServerName,
        /// The header's name (never its value).
        header: String,
    },
    /// The server did not complete the MCP handshake.
    #[error(
        "mcp server `{server}` at {target} did not complete the MCP handshake: {reason}{}; check that it is an MCP server and that it is running",
        stderr_note(stderr)
    )]
    Handshake {
        /// The server.
        server: ServerName,
        /// The command or URL.
        target: String,
        /// What went wrong.
        reason: String,
        /// The tail of the server's stderr, when it is a child process.
        stderr: String,
    },
    /// The HTTP server refused rein: it requires credentials rein did not give (401), or
    /// the ones given lack a scope it requires (403).
    #[error(
        "mcp server `{server}` at {target} refused rein with HTTP {status} ({}); give credentials it accepts in the server's `headers`, e.g. \"Authorization\": {{\"from_env\": \"NAME\"}}",
        refusal_meaning(*status)
    )]
    Refused {
        /// The server.
        server: ServerName,
        /// The URL.
        target: String,
        /// The HTTP status: 401 or 403.
        status: u16,
    },
    /// The server did not complete the handshake and first listing in time.
    #[error("mcp server `{server}` at {target} did not complete the MCP handshake within {} ms{}; check that it speaks MCP on stdout, or raise `handshake_timeout_ms`", after.as_millis(), stderr_note(stderr))]
    HandshakeTimeout {
        /// The server.
        server: ServerName,
        /// The command or URL.
        target: String,
        /// The timeout that elapsed.
        after: Duration,
        /// The tail of the server's stderr, when it is a child process.
        stderr: String,
    },
    /// Listing the server's tools failed.
    #[error(
        "mcp server `{server}` failed to list its tools: {reason}{}; check the server's logs",
        stderr_note(stderr)
    )]
    List {
        /// The server.
        server: ServerName,
        /// What went wrong.
        reason: String,
        /// The tail of the server's stderr, when it is a child process.
        stderr: String,
    },
    /// A listing (tools, resources, resource templates, prompts) still had a next page
    /// after [`crate::MAX_PAGES`] pages: the server repeats its cursor, or offers far more
    /// than a run could use.
    #[error(
        "mcp server `{server}` listed its {what} over more than {pages} pages without an end; rein stops there: fix the server's `nextCursor`, or leave the server out"
    )]
    TooManyPages {
        /// The server.
        server: ServerName,
        /// What was listed: `tools`, `resources`, `resource templates` or `prompts`.
        what: &'static str,
        /// How many pages were read.
        pages: usize,
    },
    /// Two of the server's tools map onto the same rein name.
    #[error(
        "mcp server `{server}`: tools {first:?} and {second:?} both map to the rein name `{name}`; leave one out with `exclude`"
    )]
    Collision {
        /// The server.
        server: ServerName,
        /// The first tool's name on the server.
        first: String,
        /// The second tool's name on the server.
        second: String,
        /// The rein name both map to.
        name: String,
    },
    /// A tool's input schema is not a JSON Schema for an object.
    #[error(
        "mcp server `{server}`: tool {tool:?} has an invalid input schema ({reason}); fix the server or leave the tool out with `exclude`"
    )]
    InvalidSchema {
        /// The server.
        server: ServerName,
        /// The tool's name on the server.
        tool: String,
        /// What is wrong with the schema.
        reason: String,
    },
    /// An operator override widens a tool's permissions without saying so.
    #[error("mcp server `{server}`, tool {tool:?}: {source}")]
    Widening {
        /// The server.
        server: ServerName,
        /// The tool's name on the server (`*` for the server-wide override).
        tool: String,
        /// The widening field.
        #[source]
        source: WideningOverride,
    },
    /// The configuration names a tool the server does not have (in `tools` or `exclude`).
    #[error(
        "mcp server `{server}` has no tool {tool:?}, but the configuration names it; the server's tools are: {available}"
    )]
    UnknownTool {
        /// The server.
        server: ServerName,
        /// The name the configuration used.
        tool: String,
        /// The server's tool names, comma-separated.
        available: String,
    },
    /// A mapped name is not a valid rein tool name (cannot happen for a valid server name).
    #[error("mcp server `{server}`: {source}")]
    Name {
        /// The server.
        server: ServerName,
        /// Why the name is invalid.
        #[source]
        source: ToolNameError,
    },
}

const fn refusal_meaning(status: u16) -> &'static str {
    if status == 403 {
        "the credentials given lack a scope it requires"
    } else {
        "it requires credentials"
    }
}

fn stderr_note(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(" (its stderr ends with: {stderr})")
    }
}

impl McpError {
    /// The server the error is about.
    #[must_use]
    pub const fn server(&self) -> &ServerName {
        match self {
            Self::EmptyCommand { server }
            | Self::Spawn { server, .. }
            | Self::InvalidHeader { server, .. }
            | Self::Handshake { server, .. }
            | Self::Refused { server, .. }
            | Self::HandshakeTimeout { server, .. }
            | Self::List { server, .. }
            | Self::TooManyPages { server, .. }
            | Self::Collision { server, .. }
            | Self::InvalidSchema { server, .. }
            | Self::Widening { server, .. }
            | Self::UnknownTool { server, .. }
            | Self::Name { server, .. } => server,
            Self::OAuth(e) => e.server(),
        }
    }
}
