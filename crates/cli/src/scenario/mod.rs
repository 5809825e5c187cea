//! Scenario files: the format ([`Scenario`]), reading one with errors that point into the
//! file, checking it (including building the engine), and turning it into an engine.

mod approver;
mod build;
pub(crate) mod builtin;
mod check;
mod command_hook;
mod error;
mod hooks;
pub(crate) mod llm;
pub(crate) mod mcp;
mod model;
mod paths;
pub(crate) mod secrets;
mod tools;

use std::path::{Path, PathBuf};

pub(crate) use build::builder;
pub(crate) use check::{Setup, check};
pub use error::ScenarioError;
pub(crate) use model::{ApproverDef, Builtin, PlannerDef, Scenario};
pub(crate) use tools::PANIC_PREFIX;

/// The JSON Schema of scenario files (`rein schema scenario`).
pub(crate) const SCHEMA: &str = include_str!("../../schema/scenario.schema.json");

/// A scenario file as read: the parsed scenario, its text (to point into it), and where it
/// is.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    /// The scenario.
    pub(crate) scenario: Scenario,
    /// The file, as the user named it (for messages).
    pub(crate) file: String,
    /// The file's text.
    pub(crate) text: String,
    /// The directory relative paths in the file are resolved against.
    pub(crate) dir: PathBuf,
}

/// The largest scenario file rein reads (4 MiB). Scenario files are hand-written; anything
/// larger is refused before it is read whole.
pub(crate) const MAX_SCENARIO_BYTES: u64 = 4 * 1024 * 1024;

/// Reads and parses the scenario file at `path`.
///
/// # Errors
/// [`ScenarioError`] naming the file, and for a parse error the line, column and JSON path.
pub(crate) fn load(path: &Path) -> Result<Loaded, ScenarioError> {
    use std::io::Read as _;
    let file = path.display().to_string();
    let cannot_read = |e: &std::io::Error| {
        let what = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_owned(),
            std::io::ErrorKind::IsADirectory => "it is a directory".to_owned(),
            _ => e.to_string(),
        };
        ScenarioError::whole(&file, format!("cannot read the scenario: {what}"))
    };
    let handle = std::fs::File::open(path).map_err(|e| cannot_read(&e))?;
    // Read at most one byte past the cap: the file may grow between a size check and a read.
    let mut bytes = Vec::new();
    handle
        .take(MAX_SCENARIO_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot_read(&e))?;
    if bytes.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(too_large(&file));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        ScenarioError::whole(
            &file,
            format!(
                "cannot read the scenario: the file is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    let dir = std::path::absolute(path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    parse(file, text, dir)
}

/// Parses a scenario's `text`; `file` names it in messages, `dir` resolves its paths.
///
/// # Errors
/// [`ScenarioError`] with the line, column and JSON path of the problem.
pub(crate) fn parse(file: String, text: String, dir: PathBuf) -> Result<Loaded, ScenarioError> {
    if text.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(too_large(&file));
    }
    // A UTF-8 byte order mark is not JSON, but editors write it: skip it.
    let text = match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    };
    // Bound the nesting before anything is built: serde_json, the locator and the checks
    // all recurse per level.
    if let Some(offset) = crate::locate::first_too_deep(&text, crate::locate::MAX_DEPTH) {
        let mut error = ScenarioError::whole(
            &file,
            format!(
                "arrays and objects are nested more than {} levels deep here",
                crate::locate::MAX_DEPTH
            ),
        );
        error.position = Some(crate::locate::position_at(&text, offset));
        return Err(error.help(
            "a scenario nests a few levels (planner.scripted[0].decision.input …); check for unclosed brackets",
        ));
    }
    // Valid JSON but not an object? (Checked without building the value.)
    if !text.trim_start().starts_with('{')
        && serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok()
    {
        let mut error = ScenarioError::whole(&file, "a scenario file holds one JSON object");
        error.position = Some(crate::locate::Position { line: 1, column: 1 });
        return Err(error
            .help("start from an example in examples/scenarios/, or see `rein schema scenario`"));
    }
    match serde_json::from_str::<Scenario>(&text) {
        Ok(scenario) => Ok(Loaded {
            scenario,
            file,
            text,
            dir,
        }),
        Err(e) => Err(ScenarioError::from_serde(&file, &text, &e)),
    }
}

/// The error for a file over [`MAX_SCENARIO_BYTES`].
fn too_large(file: &str) -> ScenarioError {
    ScenarioError::whole(
        file,
        format!(
            "the file is larger than {} MiB, the most a scenario file may be",
            MAX_SCENARIO_BYTES / (1024 * 1024)
        ),
    )
    .help("a scenario holds a goal, policies, tools and a script; keep large data in the workspace and read it with fs.read")
}
