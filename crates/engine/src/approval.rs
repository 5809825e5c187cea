//! Approval of a tool call: asking the approver (bounded by the policy's timeout, a panic
//! or an error a denial) and recording who decided and why. Fails closed.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;
use rein_ledger::EntryKind;
use rein_policy::{ApprovalMode, ApprovalRequest, ApprovalResponse, Verdict};
use rein_run::Digest;
use serde_json::Value;

use crate::driver::{Driver, panic_message};
use crate::error::EngineError;
use crate::rejection::Rejection;
use crate::tools::ToolEntry;

impl Driver {
    /// Asks for approval when the policy requires it. Fails closed.
    pub(crate) async fn approve(
        &mut self,
        entry: &ToolEntry,
        input: &Value,
        input_hash: Digest,
    ) -> Result<bool, EngineError> {
        let Some(reason) = self.policy.snapshot.approvals.requires(&entry.spec) else {
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
        let (approver, why, verdict) = match self.shared.approver.clone() {
            None => (
                "engine".to_owned(),
                "no approver is configured; approvals fail closed".to_owned(),
                Verdict::Denied,
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
                let answer = tokio::time::timeout(timeout, decide);
                let answer = match self.cancel_token() {
                    None => Some(answer.await),
                    Some(cancel) => tokio::select! {
                        biased;
                        () = cancel.cancelled() => None,
                        a = answer => Some(a),
                    },
                };
                match answer {
                    None => {
                        self.abort().await?;
                        return Ok(false);
                    }
                    Some(Err(_)) => (
                        approver.approver_name().to_owned(),
                        format!(
                            "the approver did not answer within {} ms; approvals fail closed",
                            timeout.as_millis()
                        ),
                        Verdict::Denied,
                    ),
                    Some(Ok(Err(e))) => (
                        approver.approver_name().to_owned(),
                        format!("{e}; approvals fail closed"),
                        Verdict::Denied,
                    ),
                    Some(Ok(Ok(response))) => judge(&request, &response),
                }
            }
        };
        if verdict == Verdict::Granted {
            self.rec
                .record(EntryKind::ApprovalGranted {
                    tool,
                    input_hash,
                    approver,
                    reason: why,
                })
                .await?;
            return Ok(true);
        }
        self.rec
            .record(EntryKind::ApprovalDenied {
                tool: tool.clone(),
                input_hash,
                approver: approver.clone(),
                reason: why.clone(),
            })
            .await?;
        self.reject(Rejection::ApprovalDenied {
            tool,
            approver,
            reason: why,
        })
        .await?;
        Ok(false)
    }
}

/// Reads an approver's response: granted only if it answers this exact call.
fn judge(request: &ApprovalRequest, response: &ApprovalResponse) -> (String, String, Verdict) {
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
        return (response.approver().to_owned(), why, Verdict::Denied);
    }
    (
        response.approver().to_owned(),
        response.reason().to_owned(),
        response.verdict(),
    )
}
