//! From a checked scenario to an `EngineBuilder`: tools, planner, approver, policies,
//! resilience. Stores are the caller's choice (in memory to validate, files to run).

use std::time::Duration;

use rein::policy::{Budget, OnToolError, OnViolation, PolicySnapshot};
use rein::resilience::ResilienceConfig;
use rein::run::BudgetName;
use rein::{
    AutoApprover, DenyApprover, Engine, EngineBuilder, ScriptedPlanner, ToolName, ToolSpec, json,
};

use super::approver::ScriptedApprover;
use super::model::{
    ApproverDef, Behavior, OnToolErrorDef, OnViolationDef, PlannerDef, Scenario, ToolDef,
};
use super::tools::{CountFile, FixtureTool, add_builtin};

/// The engine a scenario describes, without stores. `approvals_used` is how many scripted
/// approver answers an earlier process of the same run already gave (0 for a new run).
///
/// The scenario should have passed [`check`](super::check()): what it would refuse (an
/// invalid name, a missing behaviour) is skipped here, never guessed.
pub(crate) fn builder(scenario: &Scenario, approvals_used: usize) -> EngineBuilder {
    let mut builder = Engine::builder();
    for def in &scenario.tools {
        if let Some(kind) = def.builtin {
            builder = add_builtin(builder, kind, def, scenario.workspace.as_deref());
        } else if let Some(tool) = fixture(def, scenario.data_dir.as_deref()) {
            builder = builder.tool(tool);
        }
    }
    if let Some(skills) = scenario
        .skills
        .as_deref()
        .and_then(|dir| rein::tools::load_skills(dir).ok())
    {
        builder = builder
            .tool(rein::tools::SkillLoad::new(skills.clone()))
            .skills(skills);
    }
    builder = match &scenario.planner {
        PlannerDef::Scripted(steps) => builder.planner(ScriptedPlanner::new(steps.iter().cloned())),
        PlannerDef::Llm(def) => super::llm::with_planner(builder, def),
    };
    for (name, steps) in &scenario.planners {
        builder = builder.planner_named(name, ScriptedPlanner::new(steps.iter().cloned()));
    }
    if let Some(depth) = scenario.max_depth {
        builder = builder.max_depth(depth);
    }
    // Command hooks run in the workspace (where `rein` runs when there is none).
    let cwd = scenario
        .workspace
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    for (index, def) in scenario.hooks.iter().enumerate() {
        builder = builder.hook(super::hooks::spec(def, index, &cwd));
    }
    builder = match &scenario.approver {
        None => builder,
        Some(ApproverDef::Auto) => builder.approver(AutoApprover),
        Some(ApproverDef::Deny) => builder.approver(DenyApprover),
        Some(ApproverDef::Scripted(answers)) => {
            builder.approver(ScriptedApprover::new(answers.clone(), approvals_used))
        }
    };

    let policies = &scenario.policies;
    let mut budget = Budget::new();
    for (name, &limit) in &policies.budgets {
        if let Ok(name) = BudgetName::new(name.as_str()) {
            budget = budget.with_limit(name, limit);
        }
    }
    let defaults = PolicySnapshot::default();
    let policy = PolicySnapshot {
        budget,
        eligibility: policies.eligibility.clone(),
        transitions: policies.transitions.unwrap_or_default(),
        approvals: policies.approvals.clone(),
        max_steps: scenario.max_steps.unwrap_or(defaults.max_steps),
        deadline: policies.deadline,
        result_schema: policies.result_schema.clone(),
        ..defaults
    };
    builder = builder.policy(policy);
    // Unsaid, both follow the planner: a model gets its mistakes back, a script fails.
    if let Some(on_violation) = policies.on_violation {
        builder = builder.on_violation(match on_violation {
            OnViolationDef::Fail => OnViolation::FailRun,
            OnViolationDef::HandBack { limit } => OnViolation::HandBack { limit },
        });
    }
    if let Some(on_tool_error) = policies.on_tool_error {
        builder = builder.on_tool_error(match on_tool_error {
            OnToolErrorDef::Fail => OnToolError::FailRun,
            OnToolErrorDef::HandBack => OnToolError::HandBack,
        });
    }
    if let Some(context) = crate::telemetry::context() {
        builder = builder.trace_context(context);
    }
    builder.resilience(resilience(scenario))
}

fn fixture(def: &ToolDef, data_dir: Option<&std::path::Path>) -> Option<FixtureTool> {
    let name: ToolName = def.fixture.as_deref()?.parse().ok()?;
    let mut spec = ToolSpec::new(name, def.description.clone().unwrap_or_default())
        .with_annotations(def.annotations.unwrap_or_default());
    spec = spec.with_input_schema(
        def.input_schema
            .clone()
            .unwrap_or_else(|| json!({"type": "object"})),
    );
    let behavior: Behavior = def.behavior.clone()?;
    Some(FixtureTool::new(
        spec,
        behavior,
        def.fail_first.unwrap_or(0),
        Duration::from_millis(def.delay_ms.unwrap_or(0)),
        def.count_file
            .as_ref()
            .and_then(|path| path.to_str())
            .zip(data_dir)
            .map(|(path, data_dir)| CountFile {
                data_dir: data_dir.to_path_buf(),
                path: path.to_owned(),
            }),
    ))
}

fn resilience(scenario: &Scenario) -> ResilienceConfig {
    let def = &scenario.resilience;
    let mut config = ResilienceConfig::default();
    if let Some(ms) = def.default_timeout_ms {
        config.default_timeout = Duration::from_millis(ms);
    }
    if let Some(retry) = def.retry {
        config.retry.max_attempts = retry.max_attempts;
        if let Some(ms) = retry.min_backoff_ms {
            config.retry.min_backoff = Duration::from_millis(ms);
        }
        if let Some(ms) = retry.max_backoff_ms {
            config.retry.max_backoff = Duration::from_millis(ms);
        }
    }
    if let Some(breaker) = def.breaker {
        config.breaker.consecutive_failures = breaker.consecutive_failures;
        if let Some(ms) = breaker.open_for_ms {
            config.breaker.open_for = Duration::from_millis(ms);
        }
    }
    config
}
