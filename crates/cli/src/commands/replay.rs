//! `rein replay`: a stored run, and the child runs it delegated to, fed back through an
//! engine rebuilt from its scenario, decisions and tool outputs from the ledgers; says run
//! by run whether the replay goes where the record went.

use std::fmt::Write as _;

use rein::ledger::{ReplayReport, RunOutline};

use super::run::{Reopened, reopen};
use super::{engine_error, run_id};
use crate::cli::ReplayArgs;
use crate::exit::{CliResult, Exit};
use crate::home::Home;
use crate::scenario;

/// `rein replay`.
pub(crate) async fn replay(args: ReplayArgs) -> CliResult {
    let home = Home::open(&args.data, &args.store).await?;
    home.require()?;
    let id = run_id(&args.run_id)?;
    let Reopened {
        engine,
        servers,
        _lock,
    } = reopen(&home, &id, "replayed").await?;
    let replayed = match engine.ledger(&id).await {
        Ok(ledger) => engine.replay(&ledger).await,
        Err(e) => Err(e),
    };
    _lock.release().await;
    scenario::mcp::shutdown(&servers).await;
    let report = replayed.map_err(|e| engine_error(e, &home))?;
    out!("{}", render(&report));
    Ok(if report.matches() {
        Exit::Ok
    } else {
        Exit::Failed
    })
}

/// The report in words: the verdict on the whole tree, then one line per run, indented
/// under its parent.
fn render(report: &ReplayReport) -> String {
    let runs = report.reports().count();
    let tree = if runs > 1 {
        format!(" (a tree of {runs} runs)")
    } else {
        String::new()
    };
    let mut out = match report.divergence() {
        None => format!("replay of run {}{tree}: matches ✓\n", report.run),
        Some(at) => format!("replay of run {}{tree}: diverges ✗ — {at}\n", report.run),
    };
    lines(report, 1, &mut out);
    out
}

fn lines(report: &ReplayReport, depth: usize, out: &mut String) {
    let (recorded, replayed) = (outline(&report.recorded), outline(&report.replayed));
    let line = if report.recorded == report.replayed {
        format!("{recorded} ✓")
    } else {
        format!("recorded {recorded}, replayed {replayed} ✗")
    };
    let _ = writeln!(out, "{}{}  {line}", "  ".repeat(depth), report.run);
    for child in &report.children {
        lines(child, depth + 1, out);
    }
}

/// An outline in a few words: status, decisions, states.
fn outline(outline: &RunOutline) -> String {
    if outline.goal.is_empty() && outline.decisions == 0 {
        return "never started".to_owned();
    }
    format!(
        "{}, {} decisions, {} states",
        outline.status,
        outline.decisions,
        outline.states.len()
    )
}
