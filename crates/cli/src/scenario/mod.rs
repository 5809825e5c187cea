//! Scenario files: the format ([`Scenario`]), reading one with errors that point into the
//! file, checking it (including building the engine), and turning it into an engine.

mod build;
mod check;
mod error;
pub(crate) mod mcp;
mod model;

use std::path::{Path, PathBuf};

use rein::Value;

pub(crate) use build::builder;
pub(crate) use check::{Setup, check};
pub use error::ScenarioError;
pub(crate) use model::{
    Answer, ApproverDef, Behavior, Builtin, PlannerDef, Scenario, ScriptedAnswer,
};

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

/// Reads and parses the scenario file at `path`.
///
/// # Errors
/// [`ScenarioError`] naming the file, and for a parse error the line, column and JSON path.
pub(crate) fn load(path: &Path) -> Result<Loaded, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        let what = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_owned(),
            std::io::ErrorKind::InvalidData => "the file is not UTF-8 text".to_owned(),
            _ => e.to_string(),
        };
        ScenarioError::whole(&file, format!("cannot read the scenario: {what}"))
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
    if !text.trim_start().starts_with('{') && serde_json::from_str::<Value>(&text).is_ok() {
        let mut error = ScenarioError::at(
            &file,
            &text,
            crate::locate::JsonPath::root(),
            "a scenario file holds one JSON object",
        );
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
