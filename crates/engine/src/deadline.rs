//! Deadlines: a run's `time` budget on the engine's `Clock`. When a driver opens a run it
//! works out the instant the deadline passes (the run's start, plus its time, plus the
//! time it spent paused unless paused time counts); `overdue` holds the driver to it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rein_ledger::{Entry, EntryKind};
use rein_policy::{Deadline, PolicySnapshot};
use rein_run::{RunId, Timestamp};
use rein_tool::{ToolError, ToolOutput};

use crate::error::{EngineError, RecordedPolicyError};
use crate::shared::{RunPolicy, Shared};

/// When the deadline of the run a driver drives passes, on the engine's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Due {
    /// The instant the deadline passes.
    pub(crate) at: Timestamp,
    /// The deadline's time, for messages.
    pub(crate) time_ms: u64,
    /// Paused time not counted, for messages.
    pub(crate) paused_ms: u64,
}

/// The due instant of a run held to `policy` whose ledger holds `entries`, opened now. A
/// ledger that ends paused is being resumed: its pause ends now.
pub(crate) fn due(shared: &Shared, policy: &RunPolicy, entries: &[Entry]) -> Option<Due> {
    let deadline = policy.snapshot.deadline?;
    let start = entries.first()?.at();
    let mut paused_ms = 0u64;
    let mut since: Option<Timestamp> = None;
    if !deadline.count_paused() {
        for entry in entries {
            if let Some(from) = since.take() {
                paused_ms = paused_ms.saturating_add(entry.at().millis_since(from));
            }
            if matches!(
                entry.event(),
                EntryKind::RunPaused { .. } | EntryKind::ApprovalPending { .. }
            ) {
                since = Some(entry.at());
            }
        }
        if let Some(from) = since {
            paused_ms = paused_ms.saturating_add(shared.clock.now().millis_since(from));
        }
    }
    let time_ms = millis(deadline.time());
    Some(Due {
        at: Timestamp::from_unix_millis(
            start
                .as_unix_millis()
                .saturating_add(time_ms)
                .saturating_add(paused_ms),
        ),
        time_ms,
        paused_ms,
    })
}

/// The policy a new run starts under when its spec sets a deadline instant `at`: the
/// engine's, with the deadline that instant leaves (or the engine's own, if that is
/// sooner). Refused when `at` is not in the future or is absurdly far.
pub(crate) fn run_policy(
    shared: &Shared,
    id: &RunId,
    at: Option<Timestamp>,
) -> Result<Arc<RunPolicy>, EngineError> {
    let Some(at) = at else {
        return Ok(Arc::clone(&shared.policy));
    };
    let now = shared.clock.now();
    if at <= now {
        return Err(EngineError::DeadlinePassed { at, now });
    }
    let time = Duration::from_millis(at.millis_since(now));
    let own = shared.policy.snapshot.deadline;
    if own.is_some_and(|own| own.time() <= time) {
        return Ok(Arc::clone(&shared.policy));
    }
    let deadline = Deadline::new(time).counting_paused(own.is_some_and(|d| d.count_paused()));
    deadline
        .check()
        .map_err(|source| EngineError::InvalidDeadline { source })?;
    let snapshot = PolicySnapshot {
        deadline: Some(deadline),
        ..shared.policy.snapshot.clone()
    };
    // The engine's policy was built over the same tools; only the deadline differs.
    let policy = RunPolicy::new(snapshot, shared.tools.specs()).map_err(|e| {
        EngineError::InvalidRecordedPolicy {
            id: id.clone(),
            source: RecordedPolicyError::Eligibility(e),
        }
    })?;
    Ok(Arc::new(policy))
}

/// `call`, given at most `remaining`: past it, the call is dropped and fails as timed out.
pub(crate) async fn bounded<F>(
    call: F,
    remaining: Option<Duration>,
) -> Result<ToolOutput, ToolError>
where
    F: Future<Output = Result<ToolOutput, ToolError>>,
{
    match remaining {
        None => call.await,
        Some(after) => tokio::time::timeout(after, call)
            .await
            .unwrap_or(Err(ToolError::TimedOut { after })),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
