//! `OAuthError`: why OAuth could not give rein a token. Messages name the server and the
//! token file, never a token.

use std::path::PathBuf;

use crate::config::ServerName;

/// Why OAuth could not give rein a token. Messages name the server and the token file,
/// never a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// There is no usable token: nobody logged in yet, or the refresh was refused.
    #[error(
        "mcp server `{server}` needs an OAuth login: no usable token in {}; run `rein mcp login --scenario FILE {server}` once (it opens the server's login page), then run again",
        token_file.display()
    )]
    LoginRequired {
        /// The server.
        server: ServerName,
        /// The token file.
        token_file: PathBuf,
    },
    /// The token file may be read or written by others than its owner.
    #[error(
        "the OAuth token file {} of mcp server `{server}` has mode {mode:o}, which lets others read it; run `chmod 600 {}`",
        token_file.display(), token_file.display()
    )]
    LooseTokenFile {
        /// The server.
        server: ServerName,
        /// The token file.
        token_file: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The token file could not be read or written.
    #[error("the OAuth token file {} of mcp server `{server}`: {source}", token_file.display())]
    TokenFile {
        /// The server.
        server: ServerName,
        /// The token file.
        token_file: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// OAuth was configured for a stdio server, which has no HTTP to authorize.
    #[error(
        "mcp server `{server}` is started as a command (stdio), which OAuth does not apply to; remove its `oauth`, or give its `url`"
    )]
    NotHttp {
        /// The server.
        server: ServerName,
    },
    /// The token file lies inside a root of the server (the scenario's workspace).
    #[error(
        "the OAuth token file {} of mcp server `{server}` is inside {}, where the agent's file tools could read it; keep it elsewhere (the default is ~/.config/rein/tokens/)",
        token_file.display(), root.display()
    )]
    InsideRoot {
        /// The server.
        server: ServerName,
        /// The token file.
        token_file: PathBuf,
        /// The root it lies in.
        root: PathBuf,
    },
    /// A login was asked for a server without OAuth settings.
    #[error(
        "mcp server `{server}` has no `oauth`; add \"oauth\": {{}} to its entry (it needs a `url`)"
    )]
    NoOAuth {
        /// The server.
        server: ServerName,
    },
    /// The login's redirect did not come back as expected.
    #[error("the OAuth login of mcp server `{server}` failed: {reason}")]
    Login {
        /// The server.
        server: ServerName,
        /// What went wrong.
        reason: String,
    },
    /// Discovery, registration, the token exchange or a refresh failed.
    #[error(
        "OAuth with mcp server `{server}` failed: {reason}; check the server's `url`, or log in again with `rein mcp login`"
    )]
    Protocol {
        /// The server.
        server: ServerName,
        /// What the authorization server or rmcp said (no token in it).
        reason: String,
    },
}

impl OAuthError {
    /// The server it is about.
    #[must_use]
    pub const fn server(&self) -> &ServerName {
        match self {
            Self::LoginRequired { server, .. }
            | Self::LooseTokenFile { server, .. }
            | Self::TokenFile { server, .. }
            | Self::NotHttp { server }
            | Self::NoOAuth { server }
            | Self::InsideRoot { server, .. }
            | Self::Login { server, .. }
            | Self::Protocol { server, .. } => server,
        }
    }
}
