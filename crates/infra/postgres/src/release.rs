//! Giving a run lease up, once what waits for the run's commit is written under it.

use crate::lease::{Lease, stored};
use crate::{PgError, PgStores, append, prepared};

impl PgStores {
    /// Gives `lease` up: it expires now, so the next owner takes the run over at once (with
    /// the next token). Releasing a lease that was taken over already changes nothing.
    ///
    /// # Errors
    /// [`PgError::Query`] when the database fails.
    pub async fn release_lease(&self, lease: &Lease) -> Result<(), PgError> {
        // What waits for the step's commit is written under the lease, or refused by it:
        // never left behind in this process.
        if let Err(e) = append::flush(&self.shared, lease.run_id()).await {
            tracing::warn!(run = %lease.run_id(), error = %e,
                "ledger entries appended but not synced could not be written before the lease was released");
        }
        let client = self.client().await?;
        prepared::execute(
            &client,
            "UPDATE rein_leases SET expires_at = least(expires_at, now())
                 WHERE run_id = $1 AND fencing_token = $2",
            &[&lease.run_id().as_str(), &stored(lease.token())],
        )
        .await
        .map_err(|e| PgError::query(format!("releasing the lease of run {}", lease.run_id()), e))?;
        self.shared.held.forget(lease.run_id(), lease.token());
        Ok(())
    }
}
