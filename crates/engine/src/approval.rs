//! Approval of a tool call: asking the approver (bounded by the policy's timeout, a panic
//! or an error a denial) and recording who decided and why. Fails closed.

use std::panic::AssertUnwindSafe;
use std::pin::pin;

use futures_util::FutureExt as _;
use rein_ledger::EntryKind;
use rein_policy::{ApprovalMode, ApprovalRequest, ApprovalResponse, Verdict};
use rein_run::Digest;
use serde_json::Value;

use crate::driver::{Driver, panic_message};
use crate::error::EngineError;
use crate::record_first::{First, Watch};
use crate::rejection::Rejection;
use crate::tools::ToolEntry;

impl Driver {
    /// Asks for approval when the policy requires it, or a hook asked for it (`hooked`).
    /// Fails closed.
    pub(crate) async fn approve(
        &mut self,
        entry: &ToolEntry,
        input: &Value,
        input_hash: Digest,
        hooked: bool,
    ) -> Result<bool, EngineError> {
        let Some(reason) = self.gate().needs_approval(entry, hooked) else {
            return Ok(true);
        };
        if self.policy.snapshot.approvals.mode() == ApprovalMode::Durable {
            return self.durable_approval(entry, input_hash, reason).await;
        }
        let tool = entry.spec.name().clone();
        let run = &self.rec.proj.run;
        let request = ApprovalRequest::new(
            run.id().clone(),
            run.steps(),
            run.state(),
            &entry.spec,
            input.clone(),
            reason,
        );
        self.rec
            .record(EntryKind::ApprovalRequested {
                tool: tool.clone(),
                input_hash,
                reason: reason.to_string(),
            })
            .await?;
        let timeout = self.policy.snapshot.approvals.timeout();
        let ruling = match self.shared.approver.clone() {
            None => Ruling::denied(
                "engine".to_owned(),
                "no approver is configured; approvals fail closed".to_owned(),
            ),
            Some(approver) => {
                // A panicking approver is an approver error: a denial, like any other.
                let decide = AssertUnwindSafe(approver.decide_boxed(&request))
                    .catch_unwind()
                    .map(|outcome| {
                        outcome.unwrap_or_else(|panic| {
                            Err(rein_policy::ApproverError::new(format!(
                                "the approver panicked: {}",
                                panic_message(panic.as_ref())
                            )))
                        })
                    });
                let answer = pin!(tokio::time::timeout(timeout, decide));
                let answer = Watch::new(self.signals(), First::Work).until(answer).await;
                match answer.ok() {
                    None => {
                        self.abort().await?;
                        return Ok(false);
                    }
                    Some(Err(_)) => Ruling::denied(
                        approver.approver_name().to_owned(),
                        format!(
                            "the approver did not answer within {} ms; approvals fail closed",
                            timeout.as_millis()
                        ),
                    ),
                    Some(Ok(Err(e))) => Ruling::denied(
                        approver.approver_name().to_owned(),
                        format!("{e}; approvals fail closed"),
                    ),
                    Some(Ok(Ok(response))) => judge(&request, &response),
                }
            }
        };
        let Ruling {
            approver,
            reason,
            verdict,
        } = ruling;
        if verdict == Verdict::Granted {
            self.rec
                .record(EntryKind::ApprovalGranted {
                    tool,
                    input_hash,
                    approver,
                    reason,
                })
                .await?;
            return Ok(true);
        }
        self.rec
            .record(EntryKind::ApprovalDenied {
                tool: tool.clone(),
                input_hash,
                approver: approver.clone(),
                reason: reason.clone(),
            })
            .await?;
        self.reject(Rejection::ApprovalDenied {
            tool,
            approver,
            reason,
        })
        .await?;
        Ok(false)
    }
}

/// What came of asking for an approval: who ruled, why, and the verdict (what the ledger's
/// `approval_granted` / `approval_denied` entry records).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ruling {
    /// Who ruled: the approver's name, or `engine` when none is configured.
    approver: String,
    /// Why, as the approver said or as the engine found (a timeout, an error, a mismatch).
    reason: String,
    verdict: Verdict,
}

impl Ruling {
    /// A denial by `approver`, for `reason`: how every failure to get an answer ends
    /// (approvals fail closed).
    const fn denied(approver: String, reason: String) -> Self {
        Self {
            approver,
            reason,
            verdict: Verdict::Denied,
        }
    }
}

/// Reads an approver's response: granted only if it answers this exact call.
fn judge(request: &ApprovalRequest, response: &ApprovalResponse) -> Ruling {
    if !response.covers(request) {
        let why = if response.input_hash() == request.input_hash() {
            format!(
                "the response was given for another call (tool `{}`), not this call of `{}`; an \
                 approval never carries over",
                response.tool(),
                request.tool()
            )
        } else {
            format!(
                "the response covers input {} but the call's input is {}; an approval never \
                 carries over",
                response.input_hash(),
                request.input_hash()
            )
        };
        return Ruling::denied(response.approver().to_owned(), why);
    }
    Ruling {
        approver: response.approver().to_owned(),
        reason: response.reason().to_owned(),
        verdict: response.verdict(),
    }
}
