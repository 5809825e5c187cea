//! Writing a run's appended entries: one statement a batch, with the lease and chain
//! checks, and a refusal explained by the same rules in Rust.

use rein_ledger::{Entry, LedgerStoreError};
use rein_run::{Digest, RunId};
use tokio_postgres::error::SqlState;

use crate::failure::Explain;
use crate::stores::Shared;
use crate::{lease, prepared};

/// Where a run's ledger is, for people.
pub(crate) fn location(run_id: &RunId) -> String {
    format!("table rein_ledger, run {run_id}")
}

pub(crate) fn backend(context: String, source: impl Explain) -> LedgerStoreError {
    LedgerStoreError::Backend {
        context,
        source: source.explain(),
    }
}

/// Why an entry does not continue the stored chain.
#[derive(Debug, thiserror::Error)]
#[error(
    "{0}; only the run's own ledger may append to it, is another writer appending to this run?"
)]
pub(crate) struct NotNext(String);

/// Checks that an entry numbered `seq` linking to `prev` follows the stored tip
/// (`last`: the last stored number and hash).
pub(crate) fn follows(seq: u64, prev: Digest, last: Option<(u64, Digest)>) -> Result<(), NotNext> {
    let (next, last_hash) = last.map_or((1, Digest::ZERO), |(n, h)| (n.saturating_add(1), h));
    if seq == next && prev == last_hash {
        return Ok(());
    }
    let last = next - 1;
    Err(NotNext(if seq == next && last == 0 {
        format!("entry {seq} starts the ledger but does not link to the zero hash")
    } else if seq == next {
        format!("entry {seq} does not link to the hash of entry {last}")
    } else if last == 0 {
        format!("entry {seq} cannot start a ledger, entry 1 must")
    } else {
        format!("entry {seq} does not follow the last stored entry, {last}")
    }))
}

pub(crate) fn seq_of(stored: i64) -> u64 {
    u64::try_from(stored).unwrap_or(0)
}

pub(crate) fn stored_seq(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// The insert of a batch of consecutive entries, in one autocommit statement, so one round
/// trip and one commit: the rows are numbered from `$2` in the order of the arrays `$3`
/// (hashes) and `$4` (lines), and made only when the writer's token (`$5`) passes the
/// lease check on the run's lease row read `FOR SHARE` (see [`lease::locked_lease!`] for
/// why that fences a takeover under `READ COMMITTED`). Every row inserted, or none: a
/// refused batch is explained afterwards ([`APPEND_REFUSED`]). The check is a subquery of
/// no row's columns, so the database runs it once a statement, however many rows it
/// inserts.
///
/// The batch itself is checked to be one chain before it is sent; that it follows the
/// stored chain is checked by [`APPEND`], or known ([`APPEND_AFTER_OWN`]).
macro_rules! insert_batch {
    ($($condition:expr),*) => {
        concat!(
            "INSERT INTO rein_ledger (run_id, seq, hash, line, fencing_token)
             SELECT $1::text, $2::bigint + e.n - 1, e.hash, e.line, $5::bigint
             FROM unnest($3::text[], $4::bytea[]) WITH ORDINALITY AS e(hash, line, n)
             WHERE (",
            lease::lease_allows!("$5"),
            ")",
            $($condition),*
        )
    };
}

/// A batch whose first entry (number `$2`, linking to `$6`) must follow the last stored one
/// (or start the ledger, linking to the zero hash `$7`), which this process has not
/// written itself.
///
/// "Follows the last stored one" is checked as: the entry numbered `$2 - 1` is stored, with
/// the hash `$6` (one lookup by the primary key), and `$2` is not stored yet (the primary
/// key itself). Together they are the tip check, because no write leaves a gap: each needs
/// its predecessor stored. Two writes of the same number at once: the second waits for the
/// first's key and then fails on it (`unique_violation`), which is explained as a refusal:
/// an entry that does not follow. (Not `ON CONFLICT DO NOTHING`: its speculative insertion
/// costs every row a lock and a log record more.)
const APPEND: &str = insert_batch!(
    "
       AND $6::text = CASE WHEN $2::bigint = 1 THEN $7::text ELSE (
                SELECT hash FROM rein_ledger WHERE run_id = $1::text AND seq = $2::bigint - 1)
           END"
);

/// A batch whose first entry follows the last entry this process wrote to the run: that
/// entry is stored with the hash the batch links to (stored rows never change), so only the
/// primary key is left to check that nothing was stored after it — the lookup [`APPEND`]
/// makes is skipped, on every step but a run's first in this process.
const APPEND_AFTER_OWN: &str = insert_batch!();

/// What a refused append is explained with: the run's lease row (its token and whether it
/// is live) and the chain's tip (its number and hash), each `NULL` when there is none.
const APPEND_REFUSED: &str = "SELECT l.fencing_token, l.expires_at > now(), t.seq, t.hash
     FROM (SELECT) AS one
     LEFT JOIN rein_leases l ON l.run_id = $1
     LEFT JOIN LATERAL (
         SELECT seq, hash FROM rein_ledger WHERE run_id = $1 ORDER BY seq DESC LIMIT 1
     ) t ON true";

/// How many times an append is made when its refusal has no explanation by the time it is
/// looked at (the lease or the chain changed in between): then it is simply made again.
const APPEND_ATTEMPTS: usize = 3;

/// Why `entry` does not continue what this process appended to its run and has not
/// written yet (ending with `last`: its number and hash): what the database would say of
/// it once the batch is written.
pub(crate) fn not_next(entry: &Entry, last: (u64, Digest)) -> LedgerStoreError {
    let reason = follows(entry.seq(), entry.prev(), Some(last))
        .err()
        .map_or_else(|| "it does not follow".to_owned(), |e| e.to_string());
    backend(
        format!(
            "appending entry {} to {}",
            entry.seq(),
            location(entry.run_id())
        ),
        reason,
    )
}

/// Writes what this process appended to `run_id` and has not written yet, in one
/// statement ([`APPEND`]): nothing to do when nothing waits. The batch is taken out first,
/// so a refused or failed one is never written (the engine's recovery redoes the step from
/// the last synced entry, as after a crash).
///
/// # Errors
/// [`LedgerStoreError::FencedOut`] when another process took the run over;
/// [`LedgerStoreError::Backend`] when the batch does not follow the stored chain or the
/// database fails.
pub(crate) async fn flush(shared: &Shared, run_id: &RunId) -> Result<(), LedgerStoreError> {
    let Some(batch) = shared.pending.take(run_id) else {
        return Ok(());
    };
    let (first, last) = (batch.first_seq, batch.first_seq + (batch.len() as u64 - 1));
    let context = || {
        let entries = if first == last {
            format!("entry {first}")
        } else {
            format!("entries {first} to {last}")
        };
        format!("appending {entries} to {}", location(run_id))
    };
    let client = shared.client().await.map_err(|e| backend(context(), e))?;
    let after_own = shared.pending.follows_written(run_id, &batch);
    let append = client
        .prepare_cached(if after_own { APPEND_AFTER_OWN } else { APPEND })
        .await
        .map_err(|e| backend(context(), e))?;
    let hashes: Vec<String> = batch.hashes.iter().map(Digest::to_string).collect();
    let lines = batch.lines();
    let (id, number, token, prev, zero) = (
        run_id.as_str(),
        stored_seq(first),
        lease::recorded(batch.token),
        batch.first_prev.to_string(),
        Digest::ZERO.to_string(),
    );
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] =
        [&id, &number, &hashes, &lines, &token, &prev, &zero];
    let params = if after_own { &params[..5] } else { &params[..] };
    for _ in 0..APPEND_ATTEMPTS {
        match client.execute(&append, params).await {
            Ok(n) if n == batch.len() as u64 => {
                shared.pending.written(run_id, batch.last());
                return Ok(());
            }
            Ok(_) => {}
            // Another writer stored one of these numbers first: a refusal like any other.
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {}
            Err(e) => return Err(backend(context(), e)),
        }
        // Refused: the same checks in Rust, on what the database holds now, say why.
        let row = prepared::query_one(&client, APPEND_REFUSED, &[&id])
            .await
            .map_err(|e| backend(context(), e))?;
        lease::verdict(run_id, batch.token, lease::returned(&row, 0))?;
        let stored = match row.get::<_, Option<i64>>(2) {
            None => None,
            Some(stored) => {
                let hash: &str = row.get(3);
                let hash = hash
                    .parse::<Digest>()
                    .map_err(|e| LedgerStoreError::Corrupt {
                        location: location(run_id),
                        line: seq_of(stored),
                        reason: format!("its stored hash is not a digest: {e}"),
                    })?;
                Some((seq_of(stored), hash))
            }
        };
        follows(first, batch.first_prev, stored).map_err(|e| backend(context(), e.to_string()))?;
    }
    // Refused every time, though each refusal had passed by the time it was looked at:
    // the lease or the chain keeps changing under this writer.
    Err(backend(
        context(),
        format!(
            "the database refused it {APPEND_ATTEMPTS} times while its lease and the chain \
             allowed it each time it was looked at; is another process changing run \
             {run_id}'s lease or ledger?"
        ),
    ))
}
