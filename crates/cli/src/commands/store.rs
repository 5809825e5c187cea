//! The commands that read a `PostgreSQL` store (`--store postgres://…`, or `REIN_STORE`):
//! `rein runs list`, `rein ledger verify` and `show`, `rein inspect`, and moving ledgers between a store and JSONL
//! files with `rein ledger export` and `rein ledger import`.

use std::path::Path;

use rein::RunId;
use rein::ledger::LoadedLedger;
use rein::postgres::PgStores;
use rein::store::{LedgerStore as _, LedgerStoreError, RunStore as _};

use crate::exit::{CliError, CliResult, Exit};

use crate::home::open_store as open;

fn run_id(text: &str) -> Result<RunId, CliError> {
    text.parse()
        .map_err(|e| CliError::bad_input(format!("{text:?} is not a run id: {e}")))
}

/// A ledger store error as the CLI reports it: no such run is bad input, a ledger that
/// does not verify is exit 4, anything else a failure.
pub(super) fn ledger_error(e: &LedgerStoreError) -> CliError {
    let message = e.to_string();
    match e {
        LedgerStoreError::NotFound { .. } => CliError::bad_input(message),
        LedgerStoreError::Broken { .. } | LedgerStoreError::Corrupt { .. } => {
            CliError::new(Exit::LedgerBroken, format!("{message} ✗"))
        }
        _ => CliError::new(Exit::Failed, message),
    }
}

/// `rein runs list --store URL`: every run with a snapshot or a ledger, oldest first.
pub(crate) async fn list(url: &str) -> CliResult {
    let stores = open(url).await?;
    let failed = |e: &dyn std::fmt::Display| CliError::new(Exit::Failed, e.to_string());
    let mut ids = stores.runs().list().await.map_err(|e| failed(&e))?;
    for id in stores.ledgers().list().await.map_err(|e| failed(&e))? {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let target = stores.config().target();
    if ids.is_empty() {
        outln!("no runs in {target}");
        return Ok(Exit::Ok);
    }
    outln!("{:<36}  {:<11}  {:<8}  GOAL", "RUN ID", "STATUS", "STATE");
    for id in ids {
        match stores.runs().load(&id).await {
            Ok(run) => outln!(
                "{id:<36}  {:<11}  {:<8}  {}",
                run.status().to_string().to_uppercase(),
                run.state().to_string(),
                run.goal()
            ),
            Err(e) => outln!("{id:<36}  {:<11}  {:<8}  ({e})", "?", "?"),
        }
    }
    Ok(Exit::Ok)
}

/// The store at `url` and the ledger of run `target` in it, loaded and verified.
async fn verified_ledger(
    target: &str,
    url: &str,
) -> Result<(RunId, PgStores, LoadedLedger), CliError> {
    let id = run_id(target)?;
    let stores = open(url).await?;
    let loaded = stores
        .ledgers()
        .load(&id)
        .await
        .map_err(|e| ledger_error(&e))?;
    Ok((id, stores, loaded))
}

/// `rein ledger verify RUN_ID --store URL`: the stored lines, verified as a file's.
pub(crate) async fn verify(target: &str, url: &str) -> CliResult {
    let (id, stores, loaded) = verified_ledger(target, url).await?;
    outln!(
        "ledger of run {id} in {}: {} entries, hash chain intact — verified ✓",
        stores.config().target(),
        loaded.ledger.len()
    );
    if let Some(last) = loaded.ledger.entries().last() {
        outln!("last hash {}", last.hash());
    }
    Ok(Exit::Ok)
}

/// `rein ledger show RUN_ID --store URL [--json]`: the verified ledger as a timeline.
pub(crate) async fn show(target: &str, url: &str, json: bool) -> CliResult {
    let (_, stores, loaded) = verified_ledger(target, url).await?;
    let entries = loaded.ledger.entries();
    if json {
        let text = serde_json::to_string_pretty(entries)
            .map_err(|e| CliError::new(Exit::Failed, format!("cannot print the ledger: {e}")))?;
        outln!("{text}");
    } else {
        super::ledger::timeline(entries, &stores.config().target());
        outln!("hash chain intact — verified ✓");
    }
    Ok(Exit::Ok)
}

/// `rein inspect RUN_ID --store URL --format …`: the run's path through the state machine,
/// from its verified ledger.
pub(crate) async fn inspect(target: &str, url: &str, format: crate::cli::Format) -> CliResult {
    let (_, _, loaded) = verified_ledger(target, url).await?;
    out!(
        "{}",
        crate::inspect::run_path(loaded.ledger.entries(), format)
    );
    Ok(Exit::Ok)
}

/// `rein ledger export RUN_ID --store URL [--output FILE]`.
pub(crate) async fn export(target: &str, url: &str, output: Option<&Path>) -> CliResult {
    let id = run_id(target)?;
    let stores = open(url).await?;
    let bytes = stores
        .ledgers()
        .export_jsonl(&id)
        .await
        .map_err(|e| ledger_error(&e))?;
    match output {
        Some(path) => {
            std::fs::write(path, &bytes).map_err(|e| {
                CliError::new(
                    Exit::Failed,
                    format!("cannot write the ledger to {}: {e}", path.display()),
                )
            })?;
            eprintln!(
                "exported the ledger of run {id} ({} bytes) to {}",
                bytes.len(),
                path.display()
            );
        }
        // Ledger lines are UTF-8 JSON: printed as they are, byte for byte.
        None => out!("{}", String::from_utf8_lossy(&bytes)),
    }
    Ok(Exit::Ok)
}

/// `rein ledger import FILE --store URL`.
pub(crate) async fn import(file: &Path, url: &str) -> CliResult {
    let bytes = std::fs::read(file).map_err(|e| {
        CliError::bad_input(format!(
            "cannot read the ledger file {}: {e}",
            file.display()
        ))
    })?;
    let stores = open(url).await?;
    let (id, count) = stores
        .ledgers()
        .import_jsonl(&bytes)
        .await
        .map_err(|e| match e {
            LedgerStoreError::Backend { .. } | LedgerStoreError::FencedOut(_) => {
                CliError::new(Exit::Failed, e.to_string())
            }
            other => ledger_error(&other),
        })?;
    outln!(
        "imported {count} entries of run {id} into {} — verified ✓",
        stores.config().target()
    );
    Ok(Exit::Ok)
}
