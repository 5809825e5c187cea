//! `PgStopRequests`: an operator's abort or interrupt of a run, one row per run, written by
//! any process on any machine and read by the worker that drives the run.

use std::sync::Arc;

use rein_run::{RunId, RunStoreError, StopKind, StopRequest, StopRequestStore, Timestamp};

use crate::failure::Explain;
use crate::prepared;
use crate::stores::Shared;

/// A [`StopRequestStore`] in `PostgreSQL`: table `rein_stop_requests`, at most one row per
/// run (kind, who asked, why, when).
///
/// - **Durable.** A request is committed before `request` returns.
/// - **An abort stands.** A later interrupt never replaces a waiting abort
///   ([`StopRequest::then`]): the rule is in the upsert itself, so two operators asking at
///   once on two machines cannot soften an abort either.
/// - **Not fenced.** Anyone may ask a run to stop, whoever holds its lease; the holder
///   reads the request at its next step (`EngineBuilder::stop_request_poll`).
///
/// Made by [`PgStores::stop_requests`](crate::PgStores::stop_requests); cheap to clone.
#[derive(Debug, Clone)]
pub struct PgStopRequests {
    shared: Arc<Shared>,
}

fn backend(context: String, source: impl Explain) -> RunStoreError {
    RunStoreError::Backend {
        context,
        source: source.explain(),
    }
}

const fn kind_text(kind: StopKind) -> &'static str {
    match kind {
        StopKind::Interrupt => "interrupt",
        StopKind::Abort => "abort",
    }
}

impl PgStopRequests {
    pub(crate) const fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
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

impl StopRequestStore for PgStopRequests {
    async fn request(&self, id: &RunId, request: &StopRequest) -> Result<(), RunStoreError> {
        let context = || format!("asking run {id} to stop");
        let at = i64::try_from(request.requested_at.as_unix_millis()).unwrap_or(i64::MAX);
        let client = self.client(context).await?;
        // The newer request replaces the waiting one unless it would soften an abort
        // (StopRequest::then), decided by the row lock the upsert takes.
        prepared::execute(
            &client,
            "INSERT INTO rein_stop_requests (run_id, kind, requested_by, reason, requested_at_ms)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (run_id) DO UPDATE SET
                     kind = EXCLUDED.kind, requested_by = EXCLUDED.requested_by,
                     reason = EXCLUDED.reason, requested_at_ms = EXCLUDED.requested_at_ms
                 WHERE NOT (rein_stop_requests.kind = 'abort' AND EXCLUDED.kind = 'interrupt')",
            &[
                &id.as_str(),
                &kind_text(request.kind),
                &request.by,
                &request.reason,
                &at,
            ],
        )
        .await
        .map_err(|e| backend(context(), e))?;
        Ok(())
    }

    async fn pending(&self, id: &RunId) -> Result<Option<StopRequest>, RunStoreError> {
        let context = || format!("reading the stop request of run {id}");
        let client = self.client(context).await?;
        let Some(row) = prepared::query_opt(
            &client,
            "SELECT kind, requested_by, reason, requested_at_ms
                 FROM rein_stop_requests WHERE run_id = $1",
            &[&id.as_str()],
        )
        .await
        .map_err(|e| backend(context(), e))?
        else {
            return Ok(None);
        };
        let kind = match row.get::<_, &str>(0) {
            "abort" => StopKind::Abort,
            "interrupt" => StopKind::Interrupt,
            other => {
                return Err(RunStoreError::Corrupt {
                    id: id.clone(),
                    location: format!("table rein_stop_requests, run {id}"),
                    reason: format!(
                        "its kind `{other}` is neither `abort` nor `interrupt`; delete the row and ask again"
                    ),
                });
            }
        };
        let at: i64 = row.get(3);
        Ok(Some(StopRequest::new(
            kind,
            row.get::<_, String>(1),
            row.get::<_, String>(2),
            Timestamp::from_unix_millis(u64::try_from(at).unwrap_or(0)),
        )))
    }

    async fn clear(&self, id: &RunId, honoured: &StopRequest) -> Result<(), RunStoreError> {
        let context = || format!("clearing the stop request of run {id}");
        let at = i64::try_from(honoured.requested_at.as_unix_millis()).unwrap_or(i64::MAX);
        let client = self.client(context).await?;
        // Only the request honoured: one that replaced it since (the upsert's row lock
        // orders the two) stays.
        prepared::execute(
            &client,
            "DELETE FROM rein_stop_requests WHERE run_id = $1 AND kind = $2
             AND requested_by = $3 AND reason = $4 AND requested_at_ms = $5",
            &[
                &id.as_str(),
                &kind_text(honoured.kind),
                &honoured.by,
                &honoured.reason,
                &at,
            ],
        )
        .await
        .map_err(|e| backend(context(), e))?;
        Ok(())
    }
}
