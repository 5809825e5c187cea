//! `OAuth`: where a streamable HTTP server's OAuth 2.1 tokens are kept, and which scopes to
//! ask for (how rein uses them is in `oauth.rs`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How rein authorizes itself to a streamable HTTP server with OAuth 2.1.
///
/// ```
/// use rein_mcp::{OAuth, ServerConfig};
/// let config = ServerConfig::http("docs".parse()?, "https://mcp.example.com/mcp")
///     .with_oauth(OAuth::new("/home/me/.config/rein/tokens/docs.json").with_scopes(["read"]));
/// assert!(config.oauth().is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuth {
    /// Where the tokens are kept: a file of their own, mode 0600.
    token_file: PathBuf,
    /// The scopes to ask for (none: what the server's metadata advertises).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    scopes: Vec<String>,
}

impl OAuth {
    /// Tokens kept in `token_file`.
    #[must_use]
    pub fn new(token_file: impl Into<PathBuf>) -> Self {
        Self {
            token_file: token_file.into(),
            scopes: Vec::new(),
        }
    }

    /// Asks for these scopes at login.
    #[must_use]
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The file the tokens are kept in.
    #[must_use]
    pub fn token_file(&self) -> &Path {
        &self.token_file
    }

    /// The scopes asked for at login.
    #[must_use]
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }
}
