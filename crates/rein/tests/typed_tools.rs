//! Typed tools through an engine: a good input reaches the function as its type, an input the
//! derived schema refuses is handed back as a rejection, and an input that passes the schema
//! but not deserialization is a typed `invalid_input` tool error, handed back — never a panic.

use rein::ledger::{EntryKind, Violation};
use rein::policy::{OnToolError, OnViolation};
use rein::prelude::*;
use rein::run::{EvidenceKind, NoteSource};
use rein::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};

/// A support ticket to score.
#[derive(Debug, Deserialize, JsonSchema)]
struct Ticket {
    /// What the customer wrote.
    title: String,
    /// How bad it is, 1 to 5.
    severity: u8,
    /// Who reported it.
    reporter: Email,
}

/// An email address: a string to the schema, checked when it is deserialized.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(try_from = "String")]
struct Email(String);

impl TryFrom<String> for Email {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        if text.contains('@') {
            Ok(Self(text))
        } else {
            Err(format!("{text:?} is not an email address"))
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
struct Score {
    priority: u8,
    notify: String,
}

fn score_tool() -> FnTool {
    FnTool::builder("triage.score")
        .description("Scores a support ticket")
        .annotations(Annotations::read_only())
        .typed_handler(|ticket: Ticket| async move {
            let outage = ticket.title.contains("outage");
            Ok(Score {
                priority: if outage {
                    1
                } else {
                    6 - ticket.severity.clamp(1, 5)
                },
                notify: ticket.reporter.0,
            })
        })
        .build()
        .expect("a valid tool")
}

fn call(input: Value) -> ScriptStep {
    ScriptStep::expect(
        State::Explore,
        Decision::call_tool("triage.score", input, "score it"),
    )
}

#[tokio::test]
async fn a_typed_tool_runs_refuses_bad_input_and_hands_it_back() {
    let engine = Engine::builder()
        .tool(score_tool())
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
            // Good input: the function gets a `Ticket`, its `Score` comes back as JSON.
            call(json!({"title": "login slow", "severity": 2, "reporter": "ana@example.com"})),
            // The derived schema refuses it: a rejection, handed back.
            call(json!({"title": "login slow", "severity": "high", "reporter": "ana@example.com"})),
            // The schema lets it through (a string), deserialization does not: a tool error.
            call(json!({"title": "login slow", "severity": 2, "reporter": "ana"})),
            ScriptStep::expect(
                State::Explore,
                Decision::transition(State::Decide, "scored"),
            ),
            ScriptStep::expect(State::Decide, Decision::finish("scored", json!(null))),
        ]))
        .on_violation(OnViolation::HandBack { limit: 2 })
        .on_tool_error(OnToolError::HandBack)
        .build()
        .expect("engine builds");

    let schema = engine.tools()[0].input_schema().clone();
    assert_eq!(schema["required"], json!(["title", "severity", "reporter"]));
    assert_eq!(
        schema["properties"]["severity"]["description"],
        "How bad it is, 1 to 5."
    );

    let run = engine.run("score the ticket").await.expect("the run ends");
    assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());

    let kinds: Vec<&EvidenceKind> = run.evidence().iter().map(|e| &e.kind).collect();
    let [
        EvidenceKind::ToolResult { output, .. },
        EvidenceKind::SystemNote {
            source: NoteSource::Violation,
            note,
        },
        EvidenceKind::ToolFailure { error, .. },
    ] = kinds.as_slice()
    else {
        panic!("expected a result, a handed-back rejection and a tool failure: {kinds:#?}");
    };
    assert_eq!(
        output,
        &rein::run::Payload::Inline(json!({"priority": 4, "notify": "ana@example.com"}))
    );
    assert!(
        note.contains("severity"),
        "the rejection names the field: {note}"
    );
    let ToolError::InvalidInput { message } = error else {
        panic!("deserialization failure must be invalid_input, not {error:?}");
    };
    assert!(
        message.contains("\"ana\" is not an email address"),
        "{message}"
    );

    let ledger = engine.ledger(run.id()).await.expect("ledger");
    ledger.verify().expect("the ledger verifies");
    let events: Vec<&EntryKind> = ledger
        .entries()
        .iter()
        .map(rein::ledger::Entry::event)
        .collect();
    assert!(events.iter().any(|e| matches!(
        e,
        EntryKind::PolicyViolation {
            violation: Violation::InvalidInput,
            ..
        }
    )));
    assert!(events.iter().any(|e| matches!(
        e,
        EntryKind::ToolError {
            error: ToolError::InvalidInput { .. },
            ..
        }
    )));
}

#[tokio::test]
async fn raw_json_tools_and_explicit_schemas_keep_working() {
    // A schema given explicitly wins over the derived one.
    let explicit = FnTool::builder("triage.score")
        .input_schema(json!({"type": "object"}))
        .typed_handler(|ticket: Ticket| async move { Ok(ticket.severity) })
        .build()
        .expect("a valid tool");
    assert_eq!(explicit.spec().input_schema(), &json!({"type": "object"}));
    assert_eq!(
        explicit.spec().output_schema().map(|s| s["type"].clone()),
        Some(json!("integer"))
    );

    // A tool returning raw JSON says nothing about its output.
    let raw = FnTool::typed("echo", |input: Value| async move { Ok(input) }).expect("valid");
    assert_eq!(raw.spec().output_schema(), None);

    // An invalid name is the builder's typed error, as for raw tools.
    let bad = FnTool::typed("no spaces", |input: Value| async move { Ok(input) });
    assert!(
        matches!(bad, Err(rein::ToolBuildError::InvalidName(_))),
        "{bad:?}"
    );
}
