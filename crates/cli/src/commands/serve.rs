//! `rein serve`: the web console on a data directory or a `PostgreSQL` store. Runs approved
//! or answered there are driven on by this process, rebuilt from the scenario each run was
//! started from (as `rein approve` and `rein resume` rebuild it), under the run's lock or
//! lease. Stop requests go through the console's engine, built like every engine on the
//! place ([`Home::engine`]), so they reach the stop request store the drivers look in.

use rein::{RunId, ScriptedPlanner};
use rein_console::{BoxFuture, Console, OpenedRun, RunDriver, ServeConfig, Stores, Tokens};

use super::run::{Reopened, reopen};
use crate::cli::ServeArgs;
use crate::exit::{CliError, CliResult, Exit};
use crate::home::Home;
use crate::scenario;

/// The operator a generated token is for.
const OPERATOR: &str = "operator";

/// `rein serve`.
pub(crate) async fn serve(args: ServeArgs) -> CliResult {
    let home = Home::open(&args.data, &args.store).await?;
    home.require()?;
    let config = ServeConfig {
        addr: args.addr,
        has_tokens_file: args.tokens.is_some(),
    };
    rein_console::bind_check(&config).map_err(|e| CliError::bad_input(e.to_string()))?;
    let (tokens, new) = match &args.tokens {
        Some(path) => Tokens::load_or_create(path, OPERATOR)
            .map_err(|e| CliError::bad_input(e.to_string()))?,
        None => {
            let (tokens, new) = Tokens::generate(OPERATOR)
                .map_err(|e| CliError::new(Exit::Failed, e.to_string()))?;
            (tokens, Some(new))
        }
    };
    if let Some(new) = &new {
        let kept = match &args.tokens {
            Some(path) => format!("its hash was written to {}", path.display()),
            None => "it lasts while this server runs; --tokens FILE keeps one".to_owned(),
        };
        eprintln!(
            "operator `{}` signs in with token {} (shown once; {kept})",
            new.name, new.token
        );
    }
    let stores = match &home {
        Home::Dir(data) => {
            Stores::filesystem(data.root()).map_err(|e| CliError::bad_input(e.to_string()))?
        }
        Home::Store(stores) => Stores::postgres(stores),
    };
    let console = Console::new(stores, tokens)
        .map_err(|e| CliError::new(Exit::Failed, e.to_string()))?
        .read_only(args.read_only);
    let console = match console_engine(&home)? {
        Some(engine) => console.stop_engine(engine),
        None => console,
    };
    let shown = match &home {
        Home::Dir(data) => format!("data directory {}", data.shown()),
        Home::Store(stores) => format!("store {}", stores.config().target()),
    };
    let console = console.driver(ScenarioDriver { home });
    let read_only = args.read_only;
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    rein_console::serve(
        &console,
        &config,
        |addr| {
            outln!(
                "rein console on http://{addr}/ ({shown}{}); Ctrl-C stops it",
                if read_only { ", read-only" } else { "" }
            );
        },
        shutdown,
    )
    .await
    .map_err(|e| CliError::new(Exit::Failed, e.to_string()))?;
    Ok(Exit::Ok)
}

/// The engine the console asks runs to stop through, on a store: no tools and no script of
/// its own (it drives nothing), on the store and the stop request store every engine on it
/// is built with ([`Home::engine`]). On a data directory there is none: an engine there
/// would open the ledgers to write (and cut the torn tail of a live writer's ledger), so
/// the console writes its requests to the directory's stop request files instead, which
/// every driver polls.
fn console_engine(home: &Home) -> Result<Option<rein::Engine>, CliError> {
    match home {
        Home::Dir(_) => Ok(None),
        Home::Store(_) => home
            .engine(rein::Engine::builder().planner(ScriptedPlanner::new([])))
            .map(Some),
    }
}

/// Drives runs on after a decision in this process, from their stored scenarios.
struct ScenarioDriver {
    home: Home,
}

impl RunDriver for ScenarioDriver {
    fn open<'a>(&'a self, id: &'a RunId) -> BoxFuture<'a, Result<OpenedRun, String>> {
        Box::pin(async move {
            let Reopened {
                engine,
                servers,
                _lock,
            } = reopen(&self.home, id, "approved or answered")
                .await
                .map_err(|e| e.message)?;
            let release: BoxFuture<'static, ()> = Box::pin(async move {
                _lock.release().await;
                scenario::mcp::shutdown(&servers).await;
            });
            Ok(OpenedRun { engine, release })
        })
    }

    fn describe(&self, _id: &RunId) -> String {
        let kept = match &self.home {
            Home::Dir(data) => format!("kept in {}", data.root().join("scenarios").display()),
            Home::Store(stores) => format!("kept with it in {}", stores.config().target()),
        };
        format!(
            "this console process drives the run on, rebuilt from the scenario its run tree was started from ({kept})"
        )
    }
}
