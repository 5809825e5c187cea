//! A stored run opened again by a later `rein` process (from a data directory or a store),
//! and the secrets its stored scenario left out, put back from the original file.

use rein::RunId;

use crate::exit::CliError;
use crate::home::Hold;
use crate::scenario;

/// A stored run opened again by a later `rein` process, to resume it or to decide on its
/// pending approval.
pub(crate) struct Reopened {
    /// The engine on the run's stores, with the scenario's tools and planner.
    pub(crate) engine: rein::Engine,
    /// The scenario's MCP servers, connected (shut them down when done).
    pub(crate) servers: Vec<rein::mcp::McpServer>,
    /// The run's lock or lease: no other `rein` drives it meanwhile (release it when done).
    pub(crate) _lock: Hold,
}

/// Puts back the MCP `env`/`headers` literals (and model header values) the stored copy of
/// run `id`'s scenario left out, reading them from its original file at `source`.
///
/// # Errors
/// Bad input naming the value the file no longer has, or the file that cannot be read.
pub(super) fn restore_secrets(
    loaded: &mut scenario::Loaded,
    source: Option<std::path::PathBuf>,
    id: &RunId,
) -> Result<(), CliError> {
    if !scenario::secrets::has_redacted(&loaded.scenario) {
        return Ok(());
    }
    let restored = source
        .as_deref()
        .ok_or_else(|| "the path of its original scenario file was not stored".to_owned())
        .and_then(|path| {
            let original = scenario::load(path).map_err(|e| e.to_string())?;
            scenario::secrets::restore(&mut loaded.scenario, &original.scenario)
        });
    restored.map_err(|why| {
        CliError::bad_input(format!(
            "run {id} cannot be resumed: {why}{}\n  help: restore the original scenario file with the same values; values given as {{\"from_env\": \"NAME\"}} are read from rein's environment on every start instead",
            source.map_or_else(String::new, |p| format!(" ({})", p.display()))
        ))
    })
}
