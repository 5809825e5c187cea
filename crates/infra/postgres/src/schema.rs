//! The schema: versioned migrations, applied on start under an advisory lock.

use deadpool_postgres::Pool;

use crate::PgError;
use crate::failure::Explain;

/// The migrations, in order: `MIGRATIONS[i]` takes the schema from version `i` to `i + 1`.
/// Append only: a released migration never changes.
const MIGRATIONS: &[&str] = &[
    // 1: runs, ledgers, artifacts and leases.
    "CREATE TABLE rein_runs (
         run_id   text PRIMARY KEY,
         ord      bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
         snapshot text NOT NULL,
         saved_at timestamptz NOT NULL DEFAULT now()
     );
     CREATE TABLE rein_ledger (
         run_id        text NOT NULL,
         seq           bigint NOT NULL CHECK (seq >= 1),
         hash          text NOT NULL,
         line          bytea NOT NULL,
         fencing_token bigint,
         ord           bigint GENERATED ALWAYS AS IDENTITY,
         PRIMARY KEY (run_id, seq)
     );
     CREATE INDEX rein_ledger_starts ON rein_ledger (ord) WHERE seq = 1;
     CREATE TABLE rein_artifacts (
         id        text PRIMARY KEY,
         reference text NOT NULL,
         bytes     bytea NOT NULL
     );
     CREATE TABLE rein_leases (
         run_id        text PRIMARY KEY,
         owner         text NOT NULL,
         fencing_token bigint NOT NULL,
         expires_at    timestamptz NOT NULL
     );",
    // 2: the configuration each run was started from, and the queue of runs for workers.
    "CREATE TABLE rein_run_configs (
         run_id   text PRIMARY KEY,
         config   text NOT NULL,
         source   text,
         saved_at timestamptz NOT NULL DEFAULT now()
     );
     CREATE TABLE rein_queue (
         run_id    text PRIMARY KEY,
         ord       bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
         queued_at timestamptz NOT NULL DEFAULT now()
     );",
    // 3: stop requests (an operator's abort or interrupt), at most one per run.
    "CREATE TABLE rein_stop_requests (
         run_id          text PRIMARY KEY,
         kind            text NOT NULL CHECK (kind IN ('abort', 'interrupt')),
         requested_by    text NOT NULL,
         reason          text NOT NULL,
         requested_at_ms bigint NOT NULL,
         stored_at       timestamptz NOT NULL DEFAULT now()
     );",
    // 4: the columns a listing filters and orders runs by (PgRunStore::page), written with
    // every snapshot; the runs saved before are filled in from their snapshots (one that
    // is not valid JSON keeps them empty and is listed as unreadable).
    "ALTER TABLE rein_runs
         ADD COLUMN status     text,
         ADD COLUMN waiting    text,
         ADD COLUMN goal       text,
         ADD COLUMN updated_at bigint;
     CREATE FUNCTION pg_temp.rein_snapshot_json(snapshot text) RETURNS jsonb AS $$
     BEGIN
         RETURN snapshot::jsonb;
     EXCEPTION WHEN others THEN
         RETURN NULL;
     END
     $$ LANGUAGE plpgsql;
     UPDATE rein_runs AS r SET
         status = s.j->>'status',
         goal = s.j->>'goal',
         updated_at = (s.j->>'updated_at')::bigint,
         waiting = CASE
             WHEN s.j->>'status' <> 'paused' THEN NULL
             WHEN jsonb_typeof(s.j->'approval') = 'object' THEN 'approval'
             WHEN jsonb_typeof(s.j->'pending') = 'object' THEN 'question'
         END
     FROM (SELECT run_id, pg_temp.rein_snapshot_json(snapshot) AS j FROM rein_runs) AS s
     WHERE r.run_id = s.run_id AND s.j IS NOT NULL;
     CREATE INDEX rein_runs_status ON rein_runs (status);
     CREATE INDEX rein_runs_waiting ON rein_runs (updated_at) WHERE waiting IS NOT NULL;",
    // 5: the runs list's order (those waiting for a person first, then the newest) as an
    // index: a page is found by walking it from its end, not by sorting every run.
    "CREATE INDEX rein_runs_listing ON rein_runs ((waiting IS NOT NULL), run_id);",
];

/// The schema version this rein writes and understands.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// The advisory lock every rein process takes while migrating ("rein" in ASCII): two
/// processes starting at once migrate one after the other, the second finding nothing to do.
const MIGRATION_LOCK: i64 = 0x7265_696e;

/// Brings the database to [`SCHEMA_VERSION`], or refuses a newer one. One transaction: a
/// failed migration leaves the schema as it was.
pub(crate) async fn migrate(pool: &Pool, target: &str) -> Result<i32, PgError> {
    let connect = |source: deadpool_postgres::PoolError| PgError::connect(target, source);
    let mut client = pool.get().await.map_err(connect)?;
    let failed = |version: i32| {
        move |source: tokio_postgres::Error| PgError::Migrate {
            target: target.to_owned(),
            version,
            source: source.explain(),
        }
    };
    let tx = client.transaction().await.map_err(failed(0))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(failed(0))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS rein_schema (
             singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
             version   integer NOT NULL
         )",
    )
    .await
    .map_err(failed(0))?;
    let found: i32 = tx
        .query_opt("SELECT version FROM rein_schema", &[])
        .await
        .map_err(failed(0))?
        .map_or(0, |row| row.get(0));
    if found > SCHEMA_VERSION {
        return Err(PgError::SchemaTooNew {
            target: target.to_owned(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (version, sql) in (1..)
        .zip(MIGRATIONS)
        .skip(usize::try_from(found).unwrap_or(0))
    {
        tx.batch_execute(sql).await.map_err(failed(version))?;
        tracing::info!(target, version, "applied a rein schema migration");
    }
    tx.execute(
        "INSERT INTO rein_schema (version) VALUES ($1)
         ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version",
        &[&SCHEMA_VERSION],
    )
    .await
    .map_err(failed(SCHEMA_VERSION))?;
    tx.commit().await.map_err(failed(SCHEMA_VERSION))?;
    Ok(found)
}
