//! Shared test helpers: proptest strategies for entries and ledgers, and serde-level
//! tampering (the way a stored ledger is really changed: by editing its JSON).

#![allow(dead_code, unreachable_pub)]

use proptest::prelude::*;
use rein_ledger::{Entry, EntryKind, InterruptKind, Ledger, Violation};
use rein_run::{
    ArtifactLink, BudgetName, Decision, Digest, Failure, FailureKind, Payload, RunId, State,
    Timestamp, ToolError, ToolName,
};
use serde_json::{Value, json};

/// The run every generated ledger belongs to.
pub fn run_id() -> RunId {
    "run-under-test".parse().unwrap()
}

/// One example of every entry kind, in the order of `EntryKind`'s declaration.
pub fn every_kind() -> Vec<EntryKind> {
    let tool: ToolName = "fs.write".parse().unwrap();
    let input = json!({"path": "notes.txt", "text": "hi"});
    let input_hash = Digest::of_json(&input);
    vec![
        EntryKind::RunStarted {
            goal: "Say hello".into(),
            vars: serde_json::Map::new(),
            policy: json!({"budgets": {"tool_calls": 10}}).into(),
        },
        EntryKind::RunPaused {
            question: "Deploy?".into(),
        },
        EntryKind::RunResumed {
            note: "answered".into(),
        },
        EntryKind::RunCompleted {
            summary: "greeted".into(),
            result: json!({"status": "done"}),
        },
        EntryKind::RunFailed {
            failure: Failure::new(FailureKind::MaxSteps, "ran 20 steps"),
        },
        EntryKind::Decision {
            step: 2,
            decision: Decision::call_tool("fs.write", input.clone(), "save"),
        },
        EntryKind::Transition {
            from: State::Decide,
            to: State::Act,
            reason: "ready".into(),
        },
        EntryKind::ToolCall {
            tool: tool.clone(),
            input: input.into(),
            input_hash,
            attempt: 1,
            idempotent: false,
        },
        EntryKind::ToolResult {
            tool: tool.clone(),
            attempt: 1,
            duration_ms: 12,
            cached: false,
            output: Payload::Inline(json!({"written": 2})),
        },
        EntryKind::ToolError {
            tool: tool.clone(),
            attempt: 2,
            duration_ms: 30_000,
            error: ToolError::TimedOut {
                after: std::time::Duration::from_secs(30),
            },
            will_retry: false,
        },
        EntryKind::ApprovalRequested {
            tool: tool.clone(),
            input_hash,
            reason: "destructive".into(),
        },
        EntryKind::ApprovalGranted {
            tool: tool.clone(),
            input_hash,
            approver: "alice".into(),
            reason: "looks fine".into(),
        },
        EntryKind::ApprovalDenied {
            tool,
            input_hash,
            approver: "engine".into(),
            reason: "no approver".into(),
        },
        EntryKind::BudgetConsumed {
            name: BudgetName::TOOL_CALLS,
            amount: 1,
            used: 3,
            limit: Some(10),
        },
        EntryKind::BudgetExhausted {
            name: BudgetName::TOOL_CALLS,
            limit: 10,
            used: 10,
            requested: 1,
        },
        EntryKind::HumanInputRequested {
            question: "Deploy?".into(),
            options: vec!["yes".into(), "no".into()],
        },
        EntryKind::HumanInputReceived {
            answer: "yes".into(),
            by: None,
        },
        EntryKind::PolicyViolation {
            violation: Violation::IneligibleTool,
            message: "not in explore".into(),
            handed_back: true,
        },
        EntryKind::RunInterrupted {
            reason: "interrupted through the run handle".into(),
        },
        EntryKind::Steering {
            note: "prefer staging".into(),
        },
        EntryKind::Interrupt {
            kind: InterruptKind::Graceful,
        },
    ]
}

/// Arbitrary JSON, floats and unicode included.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\"\\\\é]{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,16}"
}

fn tool_name() -> impl Strategy<Value = ToolName> {
    "[a-z][a-z0-9_.-]{0,10}".prop_map(|s| s.parse().unwrap())
}

fn state() -> impl Strategy<Value = State> {
    prop::sample::select(State::ALL.to_vec())
}

fn digest() -> impl Strategy<Value = Digest> {
    any::<[u8; 32]>().prop_map(Digest::from_bytes)
}

fn payload() -> impl Strategy<Value = Payload> {
    prop_oneof![
        json_value().prop_map(Payload::Inline),
        (any::<[u8; 32]>(), any::<u64>()).prop_map(|(id, size)| {
            let hex = Digest::from_bytes(id).to_string();
            Payload::Artifact(ArtifactLink {
                checksum: format!("sha256:{hex}"),
                id: hex,
                size,
                content_type: "application/json".into(),
            })
        }),
    ]
}

/// Any entry kind with arbitrary details.
pub fn entry_kind() -> impl Strategy<Value = EntryKind> {
    let budget = prop::sample::select(vec![
        BudgetName::TOOL_CALLS,
        BudgetName::STEPS,
        BudgetName::TOKENS,
    ]);
    prop_oneof![
        (text(), json_value()).prop_map(|(goal, policy)| EntryKind::RunStarted {
            goal,
            vars: serde_json::Map::new(),
            policy: policy.into(),
        }),
        text().prop_map(|question| EntryKind::RunPaused { question }),
        text().prop_map(|note| EntryKind::RunResumed { note }),
        (text(), json_value())
            .prop_map(|(summary, result)| EntryKind::RunCompleted { summary, result }),
        text().prop_map(|m| EntryKind::RunFailed {
            failure: Failure::new(FailureKind::ToolFailed, m)
        }),
        (any::<u32>(), text(), json_value()).prop_map(|(step, tool, input)| EntryKind::Decision {
            step,
            decision: Decision::call_tool(tool, input, "why"),
        }),
        (state(), state(), text()).prop_map(|(from, to, reason)| EntryKind::Transition {
            from,
            to,
            reason: reason.into()
        }),
        (tool_name(), json_value(), any::<u32>(), any::<bool>()).prop_map(
            |(tool, input, attempt, idempotent)| {
                EntryKind::ToolCall {
                    tool,
                    input_hash: Digest::of_json(&input),
                    input: input.into(),
                    attempt,
                    idempotent,
                }
            }
        ),
        (
            tool_name(),
            any::<u32>(),
            any::<u64>(),
            any::<bool>(),
            payload()
        )
            .prop_map(|(tool, attempt, duration_ms, cached, output)| {
                EntryKind::ToolResult {
                    tool,
                    attempt,
                    duration_ms,
                    cached,
                    output,
                }
            }),
        (
            tool_name(),
            any::<u32>(),
            any::<u64>(),
            text(),
            any::<bool>()
        )
            .prop_map(|(tool, attempt, duration_ms, m, will_retry)| {
                EntryKind::ToolError {
                    tool,
                    attempt,
                    duration_ms,
                    error: ToolError::transient(m),
                    will_retry,
                }
            }),
        (tool_name(), digest(), text()).prop_map(|(tool, input_hash, reason)| {
            EntryKind::ApprovalRequested {
                tool,
                input_hash,
                reason,
            }
        }),
        (tool_name(), digest(), text(), text()).prop_map(|(tool, input_hash, approver, reason)| {
            EntryKind::ApprovalGranted {
                tool,
                input_hash,
                approver,
                reason,
            }
        }),
        (tool_name(), digest(), text(), text()).prop_map(|(tool, input_hash, approver, reason)| {
            EntryKind::ApprovalDenied {
                tool,
                input_hash,
                approver,
                reason,
            }
        }),
        (
            budget.clone(),
            any::<u64>(),
            any::<u64>(),
            any::<Option<u64>>()
        )
            .prop_map(|(name, amount, used, limit)| EntryKind::BudgetConsumed {
                name,
                amount,
                used,
                limit
            }),
        (budget, any::<u64>(), any::<u64>(), any::<u64>()).prop_map(
            |(name, limit, used, requested)| EntryKind::BudgetExhausted {
                name,
                limit,
                used,
                requested
            }
        ),
        (text(), prop::collection::vec(text(), 0..3))
            .prop_map(|(question, options)| EntryKind::HumanInputRequested { question, options }),
        (text(), prop::option::of(text()))
            .prop_map(|(answer, by)| EntryKind::HumanInputReceived { answer, by }),
        (
            prop::sample::select(vec![
                Violation::UnknownTool,
                Violation::MaxSteps,
                Violation::ApprovalDenied
            ]),
            text()
        )
            .prop_map(|(violation, message)| EntryKind::PolicyViolation {
                violation,
                message,
                handed_back: false
            }),
        text().prop_map(|reason| EntryKind::RunInterrupted { reason }),
        text().prop_map(|note| EntryKind::Steering { note }),
        prop_oneof![Just(InterruptKind::Graceful), Just(InterruptKind::Abort)]
            .prop_map(|kind| EntryKind::Interrupt { kind }),
    ]
}

/// A ledger of `len` random entries (timestamps non-decreasing, states arbitrary).
pub fn ledger(len: std::ops::Range<usize>) -> impl Strategy<Value = Ledger> {
    prop::collection::vec((0u64..5_000, state(), entry_kind()), len).prop_map(|events| {
        let mut ledger = Ledger::new(run_id());
        let mut at = 1_700_000_000_000;
        for (step, state, event) in events {
            at += step;
            ledger.append(Timestamp::from_unix_millis(at), state, event);
        }
        ledger
    })
}

/// `entry` with its JSON changed by `change`, keeping the stored hash (the edit of a
/// careless tamperer, or bit rot).
pub fn edit(entry: &Entry, change: impl FnOnce(&mut Value)) -> Entry {
    let mut json = serde_json::to_value(entry).unwrap();
    change(&mut json);
    serde_json::from_value(json).unwrap()
}

/// `entry` with its stored hash replaced by the hash its content calls for (the edit of a
/// tamperer who knows the encoding).
pub fn reseal(entry: &Entry) -> Entry {
    let hash = entry.computed_hash();
    edit(entry, |json| json["hash"] = json!(hash))
}

/// Reads entries back from JSON lines, as a store does.
pub fn from_lines(lines: &str) -> Vec<Entry> {
    lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
