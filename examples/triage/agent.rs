//! The triage agent: it lists and reads a folder of bug reports, scores each with a typed
//! tool, and writes `triage.md` into the folder once a person approves the write.

use rein::policy::Deadline;
use rein::prelude::*;
use rein::schemars::{self, JsonSchema};
use rein::tools::{FsOp, FsTool, Workspace};
use serde::{Deserialize, Serialize};

/// A bug report, as the model read it.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Report {
    /// How bad the reporter says it is, 1 (cosmetic) to 5 (outage).
    severity: u8,
    /// Whether the report says customers cannot work.
    blocking: bool,
}

/// Where a report goes: its priority (1 is the most urgent) and queue.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Score {
    priority: u8,
    queue: &'static str,
}

/// The agent: the file tools confined to `reports` (reads in explore, the write in act after
/// approval), the scoring tool, budgets and a deadline, its runs and ledgers under `data`.
pub(crate) fn engine(
    reports: &std::path::Path,
    data: &std::path::Path,
    planner: impl Planner,
    approver: impl rein::Approver,
) -> Result<Engine, Box<dyn std::error::Error>> {
    let score = FnTool::builder("triage.score")
        .description("Scores one bug report: its priority and the queue that takes it")
        .annotations(Annotations::read_only())
        .typed_handler(|r: Report| async move {
            let outage = r.blocking || r.severity >= 5;
            let queue = if outage { "oncall" } else { "backlog" };
            let priority = if outage { 1 } else { 6 - r.severity.min(5) };
            Ok(Score { priority, queue })
        })
        .build()?;
    let folder = Workspace::open(reports)?;
    let mut builder = Engine::builder().tool(score);
    for op in [FsOp::List, FsOp::Read, FsOp::Write] {
        builder = builder.tool(FsTool::new(op, folder.clone()));
    }
    Ok(builder
        .planner(planner)
        .approver(approver)
        .approvals(ApprovalPolicy::default().require("fs.write".parse()?))
        .filesystem(data)
        .budget("tool_calls", 20)
        .budget("tokens", 100_000)
        .deadline(Deadline::new(std::time::Duration::from_secs(600)))
        .max_steps(30)
        .build()?)
}
