//! `Condition`: a test over a run's evidence that chooses between a script step's two decisions.

use rein_run::{EvidenceKind, Payload, PlanRequest};
use serde::{Deserialize, Serialize};

/// A test over the evidence a run has gathered, for a [`ScriptStep`](crate::ScriptStep) that
/// branches with [`when`](crate::ScriptStep::when).
///
/// In JSON, a condition without a value is a string and one with a value is a one-key
/// object:
///
/// ```
/// use rein_planner::Condition;
/// use serde_json::json;
///
/// assert_eq!(serde_json::to_value(Condition::LastToolFailed)?, json!("last_tool_failed"));
/// assert_eq!(
///     serde_json::from_value::<Condition>(json!({"last_answer_is": "yes"}))?,
///     Condition::LastAnswerIs("yes".into()),
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Condition {
    /// The most recent tool outcome is a result (false when no tool has run).
    LastToolSucceeded,
    /// The most recent tool outcome is a failure (false when no tool has run).
    LastToolFailed,
    /// Some evidence contains the text: in a tool's inline output (as compact JSON), a tool
    /// failure's message, a human's answer or a system note. Outputs stored as artifacts are
    /// not searched.
    EvidenceContains(String),
    /// The most recent human answer is exactly the text (false when no human has answered).
    LastAnswerIs(String),
}

impl Condition {
    /// Whether the condition holds for the run in `request`.
    #[must_use]
    pub fn holds(&self, request: &PlanRequest<'_>) -> bool {
        let mut evidence = request.evidence().iter().rev().map(|e| &e.kind);
        match self {
            Self::LastToolSucceeded => matches!(
                evidence.find(|k| is_tool_outcome(k)),
                Some(EvidenceKind::ToolResult { .. })
            ),
            Self::LastToolFailed => matches!(
                evidence.find(|k| is_tool_outcome(k)),
                Some(EvidenceKind::ToolFailure { .. })
            ),
            Self::EvidenceContains(text) => evidence.any(|kind| contains(kind, text)),
            Self::LastAnswerIs(text) => evidence
                .find_map(|kind| match kind {
                    EvidenceKind::HumanInput { answer, .. } => Some(answer),
                    _ => None,
                })
                .is_some_and(|answer| answer == text),
        }
    }
}

const fn is_tool_outcome(kind: &EvidenceKind) -> bool {
    matches!(
        kind,
        EvidenceKind::ToolResult { .. } | EvidenceKind::ToolFailure { .. }
    )
}

fn contains(kind: &EvidenceKind, text: &str) -> bool {
    match kind {
        EvidenceKind::ToolResult {
            output: Payload::Inline(value),
            ..
        } => value.to_string().contains(text),
        EvidenceKind::ToolFailure { error, .. } => error.to_string().contains(text),
        EvidenceKind::HumanInput { answer, .. } => answer.contains(text),
        EvidenceKind::SystemNote { note, .. } => note.contains(text),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rein_run::{
        ArtifactLink, BudgetSnapshot, BudgetUsage, NoteSource, Run, Timestamp, ToolError, ToolName,
    };
    use serde_json::{Map, json};

    use super::*;

    fn result(output: serde_json::Value) -> EvidenceKind {
        EvidenceKind::ToolResult {
            tool: ToolName::new("probe").unwrap(),
            input: json!({}).into(),
            output: Payload::Inline(output),
            cached: false,
        }
    }

    fn failure(message: &str) -> EvidenceKind {
        EvidenceKind::ToolFailure {
            tool: ToolName::new("probe").unwrap(),
            input: json!({}).into(),
            error: ToolError::failed(message),
        }
    }

    fn answer(text: &str) -> EvidenceKind {
        EvidenceKind::HumanInput {
            question: "proceed?".into(),
            answer: text.into(),
        }
    }

    fn note(text: &str) -> EvidenceKind {
        EvidenceKind::note(NoteSource::Steering, text)
    }

    /// Checks `condition` against a run holding `evidence`, oldest first.
    fn check(condition: &Condition, evidence: &[EvidenceKind], expect: bool) {
        let now = Timestamp::from_unix_millis(0);
        let mut run = Run::new("r".parse().unwrap(), "g", Map::new(), json!({}), now);
        for kind in evidence.iter().cloned() {
            run.add_evidence(kind, now).unwrap();
        }
        let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
        let request = PlanRequest::new(&run, &[], BudgetSnapshot::new(&limits, &usage));
        assert_eq!(
            condition.holds(&request),
            expect,
            "{condition:?} over {evidence:?}"
        );
    }

    #[test]
    fn last_tool_conditions_look_at_the_latest_tool_outcome_only() {
        use Condition::{LastToolFailed, LastToolSucceeded};
        for condition in [LastToolFailed, LastToolSucceeded] {
            check(&condition, &[], false);
            check(&condition, &[note("no tool yet"), answer("yes")], false);
        }
        let failed_then_noted = vec![result(json!(1)), failure("boom"), note("after")];
        check(&LastToolFailed, &failed_then_noted, true);
        check(&LastToolSucceeded, &failed_then_noted, false);
        let recovered = vec![failure("boom"), result(json!(1)), answer("ok")];
        check(&LastToolFailed, &recovered, false);
        check(&LastToolSucceeded, &recovered, true);
    }

    #[test]
    fn evidence_contains_searches_outputs_failures_answers_and_notes() {
        let contains = |text: &str| Condition::EvidenceContains(text.into());
        check(
            &contains("green"),
            &[result(json!({"status": "green"}))],
            true,
        );
        check(&contains("disk full"), &[failure("disk full")], true);
        check(&contains("staging"), &[answer("use staging")], true);
        check(&contains("prefer"), &[note("prefer the cache")], true);
        check(
            &contains("red"),
            &[result(json!({"status": "green"})), note("ok")],
            false,
        );
        let artifact = EvidenceKind::ToolResult {
            tool: ToolName::new("probe").unwrap(),
            input: json!({}).into(),
            output: Payload::Artifact(ArtifactLink {
                id: "ab".repeat(32),
                checksum: format!("sha256:{}", "ab".repeat(32)),
                size: 1,
                content_type: "text/plain".into(),
            }),
            cached: false,
        };
        check(&contains("text/plain"), &[artifact], false);
    }

    #[test]
    fn last_answer_is_compares_the_latest_answer_exactly() {
        let is_yes = Condition::LastAnswerIs("yes".into());
        check(&is_yes, &[], false);
        check(&is_yes, &[answer("no"), answer("yes"), note("later")], true);
        check(&is_yes, &[answer("yes"), answer("no")], false);
        check(&is_yes, &[answer("yes please")], false);
    }

    #[test]
    fn conditions_round_trip_through_json() {
        for (condition, json) in [
            (Condition::LastToolSucceeded, json!("last_tool_succeeded")),
            (Condition::LastToolFailed, json!("last_tool_failed")),
            (
                Condition::EvidenceContains("x".into()),
                json!({"evidence_contains": "x"}),
            ),
            (
                Condition::LastAnswerIs("y".into()),
                json!({"last_answer_is": "y"}),
            ),
        ] {
            assert_eq!(serde_json::to_value(&condition).unwrap(), json);
            assert_eq!(
                serde_json::from_value::<Condition>(json).unwrap(),
                condition
            );
        }
        let err = serde_json::from_value::<Condition>(json!("tool_failed")).unwrap_err();
        assert!(err.to_string().contains("last_tool_failed"), "{err}");
    }
}
