//! The configuration of the built-ins that need one: `shell.run` (`"shell"`: the programs
//! it may run, timeouts, output caps, environment, sandbox) and `http.fetch` (`"http"`: the
//! hosts it may reach, POST, caps). Checked here with a path into the file; built in
//! `tools/builtin.rs`.

use super::model::{Builtin, ToolDef};
use super::paths::ToolProblem;
use crate::locate::JsonPath;

/// The example a `shell.run` entry follows.
pub(crate) const SHELL_EXAMPLE: &str = "{\"builtin\": \"shell.run\", \"shell\": {\"allow\": [\"ls\", \"cat\"], \"launchers\": [\"cargo\"], \"timeout_ms\": 60000}}";
/// The example an `http.fetch` entry follows.
pub(crate) const HTTP_EXAMPLE: &str =
    "{\"builtin\": \"http.fetch\", \"http\": {\"allow_hosts\": [\"api.example.com\"]}}";

/// Checks the `"shell"` and `"http"` fields of the tool at `path`. A warning (not an
/// error) is returned for a configuration that is valid but allows nothing.
///
/// # Errors
/// A configuration on the wrong built-in, a missing or empty `shell.allow`, a zero or
/// inconsistent timeout, a spill cap past the attachment limit, a bad variable name, a
/// host written as a URL.
pub(crate) fn check(def: &ToolDef, path: &JsonPath) -> Result<Option<String>, ToolProblem> {
    let shown = def.builtin.map_or_else(
        || format!("fixture `{}`", def.fixture.as_deref().unwrap_or_default()),
        |b| format!("`{}`", b.name()),
    );
    if def.shell.is_some() && def.builtin != Some(Builtin::Shell) {
        return Err((
            path.key("shell"),
            format!("`shell` configures the built-in `shell.run` only, not {shown}"),
            None,
        ));
    }
    if def.http.is_some() && def.builtin != Some(Builtin::Http) {
        return Err((
            path.key("http"),
            format!("`http` configures the built-in `http.fetch` only, not {shown}"),
            None,
        ));
    }
    let Some(kind) = def.builtin else {
        return Ok(None);
    };
    match kind {
        Builtin::Shell => check_shell(def, path).map(|()| None),
        Builtin::Http => check_http(def, path),
        _ => Ok(None),
    }
}

fn check_shell(def: &ToolDef, path: &JsonPath) -> Result<(), ToolProblem> {
    let Some(shell) = &def.shell else {
        return Err((
            path.clone(),
            "built-in `shell.run` needs a \"shell\" object naming the programs it may run"
                .to_owned(),
            Some(SHELL_EXAMPLE),
        ));
    };
    let at = path.key("shell");
    if shell.allow.is_empty() && shell.launchers.is_empty() {
        return Err((
            at.key("allow"),
            "`shell.allow` is empty: name the programs shell.run may run (an empty list would allow every program not denied)".to_owned(),
            Some(SHELL_EXAMPLE),
        ));
    }
    if let Some((i, program)) = shell
        .allow
        .iter()
        .enumerate()
        .find(|(_, p)| rein::shell::is_launcher(p))
    {
        return Err((
            at.key("allow").index(i),
            format!(
                "`{program}` runs other programs or code (a launcher), so `shell.allow` does not let it run; move it to `shell.launchers` if the model may run anything through it"
            ),
            Some(SHELL_EXAMPLE),
        ));
    }
    for (key, list) in [
        ("allow", &shell.allow),
        ("launchers", &shell.launchers),
        ("deny", &shell.deny),
    ] {
        if let Some((i, _)) = list
            .iter()
            .enumerate()
            .find(|(_, p)| p.is_empty() || p.chars().any(|c| c.is_control() || c == '/'))
        {
            return Err((
                at.key(key).index(i),
                "a program is named by its file name, e.g. \"cargo\": not empty, no `/`, no control characters".to_owned(),
                None,
            ));
        }
    }
    let timeout = shell.timeout_ms.unwrap_or(30_000);
    let max = shell.max_timeout_ms.unwrap_or(600_000);
    for (key, value) in [
        ("timeout_ms", shell.timeout_ms),
        ("max_timeout_ms", shell.max_timeout_ms),
    ] {
        if value == Some(0) {
            return Err((
                at.key(key),
                format!(
                    "`shell.{key}` is 0: a command would be killed before it starts; give milliseconds above 0"
                ),
                None,
            ));
        }
    }
    if timeout > max {
        return Err((
            at.key("timeout_ms"),
            format!(
                "`shell.timeout_ms` ({timeout}) is above `shell.max_timeout_ms` ({max}); the default timeout must fit the longest"
            ),
            None,
        ));
    }
    if shell.max_processes == Some(0) {
        return Err((
            at.key("max_processes"),
            "`shell.max_processes` is 0: no command could start; the count includes the command itself".to_owned(),
            None,
        ));
    }
    if let Some(cap) = shell.spill_cap
        && cap > rein::tool::Attachment::MAX_BYTES
    {
        return Err((
            at.key("spill_cap"),
            format!(
                "`shell.spill_cap` ({cap}) is above the {} bytes an attachment may hold",
                rein::tool::Attachment::MAX_BYTES
            ),
            None,
        ));
    }
    if let Some(env) = &shell.env
        && let Some((i, _)) = env
            .iter()
            .enumerate()
            .find(|(_, n)| n.is_empty() || n.contains(['=', '\0']))
    {
        return Err((
            at.key("env").index(i),
            "an environment variable is named without `=`, e.g. \"PATH\"".to_owned(),
            None,
        ));
    }
    Ok(())
}

fn check_http(def: &ToolDef, path: &JsonPath) -> Result<Option<String>, ToolProblem> {
    let Some(http) = &def.http else {
        return Ok(Some(format!(
            "{path}: built-in `http.fetch` has no \"http\" configuration, so it may reach no host; write {HTTP_EXAMPLE}"
        )));
    };
    let at = path.key("http");
    for (i, host) in http.allow_hosts.iter().enumerate() {
        let valid = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '[' | ']' | ':'))
            && !host.contains("://")
            && (!host.contains(':') || host.starts_with('['));
        if !valid {
            return Err((
                at.key("allow_hosts").index(i),
                format!(
                    "{host:?} is not a host name: write the host only, without scheme, port or path (e.g. \"api.example.com\")"
                ),
                None,
            ));
        }
    }
    for (key, value) in [
        ("timeout_ms", http.timeout_ms),
        ("max_bytes", http.max_bytes),
    ] {
        if value == Some(0) {
            return Err((
                at.key(key),
                format!("`http.{key}` is 0: every request would fail; give a value above 0"),
                None,
            ));
        }
    }
    if http.allow_hosts.is_empty() {
        return Ok(Some(format!(
            "{path}: `http.allow_hosts` is empty, so http.fetch may reach no host"
        )));
    }
    Ok(None)
}
