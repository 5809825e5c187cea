//! `rein inspect RUN --prompt STEP [--call N] --scenario FILE`: the exact request body a
//! step's model call sent, rebuilt from the ledger and the scenario's planner configuration,
//! and checked against the hash the ledger recorded. A follow-up's request opens with the
//! earlier runs of its conversation, read from the data directory's ledgers.

use rein::ledger::{Entry, EntryKind};
use rein::llm::{rebuild_request, request_body};
use rein::planner::PromptCompaction;
use rein::tool::Digest;
use rein::{Ledger, ScriptedPlanner};

use crate::datadir::DataDir;
use crate::exit::{CliError, CliResult, Exit};
use crate::scenario::{self, PlannerDef, Setup};

/// Prints the request body of step `step`'s model call `call` (from 1).
pub(crate) fn prompt(
    step: u32,
    call: u32,
    scenario_file: &std::path::Path,
    entries: Vec<Entry>,
    data: &DataDir,
) -> CliResult {
    let loaded = scenario::load(scenario_file)?;
    let checked = scenario::check(&loaded, &Setup::default())?;
    let PlannerDef::Llm(def) = &checked.scenario.planner else {
        return Err(CliError::bad_input(format!(
            "{}: the planner is not a model (\"planner\": {{\"llm\": ...}}), so no step has a prompt",
            scenario_file.display()
        )));
    };
    // The policy, tools and skills come from the scenario; no model is called.
    let engine = scenario::builder(&checked.scenario, 0)
        .planner(ScriptedPlanner::new([]))
        .build()
        .map_err(|e| CliError::bad_input(e.to_string()))?;
    let Some(id) = entries.first().map(|e| e.run_id().clone()) else {
        return Err(CliError::bad_input("the ledger is empty"));
    };
    // A follow-up's requests open with the earlier runs of its conversation: their
    // ledgers are read from the data directory, each verified and its link checked.
    let earlier = match entries
        .iter()
        .take(4)
        .find_map(crate::conversation::Link::of)
    {
        None => Vec::new(),
        Some(link) => crate::conversation::read(&id, link, data)?
            .into_iter()
            .map(|(run, entries)| {
                Ledger::from_entries(run, entries)
                    .map_err(|e| CliError::new(Exit::LedgerBroken, e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let ledger = Ledger::from_entries(id, entries)
        .map_err(|e| CliError::new(Exit::LedgerBroken, e.to_string()))?;
    let Some(index) = call.checked_sub(1) else {
        return Err(CliError::bad_input(
            "--call counts a step's model calls from 1: give 1 or more",
        ));
    };
    // The hash of that call's first attempt (an old ledger may hold outcomes only).
    // With the provider and model each went to: a fallback model gets its own body.
    let attempts: Vec<(Digest, String, String)> = ledger
        .model_calls_of_step(step)
        .into_iter()
        .filter_map(|e| match e.event() {
            EntryKind::PlannerAttempt { attempt, .. } => Some((
                attempt.request_hash,
                attempt.provider.clone(),
                attempt.model.clone(),
            )),
            _ => None,
        })
        .collect();
    let recorded = if attempts.is_empty() {
        ledger.entries().iter().find_map(|e| match e.event() {
            EntryKind::PlannerCall { step: s, call } if *s == step && index == 0 => {
                Some((call.request_hash, call.provider.clone(), call.model.clone()))
            }
            _ => None,
        })
    } else {
        attempts
            .get(usize::try_from(index).unwrap_or(usize::MAX))
            .cloned()
    };
    if index > 0 && recorded.is_none() {
        return Err(CliError::bad_input(format!(
            "step {step} made {} model call(s), not {call}: give --call between 1 and that",
            attempts.len()
        )));
    }
    // The compaction the planner recorded for this call, before its first attempt.
    let compaction = recorded_compaction(&ledger, step, index);
    let chat = engine
        .plan_request_in_conversation(&ledger, &earlier, step, index, |request| {
            rebuild_request(&def.planner.prompt, &request, compaction)
        })
        .map_err(|e| CliError::new(Exit::LedgerBroken, e.to_string()))?
        .ok_or_else(|| {
            CliError::bad_input(format!(
                "the run never planned step {step}: give a step its ledger shows"
            ))
        })?;
    let Some((recorded, provider, model)) = recorded else {
        return Err(CliError::bad_input(format!(
            "step {step} made no model call: give a step whose ledger shows a planner_attempt"
        )));
    };
    // The provider the attempt was sent to: the primary, or the fallback of that model.
    let config = def
        .providers()
        .find(|p| p.api.as_str() == provider && p.model == model)
        .unwrap_or(&def.provider);
    let body = request_body(config, &chat);
    let hash = Digest::of_bytes(&body);
    if hash != recorded {
        return Err(CliError::new(
            Exit::LedgerBroken,
            format!(
                "the request rebuilt for step {step} hashes to {hash}, but the ledger recorded \
                 {recorded}: the scenario's planner configuration is not the one the run used"
            ),
        ));
    }
    let pretty = serde_json::from_slice::<serde_json::Value>(&body)
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| String::from_utf8_lossy(&body).into_owned());
    outln!("{pretty}");
    if let Some(c) = compaction {
        // Where it was cut, or (an entry written before the cut was recorded) how many
        // messages were left out.
        let which = match (c.kept_from, &c.dropped) {
            (Some(at), _) => format!("those before evidence item {at}"),
            (None, Some(dropped)) => format!("{} messages", dropped.len()),
            (None, None) => "the last keep_last items kept".to_owned(),
        };
        outln!(
            "compacted: {} earlier replies and {} tool results left out ({which}, summary sha256 {})",
            c.replies,
            c.results,
            c.summary
        );
    }
    outln!("request sha256 {hash}: matches the ledger");
    Ok(Exit::Ok)
}

/// The `prompt_compacted` entry of model call `index` (from 0) of step `step`: the last
/// one of the step after the call before it started and before this call's first attempt.
fn recorded_compaction(ledger: &Ledger, step: u32, index: u32) -> Option<&PromptCompaction> {
    let entries = ledger.entries();
    let starts = rein::ledger::model_call_starts(entries, step);
    let index = usize::try_from(index).ok()?;
    let end = *starts.get(index)?;
    let begin = index.checked_sub(1).map_or(0, |before| starts[before] + 1);
    entries[begin..end]
        .iter()
        .rev()
        .find_map(|e| match e.event() {
            EntryKind::PromptCompacted {
                step: s,
                compaction,
            } if *s == step => Some(compaction),
            _ => None,
        })
}
