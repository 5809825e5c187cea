//! `rein run` and `rein resume`: drive a run on a data directory or a `PostgreSQL` store,
//! show progress, answer scripted questions, print a summary (or the run as JSON), exit
//! with what happened.

use std::io::IsTerminal as _;

use rein::clock::{IdGenerator as _, UuidV7Ids};
use rein::ledger::EntryKind;
use rein::{Run, RunEvent, RunHandle, RunId, RunSpec, RunStatus};

pub(crate) use super::reopened::Reopened;
use super::reopened::restore_secrets;
use super::{build_error, checked_scenario, engine_error, run_id};
use crate::cli::{ResumeArgs, RunArgs};
use crate::datadir::DataDir;
use crate::exit::{CliError, CliResult, Exit};
use crate::home::{Hold, Home, Place};
use crate::ledger_file::LedgerFile;
use crate::render::{self, LiveReply, Progress, shell_word};
use crate::scenario::{self, Setup};

/// `rein run`.
pub(crate) async fn run(args: RunArgs) -> CliResult {
    let (Some(path), None) = (&args.scenario, &args.follow_up) else {
        return follow_up(&args).await;
    };
    let home = Home::open(&args.data, &args.store).await?;
    let scenario = checked_scenario(path, home.dir(), args.workspace.as_deref())?;
    let servers = scenario::mcp::connect(&scenario).await?;
    let engine = home.engine(scenario::mcp::with_tools(
        scenario::builder(&scenario, 0),
        &servers,
    ))?;

    let id = UuidV7Ids.run_id();
    home.save_scenario(&id, &scenario, path).await?;
    let hold = home.hold(&id).await?;
    let mut spec = RunSpec::new(scenario.goal.clone()).with_id(id.clone());
    for (name, value) in &scenario.vars {
        spec = spec.with_var(name.clone(), value.clone());
    }
    let mut ctrl_c = CtrlC::listen();
    let handle = match engine.start(spec).await {
        Ok(handle) => handle,
        Err(e) => {
            home.forget_scenario(&id);
            hold.release().await;
            return Err(engine_error(e, &home));
        }
    };
    let progress = !args.quiet && !args.json && std::io::stdout().is_terminal();
    if progress {
        outln!("run {id}: {}", scenario.goal);
    }
    let driven = async {
        let mut driven = drive(handle, &home, progress, &mut ctrl_c).await?;
        let mut answers = scenario.answers.iter();
        while driven.run.status() == RunStatus::Paused && !driven.interrupted {
            let run = &driven.run;
            let Some(answer) = answers.next() else { break };
            if progress {
                let question = run
                    .pending_question()
                    .map(|q| q.question.as_str())
                    .unwrap_or_default();
                outln!("  answering {question:?} with {answer:?} (scripted in the scenario)");
            }
            let handle = engine
                .start_resume(&id, Some(answer))
                .await
                .map_err(|e| engine_error(e, &home))?;
            driven = drive(handle, &home, progress, &mut ctrl_c).await?;
        }
        Ok::<_, CliError>(driven)
    }
    .await;
    hold.release().await;
    let result = match driven {
        Ok(driven) => finish(&driven, &home, args.json).await,
        Err(e) => Err(e),
    };
    scenario::mcp::shutdown(&servers).await;
    result
}

/// `rein run --follow-up RUN_ID --goal TEXT`: a new run continuing the finished run
/// `RUN_ID`, rebuilt from the scenario its conversation was started with (the run's own, or
/// the first run's of its conversation, which the follow-up's ledger leads back to).
async fn follow_up(args: &RunArgs) -> CliResult {
    let home = Home::open(&args.data, &args.store).await?;
    home.require()?;
    let (Some(previous), Some(goal)) = (&args.follow_up, &args.goal) else {
        return Err(CliError::bad_input(
            "give a scenario file, or --follow-up RUN_ID with --goal TEXT",
        ));
    };
    let previous = run_id(previous)?;
    let Reopened {
        engine,
        servers,
        _lock,
    } = reopen(&home, &previous, "followed up").await?;
    let id = UuidV7Ids.run_id();
    let own = home.hold(&id).await?;
    let mut ctrl_c = CtrlC::listen();
    let spec = RunSpec::new(goal.clone()).with_id(id.clone());
    let driven = async {
        let handle = engine
            .follow_up(&previous, spec)
            .await
            .map_err(|e| engine_error(e, &home))?;
        let progress = !args.quiet && !args.json && std::io::stdout().is_terminal();
        if progress {
            outln!("run {id}: {goal} (following up on run {previous})");
        }
        drive(handle, &home, progress, &mut ctrl_c).await
    }
    .await;
    own.release().await;
    _lock.release().await;
    let result = match driven {
        Ok(driven) => finish(&driven, &home, args.json).await,
        Err(e) => Err(e),
    };
    scenario::mcp::shutdown(&servers).await;
    result
}

/// `rein resume`.
pub(crate) async fn resume(args: ResumeArgs) -> CliResult {
    let home = Home::open(&args.data, &args.store).await?;
    home.require()?;
    let id = run_id(&args.run_id)?;
    if let Home::Store(stores) = &home {
        // A worker drives it: this process only records the answer and queues the run.
        return super::on_store::resume_queued(stores, &home, &id, args.input.as_deref()).await;
    }
    let Reopened {
        engine,
        servers,
        _lock,
    } = reopen(&home, &id, "resumed").await?;
    let mut ctrl_c = CtrlC::listen();
    let driven = async {
        let handle = engine
            .start_resume(&id, args.input.as_deref())
            .await
            .map_err(|e| engine_error(e, &home))?;
        let progress = !args.quiet && !args.json && std::io::stdout().is_terminal();
        if progress {
            outln!("run {id}: resumed");
        }
        drive(handle, &home, progress, &mut ctrl_c).await
    }
    .await;
    _lock.release().await;
    let result = match driven {
        Ok(driven) => finish(&driven, &home, args.json).await,
        Err(e) => Err(e),
    };
    scenario::mcp::shutdown(&servers).await;
    result
}

/// Opens run `id` again from the scenario stored with it, in a data directory or a store
/// (see [`reopen_dir`] and [`super::on_store::reopen`]).
///
/// # Errors
/// As those.
pub(crate) async fn reopen(home: &Home, id: &RunId, verb: &str) -> Result<Reopened, CliError> {
    match home {
        Home::Dir(data) => reopen_dir(data, id, verb).await,
        Home::Store(stores) => super::on_store::reopen(stores, home, id, verb).await,
    }
}

/// Opens run `id` of `data` again from the scenario `rein run` stored for it (its secrets
/// read again from the original file), under the run's lock; `verb` says what for in the
/// errors ("resumed", "approved").
///
/// # Errors
/// Bad input when the run or its stored scenario is missing; what loading, checking,
/// connecting and building report.
pub(super) async fn reopen_dir(
    data: &DataDir,
    id: &RunId,
    verb: &str,
) -> Result<Reopened, CliError> {
    let ledger_path = data.ledger(id);
    // A run whose ledger is gone but whose snapshot is here is found, and refused below: its
    // ledger falls short of its snapshot (exit 4).
    if !ledger_path.is_file() && !data.snapshot(id).is_file() {
        return Err(CliError::bad_input(format!(
            "no run {id} in data directory {}; `rein runs list --data-dir {}` shows the runs there",
            data.shown(),
            shell_word(data.shown())
        )));
    }
    // Everything below reads the run as another `rein` driving it leaves it.
    let lock = data.lock_run(id).await?;
    // A child run is rebuilt from the scenario of the run `rein run` started its tree with.
    let owner = LedgerFile::scenario_owner(data, id);
    let scenario_path = data.scenario(&owner);
    if !scenario_path.is_file() {
        return Err(CliError::bad_input(format!(
            "run {id} has no stored scenario ({} is missing), so its tools and planner cannot be rebuilt; only runs started with `rein run` can be {verb} by the CLI",
            scenario_path.display()
        )));
    }
    let mut loaded = scenario::load(&scenario_path)?;
    let source = std::fs::read(data.scenario_source(&owner))
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .map(std::path::PathBuf::from);
    restore_secrets(&mut loaded, source, &owner)?;
    let setup = Setup {
        workspace: None,
        data_dir: Some(data.root().to_path_buf()),
    };
    let scenario = scenario::check(&loaded, &setup)?.scenario;
    // A scripted approver continues where the run's earlier processes left off.
    let ledger = LedgerFile::read_verified(&ledger_path, Some(id), data)?;
    let approvals_used = ledger
        .entries
        .iter()
        .filter(|e| matches!(e.event(), EntryKind::ApprovalRequested { .. }))
        .count();
    let servers = scenario::mcp::connect(&scenario).await?;
    let engine = scenario::mcp::with_tools(scenario::builder(&scenario, approvals_used), &servers)
        .filesystem(data.root())
        .build()
        .map_err(|e| build_error(&e, data))?;
    Ok(Reopened {
        engine,
        servers,
        _lock: Hold::Lock(lock),
    })
}

/// Waits for the run behind `handle`, printing progress lines if asked, and the model's
/// replies as they stream in (a streaming LLM planner's).
///
/// Ctrl-C stops the run through the engine (`RunControl::stop`): a model call in flight is
/// cancelled at once (charged at its declared worst case), a tool call in progress
/// finishes and is recorded, nothing new starts, and the run is left `interrupted` for
/// `rein resume`. A second Ctrl-C aborts: the call in progress is dropped, its outcome is
/// unknown, and the run fails as aborted. Either way the outcome is then printed as usual
/// and `rein` exits with 130 unless the run completed anyway.
pub(super) async fn drive(
    handle: RunHandle,
    place: &impl Place,
    progress: bool,
    ctrl_c: &mut CtrlC,
) -> Result<Driven, CliError> {
    let id: RunId = handle.id().clone();
    if progress {
        crate::scenario::llm::replies_shown();
    }
    let printer = progress.then(|| {
        let mut events = handle.subscribe();
        tokio::spawn(async move {
            let mut progress = Progress::default();
            let mut reply = LiveReply::default();
            while let Some(event) = events.next().await {
                if let Some(text) = reply.text(&event) {
                    out!("{text}");
                    crate::output::flush();
                    continue;
                }
                let line = match event {
                    RunEvent::Recorded(entry) => progress.line(&entry),
                    RunEvent::Missed(n) => Some(format!(
                        "  … {n} events not shown (the ledger has them all)"
                    )),
                    _ => None,
                };
                if let Some(line) = line {
                    // A reply cut short (a stop) leaves its line open: end it first.
                    out!("{}", reply.close().unwrap_or_default());
                    outln!("{line}");
                }
            }
        })
    });
    let control = handle.control();
    let wait = handle.wait();
    tokio::pin!(wait);
    let mut signals = 0u8;
    let result = loop {
        tokio::select! {
            result = &mut wait => break result,
            () = ctrl_c.recv(), if signals < 2 => {
                signals += 1;
                if signals == 1 {
                    control.stop();
                    eprintln!(
                        "\ninterrupting run {id}: a model call in flight is cancelled (charged at its worst case), \
                         a tool call in progress finishes and is recorded, no other call starts; \
                         press Ctrl-C again to abort instead (the call in progress is dropped, its outcome is unknown, and the run fails)"
                    );
                } else {
                    control.abort();
                    eprintln!(
                        "\naborting run {id}: the call in progress is dropped and may or may not have taken effect; \
                         the run fails as aborted and cannot be resumed"
                    );
                }
            }
        }
    };
    if let Some(printer) = printer {
        let _ = printer.await;
    }
    let run = result.map_err(|e| engine_error(e, place))?;
    Ok(Driven {
        run,
        interrupted: signals > 0,
    })
}

/// Ctrl-C, listened for from before a run starts, so a signal that arrives while the
/// first step runs is never the default "terminate at once".
pub(super) struct CtrlC {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl CtrlC {
    /// Starts listening (within the runtime).
    pub(super) fn listen() -> Self {
        Self {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok(),
        }
    }

    /// The next Ctrl-C; never, when signals cannot be listened for.
    async fn recv(&mut self) {
        #[cfg(unix)]
        {
            let received = match &mut self.signal {
                Some(signal) => signal.recv().await.is_some(),
                None => false,
            };
            if !received {
                std::future::pending::<()>().await;
            }
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// A run as [`drive`] left it.
pub(super) struct Driven {
    pub(super) run: Run,
    /// Whether Ctrl-C was pressed while it ran (then `rein` exits with 130).
    pub(super) interrupted: bool,
}

/// Prints the outcome and picks the exit code. The ledger is read back from where it is
/// kept and verified first.
pub(super) async fn finish(driven: &Driven, home: &Home, json: bool) -> CliResult {
    let run = &driven.run;
    let (ledger, below, ledger_at) = match home {
        Home::Dir(data) => {
            let ledger = LedgerFile::read(&data.ledger(run.id()), Some(run.id()), data)?;
            let below = match run.status() {
                RunStatus::Paused => crate::tree::waiting_below(&ledger.entries, data),
                _ => Vec::new(),
            };
            let at = data.ledger(run.id()).display().to_string();
            (ledger, below, at)
        }
        Home::Store(stores) => super::on_store::ledger(stores, run.id()).await?,
    };
    let flag = home.flag();
    if json {
        for waiting in &below {
            eprintln!(
                "paused: child run {} waits for approval of `{}` (risk {}); approve with: rein approve {} --reason TEXT --by NAME {flag} (add --deny to deny)",
                waiting.run, waiting.pending.tool, waiting.pending.risk, waiting.run,
            );
        }
        let text = serde_json::to_string_pretty(run)
            .map_err(|e| CliError::new(Exit::Failed, format!("cannot print the run: {e}")))?;
        outln!("{text}");
        if let Some(pending) = run.pending_question() {
            let answer = pending.options.first().map_or("ANSWER", String::as_str);
            eprintln!(
                "paused: {:?}; resume with: rein resume {} --input {} {flag}",
                pending.question,
                run.id(),
                shell_word(answer),
            );
        }
        if let Some(pending) = run.pending_approval() {
            eprintln!(
                "paused: waiting for approval of `{}` (risk {}); approve with: rein approve {} --reason TEXT --by NAME {flag} (add --deny to deny)",
                pending.tool,
                pending.risk,
                run.id(),
            );
        }
    } else {
        out!(
            "{}",
            render::summary(run, &ledger, &below, &ledger_at, &flag)
        );
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
        _ if driven.interrupted => Exit::Interrupted,
        RunStatus::Paused => Exit::Paused,
        RunStatus::Interrupted => Exit::Interrupted,
        _ => Exit::Failed,
    })
}
