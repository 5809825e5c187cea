//! `rein narrow`: the CLI form of `Engine::narrow` — makes a stored run's policy stricter
//! (lower budgets and steps, tools taken away, more approvals, fewer rejections handed back),
//! recorded in its ledger; a request that would widen anything is refused whole.

use rein::ledger::EntryKind;
use rein::policy::{OnViolation, PolicyNarrowing};
use rein::run::BudgetName;
use rein::{RunStatus, ToolName};

use super::run::{Reopened, reopen};
use super::{engine_error, run_id};
use crate::cli::NarrowArgs;
use crate::exit::{CliError, CliResult, Exit};
use crate::home::{Home, Place as _};
use crate::render::shell_word;
use crate::scenario;

/// `rein narrow`.
pub(crate) async fn narrow(args: NarrowArgs) -> CliResult {
    let home = Home::open(&args.data, &args.store).await?;
    home.require()?;
    let id = run_id(&args.run_id)?;
    let (narrowing, asked) = narrowing(&args)?;
    let Reopened {
        engine,
        servers,
        _lock,
    } = reopen(&home, &id, "narrowed").await?;
    let result = match engine.narrow(&id, narrowing).await {
        Ok(run) => engine.ledger(&id).await.map(|ledger| (run, ledger)),
        Err(e) => Err(e),
    };
    _lock.release().await;
    scenario::mcp::shutdown(&servers).await;
    let (run, ledger) = result.map_err(|e| engine_error(e, &home))?;
    let entry = ledger
        .entries()
        .iter()
        .rev()
        .find(|e| matches!(e.event(), EntryKind::PolicyNarrowed { .. }))
        .map_or(0, rein::ledger::Entry::seq);
    println!("run {id}  policy narrowed ✓ (policy_narrowed, entry {entry})");
    println!("  reason     {}", args.reason);
    for line in asked {
        println!("  {line}");
    }
    println!("  status     {}", run.status());
    let flag = home.flag();
    match run.status() {
        RunStatus::Paused if run.pending_approval().is_some() => println!(
            "  approve    rein approve {id} --reason TEXT --by NAME {flag}  (add --deny to deny)"
        ),
        RunStatus::Paused => {
            let answer = run
                .pending_question()
                .and_then(|q| q.options.first())
                .map_or("ANSWER", String::as_str);
            println!(
                "  resume     rein resume {id} --input {} {flag}",
                shell_word(answer)
            );
        }
        _ => println!("  resume     rein resume {id} {flag}"),
    }
    Ok(Exit::Ok)
}

/// The narrowing `args` ask for, and each part of it in words.
///
/// # Errors
/// Bad input: an empty reason, nothing asked, a malformed `NAME=LIMIT`, a malformed name.
fn narrowing(args: &NarrowArgs) -> Result<(PolicyNarrowing, Vec<String>), CliError> {
    if args.reason.trim().is_empty() {
        return Err(CliError::bad_input(
            "--reason is empty; say why the run is narrowed (it is recorded in the ledger)",
        ));
    }
    let mut narrowing = PolicyNarrowing::new(&args.reason);
    let mut asked = Vec::new();
    for budget in &args.budgets {
        let (name, limit) = budget_limit(budget)?;
        asked.push(format!("budget     {name} at most {limit}"));
        narrowing = narrowing.budget(name, limit);
    }
    if let Some(steps) = args.max_steps {
        asked.push(format!("max steps  at most {steps}"));
        narrowing = narrowing.max_steps(steps);
    }
    for tool in &args.deny_tools {
        narrowing = narrowing.forbid(tool_name(tool, "--deny-tool")?);
        asked.push(format!("denied     {tool} (eligible in no state)"));
    }
    for tool in &args.require_approval {
        narrowing = narrowing.require_approval(tool_name(tool, "--require-approval")?);
        asked.push(format!("approval   required for every call of {tool}"));
    }
    if args.fail_on_violation {
        narrowing = narrowing.on_violation(OnViolation::FailRun);
        asked.push("violations fail the run".to_owned());
    }
    if let Some(limit) = args.hand_back {
        narrowing = narrowing.on_violation(OnViolation::HandBack { limit });
        asked.push(format!("violations at most {limit} handed back"));
    }
    if asked.is_empty() {
        return Err(CliError::bad_input(
            "nothing to narrow: give --budget NAME=LIMIT, --max-steps N, --deny-tool TOOL, --require-approval TOOL, --fail-on-violation or --hand-back LIMIT",
        ));
    }
    Ok((narrowing, asked))
}

/// Reads `--budget NAME=LIMIT`.
fn budget_limit(text: &str) -> Result<(BudgetName, u64), CliError> {
    let bad = |why: String| {
        CliError::bad_input(format!(
            "--budget {text:?}: {why}; write NAME=LIMIT, such as tool_calls=2"
        ))
    };
    let Some((name, limit)) = text.split_once('=') else {
        return Err(bad(
            "no `=` between the budget's name and its limit".to_owned()
        ));
    };
    let name: BudgetName = name.trim().parse().map_err(|e| bad(format!("{e}")))?;
    let limit: u64 = limit.trim().parse().map_err(|_| {
        bad(format!(
            "the limit {:?} is not a whole number from 0 to {}",
            limit.trim(),
            u64::MAX
        ))
    })?;
    Ok((name, limit))
}

/// Reads a tool name given to option `option`.
fn tool_name(text: &str, option: &str) -> Result<ToolName, CliError> {
    text.parse()
        .map_err(|e| CliError::bad_input(format!("{option} {text:?}: {e}")))
}
