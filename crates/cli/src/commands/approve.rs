//! `rein approve`: the verdict on the call a run waits for under a durable approval policy,
//! given from any process; the run then goes on, and the outcome is printed as `rein
//! resume` prints it.

use rein::{ApprovalResponse, Verdict};

use super::run::{Driven, Reopened, finish, reopen};
use super::{engine_error, run_id};
use crate::cli::ApproveArgs;
use crate::datadir::DataDir;
use crate::exit::{CliError, CliResult};
use crate::render::shell_word;
use crate::scenario;

/// `rein approve`.
pub(crate) async fn approve(args: ApproveArgs) -> CliResult {
    let data = DataDir::new(&args.data.data_dir)?;
    data.require()?;
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
    } = reopen(&data, &id, "approved").await?;
    // Looking is touching: an approval past its timeout is denied here, and said so below.
    let pending = engine
        .pending_approval(&id)
        .await
        .map_err(|e| engine_error(e, &data))?;
    let Some(pending) = pending else {
        scenario::mcp::shutdown(&servers).await;
        let run = engine
            .load_run(&id)
            .await
            .map_err(|e| engine_error(e, &data))?;
        return Err(CliError::bad_input(format!(
            "run {id} is {} and waits for no approval (an approval past its timeout is denied when the run is next touched; `rein ledger show {id} --data-dir {}` says what happened)",
            run.status(),
            shell_word(data.shown())
        )));
    };
    if let Some(hash) = &args.input_hash
        && !hash.eq_ignore_ascii_case(&pending.input_hash.to_string())
    {
        scenario::mcp::shutdown(&servers).await;
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
    let result = engine.approve(&id, &response).await;
    scenario::mcp::shutdown(&servers).await;
    let run = result.map_err(|e| engine_error(e, &data))?;
    finish(
        &Driven {
            run,
            interrupted: false,
        },
        &data,
        args.json,
    )
}
