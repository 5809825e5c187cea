//! `rein approve`: the verdict on the call a run waits for under a durable approval policy,
//! given from any process; the run then goes on, and the outcome is printed as `rein
//! resume` prints it. On a `--store`, the verdict is only recorded and the run queued: a
//! `rein worker` drives it on.

use rein::ledger::{Entry, EntryKind};
use rein::run::PendingApproval;
use rein::{ApprovalResponse, Run, RunStatus, Verdict};

use super::run::{Driven, Reopened, finish, reopen};
use super::{engine_error, run_id};
use crate::cli::ApproveArgs;
use crate::exit::{CliError, CliResult, Exit};
use crate::home::{Home, Place as _};
use crate::render::{iso, shell_word};
use crate::scenario;

/// `rein approve`.
pub(crate) async fn approve(args: ApproveArgs) -> CliResult {
    let home = Home::open(&args.data, &args.store).await?;
    home.require()?;
    let id = run_id(&args.run_id)?;
    for (what, text) in [("--reason", &args.reason), ("--by", &args.by)] {
        if text.trim().is_empty() {
            return Err(CliError::bad_input(format!(
                "{what} is empty; say {} (it is recorded in the ledger)",
                if what == "--by" { "who decides" } else { "why" }
            )));
        }
    }
    let Reopened {
        engine,
        servers,
        _lock,
    } = reopen(&home, &id, "approved").await?;
    let result = decide(&args, &id, &engine, &home).await;
    _lock.release().await;
    scenario::mcp::shutdown(&servers).await;
    match (result, &home) {
        // Recorded, not driven: a worker runs the granted call.
        (Ok(run), Home::Store(stores)) if !run.is_finished() => {
            super::on_store::queue(stores, &id).await
        }
        (Ok(run), _) => {
            finish(
                &Driven {
                    run,
                    interrupted: false,
                },
                &home,
                args.json,
            )
            .await
        }
        (Err(e), _) => Err(e),
    }
}

/// Looks at the call run `id` waits for and gives the verdict `args` ask for.
async fn decide(
    args: &ApproveArgs,
    id: &rein::RunId,
    engine: &rein::Engine,
    home: &Home,
) -> Result<Run, CliError> {
    let before = engine
        .load_run(id)
        .await
        .map_err(|e| engine_error(e, home))?;
    // Looking is touching: an approval past its timeout is denied here, and said so below.
    let pending = engine
        .pending_approval(id)
        .await
        .map_err(|e| engine_error(e, home))?;
    let Some(pending) = pending else {
        let run = engine
            .load_run(id)
            .await
            .map_err(|e| engine_error(e, home))?;
        let ledger = engine.ledger(id).await.map_err(|e| engine_error(e, home))?;
        let waited = before
            .pending_approval()
            .filter(|_| before.status() == RunStatus::Paused);
        return Err(waits_for_none(&run, waited, ledger.entries(), home));
    };
    if let Some(hash) = &args.input_hash
        && !hash.eq_ignore_ascii_case(&pending.input_hash.to_string())
    {
        return Err(CliError::bad_input(format!(
            "run {id} waits for a call of `{}` with input {}, not {hash}: the pending call is not the one you looked at; nothing was recorded (`rein runs list` and the run's summary show the pending call)",
            pending.tool, pending.input_hash
        )));
    }
    let verdict = if args.deny {
        Verdict::Denied
    } else {
        Verdict::Granted
    };
    let response = ApprovalResponse::answer(&pending, verdict, &args.by, &args.reason);
    let decided = match home {
        // On a shared store the verdict is only recorded: the approving machine never runs
        // the agent's tools; a worker drives the run on.
        Home::Store(_) => engine.record_verdict(id, &response).await,
        Home::Dir(_) => engine.approve(id, &response).await,
    };
    decided.map_err(|e| engine_error(e, home))
}

/// Why run `run` takes no verdict, and what to do instead: its approval came too late (the
/// timeout denied the call, now or before: exit 1, the run failed because of it), a run
/// below it waits for the verdict (exit 2, naming it), or nothing waits (exit 2).
/// `waited` is the call it waited for before this command looked.
fn waits_for_none(
    run: &Run,
    waited: Option<&PendingApproval>,
    entries: &[Entry],
    home: &Home,
) -> CliError {
    let id = run.id();
    let flag = home.flag();
    let outcome = match run.status() {
        RunStatus::Failed => "the run failed because of it".to_owned(),
        status => format!(
            "the run is {status}: the denial is handed back to its planner (`rein resume {id} {flag}` goes on)"
        ),
    };
    // Waiting before this command looked, and no longer: the timeout denied it just now.
    if let Some(pending) = waited {
        return CliError::new(
            Exit::Failed,
            format!(
                "the approval came too late: run {id} waited for a verdict on `{}` (input {}, requested at {}) past its approval timeout, so the call was denied as timed out when this command looked (recorded), and {outcome}; nothing was approved (`rein ledger show {id} {flag}` shows it)",
                pending.tool, pending.input_hash, pending.requested_at
            ),
        );
    }
    if let Some((pending, denial)) = timed_out(entries) {
        return CliError::new(
            Exit::Failed,
            format!(
                "the approval came too late: run {id} waited for a verdict on `{}` (input {}) past its approval timeout, and the call was denied as timed out at entry {} ({}); {outcome}; nothing was approved",
                pending.tool,
                pending.input_hash,
                denial.seq(),
                iso(denial.at().as_unix_millis())
            ),
        );
    }
    let below = home
        .dir()
        .map(|data| crate::tree::waiting_below(entries, data))
        .unwrap_or_default();
    if !below.is_empty() {
        let lines: Vec<String> = below
            .iter()
            .map(|w| {
                format!(
                    "  child run {} waits for `{}` (risk {}, step {}, input {}): rein approve {} --reason TEXT --by NAME {flag}",
                    w.run, w.pending.tool, w.pending.risk, w.pending.step, w.pending.input_hash, w.run
                )
            })
            .collect();
        let then = run.pending_question().map_or_else(String::new, |q| {
            let answer = q.options.first().map_or("ANSWER", String::as_str);
            format!(
                "; then go on with `rein resume {id} --input {} {flag}`",
                shell_word(answer)
            )
        });
        return CliError::bad_input(format!(
            "run {id} waits for no approval itself, but {} below it {}: approve {} by its own id{then}\n{}",
            below.len(),
            if below.len() == 1 { "does" } else { "do" },
            if below.len() == 1 { "it" } else { "each" },
            lines.join("\n")
        ));
    }
    CliError::bad_input(format!(
        "run {id} is {} and waits for no approval (an approval past its timeout is denied when the run is next touched; `rein ledger show {id} {flag}` says what happened)",
        run.status()
    ))
}

/// The call the run last waited for, and the entry denying it as timed out, when that is
/// how its last wait ended: an `approval_denied` signed by the engine (a person's denial
/// is signed by who gave it; the engine signs only the timeout's).
fn timed_out(entries: &[Entry]) -> Option<(&PendingApproval, &Entry)> {
    let (at, pending) = entries
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, e)| match e.event() {
            EntryKind::ApprovalPending { pending } => Some((i, pending)),
            _ => None,
        })?;
    let verdict = entries[at + 1..].iter().find(|e| {
        matches!(
            e.event(),
            EntryKind::ApprovalGranted { .. } | EntryKind::ApprovalDenied { .. }
        )
    })?;
    matches!(verdict.event(), EntryKind::ApprovalDenied { approver, .. } if approver == "engine")
        .then_some((pending, verdict))
}
