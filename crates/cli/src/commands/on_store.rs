//! The commands that drive runs (run, resume, approve, narrow, replay) on a `PostgreSQL`
//! store: a run opened again from the scenario stored with it, and its ledger read back.
//! `rein resume` and `rein approve` there only record the answer or the verdict and queue
//! the run: a `rein worker` drives it, so the machine that answers never runs the agent's
//! tools with its own keys.

use std::path::PathBuf;

use rein::ledger::{Entry, EntryKind};
use rein::postgres::PgStores;
use rein::store::{LedgerStore as _, LedgerStoreError};
use rein::{EngineError, RunId, RunStatus};

use super::reopened::{Reopened, restore_secrets};
use super::store::ledger_error;
use crate::exit::{CliError, CliResult, Exit};
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

/// `rein resume RUN [--input ANSWER] --store URL`: records the answer (when the run waits
/// for one) under the run's lease, and queues the run for a worker. A run that cannot go
/// on (finished, waiting for an answer not given, or for a verdict) is refused as `rein
/// resume` refuses it on a data directory; nothing is recorded or queued then.
///
/// # Errors
/// As said, and what reopening the run reports.
pub(super) async fn resume_queued(
    stores: &PgStores,
    home: &Home,
    id: &RunId,
    input: Option<&str>,
) -> CliResult {
    let Reopened {
        engine,
        servers,
        _lock,
    } = reopen(stores, home, id, "resumed").await?;
    let recorded = match input {
        Some(answer) => engine.record_answer(id, answer, None).await.map(drop),
        None => runnable(&engine, id).await,
    };
    _lock.release().await;
    scenario::mcp::shutdown(&servers).await;
    recorded.map_err(|e| super::engine_error(e, home))?;
    queue(stores, id).await
}

/// Whether run `id` can be driven on as it is: not finished, not waiting for a person.
async fn runnable(engine: &rein::Engine, id: &RunId) -> Result<(), EngineError> {
    let run = engine.load_run(id).await?;
    if run.is_finished() {
        return Err(EngineError::RunFinished {
            id: id.clone(),
            status: run.status(),
        });
    }
    if run.status() == RunStatus::Paused {
        if let Some(question) = run.pending_question() {
            return Err(EngineError::AwaitingAnswer {
                id: id.clone(),
                question: question.question.clone(),
                options: question.options.clone(),
            });
        }
        // Looking is touching: an approval past its timeout is denied now, and the run
        // can go on.
        if let Some(pending) = engine.pending_approval(id).await? {
            return Err(EngineError::AwaitingApproval {
                id: id.clone(),
                pending: Box::new(pending),
            });
        }
    }
    Ok(())
}

/// Queues run `id` for a worker and says so.
///
/// # Errors
/// When the store fails (the answer or verdict is recorded: `rein resume` queues it again).
pub(super) async fn queue(stores: &PgStores, id: &RunId) -> CliResult {
    stores.enqueue(id).await.map_err(|e| {
        CliError::new(
            Exit::Failed,
            format!("{e}; what was asked is recorded: queue the run again with `rein resume {id} --store URL`"),
        )
    })?;
    outln!(
        "run {id} is queued: a worker drives it (`rein worker --store URL`); `rein runs list --store URL` shows where it is"
    );
    Ok(Exit::Ok)
}
