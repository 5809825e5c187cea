//! `rein validate`: check a scenario file, engine included, without running it. The
//! scenario's MCP servers are started (or reached), handshaken and listed, then closed —
//! unless `--offline` — so a server that would fail the run fails the check instead.

use rein::mcp::McpServer;

use super::existing_dir;
use crate::cli::ValidateArgs;
use crate::exit::{CliError, CliResult, Exit};
use crate::scenario::{self, ApproverDef, Builtin, PlannerDef, Setup};

/// `rein validate`.
pub(crate) async fn validate(args: &ValidateArgs) -> CliResult {
    let loaded = scenario::load(&args.scenario)?;
    let workspace = args
        .workspace
        .as_deref()
        .map(|dir| existing_dir(dir, "--workspace"))
        .transpose()?;
    let setup = Setup {
        workspace,
        data_dir: None,
    };
    let checked = scenario::check(&loaded, &setup)?;
    for warning in &checked.warnings {
        eprintln!("warning: {warning}");
    }
    let s = &checked.scenario;
    let servers = if args.offline {
        Vec::new()
    } else {
        connect(&loaded.file, s).await?
    };
    // With the servers' tools registered, the engine must still build (eligibility rules
    // naming their tools, approvals): the same check `rein run` makes.
    let built = scenario::mcp::with_tools(scenario::builder(s, 0), &servers).build();
    let imported: Vec<(String, Vec<String>)> = servers
        .iter()
        .map(|server| {
            let names = server
                .imported()
                .iter()
                .map(|t| t.name().as_str().to_owned())
                .collect();
            (server.name().to_string(), names)
        })
        .collect();
    scenario::mcp::shutdown(&servers).await;
    if let Err(e) = built {
        return Err(CliError::bad_input(format!(
            "{}: the scenario does not build with its MCP servers' tools: {e}",
            loaded.file
        )));
    }
    let tools: Vec<&str> = s
        .tools
        .iter()
        .filter_map(|t| t.builtin.map(Builtin::name).or(t.fixture.as_deref()))
        // A skills folder brings the tool that loads them.
        .chain(s.skills.as_ref().map(|_| rein::tools::SkillLoad::NAME))
        .collect();
    let planner = match &s.planner {
        PlannerDef::Scripted(steps) => format!("scripted, {} steps", steps.len()),
        PlannerDef::Llm(def) => format!("llm, {} at {}", def.provider.model, def.provider.base_url),
    };
    let approver = match &s.approver {
        None => "none (approvals fail closed)".to_owned(),
        Some(ApproverDef::Auto) => "auto".to_owned(),
        Some(ApproverDef::Deny) => "deny".to_owned(),
        Some(ApproverDef::Scripted(answers)) => format!("scripted ({} answers)", answers.len()),
    };
    outln!("{}: valid ✓", loaded.file);
    if !s.description.is_empty() {
        outln!("  {}", s.description);
    }
    outln!(
        "  tools: {}",
        if tools.is_empty() {
            "none".to_owned()
        } else {
            tools.join(", ")
        }
    );
    let mcp: Vec<&str> = s.tools.iter().filter_map(|t| t.server.as_deref()).collect();
    if args.offline && !mcp.is_empty() {
        outln!(
            "  mcp servers: {} (not contacted: --offline)",
            mcp.join(", ")
        );
    }
    for (server, names) in &imported {
        outln!(
            "  mcp server `{server}`: {} tools would be imported: {}",
            names.len(),
            names.join(", ")
        );
    }
    outln!("  planner: {planner}");
    outln!("  approver: {approver}");
    if !s.policies.budgets.is_empty() {
        let budgets: Vec<String> = s
            .policies
            .budgets
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        outln!("  budgets: {}", budgets.join(", "));
    }
    Ok(Exit::Ok)
}

/// Starts every MCP server of `scenario`, in order.
///
/// # Errors
/// The first that does not start, reach or handshake: exit 2, the message naming the file,
/// where in it the server is declared, the server, and the fix.
async fn connect(file: &str, scenario: &scenario::Scenario) -> Result<Vec<McpServer>, CliError> {
    let mut servers = Vec::new();
    for (i, def) in scenario.tools.iter().enumerate() {
        let Some(config) = scenario::mcp::config(def, scenario.workspace.as_deref()) else {
            continue;
        };
        match McpServer::connect(config).await {
            Ok(server) => servers.push(server),
            Err(e) => {
                scenario::mcp::shutdown(&servers).await;
                return Err(CliError::bad_input(format!(
                    "{file}: {e}\n  at: tools[{i}]\n  help: check the server's command or url, or pass --offline to check the file without contacting its servers"
                )));
            }
        }
    }
    Ok(servers)
}
