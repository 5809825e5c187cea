//! `rein mcp …`: the MCP commands. `rein mcp list` connects to a server and prints its
//! tools as rein would import them: names (and mappings), the annotations rein derived from
//! the server's hints, and the states each tool would be eligible in.

use std::sync::Arc;

use rein::mcp::{ImportedTool, McpServer, ServerConfig, ServerName};
use rein::policy::{Eligibility, EligibilityRules};
use rein::{State, ToolSpec, Value, json};

use super::mcp_serve::{Bridge, BridgePlanner, EngineGovernor, serve_violations};
use super::{build_error, checked_scenario};
use crate::cli::mcp::{ListArgs, LoginArgs, McpCommand, ServeArgs};
use crate::datadir::DataDir;
use crate::exit::{CliError, CliResult, Exit};
use crate::scenario::{self, Setup};

/// Runs an MCP command.
pub(crate) async fn dispatch(command: McpCommand) -> CliResult {
    match command {
        McpCommand::List(args) => list(args).await,
        McpCommand::Serve(args) => serve(args).await,
        McpCommand::Login(args) => login(args).await,
    }
}

async fn login(args: LoginArgs) -> CliResult {
    let loaded = scenario::load(&args.scenario)?;
    let checked = scenario::check(&loaded, &Setup::default())?;
    let workspace = checked.scenario.workspace.as_deref();
    let Some(config) = checked
        .scenario
        .tools
        .iter()
        .filter_map(|def| scenario::mcp::config(def, workspace))
        .find(|config| config.name().as_str() == args.server)
    else {
        return Err(CliError::bad_input(format!(
            "{}: no MCP server `{}` in it; name one of its {{\"kind\": \"mcp\", \"server\": …}} entries",
            args.scenario.display(),
            args.server
        )));
    };
    rein::mcp::login(&config, |page| {
        eprintln!(
            "rein mcp login: open this page to log in to `{}`:\n{page}",
            args.server
        );
    })
    .await
    .map_err(|e| CliError::bad_input(e.to_string()))?;
    let token_file = config
        .oauth()
        .map(|o| o.token_file().display().to_string())
        .unwrap_or_default();
    println!(
        "logged in to `{}`; its tokens are in {token_file}",
        args.server
    );
    Ok(Exit::Ok)
}

async fn serve(args: ServeArgs) -> CliResult {
    let data = DataDir::new(&args.data.data_dir)?;
    let scenario = checked_scenario(&args.scenario, Some(&data), args.workspace.as_deref())?;
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
