//! The commands that drive runs (run, resume, approve, narrow, replay) on a `PostgreSQL`
//! store: a run opened again from the scenario stored with it, and its ledger read back.

use std::path::PathBuf;

use rein::RunId;
use rein::ledger::{Entry, EntryKind};
use rein::postgres::PgStores;
use rein::store::{LedgerStore as _, LedgerStoreError};

use super::reopened::{Reopened, restore_secrets};
use super::store::ledger_error;
use crate::exit::CliError;
use crate::home::{Home, store_failed};
use crate::ledger_file::{Anchor, LedgerFile};
use crate::scenario::{self, Setup};
use crate::tree::Waiting;

/// The verified ledger of run `id` in `stores`, or why not.
async fn entries(stores: &PgStores, id: &RunId) -> Result<Vec<Entry>, CliError> {
    match stores.ledgers().load(id).await {
        Ok(loaded) => Ok(loaded.ledger.entries().to_vec()),
        Err(LedgerStoreError::NotFound { .. }) => Err(CliError::bad_input(format!(
            "no run {id} in the store at {}; `rein runs list --store URL` shows the runs there",
            stores.config().target()
        ))),
        Err(e) => Err(ledger_error(&e)),
    }
}

/// Opens run `id` of `stores` again from the scenario stored with it (its secrets read
/// again from the original file, when it had any), under the run's lease; `verb` says
/// what for in the errors.
///
/// # Errors
/// Bad input when the run or its stored scenario is missing; what loading, checking,
/// connecting and building report; a lease another process holds.
pub(super) async fn reopen(
    stores: &PgStores,
    home: &Home,
    id: &RunId,
    verb: &str,
) -> Result<Reopened, CliError> {
    let (engine, servers) = rebuild(stores, id, verb).await?;
    match home.hold(id).await {
        Ok(hold) => Ok(Reopened {
            engine,
            servers,
            _lock: hold,
        }),
        Err(e) => {
            scenario::mcp::shutdown(&servers).await;
            Err(e)
        }
    }
}

/// The engine that drives run `id` of `stores`, rebuilt from the scenario stored with it
/// (with this process's tools, keys and MCP servers: shut them down when done).
///
/// # Errors
/// As [`reopen`], but no lease is taken.
pub(super) async fn rebuild(
    stores: &PgStores,
    id: &RunId,
    verb: &str,
) -> Result<(rein::Engine, Vec<rein::mcp::McpServer>), CliError> {
    let home = Home::Store(stores.clone());
    let ledger = entries(stores, id).await?;
    // A child run is rebuilt from the scenario of the run `rein run` started its tree with.
    let mut owner = id.clone();
    let mut config = stores
        .run_config(&owner)
        .await
        .map_err(|e| store_failed(&e))?;
    let mut seen = std::collections::HashSet::new();
    while config.is_none() && seen.insert(owner.clone()) {
        let parent = match entries(stores, &owner).await {
            Ok(entries) => entries.iter().find_map(|e| match e.event() {
                EntryKind::ChildOf { parent, .. } => Some(parent.clone()),
                _ => None,
            }),
            Err(_) => None,
        };
        let Some(parent) = parent else { break };
        owner = parent;
        config = stores
            .run_config(&owner)
            .await
            .map_err(|e| store_failed(&e))?;
    }
    let Some(config) = config else {
        return Err(CliError::bad_input(format!(
            "run {id} has no stored scenario in the store at {}, so its tools and planner cannot be rebuilt; only runs started with `rein run --store` can be {verb} by the CLI",
            stores.config().target()
        )));
    };
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut loaded = scenario::parse(
        format!("the scenario stored with run {owner}"),
        config.config,
        here,
    )?;
    restore_secrets(&mut loaded, config.source.map(PathBuf::from), &owner)?;
    let setup = Setup {
        workspace: None,
        data_dir: None,
    };
    let scenario = scenario::check(&loaded, &setup)?.scenario;
    super::counts_somewhere(&scenario)?;
    // A scripted approver continues where the run's earlier processes left off.
    let approvals_used = ledger
        .iter()
        .filter(|e| matches!(e.event(), EntryKind::ApprovalRequested { .. }))
        .count();
    let servers = scenario::mcp::connect(&scenario).await?;
    match home.engine(scenario::mcp::with_tools(
        scenario::builder(&scenario, approvals_used),
        &servers,
    )) {
        Ok(engine) => Ok((engine, servers)),
        Err(e) => {
            scenario::mcp::shutdown(&servers).await;
            Err(e)
        }
    }
}

/// Run `id`'s verified ledger in `stores` as the summary reads it, the runs below it that
/// wait for a verdict (none are looked for in a store yet), and where the ledger is.
///
/// # Errors
/// When it cannot be read, or does not verify (exit 4).
pub(super) async fn ledger(
    stores: &PgStores,
    id: &RunId,
) -> Result<(LedgerFile, Vec<Waiting>, String), CliError> {
    let entries = entries(stores, id).await?;
    let file = LedgerFile {
        entries,
        torn: None,
        verdict: Ok(()),
        anchor: Anchor::Outside,
    };
    let at = format!("run {id} in {}", stores.config().target());
    Ok((file, Vec::new(), at))
}
