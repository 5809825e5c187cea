//! `rein inspect`: a run's path through the state machine, or a scenario's policy.

use rein::policy::Eligibility;

use super::find_ledger;
use crate::cli::InspectArgs;
use crate::datadir::DataDir;
use crate::exit::{CliError, CliResult, Exit};
use crate::inspect;
use crate::ledger_file::LedgerFile;
use crate::scenario::{self, Setup};

/// `rein inspect`.
pub(crate) fn inspect(args: &InspectArgs) -> CliResult {
    if let Some(file) = &args.policy {
        let loaded = scenario::load(file)?;
        let checked = scenario::check(&loaded, &Setup::default())?;
        let engine = scenario::builder(&checked.scenario, 0)
            .build()
            .map_err(|e| CliError::bad_input(e.to_string()))?;
        let policy = engine.policy();
        let eligibility = Eligibility::new(policy.eligibility.clone(), engine.tools())
            .map_err(|e| CliError::bad_input(e.to_string()))?;
        out!(
            "{}",
            inspect::policy(
                policy.transitions,
                &eligibility,
                &policy.approvals,
                engine.tools(),
                args.format
            )
        );
        return Ok(Exit::Ok);
    }
    let Some(target) = &args.run_id else {
        return Err(CliError::bad_input("give a RUN_ID, or --policy SCENARIO"));
    };
    let data = DataDir::new(&args.data.data_dir)?;
    let (path, expected, data) = find_ledger(target, &data)?;
    let file = LedgerFile::read_verified(&path, expected.as_ref(), &data)?;
    if args.tree
        && let Some(id) = file.run_id(expected.as_ref())
    {
        let tree = crate::tree::read(&id, &file.entries, &data)?;
        out!("{}", crate::tree::diagram(&tree, args.format));
        return Ok(Exit::Ok);
    }
    if let Some(step) = args.prompt {
        // The scenario the run was started from: as given, else the copy `rein run` saved
        // beside the run, or beside the first run of its tree or conversation (its planner
        // configuration is what the prompt is rebuilt from).
        let saved = file
            .run_id(expected.as_ref())
            .map(|id| data.scenario(&LedgerFile::scenario_owner(&data, &id)))
            .filter(|path| path.is_file());
        let Some(scenario) = args.scenario.clone().or(saved) else {
            return Err(CliError::bad_input(
                "--prompt needs the scenario the run was started from: the data directory has no copy of it, so give --scenario FILE",
            ));
        };
        return super::prompt::prompt(step, args.call, &scenario, file.entries, &data);
    }
    out!("{}", inspect::run_path(&file.entries, args.format));
    Ok(Exit::Ok)
}
