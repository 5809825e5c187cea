//! Driving one claimed run under its lease, and what came of it.

use std::sync::Arc;
use std::time::Duration;

use rein::postgres::{Lease, PgStores};
use rein::{EngineError, RunId, RunStatus};
use tokio_util::sync::CancellationToken;

use crate::Engines;

/// What a worker did with a run it claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The run ended (completed or failed), waits for an answer or a verdict, or was
    /// interrupted by an operator (`rein interrupt`): off the queue until it is resumed.
    Settled(RunStatus),
    /// The run was stopped because the worker shut down: left queued, lease released.
    Stopped,
    /// Another worker took the run over (this one's lease expired): this one stopped and
    /// wrote nothing more.
    FencedOut,
    /// The run's engine could not be built here (a tool this worker does not have): left
    /// leased until the lease expires, so another worker can take it.
    NoEngine(String),
    /// Driving failed (a store error): left leased until the lease expires, then retried.
    Failed(String),
}

/// One run a worker claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Driven {
    /// The run.
    pub run_id: RunId,
    /// The fencing token the worker drove it under.
    pub token: u64,
    /// What came of it.
    pub outcome: Outcome,
}

/// Drives the run `lease` holds until it ends, pauses, is taken over, or `shutdown`.
pub(crate) async fn drive(
    stores: PgStores,
    engines: Arc<dyn Engines>,
    lease: Lease,
    ttl: Duration,
    shutdown: CancellationToken,
) -> Driven {
    let outcome = outcome(&stores, &*engines, &lease, ttl, &shutdown).await;
    match &outcome {
        Outcome::Settled(_) | Outcome::Stopped => {
            if let Err(e) = stores.release_lease(&lease).await {
                // It expires by itself; the next holder takes it over then.
                tracing::warn!(run = %lease.run_id(), error = %e, "releasing a run lease failed");
            }
        }
        Outcome::NoEngine(why) | Outcome::Failed(why) => {
            tracing::warn!(run = %lease.run_id(), error = %why, "cannot drive the run here; its lease is left to expire");
        }
        Outcome::FencedOut => {
            tracing::warn!(run = %lease.run_id(), "the run was taken over by another worker");
        }
    }
    Driven {
        run_id: lease.run_id().clone(),
        token: lease.token(),
        outcome,
    }
}

async fn outcome(
    stores: &PgStores,
    engines: &dyn Engines,
    lease: &Lease,
    ttl: Duration,
    shutdown: &CancellationToken,
) -> Outcome {
    let id = lease.run_id();
    let mut keeper = stores.keep_lease(lease.clone(), ttl);
    let opened = match engines.engine(id).await {
        Ok(opened) => opened,
        Err(e) => return Outcome::NoEngine(e.to_string()),
    };
    let outcome = with_engine(stores, lease, &opened.engine, &mut keeper, shutdown).await;
    if let Some(release) = opened.release {
        release.await;
    }
    outcome
}

async fn with_engine(
    stores: &PgStores,
    lease: &Lease,
    engine: &rein::Engine,
    keeper: &mut rein::postgres::LeaseKeeper,
    shutdown: &CancellationToken,
) -> Outcome {
    let id = lease.run_id();
    let handle = match engine.start_resume(id, None).await {
        Ok(handle) => handle,
        Err(
            EngineError::AwaitingAnswer { .. }
            | EngineError::AwaitingApproval { .. }
            | EngineError::RunFinished { .. },
        ) => {
            return settle(stores, lease, engine, id).await;
        }
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let control = handle.control();
    let wait = handle.wait();
    tokio::pin!(wait);
    let (result, shutting_down) = tokio::select! {
        result = &mut wait => (result, false),
        _ = keeper.lost() => {
            control.abort();
            let _ = wait.await;
            return Outcome::FencedOut;
        }
        () = shutdown.cancelled() => {
            // A stop: nothing new starts, a tool call in progress finishes and is recorded.
            control.stop();
            (wait.await, true)
        }
    };
    match result {
        Ok(run) => match run.status() {
            // Stopped for the worker's shutdown: left queued for the next worker.
            RunStatus::Running | RunStatus::Interrupted if shutting_down => Outcome::Stopped,
            RunStatus::Running => Outcome::Stopped,
            // Interrupted by an operator (`rein interrupt`): off the queue until someone
            // resumes it, or the next worker would drive it straight on.
            status => dequeue(stores, lease, status).await,
        },
        Err(
            EngineError::LedgerStore(rein::store::LedgerStoreError::FencedOut(_))
            | EngineError::RunStore(rein::store::RunStoreError::FencedOut(_)),
        ) => Outcome::FencedOut,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// A run that was not runnable when claimed (it waits for a person, or it ended): off the
/// queue, with its status as stored.
async fn settle(stores: &PgStores, lease: &Lease, engine: &rein::Engine, id: &RunId) -> Outcome {
    match engine.load_run(id).await {
        Ok(run) => dequeue(stores, lease, run.status()).await,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

async fn dequeue(stores: &PgStores, lease: &Lease, status: RunStatus) -> Outcome {
    match stores.dequeue(lease).await {
        Ok(true) => Outcome::Settled(status),
        Ok(false) => Outcome::FencedOut,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}
