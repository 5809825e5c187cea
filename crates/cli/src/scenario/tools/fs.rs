//! The built-in tools a scenario declares: `rein::tools`' file tools, `shell.run` and
//! `http.fetch`, confined to the scenario's workspace and configured by its entry.

use std::path::Path;
use std::time::Duration;

use rein::EngineBuilder;
use rein::shell::{Isolation, ShellConfig, ShellGuard, ShellRun};
use rein::tools::{FsTool, HttpConfig, HttpFetch, Workspace};

use crate::scenario::model::{Builtin, IsolationDef, ToolDef};

/// Adds the built-in `kind` that `def` declares, confined to `workspace`. Nothing is added
/// without a usable workspace (the scenario check refuses a built-in without one, but for
/// `http.fetch`, which needs none) or a configuration the check would refuse.
pub(crate) fn add_builtin(
    builder: EngineBuilder,
    kind: Builtin,
    def: &ToolDef,
    workspace: Option<&Path>,
) -> EngineBuilder {
    if kind == Builtin::Http {
        let http = def.http.clone().unwrap_or_default();
        let mut config = HttpConfig::new(http.allow_hosts);
        if let Some(bytes) = http.max_bytes {
            config = config.with_max_bytes(bytes);
        }
        if let Some(ms) = http.timeout_ms {
            config = config.with_timeout(Duration::from_millis(ms));
        }
        let tool = if http.post {
            HttpFetch::new(config)
        } else {
            HttpFetch::get_only(config)
        };
        return match tool {
            Ok(tool) => builder.tool(tool),
            Err(_) => builder,
        };
    }
    let Some(workspace) = workspace.and_then(|dir| Workspace::open(dir).ok()) else {
        return builder;
    };
    if let Some(op) = kind.op() {
        return builder.tool(FsTool::new(op, workspace));
    }
    let Some(shell) = &def.shell else {
        return builder;
    };
    let guard = ShellGuard::new(shell.allow.iter().cloned(), shell.deny.iter().cloned())
        .allow_launchers(shell.launchers.iter().cloned());
    let isolation = match shell.isolation {
        IsolationDef::Namespaces => Isolation::Namespaces,
        IsolationDef::None => Isolation::None,
    };
    let mut config = ShellConfig::new(guard)
        .with_sandbox(shell.sandbox)
        .with_isolation(isolation);
    if shell.timeout_ms.is_some() || shell.max_timeout_ms.is_some() {
        config = config.with_timeout(
            Duration::from_millis(shell.timeout_ms.unwrap_or(30_000)),
            Duration::from_millis(shell.max_timeout_ms.unwrap_or(600_000)),
        );
    }
    if let Some(cap) = shell.output_cap {
        config = config.with_output_cap(cap);
    }
    if let Some(cap) = shell.spill_cap {
        config = config.with_spill_cap(cap);
    }
    if let Some(max) = shell.max_processes {
        config = config.with_max_processes(max);
    }
    if let Some(env) = &shell.env {
        config = config.with_env_allowlist(env.iter().cloned());
    }
    builder.tool(ShellRun::new(workspace, config))
}
