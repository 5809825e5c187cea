//! `rein validate`: check a scenario file, engine included, without running it.

use super::existing_dir;
use crate::cli::ValidateArgs;
use crate::exit::{CliResult, Exit};
use crate::scenario::{self, ApproverDef, PlannerDef, Setup};

/// `rein validate`.
pub(crate) fn validate(args: &ValidateArgs) -> CliResult {
    let loaded = scenario::load(&args.scenario)?;
    let workspace = args
        .workspace
        .as_deref()
        .map(|dir| existing_dir(dir, "--workspace"))
        .transpose()?;
    let setup = Setup {
        workspace,
        data_dir: None,
    };
    let checked = scenario::check(&loaded, &setup)?;
    for warning in &checked.warnings {
        eprintln!("warning: {warning}");
    }
    let s = &checked.scenario;
    let tools: Vec<&str> = s
        .tools
        .iter()
        .filter_map(|t| t.builtin.map(|b| b.name()).or(t.fixture.as_deref()))
        .collect();
    let planner = match &s.planner {
        PlannerDef::Scripted(steps) => format!("scripted, {} steps", steps.len()),
        PlannerDef::Llm(def) => format!("llm, {} at {}", def.provider.model, def.provider.base_url),
    };
    let approver = match &s.approver {
        None => "none (approvals fail closed)".to_owned(),
        Some(ApproverDef::Auto) => "auto".to_owned(),
        Some(ApproverDef::Deny) => "deny".to_owned(),
        Some(ApproverDef::Scripted(answers)) => format!("scripted ({} answers)", answers.len()),
    };
    println!("{}: valid ✓", loaded.file);
    if !s.description.is_empty() {
        println!("  {}", s.description);
    }
    println!(
        "  tools: {}",
        if tools.is_empty() {
            "none".to_owned()
        } else {
            tools.join(", ")
        }
    );
    println!("  planner: {planner}");
    println!("  approver: {approver}");
    if !s.policies.budgets.is_empty() {
        let budgets: Vec<String> = s
            .policies
            .budgets
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        println!("  budgets: {}", budgets.join(", "));
    }
    Ok(Exit::Ok)
}
