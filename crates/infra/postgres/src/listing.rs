//! Listing runs a page at a time: the columns `rein_runs` keeps beside each snapshot
//! (status, what it waits for, goal, last change; written with every save) are filtered,
//! ordered and counted by the database, and only the snapshots of the page are read.

use rein_run::{Run, RunId, RunStatus, RunStoreError};

use crate::PgRunStore;
use crate::failure::Explain;

/// Which runs a listing wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunFilter {
    /// Only runs in this status.
    pub status: Option<RunStatus>,
    /// Only runs that wait for a person (a verdict or an answer).
    pub waiting: bool,
    /// Only runs whose id holds this text, or whose goal holds it in any case (matched as
    /// given: no wildcards).
    pub text: Option<String>,
}

impl RunFilter {
    /// Every run.
    #[must_use]
    pub fn all() -> Self {
        Self::default()
    }

    /// Only runs in `status`.
    #[must_use]
    pub const fn status(mut self, status: RunStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// Only runs that wait for a person.
    #[must_use]
    pub const fn waiting(mut self) -> Self {
        self.waiting = true;
        self
    }

    /// Only runs whose id or goal holds `text` (empty: no text filter).
    #[must_use]
    pub fn text(mut self, text: impl Into<String>) -> Self {
        let text = text.into();
        self.text = (!text.is_empty()).then_some(text);
        self
    }
}

/// The order of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunOrder {
    /// Runs that wait for a person first, then the newest (the console's runs list).
    WaitingFirstNewest,
    /// The run whose last change is oldest first (an inbox: the longest wait first).
    LongestUnchanged,
}

/// One page of a listing.
#[derive(Debug)]
#[non_exhaustive]
pub struct RunPage {
    /// How many runs the filter matches in all.
    pub total: u64,
    /// The page's runs in order, each with its snapshot or why it cannot be read.
    pub runs: Vec<(RunId, Result<Run, RunStoreError>)>,
}

impl PgRunStore {
    /// The runs `filter` matches, `limit` of them after skipping `offset`, in `order`, and
    /// how many match in all: filtered, ordered and counted in the database, so a page
    /// costs one page of snapshots however many runs there are.
    ///
    /// # Errors
    /// [`RunStoreError::Backend`] when the database fails. A row whose snapshot cannot be
    /// read is in the page with its error.
    pub async fn page(
        &self,
        filter: &RunFilter,
        order: RunOrder,
        offset: u64,
        limit: u64,
    ) -> Result<RunPage, RunStoreError> {
        let backend = |source: tokio_postgres::Error| RunStoreError::Backend {
            context: "listing the runs".to_owned(),
            source: source.explain(),
        };
        let client = self
            .shared()
            .client()
            .await
            .map_err(|e| RunStoreError::Backend {
                context: "listing the runs".to_owned(),
                source: e.explain(),
            })?;
        let status = filter.status.map(RunStatus::as_str);
        let text = filter.text.as_deref().map(str::to_lowercase);
        // NULL parameters switch a condition off; strpos matches the text as given.
        let filtered = "FROM rein_runs
             WHERE ($1::text IS NULL OR status = $1)
               AND (NOT $2 OR waiting IS NOT NULL)
               AND ($3::text IS NULL OR strpos(run_id, $3) > 0 OR strpos(lower(goal), $3) > 0)";
        let count = client
            .query_one(
                format!("SELECT count(*) {filtered}").as_str(),
                &[&status, &filter.waiting, &text],
            )
            .await
            .map_err(backend)?;
        let total: i64 = count.get(0);
        // `t` names the table the order's columns are taken from.
        let order_by = |t: &str| match order {
            RunOrder::WaitingFirstNewest => {
                format!("({t}waiting IS NOT NULL) DESC, {t}run_id DESC")
            }
            RunOrder::LongestUnchanged => format!("{t}updated_at ASC NULLS LAST, {t}run_id ASC"),
        };
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // The page is chosen from the listing columns alone (by an index for the runs
        // list's order), and only its rows' snapshots are read: a sort that carried every
        // run's snapshot would cost the whole table.
        let rows = client
            .query(
                format!(
                    "SELECT p.run_id, s.snapshot
                     FROM (SELECT run_id, waiting, updated_at {filtered}
                           ORDER BY {} LIMIT $4 OFFSET $5) AS p
                     JOIN rein_runs AS s ON s.run_id = p.run_id
                     ORDER BY {}",
                    order_by(""),
                    order_by("p.")
                )
                .as_str(),
                &[&status, &filter.waiting, &text, &limit, &offset],
            )
            .await
            .map_err(backend)?;
        let mut runs = Vec::with_capacity(rows.len());
        for row in rows {
            let text: &str = row.get(0);
            let Ok(id) = text.parse::<RunId>() else {
                tracing::warn!(
                    run_id = text,
                    "skipping a row of rein_runs whose run id is not valid"
                );
                continue;
            };
            let snapshot: &str = row.get(1);
            let run = crate::run::parse(&id, snapshot);
            runs.push((id, run));
        }
        Ok(RunPage {
            total: u64::try_from(total).unwrap_or(0),
            runs,
        })
    }
}
