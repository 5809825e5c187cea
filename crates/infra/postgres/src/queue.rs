//! The run queue and run configurations: what a worker on any machine needs to find a run
//! to drive and to rebuild the engine that drives it.
//!
//! A run is queued ([`PgStores::enqueue`]) when it was submitted, and stays queued until a
//! worker that holds its lease takes it off ([`PgStores::dequeue`]) because the run ended
//! or waits for a person. A worker claims ([`PgStores::claim`]) the oldest queued run whose
//! lease is free or expired, with `FOR UPDATE SKIP LOCKED`, and takes its lease in the
//! same statement; so a run whose worker died is claimed again once its lease expires by
//! the database's clock. `NOTIFY` is only a wake-up hint, sent after the queueing commits:
//! a worker that missed it finds the run when it next polls.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rein_run::RunId;
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;
use tokio_postgres::AsyncMessage;

use crate::lease::{Lease, millis, stored};
use crate::prepared;
use crate::tls::RustlsConnect;
use crate::{PgError, PgStores};

/// The channel `NOTIFY` wakes idle workers on.
const CHANNEL: &str = "rein_queue";

/// The configuration a run was started from, as the application saved it
/// ([`PgStores::save_run_config`]): for the `rein` command, its scenario with every secret
/// redacted, and the path of the original file the secrets are read from again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunConfig {
    /// The configuration (for `rein`, the scenario's JSON).
    pub config: String,
    /// Where it came from, if the application said.
    pub source: Option<String>,
}

/// How many times one [`PgStores::claim`] looks for a run when each candidate it found was
/// leased by a concurrent claim in the meantime.
const CLAIM_ATTEMPTS: usize = 16;

/// A claim: the oldest queued run whose lease is free or expired (`FOR UPDATE SKIP LOCKED`,
/// so concurrent claims pass each other), leased in the same statement. One row when a
/// candidate was found: its id, and the lease's token and expiry — both `NULL` when a
/// concurrent claim leased the candidate after this statement's snapshot (the lease is
/// taken only where it is not live, decided on the latest committed row). No row when no
/// run is claimable.
const CLAIM: &str = "WITH candidate AS MATERIALIZED (
         SELECT q.run_id FROM rein_queue q
         LEFT JOIN rein_leases l ON l.run_id = q.run_id
         WHERE (l.run_id IS NULL OR l.expires_at <= now())
           AND q.run_id <> ALL($3::text[])
         ORDER BY q.ord
         LIMIT 1
         FOR UPDATE OF q SKIP LOCKED
     ),
     taken AS (
         INSERT INTO rein_leases AS l (run_id, owner, fencing_token, expires_at)
         SELECT run_id, $1, 1, now() + $2::float8 * interval '1 millisecond'
         FROM candidate
         ON CONFLICT (run_id) DO UPDATE
             SET owner = EXCLUDED.owner,
                 fencing_token = l.fencing_token + 1,
                 expires_at = EXCLUDED.expires_at
             WHERE l.expires_at <= now()
         RETURNING fencing_token, (extract(epoch FROM expires_at) * 1000)::bigint AS expires_ms
     )
     SELECT c.run_id, t.fencing_token, t.expires_ms FROM candidate c LEFT JOIN taken t ON true";

impl PgStores {
    /// Saves the configuration run `run_id` was started from (replacing an earlier one), so
    /// that any process can rebuild the run's engine. It must hold no secret.
    ///
    /// # Errors
    /// [`PgError::Query`] when the database fails.
    pub async fn save_run_config(
        &self,
        run_id: &RunId,
        config: &str,
        source: Option<&str>,
    ) -> Result<(), PgError> {
        let client = self.client().await?;
        prepared::execute(
            &client,
            "INSERT INTO rein_run_configs (run_id, config, source) VALUES ($1, $2, $3)
                 ON CONFLICT (run_id) DO UPDATE
                     SET config = EXCLUDED.config, source = EXCLUDED.source, saved_at = now()",
            &[&run_id.as_str(), &config, &source],
        )
        .await
        .map_err(|e| PgError::query(format!("saving the configuration of run {run_id}"), e))?;
        Ok(())
    }

    /// The configuration run `run_id` was started from, if one was saved.
    ///
    /// # Errors
    /// [`PgError::Query`] when the database fails.
    pub async fn run_config(&self, run_id: &RunId) -> Result<Option<RunConfig>, PgError> {
        let client = self.client().await?;
        let row = prepared::query_opt(
            &client,
            "SELECT config, source FROM rein_run_configs WHERE run_id = $1",
            &[&run_id.as_str()],
        )
        .await
        .map_err(|e| PgError::query(format!("reading the configuration of run {run_id}"), e))?;
        Ok(row.map(|row| RunConfig {
            config: row.get(0),
            source: row.get(1),
        }))
    }

    /// Queues run `run_id` for a worker (queueing a queued run changes nothing), then
    /// wakes idle workers with a `NOTIFY` sent after the queueing committed.
    ///
    /// # Errors
    /// [`PgError::Query`] when the database fails.
    pub async fn enqueue(&self, run_id: &RunId) -> Result<(), PgError> {
        let context = || format!("queueing run {run_id}");
        let client = self.client().await?;
        prepared::execute(
            &client,
            "INSERT INTO rein_queue (run_id) VALUES ($1) ON CONFLICT (run_id) DO NOTHING",
            &[&run_id.as_str()],
        )
        .await
        .map_err(|e| PgError::query(context(), e))?;
        // Its own statement, outside any transaction: a NOTIFY inside a transaction would
        // serialise every commit behind the notification queue's lock.
        prepared::execute(
            &client,
            "SELECT pg_notify($1, $2)",
            &[&CHANNEL, &run_id.as_str()],
        )
        .await
        .map_err(|e| PgError::query(context(), e))?;
        Ok(())
    }

    /// Claims the oldest queued run whose lease is free or expired, taking its lease for
    /// `owner` for `ttl` by the database's clock (the next fencing token on a takeover):
    /// `None` when there is none. Claims by many workers at once never take one run twice
    /// (`FOR UPDATE SKIP LOCKED`, and the lease is taken only where it is not live).
    ///
    /// `busy` are the runs the caller drives now: never claimed, even when their lease
    /// expired (a renewal that did not get through in time), because the caller's own
    /// writes for a run share one token and a second driver in the same process would not
    /// be fenced out.
    ///
    /// # Errors
    /// [`PgError::Query`] when the database fails.
    pub async fn claim(
        &self,
        owner: &str,
        ttl: Duration,
        busy: &[RunId],
    ) -> Result<Option<Lease>, PgError> {
        let busy: Vec<&str> = busy.iter().map(RunId::as_str).collect();
        let client = self.client().await?;
        let claim = client
            .prepare_cached(CLAIM)
            .await
            .map_err(|e| PgError::query("claiming a queued run", e))?;
        // A candidate whose lease another claim took after this statement's snapshot
        // was taken is found free but cannot be leased: look again, in a new snapshot
        // that sees that lease, rather than report an empty queue while runs wait.
        for _ in 0..CLAIM_ATTEMPTS {
            let Some(row) = client
                .query_opt(&claim, &[&owner, &millis(ttl), &busy])
                .await
                .map_err(|e| PgError::query("claiming a queued run", e))?
            else {
                return Ok(None);
            };
            let Some(token) = row.get::<_, Option<i64>>(1) else {
                continue;
            };
            let id: String = row.get(0);
            let run_id: RunId = id.parse().map_err(|e| {
                PgError::query(
                    "claiming a queued run",
                    format!("the queue holds {id:?}, which is not a run id: {e}"),
                )
            })?;
            let lease = Lease::new(run_id, owner, token, row.get(2));
            self.shared.held.set(lease.run_id(), lease.token());
            tracing::debug!(run = %lease.run_id(), owner, token = lease.token(), "claimed a queued run");
            return Ok(Some(lease));
        }
        // Every look lost its candidate to another claim: the queue is busy, not empty;
        // the caller looks again at its next poll.
        Ok(None)
    }

    /// Takes the leased run off the queue (it ended, or waits for a person), if `lease` is
    /// still the run's: `false` when it was taken over, and the run stays queued.
    ///
    /// # Errors
    /// [`PgError::Query`] when the database fails.
    pub async fn dequeue(&self, lease: &Lease) -> Result<bool, PgError> {
        let client = self.client().await?;
        let removed = prepared::execute(
            &client,
            "DELETE FROM rein_queue q USING rein_leases l
                 WHERE q.run_id = $1 AND l.run_id = q.run_id AND l.fencing_token = $2",
            &[&lease.run_id().as_str(), &stored(lease.token())],
        )
        .await
        .map_err(|e| PgError::query(format!("taking run {} off the queue", lease.run_id()), e))?;
        Ok(removed == 1)
    }

    /// The queued runs, oldest first.
    ///
    /// # Errors
    /// [`PgError::Query`] when the database fails.
    pub async fn queued(&self) -> Result<Vec<RunId>, PgError> {
        let client = self.client().await?;
        let rows = prepared::query(&client, "SELECT run_id FROM rein_queue ORDER BY ord", &[])
            .await
            .map_err(|e| PgError::query("listing the queue", e))?;
        Ok(rows
            .iter()
            .filter_map(|row| row.get::<_, String>(0).parse().ok())
            .collect())
    }

    /// Listens for queued runs on a connection of its own (`LISTEN`), outside the pool. A
    /// connection lost later (the database restarted) is made again in the background,
    /// and the listener wakes once when it is back: runs queued meanwhile were announced
    /// to nobody.
    ///
    /// # Errors
    /// [`PgError::Connect`] when no connection can be made; [`PgError::Query`] when
    /// `LISTEN` fails.
    pub async fn listen_queue(&self) -> Result<QueueWakeups, PgError> {
        let target = self.shared.config.target();
        let pg = self.shared.config.pg.clone();
        let tls = self.shared.config.tls.connector.clone();
        let woken = Arc::new(Notify::new());
        let (ready, first) = oneshot::channel();
        let task = tokio::spawn(keep_listening(pg, tls, target, Arc::clone(&woken), ready));
        match first.await {
            Ok(Ok(())) => Ok(QueueWakeups { woken, task }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(PgError::connect(
                self.shared.config.target(),
                "the task listening for queued runs ended before it listened".to_owned(),
            )),
        }
    }
}

/// The first and the longest pause before a lost `LISTEN` connection is made again.
const RELISTEN_FIRST: Duration = Duration::from_millis(100);
const RELISTEN_MOST: Duration = Duration::from_secs(5);

/// Listens (`LISTEN`) on a connection of its own for as long as the [`QueueWakeups`] lives,
/// making the connection again whenever it is lost. `ready` learns how the first attempt
/// went: if it failed, nothing more is tried (the caller polls instead).
async fn keep_listening(
    pg: tokio_postgres::Config,
    tls: RustlsConnect,
    target: String,
    woken: Arc<Notify>,
    ready: oneshot::Sender<Result<(), PgError>>,
) {
    let mut ready = Some(ready);
    let mut pause = RELISTEN_FIRST;
    loop {
        let mut listening = false;
        let ended = session(&pg, &tls, &target, &woken, || {
            listening = true;
            match ready.take() {
                Some(ready) => {
                    let _ = ready.send(Ok(()));
                }
                // Back after a loss: look at the queue once.
                None => woken.notify_one(),
            }
        })
        .await;
        if let Some(ready) = ready.take() {
            let _ = ready.send(ended.and(Err(PgError::connect(
                target,
                "the connection closed before LISTEN took effect".to_owned(),
            ))));
            return;
        }
        match ended {
            Ok(()) => tracing::warn!("the queue's LISTEN connection closed; listening again"),
            Err(e) => {
                tracing::warn!(error = %e, "the queue's LISTEN connection failed; listening again");
            }
        }
        if listening {
            pause = RELISTEN_FIRST;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RELISTEN_MOST);
    }
}

/// One `LISTEN` connection, with the pool's TLS: `listening` is called once `LISTEN` took effect, and every
/// notification wakes `woken`, until the connection ends (`Ok`) or fails.
async fn session(
    pg: &tokio_postgres::Config,
    tls: &RustlsConnect,
    target: &str,
    woken: &Notify,
    listening: impl FnOnce(),
) -> Result<(), PgError> {
    let (client, mut connection) = pg
        .connect(tls.clone())
        .await
        .map_err(|e| PgError::connect(target, e))?;
    let messages = async {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(_))) => woken.notify_one(),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(PgError::query("listening for queued runs", e)),
                None => return Ok(()),
            }
        }
    };
    // The client lives as long as the session: dropping it would close the connection.
    let listen = async {
        client
            .batch_execute(&format!("LISTEN {CHANNEL}"))
            .await
            .map_err(|e| PgError::query("listening for queued runs", e))?;
        listening();
        std::future::pending::<Result<(), PgError>>().await
    };
    tokio::select! {
        ended = messages => ended,
        failed = listen => failed,
    }
}

/// Wake-ups for idle workers: a `NOTIFY` for each queued run, on a connection of its own.
/// Only a hint: a worker polls as well, and finds runs whose notification it missed.
pub struct QueueWakeups {
    woken: Arc<Notify>,
    task: JoinHandle<()>,
}

impl QueueWakeups {
    /// Waits for the next notification (one sent while nobody waited counts too), or for
    /// the connection to be back after it was lost.
    pub async fn next(&self) {
        self.woken.notified().await;
    }
}

impl fmt::Debug for QueueWakeups {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueWakeups")
            .field("listening", &!self.task.is_finished())
            .finish_non_exhaustive()
    }
}

impl Drop for QueueWakeups {
    fn drop(&mut self) {
        self.task.abort();
    }
}
