//! The summary printed at the end of `rein run` and `rein resume`: where the run ended and
//! why, its result, what it spent, its children, and what to do next.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rein::ledger::EntryKind;
use rein::policy::PolicySnapshot;
use rein::run::{BudgetName, Cost};
use rein::{Run, RunStatus};

use super::{limit, serde_name, shell_word, short_json};
use crate::ledger_file::LedgerFile;
use crate::tree::Waiting;

/// The summary printed after `rein run` / `rein resume`; `below` are the runs below this
/// one that wait for an approval (the verdict they need comes before anything else).
///
/// `ledger_at` says where the ledger is (its file, or the store); `flag` where the run is
/// kept, for the hints (`--data-dir DIR`).
pub(crate) fn summary(
    run: &Run,
    ledger: &LedgerFile,
    below: &[Waiting],
    ledger_at: &str,
    flag: &str,
) -> String {
    let mut out = String::new();
    let mark = match run.status() {
        RunStatus::Completed => "✓",
        RunStatus::Failed => "✗",
        _ => "‖",
    };
    let _ = writeln!(out, "run {}  {} {mark}", run.id(), run.status());
    let _ = writeln!(out, "  goal       {}", run.goal());
    match run.status() {
        RunStatus::Completed => {
            let _ = writeln!(out, "  summary    {}", run.summary().unwrap_or_default());
            if let Some(result) = run.result().filter(|r| !r.is_null()) {
                let _ = writeln!(out, "  result     {}", short_json(result, 200));
            }
        }
        RunStatus::Failed => {
            if let Some(failure) = run.failure() {
                let _ = writeln!(
                    out,
                    "  error      {} ({})",
                    failure.message,
                    serde_name(&failure.kind)
                );
            }
        }
        _ => {}
    }

    let (mut calls, mut errors, mut retries, mut cached) = (0, 0, 0, 0);
    let (mut requested, mut granted, mut denied, mut violations) = (0, 0, 0, 0);
    let mut per_tool: BTreeMap<String, u32> = BTreeMap::new();
    let (mut model_calls, mut tokens_in, mut tokens_out) = (0u64, 0u64, 0u64);
    // Summed exactly; unknown once any call's is (a model without a price).
    let mut cost: Option<Cost> = None;
    let mut attachments = Vec::new();
    let mut path = vec!["intake".to_owned()];
    for entry in &ledger.entries {
        match entry.event() {
            EntryKind::ToolCall { tool, attempt, .. } => {
                if *attempt == 1 {
                    calls += 1;
                    *per_tool.entry(tool.to_string()).or_default() += 1;
                } else {
                    retries += 1;
                }
            }
            EntryKind::ToolResult { cached: true, .. } => cached += 1,
            // Attempt 0: refused before any attempt (an open circuit): a call that failed.
            EntryKind::ToolError {
                tool, attempt: 0, ..
            } => {
                calls += 1;
                errors += 1;
                *per_tool.entry(tool.to_string()).or_default() += 1;
            }
            EntryKind::ToolError {
                will_retry: false, ..
            } => errors += 1,
            EntryKind::ApprovalRequested { .. } => requested += 1,
            EntryKind::ApprovalGranted { .. } => granted += 1,
            EntryKind::ApprovalDenied { .. } => denied += 1,
            EntryKind::PolicyViolation { .. } => violations += 1,
            EntryKind::PlannerCall { call, .. } => {
                model_calls += 1;
                tokens_in += call.input_tokens;
                tokens_out += call.output_tokens;
                cost = Some(cost.map_or(call.cost, |sum| sum.plus(call.cost)));
            }
            EntryKind::ToolAttachment { name, link, .. } => {
                attachments.push(format!("{name} → {}", link.id));
            }
            EntryKind::Transition { to, .. } => path.push(to.to_string()),
            EntryKind::RunFailed { .. } if path.last().map(String::as_str) != Some("failed") => {
                path.push("failed".to_owned());
            }
            _ => {}
        }
    }
    let _ = writeln!(out, "  path       {}", path.join(" → "));
    let _ = writeln!(out, "  steps      {}", run.steps());
    let tools: Vec<String> = per_tool.iter().map(|(t, n)| format!("{t} ×{n}")).collect();
    let _ = writeln!(
        out,
        "  tool calls {calls}{}, {errors} failed, {retries} retries{}",
        if tools.is_empty() {
            String::new()
        } else {
            format!(" ({})", tools.join(", "))
        },
        if cached > 0 {
            format!(", {cached} cached")
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        out,
        "  approvals  {requested} requested, {granted} granted, {denied} denied"
    );
    if violations > 0 {
        let _ = writeln!(out, "  violations {violations}");
    }
    if model_calls > 0 {
        let _ = writeln!(
            out,
            "  model      {model_calls} calls, {tokens_in} tokens in, {tokens_out} out, cost {}",
            cost.unwrap_or_default()
        );
    }
    if !attachments.is_empty() {
        let _ = writeln!(out, "  artifacts  {}", attachments.join(", "));
    }
    for line in crate::tree::child_lines(&ledger.entries) {
        let _ = writeln!(out, "  child      {line}");
    }
    let policy = PolicySnapshot::from_value(run.policy()).ok();
    let mut limits = policy
        .as_ref()
        .map(|p| p.budget.limits().clone())
        .unwrap_or_default();
    // Steps are bounded by max_steps too, whether or not a `steps` budget is set.
    if let Some(policy) = &policy {
        let steps = limits
            .entry(BudgetName::STEPS)
            .or_insert_with(|| u64::from(policy.max_steps));
        *steps = (*steps).min(u64::from(policy.max_steps));
    }
    let mut budgets: BTreeMap<String, String> = BTreeMap::new();
    for (name, counter) in run.usage().iter() {
        let l = limits.get(name).copied();
        budgets.insert(name.to_string(), format!("{}/{}", counter.used, limit(l)));
    }
    for (name, l) in &limits {
        budgets
            .entry(name.to_string())
            .or_insert_with(|| format!("0/{l}"));
    }
    let budgets: Vec<String> = budgets.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(
        out,
        "  budgets    {}",
        if budgets.is_empty() {
            "none used".to_owned()
        } else {
            budgets.join(", ")
        }
    );
    let verified = match &ledger.verdict {
        Ok(()) => "verified ✓".to_owned(),
        Err(broken) => format!("VERIFICATION FAILED ✗: {broken}"),
    };
    let _ = writeln!(
        out,
        "  ledger     {} ({} entries, {verified})",
        ledger_at,
        ledger.entries.len()
    );
    for waiting in below {
        let pending = &waiting.pending;
        let _ = writeln!(
            out,
            "  approval   child run {} waits for {} (risk {}, step {}, input {}): {}",
            waiting.run,
            pending.tool,
            pending.risk,
            pending.step,
            pending.input_hash,
            pending.reason
        );
        let _ = writeln!(
            out,
            "  approve    rein approve {} --reason TEXT --by NAME {flag}  (add --deny to deny)",
            waiting.run,
        );
    }
    if let Some(pending) = run.pending_question() {
        let _ = writeln!(out, "  question   {:?}", pending.question);
        if !pending.options.is_empty() {
            let _ = writeln!(out, "  options    {}", pending.options.join(", "));
        }
        let answer = pending.options.first().map_or("ANSWER", String::as_str);
        let _ = writeln!(
            out,
            "  {}rein resume {} --input {} {flag}",
            if below.is_empty() {
                "resume     "
            } else {
                "then       "
            },
            run.id(),
            shell_word(answer),
        );
    } else if let Some(pending) = run.pending_approval() {
        let _ = writeln!(
            out,
            "  approval   {} (risk {}, step {}, input {}): {}",
            pending.tool, pending.risk, pending.step, pending.input_hash, pending.reason
        );
        let _ = writeln!(
            out,
            "  approve    rein approve {} --reason TEXT --by NAME {flag}  (add --deny to deny)",
            run.id(),
        );
    } else if run.status() == RunStatus::Interrupted || run.status() == RunStatus::Running {
        let _ = writeln!(out, "  resume     rein resume {} {flag}", run.id(),);
    }
    out
}
