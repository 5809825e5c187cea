//! The bulkhead: a tokio `Semaphore` of the tool's permits; a call holds one through every
//! attempt. Callers queue for it (first come, first served) or fail fast with
//! `ToolError::Overloaded`.

use rein_tool::{ToolError, ToolName};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::Bulkhead;

/// One tool's bulkhead, built from its [`Bulkhead`] config.
#[derive(Debug)]
pub(crate) enum Permits {
    /// No limit: no permit to take.
    Unlimited,
    /// Callers wait for a permit.
    Queue(Semaphore),
    /// Callers that find no permit free are rejected.
    FailFast(Semaphore),
}

impl Permits {
    /// The bulkhead `config` describes.
    pub(crate) fn new(config: Bulkhead) -> Self {
        match config {
            Bulkhead::Unlimited => Self::Unlimited,
            Bulkhead::Queue { max_concurrent } => Self::Queue(Semaphore::new(max_concurrent.get())),
            Bulkhead::FailFast { max_concurrent } => {
                Self::FailFast(Semaphore::new(max_concurrent.get()))
            }
        }
    }

    /// Takes a permit for a call of `tool` (none when unlimited), waiting for one if the
    /// bulkhead queues; `Overloaded` if it fails fast and none is free.
    pub(crate) async fn enter(
        &self,
        tool: &ToolName,
    ) -> Result<Option<SemaphorePermit<'_>>, ToolError> {
        let overloaded = || ToolError::Overloaded { tool: tool.clone() };
        match self {
            Self::Unlimited => Ok(None),
            Self::Queue(permits) => match permits.try_acquire() {
                Ok(permit) => Ok(Some(permit)),
                // Boxed: only a call that has to queue carries the wait in its future. The
                // semaphore is never closed, so the error cannot happen.
                Err(_) => Box::pin(permits.acquire())
                    .await
                    .map(Some)
                    .map_err(|_| overloaded()),
            },
            Self::FailFast(permits) => match permits.try_acquire() {
                Ok(permit) => Ok(Some(permit)),
                Err(_) => {
                    tracing::debug!(tool = %tool, "bulkhead full: call rejected");
                    Err(overloaded())
                }
            },
        }
    }
}
