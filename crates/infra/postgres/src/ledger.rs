//! `PgLedgerStore`: one row per entry, its JSON line stored exactly as written.

use std::collections::HashMap;
use std::sync::Arc;

use rein_ledger::{Entry, Ledger, LedgerLines, LedgerStore, LedgerStoreError, LoadedLedger};
use rein_run::RunId;

use crate::append::{backend, flush, location, not_next, seq_of, stored_seq};
use crate::pending::Pushed;
use crate::prepared;
use crate::stores::Shared;
use crate::{CommitPolicy, lease};

/// A [`LedgerStore`] in `PostgreSQL`: table `rein_ledger`, one row per entry keyed
/// `(run_id, seq)` (unique), holding the entry's JSON line byte for byte as
/// [`Entry::json_line`] made it — what a JSONL file holds — and its hash. `load` reads the
/// lines back in order and verifies the chain over those same bytes, so a ledger verifies
/// in `PostgreSQL` exactly when its file would; [`export_jsonl`](Self::export_jsonl) gives
/// the file.
///
/// - **Append.** Entries are written in batches, one autocommit statement a batch, so one
///   round trip and one commit: the lease check (when this process holds the run's lease,
///   the rows record its fencing token), the chain check (the batch must follow the last
///   stored entry) and the insert of every row. When a batch is written is the
///   [`CommitPolicy`]'s: each entry on its own before `append` returns
///   ([`CommitPolicy::EveryEntry`]), or the entries of a step together when the engine
///   syncs the run ([`CommitPolicy::EveryStep`], the default; `append` then keeps the
///   entry in this process and returns at once). Committed means durable
///   (`synchronous_commit` as the server is configured). Loading a run's ledger, saving
///   its snapshot and releasing its lease write what waits first.
/// - **Load.** Every row must be one complete line whose entry carries the row's number and
///   hash; anything else is [`LedgerStoreError::Corrupt`] naming the run and the number.
///   Rows are never cut or repaired: a database has no torn tails.
#[derive(Debug, Clone)]
pub struct PgLedgerStore {
    shared: Arc<Shared>,
}

impl PgLedgerStore {
    pub(crate) const fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    async fn client(
        &self,
        context: impl FnOnce() -> String,
    ) -> Result<deadpool_postgres::Object, LedgerStoreError> {
        self.shared
            .client()
            .await
            .map_err(|e| backend(context(), e))
    }

    /// The ledger of `run_id` as a JSONL file holds it: every entry's line, in order, byte
    /// for byte. The chain is verified first.
    ///
    /// # Errors
    /// Those of [`load`](LedgerStore::load): `NotFound`, `Corrupt`, `Broken`, `Backend`.
    pub async fn export_jsonl(&self, run_id: &RunId) -> Result<Vec<u8>, LedgerStoreError> {
        Ok(self.read(run_id).await?.0)
    }

    /// Stores a ledger from the bytes of a JSONL file: every complete line an entry of one
    /// untouched chain, for a run with no ledger here yet. All entries land in one
    /// transaction, or none. Returns the run's id and how many entries were imported.
    ///
    /// # Errors
    /// [`LedgerStoreError::Corrupt`] for a line that is not an entry or a torn last line;
    /// [`LedgerStoreError::Broken`] for a chain that does not verify;
    /// [`LedgerStoreError::Backend`] when the run already has a ledger here, or the
    /// database fails.
    pub async fn import_jsonl(&self, bytes: &[u8]) -> Result<(RunId, u64), LedgerStoreError> {
        let location = "the imported ledger".to_owned();
        let lines = LedgerLines::split(bytes);
        if let Some(torn) = lines.torn() {
            return Err(LedgerStoreError::Corrupt {
                location,
                line: torn.line,
                reason: format!(
                    "its last line has no newline ({} bytes): the file was cut mid-write; \
                     remove the partial line first",
                    torn.bytes
                ),
            });
        }
        let entries: Vec<Entry> =
            lines
                .entries()
                .collect::<Result<_, _>>()
                .map_err(|e| LedgerStoreError::Corrupt {
                    location: location.clone(),
                    line: e.line,
                    reason: format!("it is not a valid ledger entry: {}", e.source),
                })?;
        let Some(first) = entries.first() else {
            return Err(LedgerStoreError::Corrupt {
                location,
                line: 1,
                reason: "it holds no entries".into(),
            });
        };
        let run_id = first.run_id().clone();
        let ledger = Ledger::from_entries(run_id.clone(), entries).map_err(|source| {
            LedgerStoreError::Broken {
                run_id: run_id.clone(),
                source,
            }
        })?;
        let context = || format!("importing the ledger of run {run_id}");
        let mut client = self.client(context).await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| backend(context(), e))?;
        let token = lease::check(&tx, &self.shared.held, &run_id)
            .await
            .map_err(|e| backend(context(), e))??;
        let exists = tx
            .query_opt(
                "SELECT 1 FROM rein_ledger WHERE run_id = $1 LIMIT 1",
                &[&run_id.as_str()],
            )
            .await
            .map_err(|e| backend(context(), e))?;
        if exists.is_some() {
            return Err(backend(
                context(),
                format!(
                    "run {run_id} already has a ledger in this database; import into another \
                     database, or compare them with rein ledger verify"
                ),
            ));
        }
        let insert = tx
            .prepare(
                "INSERT INTO rein_ledger (run_id, seq, hash, line, fencing_token)
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .await
            .map_err(|e| backend(context(), e))?;
        for entry in ledger.entries() {
            tx.execute(
                &insert,
                &[
                    &run_id.as_str(),
                    &stored_seq(entry.seq()),
                    &entry.hash().to_string(),
                    &entry.json_line(),
                    &token,
                ],
            )
            .await
            .map_err(|e| backend(context(), e))?;
        }
        tx.commit().await.map_err(|e| backend(context(), e))?;
        Ok((run_id, ledger.len() as u64))
    }

    /// Every stored line of `run_id`, concatenated, and the verified ledger they hold.
    async fn read(&self, run_id: &RunId) -> Result<(Vec<u8>, Ledger), LedgerStoreError> {
        // What this process appended is read back too.
        flush(&self.shared, run_id).await?;
        let context = || format!("loading the ledger of run {run_id}");
        let client = self.client(context).await?;
        let rows = prepared::query(
            &client,
            "SELECT seq, hash, line FROM rein_ledger WHERE run_id = $1 ORDER BY seq",
            &[&run_id.as_str()],
        )
        .await
        .map_err(|e| backend(context(), e))?;
        verified(
            run_id,
            rows.iter()
                .map(|row| (seq_of(row.get(0)), row.get(1), row.get(2))),
        )
    }

    /// The ledgers of `runs`, in their order, each verified exactly as
    /// [`load`](LedgerStore::load) verifies it, read in one query: for a page of runs (the
    /// console's runs list) at the cost of one round trip, not one per run. A run with no
    /// ledger has [`LedgerStoreError::NotFound`] in its place, one whose rows do not verify
    /// `Corrupt` or `Broken`; the others are unaffected.
    ///
    /// # Errors
    /// [`LedgerStoreError::Backend`] when the database fails.
    pub async fn load_each(
        &self,
        runs: &[RunId],
    ) -> Result<Vec<(RunId, Result<LoadedLedger, LedgerStoreError>)>, LedgerStoreError> {
        let context = || format!("loading the ledgers of {} runs", runs.len());
        let client = self.client(context).await?;
        let keys: Vec<&str> = runs.iter().map(RunId::as_str).collect();
        let rows = client
            .query(
                "SELECT run_id, seq, hash, line FROM rein_ledger
                 WHERE run_id = ANY($1) ORDER BY run_id, seq",
                &[&keys],
            )
            .await
            .map_err(|e| backend(context(), e))?;
        let mut by_run: HashMap<&str, Vec<&tokio_postgres::Row>> = HashMap::new();
        for row in &rows {
            by_run.entry(row.get(0)).or_default().push(row);
        }
        Ok(runs
            .iter()
            .map(|id| {
                let rows = by_run.get(id.as_str()).map_or(&[][..], Vec::as_slice);
                let ledger = verified(
                    id,
                    rows.iter()
                        .map(|row| (seq_of(row.get(1)), row.get(2), row.get(3))),
                )
                .map(|(_, ledger)| LoadedLedger {
                    ledger,
                    torn_tail: None,
                });
                (id.clone(), ledger)
            })
            .collect())
    }
}

/// The ledger of `run_id` from its stored rows (number, hash, line) in order: every line
/// concatenated, and the ledger they hold, verified.
fn verified<'a>(
    run_id: &RunId,
    rows: impl ExactSizeIterator<Item = (u64, &'a str, &'a [u8])>,
) -> Result<(Vec<u8>, Ledger), LedgerStoreError> {
    if rows.len() == 0 {
        return Err(LedgerStoreError::NotFound {
            run_id: run_id.clone(),
        });
    }
    let corrupt = |line: u64, reason: String| LedgerStoreError::Corrupt {
        location: location(run_id),
        line,
        reason,
    };
    let mut bytes = Vec::new();
    let mut entries = Vec::with_capacity(rows.len());
    for (seq, hash, line) in rows {
        let Some(body) = line.strip_suffix(b"\n").filter(|b| !b.contains(&b'\n')) else {
            return Err(corrupt(
                seq,
                "it is not one newline-terminated JSON line".into(),
            ));
        };
        let entry = LedgerLines::parse(seq, body)
            .map_err(|e| corrupt(seq, format!("it is not a valid ledger entry: {}", e.source)))?;
        if entry.seq() != seq || entry.hash().to_string() != hash {
            return Err(corrupt(
                seq,
                format!(
                    "the row says entry {seq} with hash {hash}, its line holds entry {} \
                     with hash {}",
                    entry.seq(),
                    entry.hash()
                ),
            ));
        }
        bytes.extend_from_slice(line);
        entries.push(entry);
    }
    let ledger = Ledger::from_entries(run_id.clone(), entries).map_err(|source| {
        LedgerStoreError::Broken {
            run_id: run_id.clone(),
            source,
        }
    })?;
    Ok((bytes, ledger))
}

impl LedgerStore for PgLedgerStore {
    async fn append(&self, entry: &Entry) -> Result<(), LedgerStoreError> {
        let every_entry = self.shared.config.commit() == CommitPolicy::EveryEntry;
        loop {
            let token = self.shared.held.token(entry.run_id());
            match self.shared.pending.push(entry, token, every_entry, false) {
                Pushed::Kept => return Ok(()),
                Pushed::Due => return flush(&self.shared, entry.run_id()).await,
                // Written under the token it was appended with; then this one is kept.
                Pushed::FlushFirst => flush(&self.shared, entry.run_id()).await?,
                Pushed::NotNext { last } => return Err(not_next(entry, last)),
            }
        }
    }

    fn try_append_now(&self, entry: &Entry) -> Option<Result<(), LedgerStoreError>> {
        // Keeping an entry for the step's commit waits on nothing: no future, no round
        // trip. An entry that would make its batch due is appended the slow way.
        if self.shared.config.commit() == CommitPolicy::EveryEntry {
            return None;
        }
        let token = self.shared.held.token(entry.run_id());
        match self.shared.pending.push(entry, token, false, true) {
            Pushed::Kept => Some(Ok(())),
            Pushed::NotNext { last } => Some(Err(not_next(entry, last))),
            Pushed::Due | Pushed::FlushFirst => None,
        }
    }

    async fn sync(&self, run_id: &RunId) -> Result<(), LedgerStoreError> {
        flush(&self.shared, run_id).await
    }

    async fn load(&self, run_id: &RunId) -> Result<LoadedLedger, LedgerStoreError> {
        let (_, ledger) = self.read(run_id).await?;
        Ok(LoadedLedger {
            ledger,
            torn_tail: None,
        })
    }

    async fn list(&self) -> Result<Vec<RunId>, LedgerStoreError> {
        let context = || "listing the ledgers".to_owned();
        let client = self.client(context).await?;
        let rows = prepared::query(
            &client,
            "SELECT run_id FROM rein_ledger WHERE seq = 1 ORDER BY ord",
            &[],
        )
        .await
        .map_err(|e| backend(context(), e))?;
        let mut ids = Vec::with_capacity(rows.len());
        for row in rows {
            let text: &str = row.get(0);
            match text.parse() {
                Ok(id) => ids.push(id),
                Err(e) => tracing::warn!(run_id = text, error = %e,
                    "skipping a ledger whose run id is not valid"),
            }
        }
        Ok(ids)
    }
}
