//! `rein submit` and `rein worker`: a run recorded and queued in a `PostgreSQL` store, and
//! the process that claims queued runs and drives them (the `rein-worker` crate's loop,
//! with engines rebuilt from the scenarios stored with the runs).

use std::time::Duration;

use rein::clock::{IdGenerator as _, UuidV7Ids};
use rein::{RunId, RunSpec, RunStatus};
use rein_worker::{CancellationToken, Opened, Outcome, Worker, WorkerError, WorkerOptions};

use super::{checked_scenario, engine_error, required};
use crate::cli::{SubmitArgs, WorkerArgs};
use crate::exit::{CliError, CliResult, Exit};
use crate::home::{Home, open_store, owner, store_failed};
use crate::scenario;

/// `rein submit`.
pub(crate) async fn submit(args: SubmitArgs) -> CliResult {
    let stores = open_store(required(&args.store)?).await?;
    let home = Home::Store(stores.clone());
    let scenario = checked_scenario(&args.scenario, None, args.workspace.as_deref())?;
    let servers = scenario::mcp::connect(&scenario).await?;
    let queued = async {
        // Built here too: the run's policy is recorded now, from this scenario.
        let engine = home.engine(scenario::mcp::with_tools(
            scenario::builder(&scenario, 0),
            &servers,
        ))?;
        let id = UuidV7Ids.run_id();
        home.save_scenario(&id, &scenario, &args.scenario).await?;
        let mut spec = RunSpec::new(scenario.goal.clone()).with_id(id.clone());
        for (name, value) in &scenario.vars {
            spec = spec.with_var(name.clone(), value.clone());
        }
        rein_worker::submit(&engine, &stores, spec)
            .await
            .map_err(|e| match e {
                WorkerError::Submit(e) => engine_error(*e, &home),
                WorkerError::Store(e) => store_failed(&e),
                other => CliError::new(Exit::Failed, other.to_string()),
            })
    }
    .await;
    scenario::mcp::shutdown(&servers).await;
    let id = queued?;
    outln!("{id}");
    eprintln!(
        "queued run {id} in {}; a `rein worker --store URL` drives it",
        stores.config().target()
    );
    Ok(Exit::Ok)
}

/// `rein worker`.
pub(crate) async fn worker(args: WorkerArgs) -> CliResult {
    let seconds = |value: f64, name: &str| {
        if value.is_finite() && value > 0.0 && value <= 86_400.0 {
            Ok(Duration::from_secs_f64(value))
        } else {
            Err(CliError::bad_input(format!(
                "--{name} {value}: give a number of seconds above 0 and at most 86400"
            )))
        }
    };
    let options = WorkerOptions {
        concurrency: args.concurrency,
        lease_ttl: seconds(args.lease_ttl, "lease-ttl")?,
        poll: seconds(args.poll, "poll")?,
        ..WorkerOptions::new(args.name.clone().unwrap_or_else(owner))
    };
    let stores = open_store(required(&args.store)?).await?;
    let engines = {
        let stores = stores.clone();
        move |id: RunId| {
            let stores = stores.clone();
            async move {
                let (engine, servers) = super::on_store::rebuild(&stores, &id, "driven")
                    .await
                    .map_err(|e| e.message)?;
                Ok(Opened::new(engine).with_release(async move {
                    scenario::mcp::shutdown(&servers).await;
                }))
            }
        }
    };
    let name = options.name.clone();
    let worker = Worker::new(stores.clone(), engines, options)
        .map_err(|e| CliError::bad_input(e.to_string()))?
        .on_driven(|driven| eprintln!("{}", said(driven)));
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(shutdown.clone()));
    eprintln!(
        "worker {name} serving the queue of {} (SIGTERM or Ctrl-C stops it)",
        stores.config().target()
    );
    let report = worker
        .run(shutdown)
        .await
        .map_err(|e| CliError::new(Exit::Failed, e.to_string()))?;
    let count = |f: fn(&Outcome) -> bool| report.runs.iter().filter(|d| f(&d.outcome)).count();
    eprintln!(
        "worker {name} stopped: {} runs claimed, {} completed, {} failed, {} waiting for a person, {} left queued, {} taken over by another worker",
        report.runs.len(),
        count(|o| *o == Outcome::Settled(RunStatus::Completed)),
        count(|o| *o == Outcome::Settled(RunStatus::Failed)),
        count(|o| *o == Outcome::Settled(RunStatus::Paused)),
        count(|o| matches!(
            o,
            Outcome::Stopped | Outcome::NoEngine(_) | Outcome::Failed(_)
        )),
        count(|o| *o == Outcome::FencedOut),
    );
    Ok(Exit::Ok)
}

/// One line on what became of a claimed run.
fn said(driven: &rein_worker::Driven) -> String {
    let (id, token) = (&driven.run_id, driven.token);
    match &driven.outcome {
        Outcome::Settled(status) => format!("run {id} (lease token {token}): {status}"),
        Outcome::Stopped => format!(
            "run {id} (lease token {token}): interrupted by the shutdown, left queued for the next worker"
        ),
        Outcome::FencedOut => format!(
            "run {id} (lease token {token}): taken over by another worker; this one wrote nothing more"
        ),
        Outcome::NoEngine(why) => format!(
            "run {id} (lease token {token}): cannot be driven here: {why}; left leased until its lease expires, for a worker that can"
        ),
        Outcome::Failed(why) => format!(
            "run {id} (lease token {token}): driving failed: {why}; another worker retries it once its lease expires"
        ),
        other => format!("run {id} (lease token {token}): {other:?}"),
    }
}

/// Cancels `shutdown` on SIGTERM or Ctrl-C.
async fn stop_on_signal(shutdown: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
    #[cfg(not(unix))]
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    eprintln!("stopping: no new runs are claimed; calls in progress finish and are recorded");
    shutdown.cancel();
}
