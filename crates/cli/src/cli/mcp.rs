//! The arguments of `rein mcp …` (`list`, `serve`, `login`); what they do is in the `mcp` command.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::DataDirArg;

const LIST_AFTER: &str = "\
Examples:
  rein mcp list --server fs -- npx -y @modelcontextprotocol/server-filesystem /tmp
  rein mcp list --server docs http://127.0.0.1:8080/mcp
  rein mcp list --scenario my-scenario.json --json

Exit codes: 0 listed, 2 the server cannot be started, reached or imported (the message says why).";

/// `rein mcp …`.
#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Print an MCP server's tools as rein imports them.
    ///
    /// Connects (a command: a child process on stdio; a URL: streamable HTTP), lists every
    /// tool, and prints each with its rein name (`SERVER.TOOL`, mapped when the server's
    /// name is not a valid rein name), the annotations derived from the server's hints
    /// (missing hints take MCP's defaults: not read-only, destructive, not idempotent) and
    /// the states it would be eligible in. With --scenario, the scenario's MCP servers under
    /// its eligibility rules.
    #[command(after_help = LIST_AFTER)]
    List(ListArgs),
    /// Offer a scenario's tools over MCP (stdio, or streamable HTTP on 127.0.0.1 with
    /// --http); each client session is one governed run.
    ///
    /// Every call passes eligibility (the run is walked to a state where the tool may run,
    /// through the scenario's transition table), approval (the scenario's approver; a denied
    /// call returns an MCP error result saying why), budgets and the resilience stack, and
    /// is recorded in the run's ledger under the data directory. Rejections and tool errors
    /// are handed back to the session (up to 1000 per run) instead of ending it. The run
    /// finishes when the client disconnects; its id is printed on stderr. Over HTTP, a
    /// request whose Host or Origin is not a loopback one is refused (403): a web page
    /// cannot reach rein through DNS rebinding. The scenario's skills are offered as
    /// prompts and the session run's ledger as the resource rein://run/ledger; each
    /// decision taken for a call is sent to the client as a logging message (and progress,
    /// when the client asks for it).
    #[command(after_help = SERVE_AFTER)]
    Serve(ServeArgs),
    /// Log in to an MCP server of a scenario with OAuth 2.1, once: rein discovers the
    /// server's authorization server, registers itself as a client, prints the login URL to
    /// open in a browser and waits for the redirect on a loopback port (PKCE, a checked
    /// state), then keeps the tokens in the server's token file (mode 0600). Runs afterwards
    /// are headless: the token is refreshed when it is about to expire.
    #[command(after_help = LOGIN_AFTER)]
    Login(LoginArgs),
}

const LOGIN_AFTER: &str = "\
Examples:
  rein mcp login --scenario my-scenario.json docs
  (the scenario's entry) {\"kind\": \"mcp\", \"server\": \"docs\", \"url\": \"https://mcp.example.com/mcp\",
                          \"oauth\": {\"scopes\": [\"read\"]}}

Exit codes: 0 logged in, 2 bad input (the scenario, a server without \"oauth\", a failed login: the message says why).";

/// `rein mcp login`.
#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    /// The scenario file naming the server, its URL and its `oauth`.
    #[arg(long, value_name = "SCENARIO")]
    pub(crate) scenario: PathBuf,
    /// The server's name in the scenario.
    #[arg(value_name = "SERVER")]
    pub(crate) server: String,
}

const SERVE_AFTER: &str = "\
Examples:
  rein mcp serve examples/scenarios/happy-path.json --data-dir /tmp/rein
  rein mcp serve scenario.json --http 8080        # http://127.0.0.1:8080/mcp
  (an MCP client config) {\"command\": \"rein\", \"args\": [\"mcp\", \"serve\", \"scenario.json\"]}
  rein ledger verify RUN_ID --data-dir /tmp/rein   # afterwards, with the id from stderr

Exit codes: 0 the client closed the session, 1 the session failed, 2 bad input (the scenario, an MCP server it imports).";

/// `rein mcp serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The scenario file (JSON): its tools, policies and approver (its script is not used).
    #[arg(value_name = "SCENARIO")]
    pub(crate) scenario: PathBuf,
    #[command(flatten)]
    pub(crate) data: DataDirArg,
    /// Confine the file tools to DIR instead of the scenario's "workspace".
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,
    /// Serve streamable HTTP on ADDR instead of stdio: a port (on 127.0.0.1) or HOST:PORT.
    /// Port 0 picks a free one; the URL is printed on stderr. Stops with Ctrl-C.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<String>,
}

/// `rein mcp list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// The server: a URL (http:// or https://), or a command and its arguments (after `--`).
    #[arg(
        value_name = "URL|COMMAND",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required_unless_present = "scenario",
        conflicts_with = "scenario"
    )]
    pub(crate) spec: Vec<String>,
    /// The server's name in rein: its tools are SERVER.TOOL.
    #[arg(long, value_name = "SERVER", default_value = "mcp")]
    pub(crate) server: String,
    /// List the MCP servers of this scenario file instead, under its eligibility rules.
    #[arg(long, value_name = "SCENARIO")]
    pub(crate) scenario: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}
