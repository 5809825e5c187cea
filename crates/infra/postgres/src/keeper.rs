//! `LeaseKeeper`: a lease renewed in the background until it is taken over or given up.

use std::sync::Arc;
use std::time::Duration;

use rein_run::Fenced;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::{Lease, PgError, PgStores};

/// A lease kept alive by a background task: renewed every third of its time to live (and
/// at once on [`renew_now`](Self::renew_now)), until the lease is found taken over —
/// then [`lost`](Self::lost) resolves with the [`Fenced`] that says so, and the holder must
/// stop driving the run. A renewal that fails for another reason (the database restarting)
/// is logged and tried again at the next tick; the lease expires, by the database's clock,
/// only if none gets through in time. Dropping the keeper stops the renewals (it does not
/// release the lease: [`PgStores::release_lease`] does).
#[derive(Debug)]
pub struct LeaseKeeper {
    state: watch::Receiver<Result<Lease, Fenced>>,
    nudge: Arc<Notify>,
    task: JoinHandle<()>,
}

impl PgStores {
    /// Keeps `lease` alive in the background, renewing it to `ttl` every `ttl / 3`.
    /// Needs a tokio runtime.
    #[must_use]
    pub fn keep_lease(&self, lease: Lease, ttl: Duration) -> LeaseKeeper {
        let (send, state) = watch::channel(Ok(lease.clone()));
        let nudge = Arc::new(Notify::new());
        let (stores, woken) = (self.clone(), Arc::clone(&nudge));
        let task = tokio::spawn(async move {
            let mut lease = lease;
            loop {
                tokio::select! {
                    () = tokio::time::sleep(ttl / 3) => {}
                    () = woken.notified() => {}
                }
                match stores.renew_lease(&lease, ttl).await {
                    Ok(renewed) => {
                        lease = renewed.clone();
                        drop(send.send_replace(Ok(renewed)));
                    }
                    Err(PgError::Fenced(fenced)) => {
                        tracing::warn!(run = %fenced.run_id, "the run's lease was taken over");
                        drop(send.send_replace(Err(fenced)));
                        return;
                    }
                    Err(e) => tracing::warn!(run = %lease.run_id(), error = %e,
                        "renewing a run lease failed; trying again at the next tick"),
                }
            }
        });
        LeaseKeeper { state, nudge, task }
    }
}

impl LeaseKeeper {
    /// The lease as last renewed, or the [`Fenced`] that ended it.
    ///
    /// # Errors
    /// [`Fenced`] once the lease was found taken over.
    pub fn lease(&self) -> Result<Lease, Fenced> {
        self.state.borrow().clone()
    }

    /// Renews the lease now, and waits for the outcome of the next successful renewal or
    /// the takeover.
    ///
    /// # Errors
    /// [`Fenced`] when the lease was taken over.
    pub async fn renew_now(&mut self) -> Result<Lease, Fenced> {
        if let Err(fenced) = &*self.state.borrow_and_update() {
            return Err(fenced.clone());
        }
        self.nudge.notify_one();
        // The sender lives as long as the task; a task that ended has sent its last state.
        let _ = self.state.changed().await;
        self.lease()
    }

    /// Waits until the lease is found taken over.
    pub async fn lost(&mut self) -> Fenced {
        loop {
            if let Err(fenced) = &*self.state.borrow_and_update() {
                return fenced.clone();
            }
            if self.state.changed().await.is_err() {
                // The task ended without a takeover: it only ends on one, or on a panic.
                if let Err(fenced) = self.lease() {
                    return fenced;
                }
                std::future::pending::<()>().await;
            }
        }
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}
