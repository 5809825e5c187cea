//! `rein serve`: the web console on a data directory. Runs approved or answered there are
//! driven on by this process, rebuilt from the scenario each run was started from (as
//! `rein approve` and `rein resume` rebuild it), under the run's lock.

use rein::RunId;
use rein_console::{BoxFuture, Console, OpenedRun, RunDriver, ServeConfig, Stores, Tokens};

use super::run::{Reopened, reopen_dir};
use crate::cli::ServeArgs;
use crate::datadir::DataDir;
use crate::exit::{CliError, CliResult, Exit};
use crate::scenario;

/// The operator a generated token is for.
const OPERATOR: &str = "operator";

/// `rein serve`.
pub(crate) async fn serve(args: ServeArgs) -> CliResult {
    let data = DataDir::new(&args.data.data_dir)?;
    data.require()?;
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
    let stores = Stores::filesystem(data.root()).map_err(|e| CliError::bad_input(e.to_string()))?;
    let console = Console::new(stores, tokens)
        .map_err(|e| CliError::new(Exit::Failed, e.to_string()))?
        .read_only(args.read_only)
        .driver(ScenarioDriver { data: data.clone() });
    let shown = data.shown().to_owned();
    let read_only = args.read_only;
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    rein_console::serve(
        &console,
        &config,
        |addr| {
            outln!(
                "rein console on http://{addr}/ (data directory {shown}{}); Ctrl-C stops it",
                if read_only { ", read-only" } else { "" }
            );
        },
        shutdown,
    )
    .await
    .map_err(|e| CliError::new(Exit::Failed, e.to_string()))?;
    Ok(Exit::Ok)
}

/// Drives runs on after a decision in this process, from their stored scenarios.
struct ScenarioDriver {
    data: DataDir,
}

impl RunDriver for ScenarioDriver {
    fn open<'a>(&'a self, id: &'a RunId) -> BoxFuture<'a, Result<OpenedRun, String>> {
        Box::pin(async move {
            let Reopened {
                engine,
                servers,
                _lock,
            } = reopen_dir(&self.data, id, "approved or answered")
                .await
                .map_err(|e| e.message)?;
            let release: BoxFuture<'static, ()> = Box::pin(async move {
                let _lock = _lock;
                scenario::mcp::shutdown(&servers).await;
            });
            Ok(OpenedRun { engine, release })
        })
    }

    fn describe(&self, _id: &RunId) -> String {
        format!(
            "this console process drives the run on, rebuilt from the scenario its run tree was started from (kept in {})",
            self.data.root().join("scenarios").display()
        )
    }
}
