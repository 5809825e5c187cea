//! `rein tools`: every built-in tool, its annotations, the states the default eligibility
//! lets it run in, and whether the default approval policy asks before it runs.

use rein::policy::{Eligibility, EligibilityRules};
use rein::tools::SkillLoad;
use rein::{ApprovalPolicy, State, ToolSpec, Value, json};

use crate::cli::ToolsArgs;
use crate::exit::{CliError, CliResult, Exit};
use crate::scenario::Builtin;

/// `rein tools`.
pub(crate) fn tools(args: &ToolsArgs) -> CliResult {
    let mut specs: Vec<(ToolSpec, &str)> = Builtin::ALL
        .iter()
        .map(|&b| {
            let how = match b {
                Builtin::Shell => {
                    "a \"tools\" entry with \"shell\": {\"allow\": [PROGRAMS]} (launchers, timeout_ms, max_timeout_ms, output_cap, spill_cap, env, sandbox, max_processes, isolation)"
                }
                Builtin::Http => {
                    "a \"tools\" entry with \"http\": {\"allow_hosts\": [HOSTS]} (max_bytes, timeout_ms; an empty list allows nothing; with \"post\": true it may POST, so it has side effects and runs only in act)"
                }
                _ => "a \"tools\" entry",
            };
            (b.spec(false), how)
        })
        .collect();
    specs.push((SkillLoad::spec(), "added by \"skills\""));

    let all: Vec<ToolSpec> = specs.iter().map(|(s, _)| s.clone()).collect();
    let eligibility = Eligibility::new(EligibilityRules::default(), &all).map_err(|e| {
        CliError::new(
            Exit::Failed,
            format!("the default eligibility refused a built-in: {e}"),
        )
    })?;
    let approvals = ApprovalPolicy::default();
    let rows: Vec<Value> = specs
        .iter()
        .map(|(spec, scenarios)| {
            let a = spec.annotations();
            let states: Vec<&str> = State::ALL
                .iter()
                .filter(|&&s| eligibility.allows(s, spec))
                .map(|s| s.as_str())
                .collect();
            json!({
                "name": spec.name().as_str(),
                "description": spec.description(),
                "read_only": a.is_read_only(),
                "destructive": a.is_destructive(),
                "idempotent": a.is_idempotent(),
                "risk": a.risk_level().as_str(),
                "states": states,
                "approval": approvals.requires(spec).map(|r| r.to_string()),
                "scenarios": scenarios,
            })
        })
        .collect();
    if args.json {
        outln!("{}", Value::Array(rows));
        return Ok(Exit::Ok);
    }
    outln!("built-in tools (default eligibility and approval policy):");
    for row in &rows {
        let flags = [
            ("read-only", row["read_only"] == true),
            ("destructive", row["destructive"] == true),
            ("idempotent", row["idempotent"] == true),
        ];
        let mut shown: Vec<String> = flags
            .iter()
            .filter(|(_, on)| *on)
            .map(|(name, _)| (*name).to_owned())
            .collect();
        if row["read_only"] == false && row["destructive"] == false {
            shown.insert(0, "side effects".to_owned());
        }
        shown.push(format!("risk {}", row["risk"].as_str().unwrap_or_default()));
        let states: Vec<&str> = row["states"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let approval = row["approval"]
            .as_str()
            .map_or_else(|| "no".to_owned(), |why| format!("yes ({why})"));
        outln!("  {}", row["name"].as_str().unwrap_or_default());
        outln!("    {}", row["description"].as_str().unwrap_or_default());
        outln!("    annotations  {}", shown.join(", "));
        outln!("    runs in      {}", states.join(", "));
        outln!("    approval     {approval}");
        outln!(
            "    scenarios    {}",
            row["scenarios"].as_str().unwrap_or_default()
        );
    }
    Ok(Exit::Ok)
}
