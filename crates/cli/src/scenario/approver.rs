//! `ScriptedApprover`: answers approval requests from the scenario's list, in order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rein::{ApprovalRequest, ApprovalResponse, Approver, ApproverError};

use super::model::{Answer, ScriptedAnswer};

/// The name the scripted approver signs its answers with (in the ledger).
pub(crate) const NAME: &str = "scenario";

/// Answers approval requests with the scenario's scripted answers, one per request, in
/// order; with none left it fails, and the engine denies (approvals fail closed).
#[derive(Debug)]
pub(crate) struct ScriptedApprover {
    answers: Vec<ScriptedAnswer>,
    next: AtomicUsize,
}

impl ScriptedApprover {
    /// An approver giving `answers` in order, starting after the first `used` (the answers
    /// an earlier process of the same run already gave).
    pub(crate) fn new(answers: Vec<ScriptedAnswer>, used: usize) -> Self {
        Self {
            answers,
            next: AtomicUsize::new(used),
        }
    }
}

impl Approver for ScriptedApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        let i = self.next.fetch_add(1, Ordering::SeqCst);
        let Some(answer) = self.answers.get(i) else {
            return Err(ApproverError::new(format!(
                "the scenario's scripted approver has no answer left for request {} (it has {})",
                i + 1,
                self.answers.len()
            )));
        };
        if answer.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(answer.delay_ms)).await;
        }
        Ok(match answer.answer {
            Answer::Grant => {
                let reason = non_empty(&answer.reason, "scripted grant");
                ApprovalResponse::grant(request, NAME, reason)
            }
            Answer::Deny => {
                let reason = non_empty(&answer.reason, "scripted denial");
                ApprovalResponse::deny(request, NAME, reason)
            }
        })
    }

    fn name(&self) -> &str {
        NAME
    }
}

fn non_empty<'a>(text: &'a str, default: &'a str) -> &'a str {
    if text.is_empty() { default } else { text }
}
