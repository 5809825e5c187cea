//! `rein runs list`: the runs in a data directory, from their ledgers.

use std::time::{SystemTime, UNIX_EPOCH};

use rein::EntryKind;

use crate::cli::DataDirArg;
use crate::datadir::DataDir;
use crate::exit::{CliResult, Exit};
use crate::ledger_file::{Broken, LedgerFile};
use crate::render::{age, truncate};

/// `rein runs list`.
pub(crate) fn list(arg: &DataDirArg) -> CliResult {
    let data = DataDir::new(&arg.data_dir)?;
    data.require()?;
    let ids = data.run_ids()?;
    if ids.is_empty() {
        println!("no runs in {}", data.shown());
        return Ok(Exit::Ok);
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    println!(
        "{:<36}  {:<11}  {:<8}  {:>5}  {:>5}  GOAL",
        "RUN ID", "STATUS", "STATE", "STEPS", "AGE"
    );
    for id in ids {
        let row = match LedgerFile::read(&data.ledger(&id), Some(&id), &data) {
            Err(e) => format!("{:<36}  {:<11}  {e}", id.as_str(), "unreadable"),
            Ok(file) => {
                let info = file.outline();
                let waiting = waiting_for_approval(&file.entries);
                let status = if file.verdict.is_err() {
                    "BROKEN".to_owned()
                } else if waiting.is_some() {
                    "WAITING-APPROVAL".to_owned()
                } else {
                    info.status.to_string()
                };
                let goal = match &file.verdict {
                    Ok(()) if waiting.is_some() => format!(
                        "{} — {}",
                        waiting.unwrap_or_default(),
                        truncate(&info.goal, 40)
                    ),
                    Err(Broken::Gone { missing, .. }) => format!(
                        "(the ledger {}: it falls short of its run snapshot; `rein ledger verify {id}` says more)",
                        if *missing { "is missing" } else { "is empty" }
                    ),
                    _ => truncate(&info.goal, 60),
                };
                let age = file.started().map_or_else(
                    || "?".to_owned(),
                    |t| age(now.saturating_sub(t.as_unix_millis())),
                );
                format!(
                    "{:<36}  {:<11}  {:<8}  {:>5}  {:>5}  {}",
                    id.as_str(),
                    status,
                    info.state().as_str(),
                    info.decisions,
                    age,
                    goal
                )
            }
        };
        println!("{row}");
    }
    Ok(Exit::Ok)
}

/// The call a run waits for under a durable approval, as its ledger ends: the last
/// `approval_pending` with no verdict, failure or resume after it. In words: tool, risk
/// and step.
fn waiting_for_approval(entries: &[rein::Entry]) -> Option<String> {
    let last = entries.last()?;
    match last.event() {
        EntryKind::ApprovalPending { pending } => Some(format!(
            "{} (risk {}, step {})",
            pending.tool, pending.risk, pending.step
        )),
        _ => None,
    }
}
