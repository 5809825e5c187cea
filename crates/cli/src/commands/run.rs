//! `rein run` and `rein resume`: drive a run with filesystem stores, show progress, answer
//! scripted questions, print a summary (or the run as JSON), exit with what happened.

use std::io::IsTerminal as _;

use rein::{
    EntryKind, IdGenerator as _, Run, RunEvent, RunHandle, RunId, RunSpec, RunStatus, UuidV7Ids,
};

use super::{build_error, engine_error, existing_dir, run_id};
use crate::cli::{ResumeArgs, RunArgs};
use crate::datadir::DataDir;
use crate::exit::{CliError, CliResult, Exit};
use crate::ledger_file::LedgerFile;
use crate::render::{self, Progress, shell_word};
use crate::scenario::{self, Setup};

/// `rein run`.
pub(crate) async fn run(args: RunArgs) -> CliResult {
    let loaded = scenario::load(&args.scenario)?;
    let data = DataDir::new(&args.data.data_dir)?;
    let workspace = args
        .workspace
        .as_deref()
        .map(|dir| existing_dir(dir, "--workspace"))
        .transpose()?;
    let setup = Setup {
        workspace,
        data_dir: Some(data.root().to_path_buf()),
    };
    let checked = scenario::check(&loaded, &setup)?;
    for warning in &checked.warnings {
        eprintln!("warning: {warning}");
    }
    let scenario = checked.scenario;
    let servers = scenario::mcp::connect(&scenario).await?;
    let engine = scenario::mcp::with_tools(scenario::builder(&scenario, 0), &servers)
        .filesystem(data.root())
        .build()
        .map_err(|e| build_error(&e, &data))?;

    let id = UuidV7Ids.run_id();
    data.save_scenario(&id, &scenario)?;
    let mut spec = RunSpec::new(scenario.goal.clone()).with_id(id.clone());
    for (name, value) in &scenario.vars {
        spec = spec.with_var(name.clone(), value.clone());
    }
    let handle = match engine.start(spec).await {
        Ok(handle) => handle,
        Err(e) => {
            data.forget_scenario(&id);
            return Err(engine_error(e, &data));
        }
    };
    let progress = !args.quiet && !args.json && std::io::stdout().is_terminal();
    if progress {
        println!("run {id}: {}", scenario.goal);
    }
    let mut run = drive(handle, &data, progress).await?;
    let mut answers = scenario.answers.iter();
    while run.status() == RunStatus::Paused {
        let Some(answer) = answers.next() else { break };
        if progress {
            let question = run
                .pending_question()
                .map(|q| q.question.as_str())
                .unwrap_or_default();
            println!("  answering {question:?} with {answer:?} (scripted in the scenario)");
        }
        let handle = engine
            .start_resume(&id, Some(answer))
            .await
            .map_err(|e| engine_error(e, &data))?;
        run = drive(handle, &data, progress).await?;
    }
    let result = finish(&run, &data, args.json);
    scenario::mcp::shutdown(&servers).await;
    result
}

/// `rein resume`.
pub(crate) async fn resume(args: ResumeArgs) -> CliResult {
    let data = DataDir::new(&args.data.data_dir)?;
    data.require()?;
    let id = run_id(&args.run_id)?;
    let ledger_path = data.ledger(&id);
    if !ledger_path.is_file() {
        return Err(CliError::bad_input(format!(
            "no run {id} in data directory {}; `rein runs list --data-dir {}` shows the runs there",
            data.shown(),
            shell_word(data.shown())
        )));
    }
    let scenario_path = data.scenario(&id);
    if !scenario_path.is_file() {
        return Err(CliError::bad_input(format!(
            "run {id} has no stored scenario ({} is missing), so its tools and planner cannot be rebuilt; only runs started with `rein run` can be resumed by the CLI",
            scenario_path.display()
        )));
    }
    let loaded = scenario::load(&scenario_path)?;
    let setup = Setup {
        workspace: None,
        data_dir: Some(data.root().to_path_buf()),
    };
    let scenario = scenario::check(&loaded, &setup)?.scenario;
    // A scripted approver continues where the run's earlier processes left off.
    let ledger = LedgerFile::read_verified(&ledger_path, Some(&id), &data)?;
    let approvals_used = ledger
        .entries
        .iter()
        .filter(|e| matches!(e.event(), EntryKind::ApprovalRequested { .. }))
        .count();
    let servers = scenario::mcp::connect(&scenario).await?;
    let engine = scenario::mcp::with_tools(scenario::builder(&scenario, approvals_used), &servers)
        .filesystem(data.root())
        .build()
        .map_err(|e| build_error(&e, &data))?;
    let handle = engine
        .start_resume(&id, args.input.as_deref())
        .await
        .map_err(|e| engine_error(e, &data))?;
    let progress = !args.quiet && !args.json && std::io::stdout().is_terminal();
    if progress {
        println!("run {id}: resumed");
    }
    let run = drive(handle, &data, progress).await?;
    let result = finish(&run, &data, args.json);
    scenario::mcp::shutdown(&servers).await;
    result
}

/// Waits for the run behind `handle`, printing progress lines if asked. Ctrl-C stops rein
/// at once, saying how to resume the run.
async fn drive(handle: RunHandle, data: &DataDir, progress: bool) -> Result<Run, CliError> {
    let id: RunId = handle.id().clone();
    let printer = progress.then(|| {
        let mut events = handle.subscribe();
        tokio::spawn(async move {
            let mut progress = Progress::default();
            while let Some(event) = events.next().await {
                match event {
                    RunEvent::Recorded(entry) => {
                        if let Some(line) = progress.line(&entry) {
                            println!("{line}");
                        }
                    }
                    RunEvent::Missed(n) => {
                        println!("  … {n} events not shown (the ledger has them all)")
                    }
                    _ => {}
                }
            }
        })
    });
    let result = tokio::select! {
        result = handle.wait() => result,
        _ = tokio::signal::ctrl_c() => {
            eprintln!(
                "\ninterrupted: run {id} stays in {}; continue it with: rein resume {id} --data-dir {}",
                data.shown(),
                shell_word(data.shown())
            );
            std::process::exit(i32::from(Exit::Interrupted.code()));
        }
    };
    if let Some(printer) = printer {
        let _ = printer.await;
    }
    result.map_err(|e| engine_error(e, data))
}

/// Prints the outcome and picks the exit code. The ledger is read back from disk and
/// verified first.
fn finish(run: &Run, data: &DataDir, json: bool) -> CliResult {
    let ledger = LedgerFile::read(&data.ledger(run.id()), Some(run.id()), data)?;
    if json {
        let text = serde_json::to_string_pretty(run)
            .map_err(|e| CliError::new(Exit::Failed, format!("cannot print the run: {e}")))?;
        println!("{text}");
        if let Some(pending) = run.pending_question() {
            let answer = pending.options.first().map_or("ANSWER", String::as_str);
            eprintln!(
                "paused: {:?}; resume with: rein resume {} --input {} --data-dir {}",
                pending.question,
                run.id(),
                shell_word(answer),
                shell_word(data.shown())
            );
        }
    } else {
        print!("{}", render::summary(run, &ledger, data.shown()));
    }
    if let Err(broken) = &ledger.verdict {
        return Err(CliError::new(
            Exit::LedgerBroken,
            format!(
                "the ledger of run {} failed verification: {broken}",
                run.id()
            ),
        ));
    }
    Ok(match run.status() {
        RunStatus::Completed => Exit::Ok,
        RunStatus::Paused => Exit::Paused,
        RunStatus::Interrupted => Exit::Interrupted,
        _ => Exit::Failed,
    })
}
