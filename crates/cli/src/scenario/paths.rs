//! The paths a scenario names, confined the way the built-in tools confine theirs: the
//! long form of a built-in entry, count files (inside the data directory) and the literal
//! paths a script hands to the file tools (inside the workspace, symbolic links resolved).

use std::path::Path;

use rein::tools::{FsError, Workspace, check_relative_path};

use super::model::{Builtin, ToolDef, ToolKind};
use crate::locate::JsonPath;

/// A tool definition's problem: where, what, and optionally how to fix it.
pub(crate) type ToolProblem = (JsonPath, String, Option<&'static str>);

/// Turns `{"kind": "builtin", "name": "fs.grep"}` into `{"builtin": "fs.grep"}`.
///
/// # Errors
/// A `kind` without a `name` (or the reverse), a name no built-in has, or both forms.
pub(crate) fn normalize(def: &mut ToolDef, path: &JsonPath) -> Result<(), ToolProblem> {
    let names = || {
        Builtin::ALL
            .iter()
            .map(|b| b.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (def.kind, def.name.take()) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err((
            path.key("name"),
            "`name` goes with \"kind\": write {\"kind\": \"builtin\", \"name\": \"fs.read\"}"
                .to_owned(),
            None,
        )),
        (Some(ToolKind::Builtin), None) => Err((
            path.clone(),
            format!("a built-in tool needs a \"name\" (one of {})", names()),
            None,
        )),
        (Some(ToolKind::Builtin), Some(name)) => {
            if def.builtin.is_some() || def.fixture.is_some() {
                return Err((
                    path.key("kind"),
                    "write a tool either as {\"kind\": \"builtin\", \"name\": …} or with \"builtin\"/\"fixture\", not both".to_owned(),
                    None,
                ));
            }
            let Some(builtin) = Builtin::ALL.into_iter().find(|b| b.name() == name) else {
                return Err((
                    path.key("name"),
                    format!(
                        "there is no built-in tool `{name}`; the built-ins are {}",
                        names()
                    ),
                    Some("`rein tools` lists them with their annotations"),
                ));
            };
            def.kind = None;
            def.builtin = Some(builtin);
            Ok(())
        }
        (Some(ToolKind::Mcp), None) => Ok(()),
        (Some(ToolKind::Mcp), Some(_)) => Err((
            path.key("name"),
            "an MCP tool entry names its server, not a tool: write {\"kind\": \"mcp\", \"server\": \"fs\", …}"
                .to_owned(),
            None,
        )),
    }
}

/// Checks a fixture's `count_file`: relative to the data directory, without `..`, and —
/// when the data directory exists — not through a symbolic link that leads out of it.
///
/// # Errors
/// Why the path would be refused, in words.
pub(crate) fn check_count_file(file: &Path, data_dir: Option<&Path>) -> Result<(), String> {
    let Some(text) = file.to_str() else {
        return Err("the count file's path is not UTF-8".to_owned());
    };
    let why = |e: &dyn std::fmt::Display| {
        format!("{e}; the count file is relative to the data directory and stays inside it")
    };
    check_relative_path(text).map_err(|e| why(&e))?;
    if let Some(workspace) = data_dir.and_then(|dir| Workspace::open(dir).ok())
        && let Err(e @ FsError::Path(_)) = workspace.check_on_disk(text)
    {
        return Err(why(&e));
    }
    Ok(())
}

/// Checks a literal `path` a script gives a file tool, as the tool would: lexically, and —
/// with a workspace — on disk (a symbolic link that leads out is refused now, not at run
/// time).
///
/// # Errors
/// Why the tool would refuse the path, in words.
pub(crate) fn check_script_path(workspace: Option<&Path>, path: &str) -> Result<(), String> {
    check_relative_path(path).map_err(|e| e.to_string())?;
    if let Some(workspace) = workspace.and_then(|dir| Workspace::open(dir).ok())
        && let Err(e @ FsError::Path(_)) = workspace.check_on_disk(path)
    {
        return Err(e.to_string());
    }
    Ok(())
}

/// Resolves a scenario's `skills` folder (relative to the scenario file's folder `base`)
/// and loads it, so that a broken skill is an error at check time.
///
/// # Errors
/// Why the skills cannot be loaded, naming the file.
pub(crate) fn check_skills(dir: &Path, base: &Path) -> Result<std::path::PathBuf, String> {
    let full = base.join(dir);
    let canonical = full
        .canonicalize()
        .map_err(|e| format!("the skills folder {} cannot be used: {e}", full.display()))?;
    rein::tools::load_skills(&canonical).map_err(|e| e.to_string())?;
    Ok(canonical)
}
