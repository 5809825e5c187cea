//! Run leases with fencing tokens: who may write a run now, decided by the database.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use deadpool_postgres::Transaction;
use rein_run::{Fenced, RunId};
use tokio_postgres::Row;

use crate::prepared;
use crate::{PgError, PgStores};

/// A lease on one run: `owner` may drive it until the database's clock passes its expiry,
/// and every write it makes carries `token`.
///
/// The token grows by one on every takeover, so a writer whose lease was taken over (it
/// stalled past its expiry, its connection was cut) holds a smaller token than the run's,
/// and the stores refuse its writes with [`Fenced`] in the same transaction that would
/// have written them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    run_id: RunId,
    owner: String,
    token: u64,
    expires_at_ms: i64,
}

impl Lease {
    pub(crate) fn new(run_id: RunId, owner: &str, token: i64, expires_at_ms: i64) -> Self {
        Self {
            run_id,
            owner: owner.to_owned(),
            token: token_of(token),
            expires_at_ms,
        }
    }

    /// The run leased.
    #[must_use]
    pub const fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// Who holds it (a worker's name).
    #[must_use]
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The fencing token: larger than every token the run's earlier holders had.
    #[must_use]
    pub const fn token(&self) -> u64 {
        self.token
    }

    /// When it expires, in milliseconds since the Unix epoch by the database's clock (as
    /// last acquired or renewed).
    #[must_use]
    pub const fn expires_at_unix_ms(&self) -> i64 {
        self.expires_at_ms
    }
}

/// The tokens of the leases this process holds, by run: what its writes are checked with.
#[derive(Debug, Default)]
pub(crate) struct Held(Mutex<HashMap<RunId, u64>>);

impl Held {
    pub(crate) fn token(&self, run_id: &RunId) -> Option<u64> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run_id)
            .copied()
    }

    pub(crate) fn set(&self, run_id: &RunId, token: u64) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run_id.clone(), token);
    }

    pub(crate) fn forget(&self, run_id: &RunId, token: u64) {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if held.get(run_id) == Some(&token) {
            held.remove(run_id);
        }
    }
}

/// A token as stored (`bigint`); tokens start at 1 and grow by one per takeover.
pub(crate) fn stored(token: u64) -> i64 {
    i64::try_from(token).unwrap_or(i64::MAX)
}

fn token_of(stored: i64) -> u64 {
    u64::try_from(stored).unwrap_or(0)
}

pub(crate) fn millis(ttl: Duration) -> f64 {
    ttl.as_secs_f64() * 1000.0
}

/// The lease row of the run `$1`, read `FOR SHARE` (so: locked), as the `SELECT` list
/// `$columns` of it: used as a scalar subquery in a write's condition.
///
/// This is what fences a write made in the same statement, under `READ COMMITTED`. The
/// row is locked when the statement reads it and stays locked until the statement's
/// (autocommit) transaction commits, so a takeover (an `UPDATE` of that row) that comes
/// later waits for the write to commit: the write lands before the takeover, under the
/// old token. A takeover that came earlier but has not committed makes the read wait for
/// it; once it commits, `FOR SHARE` reads the row's newest version (`READ COMMITTED`
/// re-reads a row it had to wait for), with the new token, and the write is refused. A
/// takeover committed before the statement began is in its snapshot. In every order the
/// token the write is checked against is the one the row holds when the write commits.
/// The row is selected by its key alone, and what is asked of it is computed from the
/// locked row: a row is locked whether or not it lets the writer write (an expired lease
/// too, which a takeover is about to update).
macro_rules! locked_lease {
    ($columns:expr) => {
        concat!(
            "(SELECT ",
            $columns,
            " FROM rein_leases WHERE run_id = $1::text FOR SHARE)"
        )
    };
}
pub(crate) use locked_lease;

/// The condition under which a writer holding the token `$token` (a `bigint` parameter;
/// `NULL` for a writer without a lease) may write the run `$1`, on its lease row read with
/// [`locked_lease!`]: the rule of [`verdict`], in SQL. A holder may write only while the
/// row carries its token; a writer without a lease only while nobody holds a live one.
/// One subquery for both writers (the row's verdict, or the writer's own when the run has
/// no lease row): a statement prepared once runs one locked read whichever it is.
macro_rules! lease_allows {
    ($token:literal) => {
        concat!(
            "coalesce(",
            $crate::lease::locked_lease!(concat!(
                "CASE WHEN ",
                $token,
                "::bigint IS NULL THEN expires_at <= now() ELSE fencing_token = ",
                $token,
                "::bigint END"
            )),
            ", ",
            $token,
            "::bigint IS NULL)"
        )
    };
}
pub(crate) use lease_allows;

/// The run `$1`'s lease row as a refused write explains itself with (no lock: nothing is
/// written after it): its token and whether it is live, both `NULL` without a lease.
pub(crate) const LEASE_NOW: &str = "SELECT fencing_token, expires_at > now()
     FROM rein_leases WHERE run_id = $1";

/// Checks, inside the transaction `tx` that is about to write for `run_id`, that this
/// process may write it: `Ok(token)` to record with the write, or [`Fenced`].
///
/// The lease row is read `FOR SHARE`: a takeover (an `UPDATE` of that row) waits for this
/// transaction to end, and a write that waited for a takeover sees its new token. So a
/// write either commits before the takeover, under the old holder's token, or is refused.
/// (The single-statement writes, an append and a snapshot save, check the same way with
/// [`lease_allows!`].)
pub(crate) async fn check(
    tx: &Transaction<'_>,
    held: &Held,
    run_id: &RunId,
) -> Result<Result<Option<i64>, Fenced>, tokio_postgres::Error> {
    let mine = held.token(run_id);
    let row = tx
        .query_opt(
            "SELECT fencing_token, expires_at > now() FROM rein_leases
             WHERE run_id = $1 FOR SHARE",
            &[&run_id.as_str()],
        )
        .await?;
    Ok(verdict(
        run_id,
        mine,
        row.map(|row| (row.get(0), row.get(1))),
    ))
}

/// What the lease row (its token and whether it is live, if the run has one) says of a
/// writer of `run_id` holding the token `mine` (none: a writer without a lease):
/// `Ok(token)` to record with the write ([`recorded`]`(mine)`), or [`Fenced`].
pub(crate) fn verdict(
    run_id: &RunId,
    mine: Option<u64>,
    row: Option<(i64, bool)>,
) -> Result<Option<i64>, Fenced> {
    let current = row.map(|(token, live)| (token_of(token), live));
    match (mine, current) {
        (Some(mine), Some((now, _))) if now == mine => Ok(recorded(Some(mine))),
        (Some(mine), current) => Err(Fenced {
            run_id: run_id.clone(),
            held: Some(mine),
            current: current.map(|(now, _)| now),
        }),
        // Someone else holds a live lease: a writer without one keeps out.
        (None, Some((now, true))) => Err(Fenced {
            run_id: run_id.clone(),
            held: None,
            current: Some(now),
        }),
        (None, _) => Ok(None),
    }
}

/// The lease row as [`LEASE_NOW`] (or a query that ends with its columns) returns it:
/// the token in column `at` and whether it is live in the next.
pub(crate) fn returned(row: &Row, at: usize) -> Option<(i64, bool)> {
    row.get::<_, Option<i64>>(at)
        .map(|token| (token, row.get::<_, Option<bool>>(at + 1).unwrap_or(false)))
}

/// The token a write by a holder of `mine` records, when its [`verdict`] lets it write.
pub(crate) fn recorded(mine: Option<u64>) -> Option<i64> {
    mine.map(stored)
}

impl PgStores {
    /// Takes the lease on `run_id` for `owner` for `ttl` by the database's clock: a run
    /// nobody leased gets token 1; a run whose lease expired or was released is taken over
    /// with the next token. From now on this process's writes for the run carry the token.
    ///
    /// # Errors
    /// [`PgError::LeaseHeld`] while another owner's lease runs (the same owner too: a
    /// lease is renewed, not taken twice); [`PgError::Query`] when the database fails.
    pub async fn acquire_lease(
        &self,
        run_id: &RunId,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, PgError> {
        let context = || format!("taking the lease of run {run_id}");
        let client = self.client().await?;
        let taken = prepared::query_opt(
            &client,
            "INSERT INTO rein_leases AS l (run_id, owner, fencing_token, expires_at)
                 VALUES ($1, $2, 1, now() + $3::float8 * interval '1 millisecond')
                 ON CONFLICT (run_id) DO UPDATE
                     SET owner = EXCLUDED.owner,
                         fencing_token = l.fencing_token + 1,
                         expires_at = EXCLUDED.expires_at
                     WHERE l.expires_at <= now()
                 RETURNING fencing_token, (extract(epoch FROM expires_at) * 1000)::bigint",
            &[&run_id.as_str(), &owner, &millis(ttl)],
        )
        .await
        .map_err(|e| PgError::query(context(), e))?;
        if let Some(row) = taken {
            let lease = Lease {
                run_id: run_id.clone(),
                owner: owner.to_owned(),
                token: token_of(row.get(0)),
                expires_at_ms: row.get(1),
            };
            self.shared.held.set(run_id, lease.token);
            tracing::debug!(run = %run_id, owner, token = lease.token, "took a run lease");
            return Ok(lease);
        }
        let row = prepared::query_one(
            &client,
            "SELECT owner, fencing_token,
                        greatest(0, extract(epoch FROM expires_at - now()) * 1000)::bigint
                 FROM rein_leases WHERE run_id = $1",
            &[&run_id.as_str()],
        )
        .await
        .map_err(|e| PgError::query(context(), e))?;
        Err(PgError::LeaseHeld {
            run_id: run_id.clone(),
            owner: row.get(0),
            token: token_of(row.get(1)),
            remaining_ms: u64::try_from(row.get::<_, i64>(2)).unwrap_or(0),
        })
    }

    /// Extends `lease` to `ttl` from the database's `now()`, if it is still this owner's.
    ///
    /// # Errors
    /// [`PgError::Fenced`] when the lease was taken over or released since: stop driving
    /// the run. [`PgError::Query`] when the database fails.
    pub async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, PgError> {
        let context = || format!("renewing the lease of run {}", lease.run_id);
        let client = self.client().await?;
        let renewed = prepared::query_opt(
            &client,
            "UPDATE rein_leases
                 SET expires_at = now() + $4::float8 * interval '1 millisecond'
                 WHERE run_id = $1 AND fencing_token = $2 AND owner = $3
                 RETURNING (extract(epoch FROM expires_at) * 1000)::bigint",
            &[
                &lease.run_id.as_str(),
                &stored(lease.token),
                &lease.owner,
                &millis(ttl),
            ],
        )
        .await
        .map_err(|e| PgError::query(context(), e))?;
        if let Some(row) = renewed {
            return Ok(Lease {
                expires_at_ms: row.get(0),
                ..lease.clone()
            });
        }
        let current = prepared::query_opt(
            &client,
            "SELECT fencing_token FROM rein_leases WHERE run_id = $1",
            &[&lease.run_id.as_str()],
        )
        .await
        .map_err(|e| PgError::query(context(), e))?
        .map(|row| token_of(row.get(0)));
        Err(PgError::Fenced(Fenced {
            run_id: lease.run_id.clone(),
            held: Some(lease.token),
            current,
        }))
    }
}
