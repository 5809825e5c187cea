//! `rein mcp …`: the MCP commands. `rein mcp list` connects to a server and prints its
//! tools as rein would import them: names (and mappings), the annotations rein derived from
//! the server's hints, and the states each tool would be eligible in.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use rein::mcp::{ImportedTool, McpServer, ServerConfig, ServerName};
use rein::{Eligibility, EligibilityRules, State, ToolSpec, Value, json};

use super::mcp_serve::{Bridge, BridgePlanner, EngineGovernor, serve_violations};
use super::{build_error, checked_scenario};
use crate::cli::DataDirArg;
use crate::datadir::DataDir;
use crate::exit::{CliError, CliResult, Exit};
use crate::scenario::{self, Setup};

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

/// Runs an MCP command.
pub(crate) async fn dispatch(command: McpCommand) -> CliResult {
    match command {
        McpCommand::List(args) => list(args).await,
        McpCommand::Serve(args) => serve(args).await,
    }
}

async fn serve(args: ServeArgs) -> CliResult {
    let data = DataDir::new(&args.data.data_dir)?;
    let scenario = checked_scenario(&args.scenario, &data, args.workspace.as_deref())?;
    if args.http.is_none() && scenario::mcp::elicits_at_terminal(&scenario) {
        return Err(CliError::bad_input(format!(
            "{}: an MCP server answers its elicitation from the terminal, but `rein mcp serve` on stdio reads its MCP client there; serve with --http, or leave \"elicitation\" out",
            args.scenario.display()
        )));
    }
    let servers = scenario::mcp::connect(&scenario).await?;
    let bridge = Arc::new(Bridge::default());
    let (on_violation, on_tool_error) = serve_violations(None);
    let engine = scenario::mcp::with_tools(scenario::builder(&scenario, 0), &servers)
        .planner(BridgePlanner(bridge.clone()))
        .on_violation(on_violation)
        .on_tool_error(on_tool_error)
        .filesystem(data.root())
        .build()
        .map_err(|e| build_error(&e, &data))?;
    bridge.route(&engine).map_err(CliError::bad_input)?;
    // The same skills the engine was built with (`scenario::builder` loads them).
    let skills = scenario
        .skills
        .as_deref()
        .and_then(|dir| rein::tools::load_skills(dir).ok())
        .unwrap_or_default();
    let governor = Arc::new(EngineGovernor {
        engine,
        bridge,
        goal: scenario.goal.clone(),
        skills,
    });
    let served = match &args.http {
        None => rein::mcp::serve_stdio(governor).await,
        Some(addr) => {
            let addr = if addr.contains(':') {
                addr.clone()
            } else {
                format!("127.0.0.1:{addr}")
            };
            let listener = std::net::TcpListener::bind(&addr).map_err(|e| {
                CliError::bad_input(format!("--http {addr}: cannot listen there: {e}"))
            })?;
            if let Ok(local) = listener.local_addr() {
                eprintln!("rein mcp serve: listening on http://{local}/mcp");
            }
            let stop = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            rein::mcp::serve_http(governor, listener, stop).await
        }
    };
    scenario::mcp::shutdown(&servers).await;
    served
        .map(|()| Exit::Ok)
        .map_err(|e| CliError::new(Exit::Failed, e.to_string()))
}

async fn list(args: ListArgs) -> CliResult {
    let (configs, rules) = match &args.scenario {
        Some(file) => {
            let loaded = scenario::load(file)?;
            let checked = scenario::check(&loaded, &Setup::default())?;
            let configs: Vec<ServerConfig> = checked
                .scenario
                .tools
                .iter()
                .filter_map(|def| scenario::mcp::config(def, checked.scenario.workspace.as_deref()))
                .collect();
            if configs.is_empty() {
                return Err(CliError::bad_input(format!(
                    "{}: the scenario has no MCP servers (tools with \"kind\": \"mcp\")",
                    loaded.file
                )));
            }
            (configs, checked.scenario.policies.eligibility)
        }
        None => {
            let name: ServerName = args
                .server
                .parse()
                .map_err(|e: rein::mcp::ServerNameError| CliError::bad_input(e.to_string()))?;
            let config = match args.spec.as_slice() {
                [url] if url.starts_with("http://") || url.starts_with("https://") => {
                    ServerConfig::http(name, url.clone())
                }
                command => ServerConfig::stdio(name, command.iter().cloned()),
            };
            (vec![config], EligibilityRules::default())
        }
    };
    let mut servers = Vec::new();
    for config in configs {
        match McpServer::connect(config).await {
            Ok(server) => servers.push(server),
            Err(e) => {
                scenario::mcp::shutdown(&servers).await;
                return Err(CliError::bad_input(e.to_string()));
            }
        }
    }
    let specs: Vec<ToolSpec> = servers
        .iter()
        .flat_map(|s| {
            s.imported()
                .iter()
                .map(|t| t.spec().clone())
                .collect::<Vec<_>>()
        })
        .collect();
    let eligibility = Eligibility::new(rules, &specs);
    let result = match eligibility {
        Ok(eligibility) => {
            print(&servers, &eligibility, args.json);
            Ok(Exit::Ok)
        }
        Err(e) => Err(CliError::bad_input(format!(
            "the eligibility rules do not fit the servers' tools: {e}"
        ))),
    };
    scenario::mcp::shutdown(&servers).await;
    result
}

fn eligible_in(eligibility: &Eligibility, spec: &ToolSpec) -> Vec<&'static str> {
    State::ALL
        .iter()
        .filter(|s| eligibility.allows(**s, spec))
        .map(|s| s.as_str())
        .collect()
}

fn print(servers: &[McpServer], eligibility: &Eligibility, json: bool) {
    if json {
        let out: Vec<Value> = servers
            .iter()
            .flat_map(|s| {
                s.imported()
                    .iter()
                    .map(|t| entry(t, eligibility))
                    .collect::<Vec<_>>()
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return;
    }
    for server in servers {
        let tools = server.imported();
        outln!("mcp server `{}`: {} tools", server.name(), tools.len());
        let width = tools
            .iter()
            .map(|t| t.name().as_str().len())
            .max()
            .unwrap_or(0);
        for tool in tools.iter() {
            let a = tool.annotations();
            let kind = if a.is_read_only() {
                "read-only"
            } else if a.is_destructive() {
                "destructive"
            } else {
                "side effects"
            };
            let idem = if a.is_idempotent() {
                ", idempotent"
            } else {
                ""
            };
            let mapped = if tool.was_mapped() {
                format!("  (server name {:?})", tool.remote_name())
            } else {
                String::new()
            };
            let states = eligible_in(eligibility, tool.spec());
            let states = if states.is_empty() {
                "no state".to_owned()
            } else {
                states.join(", ")
            };
            outln!(
                "  {:width$}  {kind}{idem}, risk {}  eligible in: {states}{mapped}",
                tool.name().as_str(),
                a.risk_level(),
            );
        }
    }
}

fn entry(tool: &ImportedTool, eligibility: &Eligibility) -> Value {
    json!({
        "name": tool.name().as_str(),
        "server_name": tool.remote_name(),
        "mapped": tool.was_mapped(),
        "hints": tool.hints(),
        "annotations": tool.annotations(),
        "eligible_in": eligible_in(eligibility, tool.spec()),
        "description": tool.spec().description(),
    })
}
