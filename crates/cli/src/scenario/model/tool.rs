//! The scenario file's tools: a built-in (with its shell or HTTP settings), an MCP server's,
//! or a fixture with a scripted behaviour, and the secrets a tool may name.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rein::shell::ShellRun;
use rein::tools::{FsOp, HttpFetch};
use rein::{Annotations, Value};
use serde::{Deserialize, Serialize};

/// A tool: either `{"builtin": "fs.read"}` (or `{"kind": "builtin", "name": "fs.read"}`)
/// or `{"fixture": "name", …}`.
///
/// One flat object rather than a tagged enum, so serde reports errors at their exact line
/// and column; which fields go with which kind is checked afterwards.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolDef {
    /// The long form of a built-in (`{"kind": "builtin", "name": "fs.grep"}`), or `"mcp"`: the
    /// tools of an MCP server (the MCP fields below; see `scenario/mcp.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<ToolKind>,
    /// The built-in's name in the long form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    /// A built-in file tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) builtin: Option<Builtin>,
    /// The name of a fixture tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fixture: Option<String>,
    /// What the fixture does, for the planner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    /// The fixture's annotations (default: side-effecting, medium risk, not idempotent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) annotations: Option<Annotations>,
    /// The fixture's input schema (default: any object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input_schema: Option<Value>,
    /// What the fixture returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) behavior: Option<Behavior>,
    /// The first this many executions fail with a transient error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fail_first: Option<u32>,
    /// Every execution first waits this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) delay_ms: Option<u64>,
    /// A file that gets one line per execution (relative to the data directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) count_file: Option<PathBuf>,
    /// The MCP server's name in rein: its tools are `SERVER.TOOL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) server: Option<String>,
    /// The MCP server as a child process: the program and its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) command: Option<Vec<String>>,
    /// Extra environment for the MCP child process: each value literal, or
    /// `{"from_env": "NAME"}` to read it from rein's environment when the server starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) env: Option<BTreeMap<String, SecretValue>>,
    /// The MCP child's working directory (relative to the scenario file; default: its folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cwd: Option<PathBuf>,
    /// The MCP server's streamable HTTP endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) url: Option<String>,
    /// Extra HTTP headers for the MCP endpoint, each literal or `{"from_env": "NAME"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) headers: Option<BTreeMap<String, SecretValue>>,
    /// OAuth 2.1 for the MCP endpoint: where its tokens are kept (log in once with
    /// `rein mcp login`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) oauth: Option<OAuthDef>,
    /// How long the MCP handshake and first listing may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) handshake_timeout_ms: Option<u64>,
    /// Hint overrides: by the server's tool name, or `"*"` for every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) overrides: Option<BTreeMap<String, Value>>,
    /// The server's tools not to import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) exclude: Option<Vec<String>>,
    /// How the MCP server's elicitation requests are answered (absent: refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) elicitation: Option<ElicitationDef>,
    /// How the MCP server's sampling requests are answered (absent: refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sampling: Option<SamplingDef>,
    /// The configuration of the built-in `shell.run` (required with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shell: Option<ShellDef>,
    /// The configuration of the built-in `http.fetch` (no hosts when absent: nothing allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) http: Option<HttpDef>,
}

/// OAuth 2.1 for an MCP server reached by URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OAuthDef {
    /// The file its tokens are kept in (relative to the scenario file; default
    /// `$XDG_CONFIG_HOME/rein/tokens/SERVER.json`, or `~/.config/rein/tokens/SERVER.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token_file: Option<PathBuf>,
    /// The scopes asked for at login (default: what the server advertises).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scopes: Option<Vec<String>>,
}

/// Who answers an MCP server's elicitation requests, and how long a tool call waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ElicitationDef {
    /// Who answers.
    pub(crate) from: ElicitFrom,
    /// How long a question waits for its answer (default 300000); none in time: `cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_ms: Option<u64>,
}

/// Who answers an MCP server's sampling requests, and how long a tool call waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SamplingDef {
    /// Who answers.
    pub(crate) from: SampleFrom,
    /// How long a request waits for the model's answer (default 300000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_ms: Option<u64>,
}

/// Who answers an MCP server's sampling requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SampleFrom {
    /// The model of the run whose call is in flight (its `llm` planner), under the run's
    /// `tokens` and `cost` budgets, recorded as `planner_call`s.
    Run,
}

/// Who answers an MCP server's elicitation requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ElicitFrom {
    /// The person at rein's terminal: the question on stderr, one line of JSON on stdin.
    Terminal,
}

/// An MCP `env` or `headers` value. Such values often hold tokens, so rein never stores
/// one: the copy of a scenario kept in the data directory has a reference
/// (`{"from_env": "NAME"}`, kept as written) or a redaction (`{"redacted": true}`, for a
/// literal, which `rein resume` reads again from the original scenario file).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum SecretValue {
    /// The value, as written in the scenario file.
    Literal(String),
    /// Read from rein's environment variable `from_env` when the server starts.
    FromEnv {
        /// The variable's name.
        from_env: String,
    },
    /// A literal that was not stored (only in the data directory's copy).
    Redacted {
        /// Always `true`.
        redacted: bool,
    },
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Literal(_) => f.write_str("Literal(<redacted>)"),
            Self::FromEnv { from_env } => f
                .debug_struct("FromEnv")
                .field("from_env", from_env)
                .finish(),
            Self::Redacted { .. } => f.write_str("Redacted"),
        }
    }
}

/// `shell.run`'s configuration: `{"builtin": "shell.run", "shell": {"allow": ["ls"], "launchers": ["cargo"]}}`.
/// It runs in the scenario's workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShellDef {
    /// The programs it may run, by file name: each the program of that name on PATH
    /// (this or `launchers` is required, not empty).
    #[serde(default)]
    pub(crate) allow: Vec<String>,
    /// Programs that run other programs (shells, interpreters, build tools, `git`) it may
    /// run, with any arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) launchers: Vec<String>,
    /// Programs it never runs, even if allowed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) deny: Vec<String>,
    /// The timeout when a call names none, in milliseconds (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_ms: Option<u64>,
    /// The longest timeout a call may ask for, in milliseconds (default 600000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_timeout_ms: Option<u64>,
    /// Bytes of stdout and of stderr shown inline (default 65536); the rest goes to an
    /// artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output_cap: Option<usize>,
    /// Bytes of a stream kept for its artifact (default and most: 16 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spill_cap: Option<usize>,
    /// The environment variables that pass through (default: `PATH`, `HOME`, `LANG`,
    /// `LC_ALL`, `TERM`, `TMPDIR`, `USER`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) env: Option<Vec<String>>,
    /// Run commands in a Landlock sandbox (write only inside the workspace; Linux).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) sandbox: bool,
    /// The most processes a command may have at once, itself included (a pids cgroup per
    /// call; Linux, refused where no pids cgroup is writable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_processes: Option<u32>,
    /// How commands are kept from the machine's other processes (default: namespaces).
    #[serde(default, skip_serializing_if = "IsolationDef::is_default")]
    pub(crate) isolation: IsolationDef,
}

/// `shell.isolation`: `"namespaces"` (the default) or `"none"` (an explicit opt-out).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum IsolationDef {
    /// Own PID, mount and user namespaces per command.
    #[default]
    Namespaces,
    /// None: a command can read other processes' environment and leave orphans.
    None,
}

impl IsolationDef {
    #[expect(
        clippy::trivially_copy_pass_by_ref,
        reason = "serde's skip_serializing_if passes a reference"
    )]
    fn is_default(&self) -> bool {
        *self == Self::Namespaces
    }
}

/// `http.fetch`'s configuration: `{"builtin": "http.fetch", "http": {"allow_hosts": […]}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HttpDef {
    /// The hosts requests may go to (exact names, no scheme or port); empty allows nothing.
    #[serde(default)]
    pub(crate) allow_hosts: Vec<String>,
    /// Allow POST too (the tool then has side effects and runs only in `act`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) post: bool,
    /// The largest response body, in bytes (default 1 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_bytes: Option<u64>,
    /// The longest a call may take, in milliseconds (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_ms: Option<u64>,
}

/// The kinds of tool the long form `{"kind": …}` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToolKind {
    /// A built-in tool: `{"kind": "builtin", "name": "fs.grep"}`.
    Builtin,
    /// The tools of an MCP server: `{"kind": "mcp", "server": "fs", …}`.
    Mcp,
}

/// The built-in tools (`rein::tools`), confined to the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) enum Builtin {
    /// Reads a text file.
    #[serde(rename = "fs.read")]
    Read,
    /// Lists a directory.
    #[serde(rename = "fs.list")]
    List,
    /// Lists files matching a glob.
    #[serde(rename = "fs.glob")]
    Glob,
    /// Searches files with a regular expression.
    #[serde(rename = "fs.grep")]
    Grep,
    /// Writes a text file.
    #[serde(rename = "fs.write")]
    Write,
    /// Replaces a unique string in a file.
    #[serde(rename = "fs.edit")]
    Edit,
    /// Deletes a file (destructive).
    #[serde(rename = "fs.delete")]
    Delete,
    /// Runs one guarded program in the workspace (configured by `"shell"`).
    #[serde(rename = "shell.run")]
    Shell,
    /// Fetches from allowlisted hosts (configured by `"http"`).
    #[serde(rename = "http.fetch")]
    Http,
}

impl Builtin {
    /// Every built-in, in the order `rein tools` lists them.
    pub(crate) const ALL: [Self; 9] = [
        Self::Read,
        Self::List,
        Self::Glob,
        Self::Grep,
        Self::Write,
        Self::Edit,
        Self::Delete,
        Self::Shell,
        Self::Http,
    ];

    /// The file tool it is, if it is one.
    pub(crate) const fn op(self) -> Option<FsOp> {
        Some(match self {
            Self::Read => FsOp::Read,
            Self::List => FsOp::List,
            Self::Glob => FsOp::Glob,
            Self::Grep => FsOp::Grep,
            Self::Write => FsOp::Write,
            Self::Edit => FsOp::Edit,
            Self::Delete => FsOp::Delete,
            Self::Shell | Self::Http => return None,
        })
    }

    /// The tool's name.
    pub(crate) const fn name(self) -> &'static str {
        match (self, self.op()) {
            (_, Some(op)) => op.name(),
            (Self::Shell, None) => ShellRun::NAME,
            _ => HttpFetch::NAME,
        }
    }

    /// The tool's spec (`http.fetch` as configured: GET only unless `post`).
    pub(crate) fn spec(self, post: bool) -> rein::ToolSpec {
        match (self, self.op()) {
            (_, Some(op)) => op.spec(),
            (Self::Shell, None) => ShellRun::spec(),
            _ => HttpFetch::spec(post),
        }
    }
}

/// What a fixture tool does when it does not fail (see `fail_first`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Behavior {
    /// Returns this value every time.
    Output(Value),
    /// Returns these values in order, then the last one again.
    Sequence(Vec<Value>),
    /// Returns its input.
    Echo,
    /// Never returns (the timeout ends it).
    Hang,
    /// Panics with this message.
    Panic(String),
    /// Fails with this error every time.
    Fail {
        /// The error message.
        message: String,
        /// Whether the error is transient (retried if the tool is idempotent, counted by
        /// the circuit breaker).
        #[serde(default)]
        transient: bool,
    },
}

impl ToolDef {
    /// The fields only a fixture tool takes, and whether this definition sets each.
    pub(crate) fn fixture_fields(&self) -> [(&'static str, bool); 7] {
        [
            ("description", self.description.is_some()),
            ("annotations", self.annotations.is_some()),
            ("input_schema", self.input_schema.is_some()),
            ("behavior", self.behavior.is_some()),
            ("fail_first", self.fail_first.is_some()),
            ("delay_ms", self.delay_ms.is_some()),
            ("count_file", self.count_file.is_some()),
        ]
    }
}
