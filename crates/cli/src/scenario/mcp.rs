//! Scenario tools of kind `"mcp"`: checking their fields, turning them into server
//! configurations, and connecting to the servers before a run (each server's tools become
//! `SERVER.TOOL` in the engine).
//!
//! ```json
//! {"kind": "mcp", "server": "fs", "command": ["npx", "server-filesystem", "."]}
//! {"kind": "mcp", "server": "web", "url": "http://127.0.0.1:8080/mcp", "headers": {"Authorization": {"from_env": "WEB_AUTH"}}}
//! ```
//!
//! `env` and `headers` values are literal or `{"from_env": "NAME"}`; neither is ever
//! stored (see `secrets.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rein::EngineBuilder;
use rein::mcp::{AnnotationOverride, McpServer, OAuth, ServerConfig, ServerName, Transport};

use super::model::{ElicitFrom, SampleFrom, Scenario, SecretValue, ToolDef, ToolKind};
use super::paths::ToolProblem;
use crate::elicit::TerminalElicitor;
use crate::exit::CliError;
use crate::locate::JsonPath;

/// Checks an MCP tool definition and resolves its `cwd` against `dir` (the scenario's
/// folder, also the default). Returns the key the tool is known by (`SERVER.*`) and the
/// field that named it.
pub(crate) fn check(
    def: &mut ToolDef,
    path: &JsonPath,
    dir: &Path,
) -> Result<(String, &'static str), ToolProblem> {
    if def.kind != Some(ToolKind::Mcp) {
        return Err((
            path.key("kind"),
            "a tool with \"server\" is an MCP server's tools".to_owned(),
            Some("add \"kind\": \"mcp\""),
        ));
    }
    let others = [
        ("builtin", def.builtin.is_some()),
        ("fixture", def.fixture.is_some()),
    ]
    .into_iter()
    .chain(def.fixture_fields())
    .chain([("shell", def.shell.is_some()), ("http", def.http.is_some())]);
    if let Some((field, _)) = others.into_iter().find(|(_, set)| *set) {
        return Err((
            path.key(field),
            format!("`{field}` does not apply to an MCP server's tools"),
            Some(
                "an MCP tool entry takes server, command (env, cwd) or url (headers, oauth), handshake_timeout_ms, overrides, exclude, elicitation, sampling",
            ),
        ));
    }
    let Some(server) = &def.server else {
        return Err((
            path.clone(),
            "an MCP tool entry needs \"server\": the name its tools are prefixed with".to_owned(),
            Some(
                "write {\"kind\": \"mcp\", \"server\": \"fs\", \"command\": [\"program\", \"arg\"]}",
            ),
        ));
    };
    if let Err(e) = ServerName::new(server.as_str()) {
        return Err((path.key("server"), e.to_string(), None));
    }
    match (&def.command, &def.url) {
        (Some(_), Some(_)) | (None, None) => {
            return Err((
                path.clone(),
                format!(
                    "MCP server `{server}` needs exactly one of \"command\" (a child process) or \"url\" (streamable HTTP)"
                ),
                None,
            ));
        }
        (Some(command), None) => {
            if command.first().is_none_or(String::is_empty) {
                return Err((
                    path.key("command"),
                    format!("MCP server `{server}` has an empty command"),
                    Some("give the program and its arguments, e.g. [\"node\", \"server.js\"]"),
                ));
            }
            for (field, set) in [
                ("headers", def.headers.is_some()),
                ("oauth", def.oauth.is_some()),
            ] {
                if set {
                    return Err((
                        path.key(field),
                        format!("`{field}` applies to a server reached by \"url\""),
                        None,
                    ));
                }
            }
            let cwd = def
                .cwd
                .as_deref()
                .map_or_else(|| dir.to_path_buf(), |c| dir.join(c));
            if !cwd.is_dir() {
                return Err((
                    path.key("cwd"),
                    format!("the working directory {} is not a directory", cwd.display()),
                    None,
                ));
            }
            def.cwd = Some(cwd);
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err((
                    path.key("url"),
                    format!("{url:?} is not an http(s) URL"),
                    Some("e.g. \"http://127.0.0.1:8080/mcp\""),
                ));
            }
            for (field, set) in [("env", def.env.is_some()), ("cwd", def.cwd.is_some())] {
                if set {
                    return Err((
                        path.key(field),
                        format!("`{field}` applies to a server run by \"command\""),
                        None,
                    ));
                }
            }
            if let Some(oauth) = &mut def.oauth {
                let file = match oauth.token_file.as_deref() {
                    Some(file) => dir.join(file),
                    None => default_token_file(server).ok_or_else(|| {
                        (
                            path.key("oauth"),
                            "neither XDG_CONFIG_HOME nor HOME is set, so the OAuth token file has no default place".to_owned(),
                            Some("give \"oauth\": {\"token_file\": \"PATH\"} (a file of its own, outside the workspace and the data directory)"),
                        )
                    })?,
                };
                oauth.token_file = Some(file);
            }
        }
    }
    check_values(def.env.as_ref(), "env", server, path)?;
    check_values(def.headers.as_ref(), "headers", server, path)?;
    for (tool, value) in def.overrides.iter().flatten() {
        if let Err(e) = serde_json::from_value::<AnnotationOverride>(value.clone()) {
            return Err((
                path.key("overrides").key(tool.as_str()),
                format!("not an annotation override: {e}"),
                Some(
                    "an override sets read_only, destructive, idempotent or open_world (true/false), and \"widen\": true to allow widening",
                ),
            ));
        }
    }
    Ok((format!("{server}.*"), "server"))
}

/// Where a server's OAuth tokens are kept when the scenario does not say: the user's
/// configuration folder, never the workspace or the data directory.
fn default_token_file(server: &str) -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".config"))
        })?;
    Some(
        config
            .join("rein")
            .join("tokens")
            .join(format!("{server}.json")),
    )
}

/// Whether a call of `tool` is provided by an MCP server of the scenario (`names` has the
/// keys [`check`] returned).
pub(crate) fn provides<V>(names: &BTreeMap<String, V>, tool: &str) -> bool {
    tool.split_once('.')
        .is_some_and(|(server, _)| names.contains_key(&format!("{server}.*")))
}

/// The server configuration of a checked MCP tool entry (`None` for other tools); the
/// scenario's `workspace`, if any, is the server's root.
pub(crate) fn config(def: &ToolDef, workspace: Option<&Path>) -> Option<ServerConfig> {
    if def.kind != Some(ToolKind::Mcp) {
        return None;
    }
    let name: ServerName = def.server.as_deref()?.parse().ok()?;
    let transport = match (&def.command, &def.url) {
        (Some(command), None) => Transport::Stdio {
            command: command.clone(),
            env: resolved(def.env.as_ref())?,
            cwd: def.cwd.clone(),
        },
        (None, Some(url)) => Transport::Http {
            url: url.clone(),
            headers: resolved(def.headers.as_ref())?,
        },
        _ => return None,
    };
    let mut config = ServerConfig::new(name, transport);
    if let Some(ms) = def.handshake_timeout_ms {
        config = config.with_handshake_timeout(Duration::from_millis(ms));
    }
    if let Some(oauth) = &def.oauth {
        let file = oauth.token_file.clone()?;
        config =
            config.with_oauth(OAuth::new(file).with_scopes(oauth.scopes.iter().flatten().cloned()));
    }
    for (tool, value) in def.overrides.iter().flatten() {
        let Ok(o) = serde_json::from_value::<AnnotationOverride>(value.clone()) else {
            continue;
        };
        config = if tool == "*" {
            config.with_annotations(o)
        } else {
            config.with_tool_annotations(tool.clone(), o)
        };
    }
    for tool in def.exclude.iter().flatten() {
        config = config.without_tool(tool.clone());
    }
    if let Some(elicitation) = &def.elicitation {
        match elicitation.from {
            ElicitFrom::Terminal => {
                config = config.with_elicitor(std::sync::Arc::new(TerminalElicitor));
            }
        }
        if let Some(ms) = elicitation.timeout_ms {
            config = config.with_ask_timeout(Duration::from_millis(ms));
        }
    }
    // Every call is tied to its run: the server's progress and log lines reach the run's
    // subscribers, and its sampling requests (where allowed) the run's model.
    config = config.with_call_scopes(std::sync::Arc::new(rein::tool::CurrentCall));
    if let Some(sampling) = &def.sampling {
        match sampling.from {
            SampleFrom::Run => config = config.with_run_sampling(),
        }
        if let Some(ms) = sampling.timeout_ms {
            config = config.with_ask_timeout(Duration::from_millis(ms));
        }
    }
    if let Some(context) = crate::telemetry::context() {
        config = config.with_trace_context(context);
    }
    Some(config.with_roots(workspace.map(Path::to_path_buf)))
}

/// Every value of `map` resolved (`None` if one cannot be: the check refuses that first).
fn resolved(map: Option<&BTreeMap<String, SecretValue>>) -> Option<BTreeMap<String, String>> {
    map.into_iter()
        .flatten()
        .map(|(k, v)| super::secrets::resolve(v).map(|v| (k.clone(), v)))
        .collect()
}

/// Checks the `env` or `headers` values of `def` at `path`: a reference names a variable
/// that is set; a redaction appears only in a data directory copy.
fn check_values(
    map: Option<&BTreeMap<String, SecretValue>>,
    field: &'static str,
    server: &str,
    path: &JsonPath,
) -> Result<(), ToolProblem> {
    for (key, value) in map.into_iter().flatten() {
        let at = path.key(field).key(key.as_str());
        match value {
            SecretValue::Literal(_) => {}
            SecretValue::FromEnv { from_env } => {
                let valid = !from_env.is_empty() && !from_env.contains(['=', '\0']);
                if !valid {
                    return Err((
                        at,
                        format!("{from_env:?} is not an environment variable name"),
                        None,
                    ));
                }
                if std::env::var_os(from_env).is_none() {
                    return Err((
                        at,
                        format!(
                            "MCP server `{server}` takes `{field}.{key}` from the environment variable `{from_env}`, which is not set"
                        ),
                        Some(
                            "set it in the environment rein runs in (its value is never stored or printed)",
                        ),
                    ));
                }
            }
            SecretValue::Redacted { .. } => {
                return Err((
                    at,
                    format!(
                        "`{field}.{key}` of MCP server `{server}` is redacted: such values appear only in the data directory's copies"
                    ),
                    Some(
                        "write the value, or {\"from_env\": \"NAME\"} to read it from rein's environment",
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Connects to every MCP server of the scenario, in order.
///
/// # Errors
/// The first server that cannot be reached or imported: bad input (exit 2), the message
/// naming the server and the fix.
pub(crate) async fn connect(scenario: &Scenario) -> Result<Vec<McpServer>, CliError> {
    let mut servers = Vec::new();
    let workspace = scenario.workspace.as_deref();
    for config in scenario
        .tools
        .iter()
        .filter_map(|def| config(def, workspace))
    {
        match McpServer::connect(config).await {
            Ok(server) => servers.push(server),
            Err(e) => {
                shutdown(&servers).await;
                return Err(CliError::bad_input(e.to_string()));
            }
        }
    }
    Ok(servers)
}

/// Whether a server of the scenario asks its elicitation questions at rein's terminal
/// (stdin then cannot carry anything else, such as an MCP session).
pub(crate) fn elicits_at_terminal(scenario: &Scenario) -> bool {
    scenario.tools.iter().any(|def| {
        def.elicitation
            .as_ref()
            .is_some_and(|e| e.from == ElicitFrom::Terminal)
    })
}

/// `builder` with every imported tool of `servers` registered.
pub(crate) fn with_tools(mut builder: EngineBuilder, servers: &[McpServer]) -> EngineBuilder {
    for server in servers {
        for tool in server.tools() {
            builder = builder.tool(tool);
        }
    }
    builder
}

/// Closes every server (child processes are waited for).
pub(crate) async fn shutdown(servers: &[McpServer]) {
    for server in servers {
        server.shutdown().await;
    }
}
