//! Durable approvals: under `ApprovalMode::Durable` a call that needs approval records an
//! `approval_pending` entry and pauses the run (its task ends, nothing is held open); a
//! verdict given later through `Engine::approve`, from any engine on the same stores, is
//! recorded and the run goes on. The verdict binds run, step, tool and input hash; the
//! approval's timeout runs on the engine's clock from the request, across restarts.

use std::sync::Arc;

use rein_ledger::EntryKind;
use rein_policy::{ApprovalReason, ApprovalResponse, Verdict};
use rein_run::{Digest, PendingApproval, Run, RunStatus};

use crate::driver::Driver;
use crate::error::EngineError;
use crate::rejection::Rejection;
use crate::shared::{RunPolicy, Shared};
use crate::tools::ToolEntry;

/// Who signs the denial of an approval that timed out.
const ENGINE: &str = "engine";

impl Driver {
    /// The durable side of `approve`: `true` when a verdict recorded since this step's
    /// decision granted exactly this call (tool and input hash); otherwise records the
    /// request and the pending approval, which pauses the run, and answers `false`.
    pub(crate) async fn durable_approval(
        &mut self,
        entry: &ToolEntry,
        input_hash: Digest,
        reason: ApprovalReason,
    ) -> Result<bool, EngineError> {
        let tool = entry.spec.name();
        if self.granted_in_this_step(tool, input_hash) {
            return Ok(true);
        }
        self.rec
            .record(EntryKind::ApprovalRequested {
                tool: tool.clone(),
                input_hash,
                reason: reason.to_string(),
            })
            .await?;
        let run = &self.rec.proj.run;
        let pending = PendingApproval {
            run: run.id().clone(),
            step: run.steps(),
            tool: tool.clone(),
            input_hash,
            risk: entry.spec.annotations().risk_level(),
            reason: reason.to_string(),
            requested_at: self.shared.clock.now(),
        };
        self.rec
            .record(EntryKind::ApprovalPending { pending })
            .await?;
        Ok(false)
    }

    /// Whether an `approval_granted` for `tool` with `input_hash` was recorded since the
    /// last decision: the verdict on this step's call, given while the run was paused.
    fn granted_in_this_step(&self, tool: &rein_run::ToolName, input_hash: Digest) -> bool {
        self.rec
            .proj
            .granted
            .iter()
            .any(|(t, h)| t == tool && *h == input_hash)
    }

    /// Denies a pending approval whose timeout passed, then rejects the call: the run fails,
    /// or the planner is told, as for any denial.
    pub(crate) async fn expire(
        &mut self,
        pending: &PendingApproval,
        timeout_ms: u64,
    ) -> Result<(), EngineError> {
        let reason = format!(
            "no verdict within {timeout_ms} ms of the request (at {}); approvals fail closed",
            pending.requested_at
        );
        self.deny(pending, ENGINE, &reason).await
    }

    /// Records a denial of the pending call and rejects it.
    async fn deny(
        &mut self,
        pending: &PendingApproval,
        approver: &str,
        reason: &str,
    ) -> Result<(), EngineError> {
        self.rec
            .record(EntryKind::ApprovalDenied {
                tool: pending.tool.clone(),
                input_hash: pending.input_hash,
                approver: approver.to_owned(),
                reason: reason.to_owned(),
            })
            .await?;
        self.reject(Rejection::ApprovalDenied {
            tool: pending.tool.clone(),
            approver: approver.to_owned(),
            reason: reason.to_owned(),
        })
        .await
    }
}

/// The approval timeout of `policy`, in milliseconds.
fn timeout_ms(policy: &RunPolicy) -> u64 {
    u64::try_from(policy.snapshot.approvals.timeout().as_millis()).unwrap_or(u64::MAX)
}

/// For a run about to be resumed: `Err(AwaitingApproval)` while it waits for a verdict in
/// time; the pending approval when its timeout has passed (the caller denies it, recorded);
/// `None` when it waits for no approval.
pub(crate) fn due(
    shared: &Shared,
    policy: &RunPolicy,
    run: &Run,
) -> Result<Option<(PendingApproval, u64)>, EngineError> {
    let Some(pending) = run
        .pending_approval()
        .filter(|_| run.status() == RunStatus::Paused)
    else {
        return Ok(None);
    };
    let timeout = timeout_ms(policy);
    if pending.is_expired(shared.clock.now(), timeout) {
        return Ok(Some((pending.clone(), timeout)));
    }
    Err(EngineError::AwaitingApproval {
        id: run.id().clone(),
        pending: Box::new(pending.clone()),
    })
}

/// The pending approval of a paused run.
fn pending_of(driver: &Driver) -> Result<PendingApproval, EngineError> {
    let run = driver.run();
    run.pending_approval()
        .filter(|_| run.status() == RunStatus::Paused)
        .cloned()
        .ok_or_else(|| EngineError::NotAwaitingApproval {
            id: run.id().clone(),
            status: run.status(),
        })
}

/// `Engine::approve`: records `response` on the call run `id` waits for and drives the run
/// on. A granted call then runs with the input of its recorded decision, whose hash the
/// verdict names.
pub(crate) async fn approve(
    mut driver: Driver,
    response: &ApprovalResponse,
) -> Result<Run, EngineError> {
    if let Some(step) = record(&mut driver, response).await? {
        // Applies the recorded decision again: every check runs, and the approval step
        // finds the grant just recorded for exactly this tool and input.
        driver.complete_step(step).await?;
    }
    driver.rec.persist().await?;
    // A child approved directly is driven by the planner its link names.
    driver.adopt_planner();
    driver.drive().await
}

/// Records `response` on the call the driver's run waits for (`approval_granted` or
/// `approval_denied`, with `run_resumed`); a denial rejects the call at once. For a grant,
/// the step the pause cut short is returned: the caller completes it now
/// (`Engine::approve`), or leaves it on the ledger for the next drive to complete
/// (`Engine::record_verdict`). Nothing is persisted here.
pub(crate) async fn record(
    driver: &mut Driver,
    response: &ApprovalResponse,
) -> Result<Option<crate::progress::Unsettled>, EngineError> {
    let shared = Arc::clone(&driver.shared);
    let id = driver.run().id().clone();
    let pending = pending_of(driver)?;
    let timeout = timeout_ms(&driver.policy);
    if pending.is_expired(shared.clock.now(), timeout) {
        driver.expire(&pending, timeout).await?;
        driver.rec.persist().await?;
        return Err(EngineError::ApprovalExpired {
            id,
            pending: Box::new(pending),
            timeout_ms: timeout,
        });
    }
    if !response.answers(&pending) {
        return Err(EngineError::ApprovalMismatch {
            id,
            pending: Box::new(pending),
            verdict: Box::new(response.clone()),
        });
    }
    // The step the pause cut short: its decision, recorded before the pause.
    let unsettled = driver.rec.proj.unsettled.take();
    driver.rec.proj.open = None;
    let note = format!(
        "resumed after a durable approval of `{}`: {} by {}: {}",
        pending.tool,
        match response.verdict() {
            Verdict::Granted => "granted",
            Verdict::Denied => "denied",
        },
        response.approver(),
        response.reason()
    );
    if response.is_granted() {
        driver
            .rec
            .record(EntryKind::ApprovalGranted {
                tool: pending.tool.clone(),
                input_hash: pending.input_hash,
                approver: response.approver().to_owned(),
                reason: response.reason().to_owned(),
            })
            .await?;
        driver.rec.record(EntryKind::RunResumed { note }).await?;
        Ok(unsettled)
    } else {
        driver.rec.record(EntryKind::RunResumed { note }).await?;
        driver
            .deny(&pending, response.approver(), response.reason())
            .await?;
        Ok(None)
    }
}

/// `Engine::pending_approval`: the call the run waits for, if any. A pending approval past
/// its timeout is denied (recorded) now, and `None` returned.
pub(crate) async fn pending(mut driver: Driver) -> Result<Option<PendingApproval>, EngineError> {
    let shared = Arc::clone(&driver.shared);
    let Ok(pending) = pending_of(&driver) else {
        return Ok(None);
    };
    let timeout = timeout_ms(&driver.policy);
    if !pending.is_expired(shared.clock.now(), timeout) {
        return Ok(Some(pending));
    }
    driver.rec.proj.unsettled = None;
    driver.expire(&pending, timeout).await?;
    driver.rec.persist().await?;
    Ok(None)
}
