//! What the runs list shows of a run, as one value: made from its snapshot and ledger, and
//! on a filesystem store kept in the console's run index (`console-index.jsonl`, an
//! `FsRunIndex`, kept in memory between requests: `kept`), so that a listing reads only the
//! runs whose files changed since. On a `PostgreSQL` store the database filters, orders,
//! counts and pages the runs by the columns it keeps beside each snapshot
//! (`PgRunStore::page`), and only the page's snapshots are read.

use futures_util::StreamExt as _;
use rein::ledger::{EntryKind, LoadedLedger};
use rein::policy::PolicySnapshot;
use rein::postgres::{RunFilter, RunOrder};
use rein::run::Timestamp;
use rein::store::LedgerStoreError;
use rein::{Run, RunId, RunStatus};
use serde::{Deserialize, Serialize};

use crate::html::one_line;

/// The console's run index file, beside the CLI's `index.jsonl` (whose summaries are of
/// another type).
pub(crate) const INDEX_FILE: &str = "console-index.jsonl";

/// The longest goal a summary keeps (the list shows one line of it).
const MAX_GOAL: usize = 200;

/// One run, as the list shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Summary {
    /// The snapshot's columns, or why it cannot be read.
    pub(crate) run: Result<Columns, String>,
    /// What the ledger adds; `None` until read (stores without an index read it for the
    /// runs on the page shown only).
    pub(crate) facts: Option<LedgerFacts>,
}

/// A run's columns in the list.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Columns {
    pub(crate) status: RunStatus,
    /// What it waits for from a person, if anything.
    pub(crate) waiting: Option<String>,
    pub(crate) goal: String,
    pub(crate) state: String,
    pub(crate) steps: u32,
    pub(crate) budgets: String,
    pub(crate) started: Timestamp,
    pub(crate) ended: Option<Timestamp>,
}

/// What the ledger of a listed run adds: whether it verifies, its parent and children.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct LedgerFacts {
    pub(crate) damaged: Option<String>,
    pub(crate) parent: Option<RunId>,
    pub(crate) children: Vec<RunId>,
}

impl Columns {
    pub(crate) fn of(run: &Run) -> Self {
        Self {
            status: run.status(),
            waiting: waiting(run).map(str::to_owned),
            goal: one_line(run.goal(), MAX_GOAL),
            state: run.state().to_string(),
            steps: run.steps(),
            budgets: budget_cell(run),
            started: run.created_at(),
            ended: run.is_finished().then(|| run.updated_at()),
        }
    }
}

impl Summary {
    /// Whether the run waits for a person.
    pub(crate) fn waits(&self) -> bool {
        self.run.as_ref().is_ok_and(|c| c.waiting.is_some())
    }
}

/// Run `id`'s ledger facts, read from the stores.
pub(crate) async fn ledger_facts(state: &crate::State, id: &RunId) -> LedgerFacts {
    facts_of(state.stores.ledger(id).await)
}

/// How many ledgers are read at once where the stores cannot read several in one go.
const LEDGERS_AT_ONCE: usize = 4;

/// The ledger facts of `ids`, in their order: on a database in one query, else a few
/// ledgers at a time (faster than one after another, without one page taking every
/// connection of a pool that other readers and the runs' writers share).
pub(crate) async fn ledger_facts_of(
    state: &std::sync::Arc<crate::State>,
    ids: Vec<RunId>,
) -> Vec<LedgerFacts> {
    if let Some(ledgers) = &state.stores.pg_ledgers {
        return match ledgers.load_each(&ids).await {
            Ok(loaded) => loaded.into_iter().map(|(_, l)| facts_of(l)).collect(),
            Err(e) => ids
                .iter()
                .map(|_| LedgerFacts {
                    damaged: Some(e.to_string()),
                    ..LedgerFacts::default()
                })
                .collect(),
        };
    }
    futures_util::stream::iter(ids)
        .map(|id| {
            let state = std::sync::Arc::clone(state);
            async move { ledger_facts(&state, &id).await }
        })
        .buffered(LEDGERS_AT_ONCE)
        .collect()
        .await
}

/// What a loaded ledger says of its run (or why it could not be loaded).
fn facts_of(loaded: Result<LoadedLedger, LedgerStoreError>) -> LedgerFacts {
    match loaded {
        Err(e) => LedgerFacts {
            damaged: Some(e.to_string()),
            ..LedgerFacts::default()
        },
        Ok(loaded) => {
            let entries = loaded.ledger.entries();
            LedgerFacts {
                damaged: None,
                parent: entries.iter().find_map(|e| match e.event() {
                    EntryKind::ChildOf { parent, .. } => Some(parent.clone()),
                    _ => None,
                }),
                children: entries
                    .iter()
                    .filter_map(|e| match e.event() {
                        EntryKind::ChildStarted { child, .. } => Some(child.clone()),
                        _ => None,
                    })
                    .collect(),
            }
        }
    }
}

/// Run `id`'s summary: its snapshot, and its ledger when `with_ledger`.
pub(crate) async fn summarize(state: &crate::State, id: &RunId, with_ledger: bool) -> Summary {
    let run = state
        .stores
        .snapshot(id)
        .await
        .map(|run| Columns::of(&run))
        .map_err(|e| e.to_string());
    let facts = if with_ledger {
        Some(ledger_facts(state, id).await)
    } else {
        None
    };
    Summary { run, facts }
}

/// Every run the stores know, with its summary, snapshot by snapshot: for stores with
/// neither a run index nor a database that pages them.
async fn unindexed(state: &crate::State) -> Result<Vec<(RunId, Summary)>, String> {
    let mut out = Vec::new();
    for id in state.stores.ids().await? {
        let summary = summarize(state, &id, false).await;
        out.push((id, summary));
    }
    Ok(out)
}

/// What a run waits for from a person, if anything: for the list's first rows and labels.
pub(crate) fn waiting(run: &Run) -> Option<&'static str> {
    if run.status() != RunStatus::Paused {
        return None;
    }
    if run.pending_approval().is_some() {
        Some("waiting for approval")
    } else if run.pending_question().is_some() {
        Some("waiting for an answer")
    } else {
        None
    }
}

/// `used/limit` of every limited budget of `run` (and `used` of the others it spent).
pub(crate) fn budgets(run: &Run) -> Vec<(String, u64, Option<u64>)> {
    let policy = serde_json::from_value::<PolicySnapshot>(run.policy().clone()).ok();
    let mut out: Vec<(String, u64, Option<u64>)> = Vec::new();
    if let Some(policy) = &policy {
        for (name, limit, counter) in policy.budget.snapshot(run.usage()).iter() {
            out.push((name.as_str().to_owned(), counter.used, Some(limit)));
        }
    }
    for (name, counter) in run.usage().iter() {
        if !out.iter().any(|(n, _, _)| n == name.as_str()) {
            out.push((name.as_str().to_owned(), counter.used, None));
        }
    }
    out
}

/// The budgets as one cell: `tool_calls 2/5, steps 7`.
pub(crate) fn budget_cell(run: &Run) -> String {
    budgets(run)
        .iter()
        .map(|(name, used, limit)| match limit {
            Some(limit) => format!("{name} {used}/{limit}"),
            None => format!("{name} {used}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A status filter of the runs list: a run status, or `waiting` (for a person).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusFilter {
    Waiting,
    Status(RunStatus),
}

/// Which runs a listing wants: a status, and a text the id or the goal holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Wanted {
    pub(crate) status: Option<StatusFilter>,
    /// Lowercase; empty: any.
    pub(crate) text: String,
}

impl Wanted {
    fn matches(&self, id: &RunId, summary: &Summary) -> bool {
        let status_ok = match (self.status, &summary.run) {
            (None, _) => true,
            (Some(StatusFilter::Waiting), Ok(_)) => summary.waits(),
            (Some(StatusFilter::Status(s)), Ok(c)) => c.status == s,
            (Some(_), Err(_)) => false,
        };
        let text_ok = self.text.is_empty()
            || id.as_str().contains(&self.text)
            || summary
                .run
                .as_ref()
                .is_ok_and(|c| c.goal.to_lowercase().contains(&self.text));
        status_ok && text_ok
    }

    fn filter(&self) -> RunFilter {
        let filter = RunFilter::all().text(self.text.clone());
        match self.status {
            None => filter,
            Some(StatusFilter::Waiting) => filter.waiting(),
            Some(StatusFilter::Status(status)) => filter.status(status),
        }
    }
}

/// Page `page_no` (from 1) of the runs `wanted` matches, waiting for a person first, then
/// the newest; and how many match in all.
pub(crate) async fn page(
    state: &std::sync::Arc<crate::State>,
    wanted: &Wanted,
    page_no: usize,
    per_page: usize,
) -> Result<(usize, Vec<(RunId, Summary)>), String> {
    let skip = page_no.saturating_sub(1).saturating_mul(per_page);
    if let Some(pg) = &state.stores.pg {
        let page = pg
            .page(
                &wanted.filter(),
                RunOrder::WaitingFirstNewest,
                u64::try_from(skip).unwrap_or(u64::MAX),
                u64::try_from(per_page).unwrap_or(u64::MAX),
            )
            .await
            .map_err(|e| e.to_string())?;
        let rows = page
            .runs
            .into_iter()
            .map(|(id, run)| {
                let run = run.map(|run| Columns::of(&run)).map_err(|e| e.to_string());
                (id, Summary { run, facts: None })
            })
            .collect();
        return Ok((usize::try_from(page.total).unwrap_or(usize::MAX), rows));
    }
    if let Some(index) = &state.stores.index {
        // Only the page's summaries are copied out of the kept index.
        return index
            .read(state, |runs| {
                let rows = runs.iter().map(|run| (&run.id, &run.summary));
                one_page(&rows, wanted, skip, per_page)
            })
            .await;
    }
    let rows = unindexed(state).await?;
    Ok(one_page(
        &rows.iter().map(|(id, summary)| (id, summary)),
        wanted,
        skip,
        per_page,
    ))
}

/// The `per_page` rows after `skip` of those of `rows` that `wanted` matches, waiting for
/// a person first, then the newest; and how many match in all. `rows` come oldest first
/// (by id, as the run index and the stores list them): two passes from the newest end, the
/// waiting runs then the others, find the page without sorting or collecting every run.
fn one_page<'a>(
    rows: &(impl DoubleEndedIterator<Item = (&'a RunId, &'a Summary)> + Clone),
    wanted: &Wanted,
    skip: usize,
    per_page: usize,
) -> (usize, Vec<(RunId, Summary)>) {
    let mut total = 0;
    let mut shown = Vec::with_capacity(per_page.min(1024));
    for waits in [true, false] {
        for (id, summary) in rows.clone().rev() {
            if summary.waits() != waits || !wanted.matches(id, summary) {
                continue;
            }
            if total >= skip && shown.len() < per_page {
                shown.push((id.clone(), summary.clone()));
            }
            total += 1;
        }
    }
    (total, shown)
}

/// The runs that wait for a person and hold `text` (lowercase; empty: any) in their id or
/// goal, the longest unchanged first, at most `limit` of them; and how many there are.
pub(crate) async fn waiting_runs(
    state: &std::sync::Arc<crate::State>,
    text: &str,
    limit: usize,
) -> Result<(usize, Vec<Run>), String> {
    let wanted = Wanted {
        status: Some(StatusFilter::Waiting),
        text: text.to_owned(),
    };
    if let Some(pg) = &state.stores.pg {
        let page = pg
            .page(
                &wanted.filter(),
                RunOrder::LongestUnchanged,
                0,
                u64::try_from(limit).unwrap_or(u64::MAX),
            )
            .await
            .map_err(|e| e.to_string())?;
        let runs = page
            .runs
            .into_iter()
            .filter_map(|(_, run)| run.ok())
            .filter(|run| waiting(run).is_some())
            .collect();
        return Ok((usize::try_from(page.total).unwrap_or(usize::MAX), runs));
    }
    // The run index says which runs wait; only their snapshots are read.
    let waiting_ids: Vec<RunId> = match &state.stores.index {
        Some(index) => {
            index
                .read(state, |runs| {
                    runs.iter()
                        .filter(|run| wanted.matches(&run.id, &run.summary))
                        .map(|run| run.id.clone())
                        .collect()
                })
                .await?
        }
        None => unindexed(state)
            .await?
            .into_iter()
            .filter(|(id, summary)| wanted.matches(id, summary))
            .map(|(id, _)| id)
            .collect(),
    };
    let mut runs = Vec::new();
    for id in waiting_ids {
        if let Ok(run) = state.stores.snapshot(&id).await
            && waiting(&run).is_some()
        {
            runs.push(run);
        }
    }
    runs.sort_by_key(Run::updated_at);
    let total = runs.len();
    runs.truncate(limit);
    Ok((total, runs))
}
