//! The gate's rules, one test or more per rule, without a runtime.

use std::sync::Arc;
use std::time::Duration;

use rein_ledger::EntryKind;
use rein_planner::ScriptedPlanner;
use rein_policy::{ApprovalReason, BudgetExhausted, OnToolError, OnViolation};
use rein_resilience::CircuitState;
use rein_run::{
    BudgetName, Decision, Digest, FailureKind, Payload, ProposedCall, RunId, Spend, State,
    Timestamp, ToolName,
};
use rein_tool::{Annotations, Tool, ToolError, ToolOutput, ToolSpec};
use serde_json::{Map, Value, json};

use super::{BeforeRun, Cache, Gate, INTERRUPTED, NextMember};
use crate::builder::EngineBuilder;
use crate::deadline::Due;
use crate::overrun::reported_charge;
use crate::progress::OpenAttempt;
use crate::project::Projection;
use crate::rejection::Rejection;
use crate::shared::Shared;

struct Echo(ToolSpec);

impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new(input))
    }
}

fn tool(name: &str, annotations: Annotations) -> Echo {
    Echo(
        ToolSpec::new(name.parse().expect("a name"), "a test tool")
            .with_input_schema(json!({"type": "object", "required": ["q"]}))
            .with_annotations(annotations),
    )
}

/// An engine with `look` (read-only, cacheable), `write` (side-effecting, idempotent) and
/// `wipe` (destructive: approval), and a fresh run of it in `intake`.
struct Fixture {
    shared: Shared,
    proj: Projection,
    interrupting: bool,
    due: Option<Due>,
    now: Timestamp,
}

fn fixture(configure: impl FnOnce(EngineBuilder) -> EngineBuilder) -> Fixture {
    let builder = EngineBuilder::default()
        .planner(ScriptedPlanner::new([]))
        .tool(tool("look", Annotations::read_only().with_cacheable(true)))
        .tool(tool(
            "write",
            Annotations::side_effecting().with_idempotent(true),
        ))
        .tool(tool("wipe", Annotations::destructive()));
    let shared = configure(builder).into_shared().expect("builds");
    let id: RunId = "r1".parse().expect("an id");
    let started = EntryKind::RunStarted {
        goal: "g".into(),
        vars: Map::new(),
        policy: Arc::clone(&shared.policy.value),
    };
    let proj = Projection::start(
        id,
        &started,
        Timestamp::from_unix_millis(1),
        shared.policy.snapshot.budget.clone(),
    )
    .expect("starts");
    Fixture {
        shared,
        proj,
        interrupting: false,
        due: None,
        now: Timestamp::from_unix_millis(1),
    }
}

impl Fixture {
    fn gate(&self) -> Gate<'_> {
        Gate::new(
            &self.shared.policy,
            &self.shared.tools,
            &self.proj,
            self.interrupting,
            self.due.map(|due| (due, self.now)),
        )
    }

    fn apply(&mut self, kind: &EntryKind) {
        self.proj
            .apply(kind, Timestamp::from_unix_millis(2))
            .expect("applies");
    }

    fn spend(&mut self, name: BudgetName, amount: u64) {
        let used = self.proj.run.usage().used(&name) + amount;
        let limit = self.proj.budget().limit(&name);
        self.apply(&EntryKind::BudgetConsumed {
            name,
            amount,
            used,
            limit,
        });
    }

    fn move_to_explore(&mut self) {
        self.apply(&EntryKind::Transition {
            from: State::Intake,
            to: State::Explore,
            reason: "test".into(),
        });
    }

    fn move_to_act(&mut self) {
        for (from, to) in [
            (State::Intake, State::Explore),
            (State::Explore, State::Decide),
            (State::Decide, State::Act),
        ] {
            self.apply(&EntryKind::Transition {
                from,
                to,
                reason: "test".into(),
            });
        }
    }
}

fn name(tool: &str) -> ToolName {
    tool.parse().expect("a name")
}

mod budgets;
mod calls;
mod decisions;
mod hooks;
