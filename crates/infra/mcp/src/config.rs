//! How an MCP server is reached and how its tools are imported: `ServerConfig`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::annotations::AnnotationOverride;

/// The name rein gives an MCP server: the prefix of its tools' names (`fs` in `fs.read`).
/// 1 to 32 ASCII letters, digits, `_` or `-`, starting with a letter (no `.`: the dot
/// separates the server from the tool).
///
/// ```
/// use rein_mcp::ServerName;
/// let fs: ServerName = "fs".parse()?;
/// assert_eq!(fs.as_str(), "fs");
/// assert!("my.fs".parse::<ServerName>().is_err());
/// # Ok::<(), rein_mcp::ServerNameError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ServerName(String);

/// Why a string is not a [`ServerName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid mcp server name {value:?}: use 1-32 ASCII letters, digits, '_' or '-', starting with a letter"
)]
pub struct ServerNameError {
    /// The rejected value.
    pub value: String,
}

impl ServerName {
    /// The longest name accepted, in bytes.
    pub const MAX_LEN: usize = 32;

    /// Validates `name`.
    ///
    /// # Errors
    /// [`ServerNameError`] when it is empty, too long, does not start with a letter or holds
    /// a character other than ASCII letters, digits, `_` and `-`.
    pub fn new(name: impl Into<String>) -> Result<Self, ServerNameError> {
        let value = name.into();
        let ok = !value.is_empty()
            && value.len() <= Self::MAX_LEN
            && value.as_bytes()[0].is_ascii_alphabetic()
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
        if ok {
            Ok(Self(value))
        } else {
            Err(ServerNameError { value })
        }
    }

    /// The name as a string slice.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ServerName {
    type Err = ServerNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<String> for ServerName {
    type Error = ServerNameError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<ServerName> for String {
    fn from(name: ServerName) -> Self {
        name.0
    }
}

/// How to reach a server: a child process speaking MCP on stdio, or a streamable HTTP URL.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
#[non_exhaustive]
pub enum Transport {
    /// A child process: `command[0]` is the program, the rest its arguments.
    Stdio {
        /// The program and its arguments.
        command: Vec<String>,
        /// The child's environment besides the few variables it inherits
        /// ([`Transport::INHERITED_ENV`]); nothing else of rein's environment reaches it.
        /// Their values are never printed: they often hold tokens.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
        /// The child's working directory (default: the current one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    Http {
        /// The endpoint URL.
        url: String,
        /// Extra request headers. Their values are never printed: they often hold tokens.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// The variables of rein's environment a stdio server inherits (those set), as the
    /// official MCP SDK clients pass them: what a program needs to run, and no credential.
    /// Everything else a server needs is named in its `env`.
    #[cfg(not(windows))]
    pub const INHERITED_ENV: &'static [&'static str] =
        &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

    /// The variables of rein's environment a stdio server inherits (those set), as the
    /// official MCP SDK clients pass them: what a program needs to run, and no credential.
    /// Everything else a server needs is named in its `env`.
    #[cfg(windows)]
    pub const INHERITED_ENV: &'static [&'static str] = &[
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
    ];
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio { command, env, cwd } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Self::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &redacted_url(url))
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

impl fmt::Display for Transport {
    /// The command line or the URL, without environment or header values, nor the URL's
    /// user information or query.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio { command, .. } => write!(f, "`{}`", command.join(" ")),
            Self::Http { url, .. } => f.write_str(&redacted_url(url)),
        }
    }
}

/// `url` with its user information and its query replaced by `***`: both often carry
/// credentials (`https://user:token@host/mcp`, `…/mcp?key=token`), and the URL goes into
/// error messages.
pub(crate) fn redacted_url(url: &str) -> String {
    let (url, fragment) = url
        .split_once('#')
        .map_or((url, None), |(u, f)| (u, Some(f)));
    let (url, query) = url
        .split_once('?')
        .map_or((url, None), |(u, q)| (u, Some(q)));
    let mut shown = match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
            match authority.rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://***@{host}{path}"),
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    };
    if query.is_some() {
        shown.push_str("?***");
    }
    if let Some(fragment) = fragment {
        shown.push('#');
        shown.push_str(fragment);
    }
    shown
}

/// One MCP server to import tools from: its name, how to reach it, and what the operator
/// says about its tools.
///
/// ```
/// use rein_mcp::{ServerConfig, Transport};
/// let config = ServerConfig::stdio("fs".parse()?, ["npx", "server-filesystem", "/tmp"]);
/// assert_eq!(config.name().as_str(), "fs");
/// assert!(matches!(config.transport(), Transport::Stdio { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerConfig {
    /// The server's name in rein (the prefix of its tools' names).
    #[serde(rename = "server")]
    name: ServerName,
    /// How to reach it.
    #[serde(flatten)]
    transport: Transport,
    /// How long the handshake and the first `tools/list` may take.
    #[serde(
        default = "default_handshake",
        rename = "handshake_timeout_ms",
        with = "rein_tool::duration_ms"
    )]
    handshake_timeout: Duration,
    /// How long to wait before restarting a dead stdio server; doubled after each further
    /// failure, up to 30 s.
    #[serde(
        default = "default_backoff",
        rename = "restart_backoff_ms",
        with = "rein_tool::duration_ms"
    )]
    restart_backoff: Duration,
    /// Annotation overrides for every tool of the server.
    #[serde(default, skip_serializing_if = "AnnotationOverride::is_empty")]
    annotations: AnnotationOverride,
    /// Annotation overrides per tool, by the server's own tool name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    tools: BTreeMap<String, AnnotationOverride>,
    /// Server tool names not to import.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    exclude: Vec<String>,
    /// The directories the server may work in, answered to its `roots/list`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    roots: Vec<PathBuf>,
    /// OAuth 2.1 for a streamable HTTP server: where its tokens are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    oauth: Option<crate::oauth_config::OAuth>,
    /// The ports answering the server's elicitation and sampling requests.
    #[serde(skip)]
    pub(crate) asks: crate::asks::Asks,
    /// Where calls take the trace context they carry from.
    #[serde(skip)]
    pub(crate) tracing: crate::trace::Tracing,
}

fn default_handshake() -> Duration {
    ServerConfig::DEFAULT_HANDSHAKE_TIMEOUT
}

fn default_backoff() -> Duration {
    ServerConfig::DEFAULT_RESTART_BACKOFF
}

impl ServerConfig {
    /// The handshake timeout when none is set: 30 s (a first `npx` start can be slow).
    pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

    /// The first restart backoff when none is set: 200 ms.
    pub const DEFAULT_RESTART_BACKOFF: Duration = Duration::from_millis(200);

    /// A server run as a child process: `command`'s first item is the program.
    #[must_use]
    pub fn stdio<I, S>(name: ServerName, command: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::new(
            name,
            Transport::Stdio {
                command: command.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A server reached over streamable HTTP.
    #[must_use]
    pub fn http(name: ServerName, url: impl Into<String>) -> Self {
        Self::new(
            name,
            Transport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
        )
    }

    /// A server reached through `transport`.
    #[must_use]
    pub const fn new(name: ServerName, transport: Transport) -> Self {
        Self {
            name,
            transport,
            handshake_timeout: Self::DEFAULT_HANDSHAKE_TIMEOUT,
            restart_backoff: Self::DEFAULT_RESTART_BACKOFF,
            annotations: AnnotationOverride::none(),
            tools: BTreeMap::new(),
            exclude: Vec::new(),
            roots: Vec::new(),
            oauth: None,
            asks: crate::asks::Asks {
                elicitor: None,
                sampler: None,
                timeout: None,
                scopes: None,
                run_sampling: false,
            },
            tracing: crate::trace::Tracing::NONE,
        }
    }

    /// Sets how long the handshake and the first tool listing may take.
    #[must_use]
    pub const fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Sets the first restart backoff of a dead stdio server (doubled after each further
    /// failure, up to 30 s).
    #[must_use]
    pub const fn with_restart_backoff(mut self, backoff: Duration) -> Self {
        self.restart_backoff = backoff;
        self
    }

    /// Overrides the annotations of every tool of the server.
    #[must_use]
    pub const fn with_annotations(mut self, overrides: AnnotationOverride) -> Self {
        self.annotations = overrides;
        self
    }

    /// Overrides the annotations of one tool (by the server's name for it).
    #[must_use]
    pub fn with_tool_annotations(
        mut self,
        tool: impl Into<String>,
        overrides: AnnotationOverride,
    ) -> Self {
        self.tools.insert(tool.into(), overrides);
        self
    }

    /// Leaves the server's tool `tool` out of the import.
    #[must_use]
    pub fn without_tool(mut self, tool: impl Into<String>) -> Self {
        self.exclude.push(tool.into());
        self
    }

    /// Sets the directories the server may work in (absolute paths): rein declares the
    /// `roots` capability and answers the server's `roots/list` with them as `file://`
    /// URIs. Without any, rein declares no roots.
    #[must_use]
    pub fn with_roots(mut self, roots: impl IntoIterator<Item = PathBuf>) -> Self {
        self.roots = roots.into_iter().collect();
        self
    }

    /// The directories the server may work in.
    #[must_use]
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Authorizes rein to this streamable HTTP server with OAuth 2.1, its tokens kept as
    /// `oauth` says (log in once with [`crate::login`]; connecting refreshes the token).
    #[must_use]
    pub fn with_oauth(mut self, oauth: crate::oauth_config::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// How rein authorizes itself with OAuth 2.1, if it does.
    #[must_use]
    pub const fn oauth(&self) -> Option<&crate::oauth_config::OAuth> {
        self.oauth.as_ref()
    }

    /// The server's name in rein.
    #[must_use]
    pub const fn name(&self) -> &ServerName {
        &self.name
    }

    /// How the server is reached.
    #[must_use]
    pub const fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The handshake timeout.
    #[must_use]
    pub const fn handshake_timeout(&self) -> Duration {
        self.handshake_timeout
    }

    /// The first restart backoff.
    #[must_use]
    pub const fn restart_backoff(&self) -> Duration {
        self.restart_backoff
    }

    /// The overrides for every tool.
    #[must_use]
    pub const fn annotations(&self) -> &AnnotationOverride {
        &self.annotations
    }

    /// The overrides for the server's tool `tool`, if any.
    #[must_use]
    pub fn tool_annotations(&self, tool: &str) -> Option<&AnnotationOverride> {
        self.tools.get(tool)
    }

    /// The server tool names left out.
    #[must_use]
    pub fn excluded(&self) -> &[String] {
        &self.exclude
    }

    /// The server tool names that have their own overrides.
    pub fn overridden(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Whether the server's tool `tool` is left out.
    #[must_use]
    pub fn excludes(&self, tool: &str) -> bool {
        self.exclude.iter().any(|t| t == tool)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_both_transports_from_json() {
        let stdio: ServerConfig = serde_json::from_value(json!({
            "server": "fs", "command": ["node", "server.js"], "env": {"TOKEN": "s3cret"}
        }))
        .unwrap();
        assert!(
            matches!(stdio.transport(), Transport::Stdio { command, .. } if command.len() == 2)
        );
        let http: ServerConfig = serde_json::from_value(json!({
            "server": "web", "url": "http://127.0.0.1:9/mcp", "handshake_timeout_ms": 500
        }))
        .unwrap();
        assert_eq!(http.handshake_timeout(), Duration::from_millis(500));
        assert!(matches!(http.transport(), Transport::Http { .. }));
    }

    #[test]
    fn debug_never_shows_env_or_header_values() {
        let config: ServerConfig = serde_json::from_value(json!({
            "server": "web", "url": "http://u:p4ss@127.0.0.1:9/mcp?key=t0ken",
            "headers": {"Authorization": "Bearer s3cret"}
        }))
        .unwrap();
        let shown = format!("{config:?} {}", config.transport());
        assert!(shown.contains("Authorization"), "{shown}");
        for secret in ["s3cret", "p4ss", "t0ken"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }

    #[test]
    fn a_url_is_shown_without_its_user_information_or_query() {
        for (url, shown) in [
            ("http://127.0.0.1:9/mcp", "http://127.0.0.1:9/mcp"),
            (
                "https://user:s3cret@example.com/mcp?key=t0ken#top",
                "https://***@example.com/mcp?***#top",
            ),
            ("https://t0ken@example.com", "https://***@example.com"),
        ] {
            assert_eq!(redacted_url(url), shown);
        }
    }

    #[test]
    fn server_names_refuse_dots_and_bad_starts() {
        for bad in ["", "1fs", "my.fs", "a b", &"x".repeat(33)] {
            assert!(ServerName::new(bad).is_err(), "{bad:?}");
        }
        assert!(ServerName::new("fs-2_x").is_ok());
    }
}
