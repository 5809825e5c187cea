//! A run as the stores have it, found by the id in a request's path: a malformed id is a
//! 400 and an unknown one a 404, never a 500.

use rein::ledger::Entry;
use rein::store::{LedgerStoreError, RunStoreError};
use rein::{Run, RunId};

use crate::error::HttpError;
use crate::html::one_line;

/// Parses a run id from a path, or says why it is none: 400, never a 500.
pub(crate) fn parse_id(text: &str) -> Result<RunId, HttpError> {
    text.parse::<RunId>().map_err(|e| {
        HttpError::bad_request(format!("`{}` is not a run id: {e}", one_line(text, 60)))
    })
}

/// A run as the stores have it: the snapshot (if readable) and the ledger (if it verifies).
pub(crate) struct Stored {
    pub(crate) snapshot: Result<Run, RunStoreError>,
    pub(crate) ledger: Result<Vec<Entry>, LedgerStoreError>,
}

/// Reads run `id`, or 404 when neither store knows it.
pub(crate) async fn stored(state: &crate::State, id: &RunId) -> Result<Stored, HttpError> {
    let snapshot = state.stores.snapshot(id).await;
    let ledger = state
        .stores
        .ledger(id)
        .await
        .map(|loaded| loaded.ledger.entries().to_vec());
    if matches!(snapshot, Err(RunStoreError::NotFound { .. }))
        && matches!(ledger, Err(LedgerStoreError::NotFound { .. }))
    {
        return Err(HttpError::not_found(format!("no run {id} in this store")));
    }
    Ok(Stored { snapshot, ledger })
}
