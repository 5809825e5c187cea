//! `rein abort` and `rein interrupt`: an operator's stop request (DESIGN.md §7), stored
//! where the run is kept — the data directory's `stops/` or the `--store` database — for
//! the process driving the run to honour at its next step (on any machine, with a store),
//! or the run's next resume.

use std::time::{SystemTime, UNIX_EPOCH};

use rein::ledger::RunOutline;
use rein::run::{StopKind, StopRequest, Timestamp};
use rein::store::{LedgerStore, LedgerStoreError, StopRequestStore};
use rein::{RunId, RunStatus};

use crate::cli::StopArgs;
use crate::exit::{CliError, CliResult, Exit};
use crate::home::{Home, Place as _};

/// Asks run `args.run_id` to stop as `kind` says.
pub(crate) async fn stop(args: StopArgs, kind: StopKind) -> CliResult {
    let id: RunId = args
        .run_id
        .parse()
        .map_err(|e| CliError::bad_input(format!("{:?} is not a run id: {e}", args.run_id)))?;
    let by = match args.by {
        Some(by) if !by.trim().is_empty() => by,
        Some(_) => return Err(CliError::bad_input("--by is empty; name who asks")),
        None => user().ok_or_else(|| {
            CliError::bad_input(
                "cannot tell who asks (neither USER nor LOGNAME is set); name yourself with --by NAME",
            )
        })?,
    };
    let request = StopRequest::new(kind, by, args.reason, now());
    let home = Home::open(&args.data, &args.store).await?;
    home.require()?;
    let place = home.flag();
    match &home {
        Home::Dir(data) => {
            let stores = rein::store::FsStores::open(data.root()).map_err(|e| {
                CliError::bad_input(format!("cannot use data directory {}: {e}", data.shown()))
            })?;
            ask(
                stores.ledgers(),
                &stores.stop_requests(),
                &id,
                &request,
                &place,
            )
            .await?;
        }
        Home::Store(stores) => {
            ask(
                stores.ledgers(),
                stores.stop_requests(),
                &id,
                &request,
                &place,
            )
            .await?;
        }
    }
    outln!(
        "{kind} of run {id} requested by {}: the process driving the run stops it at its next step; a run nobody drives stops when it is next resumed (`rein resume {id} {place}`)",
        request.by
    );
    Ok(Exit::Ok)
}

/// Stores `request` for run `id` unless the run is unknown or has ended (its ledger, the
/// source of truth, says which): nothing is stored then.
async fn ask(
    ledgers: &impl LedgerStore,
    stops: &impl StopRequestStore,
    id: &RunId,
    request: &StopRequest,
    place: &str,
) -> Result<(), CliError> {
    let loaded = match ledgers.load(id).await {
        Ok(loaded) => loaded,
        Err(LedgerStoreError::NotFound { .. }) => {
            return Err(CliError::bad_input(format!(
                "no run {id} here; `rein runs list {place}` shows the runs; nothing was recorded"
            )));
        }
        Err(e) => return Err(super::store::ledger_error(&e)),
    };
    let status = RunOutline::of(loaded.ledger.entries()).status;
    if matches!(status, RunStatus::Completed | RunStatus::Failed) {
        return Err(CliError::bad_input(format!(
            "run {id} has {} already: a finished run cannot be stopped; nothing was recorded",
            status.as_str()
        )));
    }
    stops.request(id, request).await.map_err(|e| {
        CliError::new(
            Exit::Failed,
            format!("the stop request could not be stored: {e}; nothing was recorded"),
        )
    })
}

/// The user running rein, as the system names them.
fn user() -> Option<String> {
    ["USER", "LOGNAME"]
        .into_iter()
        .filter_map(|name| std::env::var(name).ok())
        .map(|name| name.trim().to_owned())
        .find(|name| !name.is_empty())
}

fn now() -> Timestamp {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Timestamp::from_unix_millis(millis)
}
