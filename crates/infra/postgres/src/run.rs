//! `PgRunStore`: run snapshots, one row per run, replaced in one statement.

use std::sync::Arc;

use rein_run::{Run, RunId, RunStatus, RunStore, RunStoreError};

use crate::failure::Explain;
use crate::lease;
use crate::stores::Shared;

/// A [`RunStore`] in `PostgreSQL`: table `rein_runs`, one row per run holding its snapshot
/// as JSON text, replaced whole by an upsert (so a reader sees the old or the new snapshot,
/// never a mix). `list` gives runs in the order they were first saved.
///
/// A save of a run whose lease this process holds is checked against the lease's fencing
/// token in the same transaction; see [`PgStores::acquire_lease`](crate::PgStores::acquire_lease).
#[derive(Debug, Clone)]
pub struct PgRunStore {
    shared: Arc<Shared>,
}

fn backend(context: String, source: impl Explain) -> RunStoreError {
    RunStoreError::Backend {
        context,
        source: source.explain(),
    }
}

impl PgRunStore {
    pub(crate) const fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    async fn client(
        &self,
        context: impl FnOnce() -> String,
    ) -> Result<deadpool_postgres::Object, RunStoreError> {
        self.shared
            .client()
            .await
            .map_err(|e| backend(context(), e))
    }
}

impl RunStore for PgRunStore {
    async fn save(&self, run: &Run) -> Result<(), RunStoreError> {
        let id = run.id();
        let context = || format!("saving the snapshot of run {id}");
        let json = serde_json::to_string(run).map_err(|e| backend(context(), e))?;
        let mut client = self.client(context).await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| backend(context(), e))?;
        let statements = tokio::try_join!(
            lease::statement(&tx),
            tx.prepare_cached(
                "INSERT INTO rein_runs (run_id, snapshot, status, waiting, goal, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (run_id) DO UPDATE SET snapshot = EXCLUDED.snapshot,
                     status = EXCLUDED.status, waiting = EXCLUDED.waiting, goal = EXCLUDED.goal,
                     updated_at = EXCLUDED.updated_at, saved_at = now()",
            ),
        );
        let (lease_row, upsert) = statements.map_err(|e| backend(context(), e))?;
        let mine = self.shared.held.token(id);
        // The listing columns are written with the snapshot, in the same statement.
        let (status, waiting, goal, updated_at) = columns(run);
        // The lease check and the upsert go out in one pipeline: the upsert is kept only if
        // the check passes; otherwise `tx` is dropped, which rolls it back.
        let key = id.as_str();
        let by_run: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&key];
        let row: [&(dyn tokio_postgres::types::ToSql + Sync); 6] =
            [&key, &json, &status, &waiting, &goal, &updated_at];
        let (lease_row, upserted) =
            tokio::join!(tx.query_opt(&lease_row, &by_run), tx.execute(&upsert, &row),);
        let lease_row = lease_row.map_err(|e| backend(context(), e))?;
        lease::verdict(id, mine, lease_row.as_ref())?;
        upserted.map_err(|e| backend(context(), e))?;
        tx.commit().await.map_err(|e| backend(context(), e))
    }

    async fn load(&self, id: &RunId) -> Result<Run, RunStoreError> {
        let context = || format!("loading the snapshot of run {id}");
        let client = self.client(context).await?;
        let row = client
            .query_opt(
                "SELECT snapshot FROM rein_runs WHERE run_id = $1",
                &[&id.as_str()],
            )
            .await
            .map_err(|e| backend(context(), e))?
            .ok_or_else(|| RunStoreError::NotFound { id: id.clone() })?;
        parse(id, row.get(0))
    }

    async fn list(&self) -> Result<Vec<RunId>, RunStoreError> {
        let context = || "listing the runs".to_owned();
        let client = self.client(context).await?;
        let rows = client
            .query("SELECT run_id FROM rein_runs ORDER BY ord", &[])
            .await
            .map_err(|e| backend(context(), e))?;
        let mut ids = Vec::with_capacity(rows.len());
        for row in rows {
            let text: &str = row.get(0);
            match text.parse() {
                Ok(id) => ids.push(id),
                Err(e) => tracing::warn!(run_id = text, error = %e,
                    "skipping a row of rein_runs whose run id is not valid"),
            }
        }
        Ok(ids)
    }
}

/// Run `id`'s snapshot from its stored JSON text, checked to be of that run.
pub(crate) fn parse(id: &RunId, json: &str) -> Result<Run, RunStoreError> {
    let corrupt = |reason: String| RunStoreError::Corrupt {
        id: id.clone(),
        location: format!("table rein_runs, run {id}"),
        reason,
    };
    let run: Run = serde_json::from_str(json)
        .map_err(|e| corrupt(format!("it is not a valid run snapshot: {e}")))?;
    if run.id() != id {
        return Err(corrupt(format!(
            "it holds the snapshot of run {}",
            run.id()
        )));
    }
    Ok(run)
}

/// The listing columns of `run`: status, what it waits for, goal, last change (millis).
fn columns(run: &Run) -> (&'static str, Option<&'static str>, &str, i64) {
    let waiting = if run.status() == RunStatus::Paused {
        if run.pending_approval().is_some() {
            Some("approval")
        } else if run.pending_question().is_some() {
            Some("question")
        } else {
            None
        }
    } else {
        None
    };
    let updated = i64::try_from(run.updated_at().as_unix_millis()).unwrap_or(i64::MAX);
    (run.status().as_str(), waiting, run.goal(), updated)
}
