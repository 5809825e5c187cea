//! `PgRunStore`: run snapshots, one row per run, replaced in one statement.

use std::sync::Arc;

use rein_ledger::LedgerStoreError;
use rein_run::{Run, RunId, RunStatus, RunStore, RunStoreError};

use crate::failure::Explain;
use crate::prepared;
use crate::stores::Shared;
use crate::{append, lease};

/// A [`RunStore`] in `PostgreSQL`: table `rein_runs`, one row per run holding its snapshot
/// as JSON text, replaced whole by an upsert (so a reader sees the old or the new snapshot,
/// never a mix). `list` gives runs in the order they were first saved.
///
/// A save of a run whose lease this process holds is checked against the lease's fencing
/// token in the same statement (one round trip); see [`PgStores::acquire_lease`](crate::PgStores::acquire_lease).
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

/// A save in one autocommit statement, so one round trip: the upsert, made only when the
/// writer's token (`$7`) passes the lease check on the run's lease row read `FOR SHARE`
/// (see [`lease::locked_lease!`] for why that fences a takeover under `READ COMMITTED`).
/// One row written, or none: a refused save is explained afterwards by the lease row
/// ([`lease::LEASE_NOW`], [`lease::verdict`]).
const SAVE: &str = concat!(
    "INSERT INTO rein_runs (run_id, snapshot, status, waiting, goal, updated_at)
     SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::bigint
     WHERE (",
    lease::lease_allows!("$7"),
    ")
     ON CONFLICT (run_id) DO UPDATE SET snapshot = EXCLUDED.snapshot,
         status = EXCLUDED.status, waiting = EXCLUDED.waiting, goal = EXCLUDED.goal,
         updated_at = EXCLUDED.updated_at, saved_at = now()"
);

/// How many times a save is made when its refusal has no explanation by the time it is
/// looked at (the lease changed in between): then it is simply made again.
const SAVE_ATTEMPTS: usize = 3;

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
        // Never a snapshot ahead of its ledger: what waits for the step's commit goes first.
        append::flush(&self.shared, id).await.map_err(|e| match e {
            LedgerStoreError::FencedOut(fenced) => RunStoreError::FencedOut(fenced),
            other => backend(context(), other),
        })?;
        let client = self.client(context).await?;
        let save = client
            .prepare_cached(SAVE)
            .await
            .map_err(|e| backend(context(), e))?;
        let mine = self.shared.held.token(id);
        // The listing columns are written with the snapshot, in the same statement.
        let (status, waiting, goal, updated_at) = columns(run);
        let token = lease::recorded(mine);
        for _ in 0..SAVE_ATTEMPTS {
            let saved = client
                .execute(
                    &save,
                    &[
                        &id.as_str(),
                        &json,
                        &status,
                        &waiting,
                        &goal,
                        &updated_at,
                        &token,
                    ],
                )
                .await
                .map_err(|e| backend(context(), e))?;
            if saved == 1 {
                return Ok(());
            }
            // Refused: the lease check in Rust, on the lease row as it is now, says why.
            let row = prepared::query_opt(&client, lease::LEASE_NOW, &[&id.as_str()])
                .await
                .map_err(|e| backend(context(), e))?;
            lease::verdict(
                id,
                mine,
                row.as_ref().and_then(|row| lease::returned(row, 0)),
            )?;
        }
        Err(backend(
            context(),
            format!(
                "the database refused it {SAVE_ATTEMPTS} times while the lease allowed it each \
                 time it was looked at; is another process changing run {id}'s lease?"
            ),
        ))
    }

    async fn load(&self, id: &RunId) -> Result<Run, RunStoreError> {
        let context = || format!("loading the snapshot of run {id}");
        let client = self.client(context).await?;
        let row = prepared::query_opt(
            &client,
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
        let rows = prepared::query(&client, "SELECT run_id FROM rein_runs ORDER BY ord", &[])
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
