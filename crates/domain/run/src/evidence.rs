//! `Evidence`: what a run has learnt, in order — tool results, human input, system notes.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ChildOutcome, RunId, Spend, ToolError, ToolName};

/// One piece of evidence, tagged with the step that produced it.
///
/// ```
/// use rein_run::{Evidence, EvidenceKind, NoteSource};
/// let e = Evidence::new(3, EvidenceKind::note(NoteSource::Steering, "prefer the staging cluster"));
/// assert_eq!(e.step, 3);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// How many decisions the run had taken when this was gathered ([`Run::steps`] at that
    /// moment): the result of decision 0 carries step 1; a steering note read before the
    /// first decision carries step 0.
    ///
    /// [`Run::steps`]: crate::Run::steps
    pub step: u32,
    /// What it is.
    pub kind: EvidenceKind,
}

impl Evidence {
    /// Evidence gathered when the run had taken `step` decisions.
    #[must_use]
    pub const fn new(step: u32, kind: EvidenceKind) -> Self {
        Self { step, kind }
    }
}

/// The kinds of evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum EvidenceKind {
    /// A tool returned.
    ToolResult {
        /// The tool.
        tool: ToolName,
        /// The input it was called with (shared with the decision that proposed the call).
        input: Arc<Value>,
        /// What it returned, inline or as an artifact reference.
        output: Payload,
        /// Whether the output came from the cache instead of a call.
        #[serde(default)]
        cached: bool,
    },
    /// A tool failed (and the run went on: e.g. the failure was handed back to the planner).
    ToolFailure {
        /// The tool.
        tool: ToolName,
        /// The input it was called with (shared with the decision that proposed the call).
        input: Arc<Value>,
        /// Why it failed.
        error: ToolError,
    },
    /// A human answered the run's question.
    HumanInput {
        /// The question asked.
        question: String,
        /// The answer given.
        answer: String,
    },
    /// A note from outside the planner: steering, a rejected decision, the engine.
    SystemNote {
        /// Who wrote it.
        source: NoteSource,
        /// The note.
        note: String,
    },
    /// A child run this run delegated to ended: how, and what it spent.
    Child {
        /// The child's run id.
        child: RunId,
        /// How it ended (summary and result, or failure).
        outcome: ChildOutcome,
        /// What it spent, by budget (charged to this run).
        spent: Spend,
    },
}

impl EvidenceKind {
    /// A system note from `source`.
    #[must_use]
    pub fn note(source: NoteSource, note: impl Into<String>) -> Self {
        Self::SystemNote {
            source,
            note: note.into(),
        }
    }
}

/// Who wrote a system note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteSource {
    /// A person steering the run through its handle. Steering is advice to the planner; it
    /// never grants an approval or widens a policy.
    Steering,
    /// The engine rejected the planner's last decision and handed the reason back.
    Violation,
    /// The engine itself (resumed after a restart, interrupted, …).
    Engine,
}

/// A tool output: inline JSON, or a reference to an artifact holding it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum Payload {
    /// The output itself.
    Inline(Value),
    /// The output was larger than the engine's inline limit and lives in the artifact store.
    Artifact(ArtifactLink),
}

/// A reference to an artifact as the artifact store printed it. The engine parses it back
/// into the artifact domain's types (which verify it) before reading the artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactLink {
    /// The artifact's id (its content's SHA-256, hex).
    pub id: String,
    /// The content's checksum (`sha256:<hex>`).
    pub checksum: String,
    /// The content's size in bytes.
    pub size: u64,
    /// The content's media type.
    pub content_type: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_round_trips() {
        let tool = ToolName::new("t").unwrap();
        for kind in [
            EvidenceKind::ToolResult {
                tool: tool.clone(),
                input: json!({}).into(),
                output: Payload::Inline(json!({"x": 1})),
                cached: false,
            },
            EvidenceKind::ToolResult {
                tool: tool.clone(),
                input: json!({}).into(),
                output: Payload::Artifact(ArtifactLink {
                    id: "ab".repeat(32),
                    checksum: format!("sha256:{}", "ab".repeat(32)),
                    size: 10,
                    content_type: "application/json".into(),
                }),
                cached: true,
            },
            EvidenceKind::ToolFailure {
                tool,
                input: json!(1).into(),
                error: ToolError::Cancelled,
            },
            EvidenceKind::HumanInput {
                question: "q".into(),
                answer: "a".into(),
            },
            EvidenceKind::note(NoteSource::Violation, "unknown tool"),
        ] {
            let e = Evidence::new(1, kind);
            let v = serde_json::to_value(&e).unwrap();
            assert_eq!(serde_json::from_value::<Evidence>(v).unwrap(), e);
        }
    }
}
