//! The commands, one module each, and what they share: turning engine errors into exit
//! codes and messages, and finding a ledger by run id or file.

mod approve;
mod inspect;
mod ledger;
pub(crate) mod mcp;
mod mcp_serve;
mod narrow;
mod on_store;
mod prompt;
mod reopened;
mod replay;
mod run;
mod runs;
mod serve;
mod stop;
mod store;
mod tools;
mod validate;
mod worker;

use std::path::{Path, PathBuf};

use rein::store::LedgerStoreError;
use rein::{EngineError, RunId};

use crate::cli::{Command, LedgerCommand, RunsCommand, SchemaKind};
use crate::datadir::DataDir;
use crate::exit::{CliError, CliResult, Exit};
use crate::home::Place;
use crate::render::shell_word;
use crate::scenario::{self, ScenarioError};

/// Runs `command`.
pub(crate) async fn dispatch(command: Command) -> CliResult {
    match command {
        Command::Run(args) => run::run(args).await,
        Command::Resume(args) => run::resume(args).await,
        Command::Approve(args) => approve::approve(args).await,
        Command::Narrow(args) => narrow::narrow(args).await,
        Command::Abort(args) => stop::stop(args, rein::run::StopKind::Abort).await,
        Command::Interrupt(args) => stop::stop(args, rein::run::StopKind::Interrupt).await,
        Command::Replay(args) => replay::replay(args).await,
        Command::Runs(RunsCommand::List(args)) => match &args.store.store {
            Some(_) if args.status.is_some() || args.limit.is_some() || args.offset > 0 => {
                Err(CliError::bad_input(
                    "--status, --limit and --offset are not supported with --store yet; list the whole store",
                ))
            }
            Some(url) => store::list(url).await,
            None => runs::list(&args),
        },
        Command::Runs(RunsCommand::Prune(args)) => crate::prune::prune(&args),
        Command::Ledger(LedgerCommand::Verify(args)) => match &args.store.store {
            Some(url) if !args.tree => store::verify(&args.ledger.target, url).await,
            Some(_) => Err(CliError::bad_input(
                "--tree is not supported with --store yet; verify each run of the tree by its id",
            )),
            None => ledger::verify(&args),
        },
        Command::Ledger(LedgerCommand::Export(args)) => {
            store::export(&args.run_id, required(&args.store)?, args.output.as_deref()).await
        }
        Command::Ledger(LedgerCommand::Import(args)) => {
            store::import(&args.file, required(&args.store)?).await
        }
        Command::Ledger(LedgerCommand::Show(args)) => match &args.store.store {
            Some(url) => store::show(&args.ledger.target, url, args.json).await,
            None => ledger::show(&args),
        },
        Command::Inspect(args) => match (&args.store.store, &args.run_id) {
            (Some(url), Some(run)) if !args.tree && args.prompt.is_none() => {
                store::inspect(run, url, args.format).await
            }
            (Some(_), Some(_)) => Err(CliError::bad_input(
                "--tree and --prompt are not supported with --store yet; inspect the run's path",
            )),
            _ => inspect::inspect(&args),
        },
        Command::Validate(args) => validate::validate(&args).await,
        Command::Tools(args) => tools::tools(&args),
        Command::Submit(args) => worker::submit(args).await,
        Command::Worker(args) => worker::worker(args).await,
        Command::Mcp(command) => mcp::dispatch(command).await,
        Command::Serve(args) => serve::serve(args).await,
        Command::Schema(args) => match args.what {
            SchemaKind::Scenario => {
                out!("{}", scenario::SCHEMA);
                Ok(Exit::Ok)
            }
        },
    }
}

/// The store URL a command cannot do without.
pub(crate) fn required(arg: &crate::cli::StoreArg) -> Result<&str, CliError> {
    arg.store.as_deref().ok_or_else(|| {
        CliError::bad_input(
            "this command works on a PostgreSQL store: give --store postgres://user:password@host/database (or set REIN_STORE)",
        )
    })
}

impl From<ScenarioError> for CliError {
    /// A scenario file error: exit 2, the message pointing into the file.
    fn from(e: ScenarioError) -> Self {
        Self::bad_input(e.to_string())
    }
}

/// An engine error as the CLI reports it: the exit code says what kind; the hints name
/// `place` (where the run is kept).
pub(crate) fn engine_error(e: EngineError, place: &impl Place) -> CliError {
    let message = e.to_string();
    let flag = place.flag();
    match e {
        EngineError::AwaitingAnswer { id, options, .. } => {
            let answer = options.first().map_or("ANSWER", String::as_str);
            CliError::new(
                Exit::Paused,
                format!(
                    "{message}\n  resume with: rein resume {id} --input {} {flag}",
                    shell_word(answer),
                ),
            )
        }
        EngineError::AwaitingApproval { id, .. } => CliError::new(
            Exit::Paused,
            format!("{message}\n  approve with: rein approve {id} --reason TEXT --by NAME {flag}"),
        ),
        EngineError::RunNotFound { .. }
        | EngineError::RunFinished { .. }
        | EngineError::NotAwaitingApproval { .. }
        | EngineError::ApprovalMismatch { .. }
        | EngineError::InvalidAnswer { .. }
        | EngineError::ChildAwaitsAnswer { .. }
        | EngineError::Narrowing { .. } => CliError::bad_input(message),
        EngineError::LedgerStore(
            LedgerStoreError::Broken { .. } | LedgerStoreError::Corrupt { .. },
        )
        | EngineError::InconsistentLedger { .. }
        | EngineError::LedgerBehindSnapshot { .. }
        | EngineError::TreeBroken { .. }
        | EngineError::ConversationBroken { .. } => CliError::new(Exit::LedgerBroken, message),
        // A conversation whose ledgers do not verify is a broken ledger; any other refusal
        // of a follow-up (no such run, one still going) is bad input.
        EngineError::FollowUpRefused { source, .. } => {
            use rein::conversation::ConversationError as Why;
            match *source {
                Why::Unverified { .. }
                | Why::Missing { .. }
                | Why::HeadMismatch { .. }
                | Why::TurnMismatch { .. } => CliError::new(Exit::LedgerBroken, message),
                _ => CliError::bad_input(message),
            }
        }
        _ => CliError::new(Exit::Failed, message),
    }
}

pub(crate) use crate::home::build_error;

/// Loads and checks the scenario a command is about to run (`rein run`, `rein mcp serve`),
/// with the data directory and an optional `--workspace`, printing its warnings.
pub(crate) fn checked_scenario(
    file: &Path,
    data: Option<&crate::datadir::DataDir>,
    workspace: Option<&Path>,
) -> Result<crate::scenario::Scenario, CliError> {
    let loaded = crate::scenario::load(file)?;
    let workspace = workspace
        .map(|dir| existing_dir(dir, "--workspace"))
        .transpose()?;
    let setup = crate::scenario::Setup {
        workspace,
        data_dir: data.map(|data| data.root().to_path_buf()),
    };
    let checked = crate::scenario::check(&loaded, &setup)?;
    counts_somewhere(&checked.scenario)?;
    for warning in &checked.warnings {
        eprintln!("warning: {warning}");
    }
    Ok(checked.scenario)
}

/// Refuses a scenario whose fixture has a `count_file` but nowhere to put it: on a
/// `PostgreSQL` store (no data directory) without a workspace, the count would be lost
/// without a word.
///
/// # Errors
/// Bad input naming the tool and the fix.
pub(crate) fn counts_somewhere(scenario: &crate::scenario::Scenario) -> Result<(), CliError> {
    if scenario.data_dir.is_some() {
        return Ok(());
    }
    match scenario
        .tools
        .iter()
        .position(|def| def.count_file.is_some())
    {
        None => Ok(()),
        Some(i) => Err(CliError::bad_input(format!(
            "tools[{i}].count_file: a run on a PostgreSQL store has no data directory to count in; give the scenario a \"workspace\" (or pass --workspace DIR) and the count file is written inside it"
        ))),
    }
}

/// The canonical path of directory `dir`, given as option `what`.
pub(crate) fn existing_dir(dir: &Path, what: &str) -> Result<PathBuf, CliError> {
    match dir.canonicalize() {
        Ok(path) if path.is_dir() => Ok(path),
        Ok(_) => Err(CliError::bad_input(format!(
            "{what} {}: not a directory",
            dir.display()
        ))),
        Err(e) => Err(CliError::bad_input(format!(
            "{what} {}: {e}",
            dir.display()
        ))),
    }
}

/// Parses a run id argument.
pub(crate) fn run_id(text: &str) -> Result<RunId, CliError> {
    text.parse()
        .map_err(|e| CliError::bad_input(format!("{text:?} is not a run id: {e}")))
}

/// A ledger named by run id (in the data directory) or by file: its path, the run it must
/// belong to when named by id, and the data directory it is checked in. A file at
/// `DIR/ledgers/RUN_ID.jsonl` is checked in `DIR` (against its run's snapshot there) when
/// `DIR` is a data directory, whatever `--data-dir` says. A run whose ledger is gone but
/// whose snapshot is there is found: its ledger falls short of the snapshot.
pub(crate) fn find_ledger(
    target: &str,
    data: &DataDir,
) -> Result<(PathBuf, Option<RunId>, DataDir), CliError> {
    let path = Path::new(target);
    let looks_like_file = target.contains(['/', '\\'])
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"));
    if looks_like_file || path.is_file() {
        if let Some((home, id)) = data_dir_of(path)
            && (path.is_file() || home.snapshot(&id).is_file())
        {
            return Ok((path.to_path_buf(), Some(id), home));
        }
        if path.is_file() {
            return Ok((path.to_path_buf(), None, data.clone()));
        }
    }
    match target.parse::<RunId>() {
        Ok(id) if !looks_like_file => {
            data.require()?;
            let ledger = data.ledger(&id);
            if !ledger.is_file() && !data.snapshot(&id).is_file() {
                return Err(CliError::bad_input(format!(
                    "no run {id} in data directory {}; `rein runs list --data-dir {}` shows the runs there",
                    data.shown(),
                    shell_word(data.shown())
                )));
            }
            Ok((ledger, Some(id), data.clone()))
        }
        _ => Err(CliError::bad_input(format!(
            "no ledger file {target} (and it is not a run id)"
        ))),
    }
}

/// The data directory and run of a path shaped `DIR/ledgers/RUN_ID.jsonl`, when `DIR` holds
/// a `runs` directory.
fn data_dir_of(path: &Path) -> Option<(DataDir, RunId)> {
    let (layout, id) = rein::store::FsLayout::of_ledger(path)?;
    if !layout.runs().is_dir() {
        return None;
    }
    Some((DataDir::new(layout.root()).ok()?, id))
}
