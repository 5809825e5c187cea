//! Run with: cargo run -p rein-examples --example `custom_approver`
//!
//! A custom [`rein::Approver`]: routine calls are granted at once; destructive calls wait for a
//! person on a channel, and are denied when nobody answers before the approver's own deadline.
//! Every request and answer — who decided and why — is in the ledger. The run is configured
//! to hand a denial back to the planner, which then finishes without the destructive call.

#![allow(clippy::print_stdout)]

use std::time::Duration;

use rein::ledger::EntryKind;
use rein::policy::OnViolation;
use rein::prelude::*;
use rein::{ApprovalRequest, ApprovalResponse, ApproverError, Value as Json};
use tokio::sync::{Mutex, mpsc};

/// Grants routine calls; asks a person about destructive ones and denies after `patience`.
#[derive(Debug)]
struct OnCall {
    /// Where answers from the person on call arrive: `true` grants.
    answers: Mutex<mpsc::Receiver<bool>>,
    patience: Duration,
}

impl rein::Approver for OnCall {
    async fn decide(&self, request: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        if !request.reason().to_string().contains("destructive") {
            return Ok(ApprovalResponse::grant(
                request,
                "on-call-bot",
                "routine change",
            ));
        }
        println!(
            "paging on-call: may `{}` run with {}? ({} ms to answer)",
            request.tool(),
            request.input(),
            self.patience.as_millis()
        );
        let mut answers = self.answers.lock().await;
        match tokio::time::timeout(self.patience, answers.recv()).await {
            Ok(Some(true)) => Ok(ApprovalResponse::grant(
                request,
                "on-call",
                "approved by a person",
            )),
            Ok(Some(false)) => Ok(ApprovalResponse::deny(
                request,
                "on-call",
                "refused by a person",
            )),
            Ok(None) | Err(_) => Ok(ApprovalResponse::deny(
                request,
                "on-call-bot",
                format!("nobody answered within {} ms", self.patience.as_millis()),
            )),
        }
    }
}

fn tool(name: &str, annotations: Annotations) -> Result<FnTool, rein::ToolBuildError> {
    let name_owned = name.to_owned();
    FnTool::builder(name)
        .annotations(annotations)
        .handler(move |input: Json| {
            let name = name_owned.clone();
            async move { Ok(json!({"tool": name, "input": input, "ok": true})) }
        })
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Nobody is on call today: the sender stays silent.
    let (_pager, answers) = mpsc::channel(1);
    let approver = OnCall {
        answers: Mutex::new(answers),
        patience: Duration::from_millis(300),
    };

    let act = |tool: &str, input| {
        ScriptStep::expect(State::Act, Decision::call_tool(tool, input, "maintenance"))
    };
    let engine = Engine::builder()
        .tool(tool(
            "rotate_logs",
            Annotations::side_effecting().with_risk(RiskLevel::High),
        )?)
        .tool(tool("drop_table", Annotations::destructive())?)
        .approver(approver)
        // A denial becomes evidence for the planner instead of failing the run.
        .on_violation(OnViolation::HandBack { limit: 1 })
        .planner(ScriptedPlanner::new([
            ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
            ScriptStep::expect(
                State::Explore,
                Decision::transition(State::Decide, "plan maintenance"),
            ),
            ScriptStep::expect(State::Decide, Decision::transition(State::Act, "do it")),
            act("rotate_logs", json!({"keep": 7})),
            act("drop_table", json!({"table": "sessions"})),
            ScriptStep::expect(State::Act, Decision::transition(State::Validate, "check")),
            ScriptStep::expect(
                State::Validate,
                Decision::finish("maintenance done, table kept", json!(null)),
            ),
        ]))
        .build()?;

    let run = engine.run("Nightly maintenance").await?;
    println!(
        "run {} is {}: {}",
        run.id(),
        run.status(),
        run.summary().unwrap_or("-")
    );

    let ledger = engine.ledger(&run.id).await?;
    for entry in ledger.entries() {
        match entry.event() {
            EntryKind::ApprovalRequested { tool, reason, .. } => {
                println!("  asked    {tool}: {reason}");
            }
            EntryKind::ApprovalGranted {
                tool,
                approver,
                reason,
                ..
            } => {
                println!("  granted  {tool} by {approver}: {reason}");
            }
            EntryKind::ApprovalDenied {
                tool,
                approver,
                reason,
                ..
            } => {
                println!("  denied   {tool} by {approver}: {reason}");
            }
            EntryKind::ToolResult { tool, .. } => println!("  ran      {tool}"),
            _ => {}
        }
    }
    ledger.verify()?;
    println!("ledger verified ({} entries)", ledger.len());
    Ok(())
}
