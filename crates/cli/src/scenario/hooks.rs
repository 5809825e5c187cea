//! Command hooks in scenario files: the `hooks` list, checked when the file is loaded (a
//! matcher that is not a glob, a command that does not exist), its paths resolved against
//! the scenario file's directory — never the workspace, which the agent can write — and
//! turned into the engine's hooks.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rein::hook::{HookPoint, HookSpec, ToolGlob};
use rein::tool::Digest;
use serde::{Deserialize, Serialize};

use super::command_hook::CommandHook;
use crate::locate::JsonPath;

/// The longest a command hook may be given to answer (10 minutes).
const MAX_TIMEOUT_MS: u64 = 600_000;

/// One command hook, as the scenario file writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HookDef {
    /// The hook's name, as the ledger records its verdicts (default `hooks[i]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    /// Where it is asked.
    pub(crate) point: HookPoint,
    /// At the tool points, the tools it is asked about (a glob over tool names).
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub(crate) matcher: Option<String>,
    /// The program and its arguments; paths are relative to the scenario file.
    pub(crate) command: Vec<String>,
    /// How long it may take (default 5000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeout_ms: Option<u64>,
    /// The environment variables it is given, by name (nothing else is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) env: Vec<String>,
}

impl HookDef {
    /// The hook's name: its own, or where it is in the list.
    pub(crate) fn name_at(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("hooks[{index}]"))
    }
}

/// Checks hook `index` and resolves its command's paths against `dir` (the scenario
/// file's directory): the program, when it is a bare name, on `PATH`; every argument that
/// looks like a path (no whitespace, not an option, holding a `/` or a `.`) must name a
/// file there. `Err` is the field at fault and what is wrong.
pub(crate) fn check(
    def: &mut HookDef,
    path: &JsonPath,
    dir: &Path,
) -> Result<(), (JsonPath, String)> {
    if let Some(matcher) = &def.matcher {
        matcher
            .parse::<ToolGlob>()
            .map_err(|e| (path.key("match"), e.to_string()))?;
    }
    if def.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
        return Err((path.key("name"), "the hook's name is empty".to_owned()));
    }
    match def.timeout_ms {
        Some(0) => {
            return Err((
                path.key("timeout_ms"),
                "a hook needs some time to answer: give timeout_ms above 0".to_owned(),
            ));
        }
        Some(ms) if ms > MAX_TIMEOUT_MS => {
            return Err((
                path.key("timeout_ms"),
                format!("timeout_ms is at most {MAX_TIMEOUT_MS} (10 minutes)"),
            ));
        }
        _ => {}
    }
    for (i, name) in def.env.iter().enumerate() {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err((
                path.key("env").index(i),
                format!("{name:?} is not an environment variable's name"),
            ));
        }
    }
    let Some(program) = def.command.first().filter(|p| !p.is_empty()) else {
        return Err((
            path.key("command"),
            "the hook's command is empty: give [\"program\", \"argument\", …]".to_owned(),
        ));
    };
    let program =
        resolve_program(program, dir).map_err(|why| (path.key("command").index(0), why))?;
    let mut resolved = vec![program.display().to_string()];
    for (i, arg) in def.command.iter().enumerate().skip(1) {
        if looks_like_path(arg) {
            let file = resolve_file(arg, dir).map_err(|why| (path.key("command").index(i), why))?;
            resolved.push(file.display().to_string());
        } else {
            resolved.push(arg.clone());
        }
    }
    def.command = resolved;
    Ok(())
}

/// The engine's hook for `def` (checked, so its paths are absolute), asked in `cwd`.
pub(crate) fn spec(def: &HookDef, index: usize, cwd: &Path) -> HookSpec {
    let timeout = Duration::from_millis(def.timeout_ms.unwrap_or(5_000));
    let command_line = serde_json::json!(def.command);
    let script = def
        .command
        .iter()
        .skip(1)
        .find(|arg| looks_like_path(arg))
        .or_else(|| def.command.first().filter(|p| p.contains('/')))
        .map(|file| match std::fs::read(file) {
            Ok(bytes) => Digest::of_bytes(&bytes),
            // An unreadable script is hashed as its path: another hook than the one that
            // ran, so a resume refuses rather than run the run with a script it cannot see.
            Err(_) => Digest::of_bytes(file.as_bytes()),
        });
    let hook = CommandHook::new(def.command.clone(), def.env.clone(), cwd.to_path_buf());
    let spec = HookSpec::new(def.name_at(index), [def.point], hook)
        .timeout(timeout)
        .command(Digest::of_json(&command_line), script);
    match def.matcher.as_deref().map(str::parse::<ToolGlob>) {
        Some(Ok(glob)) => spec.tools(glob),
        _ => spec,
    }
}

/// Whether a command's argument names a file: no whitespace, not an option, and a `/` or a
/// `.` in it (`check.sh`, `hooks/guard`).
fn looks_like_path(arg: &str) -> bool {
    !arg.is_empty()
        && !arg.starts_with('-')
        && !arg.contains(char::is_whitespace)
        && arg.contains(['/', '.'])
}

/// A program: a path (with a `/`) relative to `dir`, or a bare name found on `PATH`.
fn resolve_program(program: &str, dir: &Path) -> Result<PathBuf, String> {
    if program.contains('/') {
        return resolve_file(program, dir);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            format!(
                "the hook's program `{program}` is not on PATH; give a program that exists, or \
                 a path relative to the scenario file"
            )
        })
}

/// `file`, relative to `dir` (the scenario file's directory), which must exist. An
/// absolute path is kept as written, so resolving a resolved command (a stored scenario,
/// on resume) changes nothing, and the hook keeps its identity.
fn resolve_file(file: &str, dir: &Path) -> Result<PathBuf, String> {
    let full = dir.join(file);
    if Path::new(file).is_absolute() {
        return if full.is_file() {
            Ok(full)
        } else {
            Err(format!(
                "{} does not exist or is not a file",
                full.display()
            ))
        };
    }
    match full.canonicalize() {
        Ok(canonical) if canonical.is_file() => Ok(canonical),
        Ok(_) => Err(format!("{} is not a file", full.display())),
        Err(_) => Err(format!(
            "{} does not exist; a hook's files are found next to the scenario file, never in \
             the workspace",
            full.display()
        )),
    }
}
