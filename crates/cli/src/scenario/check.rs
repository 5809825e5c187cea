//! Checking a parsed scenario: what serde cannot see (which fields go with which tool kind,
//! names, paths that would leave the workspace), then building the engine — the authority
//! on policies — and pointing its refusals back into the file.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rein::policy::EligibilityError;
use rein::run::BudgetName;
use rein::{BuildError, Decision, ToolName};

use super::build::builder;
use super::model::{Behavior, Scenario, ToolDef, ToolKind};
use super::paths::{ToolProblem, check_count_file, check_script_path, check_skills, normalize};
use super::{Loaded, ScenarioError};
use crate::locate::{JsonPath, SpanIndex};

/// What the command adds to the file: overrides and where run-time files go.
#[derive(Debug, Clone, Default)]
pub(crate) struct Setup {
    /// `--workspace DIR`, canonical: replaces the file's `workspace`.
    pub(crate) workspace: Option<PathBuf>,
    /// The data directory (absolute): relative `count_file`s go there.
    pub(crate) data_dir: Option<PathBuf>,
}

/// A scenario that passed every check, with its paths resolved (absolute), and the
/// warnings worth showing.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    /// The scenario, paths resolved: what `rein run` persists for `rein resume`.
    pub(crate) scenario: Scenario,
    /// Things that are allowed but probably not meant.
    pub(crate) warnings: Vec<String>,
}

/// Checks `loaded` and resolves its paths.
///
/// # Errors
/// The first problem found, pointing into the file.
pub(crate) fn check(loaded: &Loaded, setup: &Setup) -> Result<Checked, ScenarioError> {
    let at = |path: JsonPath, message: String| {
        ScenarioError::at(&loaded.file, &loaded.text, path, message)
    };
    let mut scenario = loaded.scenario.clone();
    let root = JsonPath::root();
    let tools_path = root.key("tools");

    // The workspace: the flag wins; the file's is relative to the file.
    if let Some(dir) = &setup.workspace {
        scenario.workspace = Some(dir.clone());
    } else if let Some(dir) = &scenario.workspace {
        let full = loaded.dir.join(dir);
        match full.canonicalize() {
            Ok(canonical) if canonical.is_dir() => scenario.workspace = Some(canonical),
            Ok(_) => {
                return Err(at(
                    root.key("workspace"),
                    format!("the workspace {} is not a directory", full.display()),
                ));
            }
            Err(e) => {
                return Err(at(
                    root.key("workspace"),
                    format!("the workspace {} cannot be used: {e}", full.display()),
                )
                .help("the workspace is a directory, relative to the scenario file (or pass --workspace DIR)"));
            }
        }
    }

    // Skills: the folder is relative to the file; every skill in it must load.
    if let Some(dir) = &scenario.skills {
        let resolved = check_skills(dir, &loaded.dir).map_err(|why| {
            at(root.key("skills"), why).help(
                "\"skills\" is a folder with one folder per skill, each holding a SKILL.md that starts with ---, name:, description:, ---",
            )
        })?;
        scenario.skills = Some(resolved);
    }

    // Tools: kinds, fields, names, duplicates.
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    let problem = |(path, message, help): ToolProblem| {
        let e = at(path, message);
        match help {
            Some(help) => e.help(help),
            None => e,
        }
    };
    // A PostgreSQL store has no data directory: count files then go into the workspace,
    // which is stored with the run, so every worker that drives it counts in one place.
    scenario.data_dir = setup
        .data_dir
        .clone()
        .or_else(|| scenario.workspace.clone());
    let mut builtin_warnings = Vec::new();
    for (i, def) in scenario.tools.iter_mut().enumerate() {
        let path = tools_path.index(i);
        normalize(def, &path).map_err(problem)?;
        let checked_tool = if def.kind == Some(ToolKind::Mcp) || def.server.is_some() {
            super::mcp::check(def, &path, &loaded.dir)
        } else {
            check_tool(def, &path, scenario.workspace.is_some())
        };
        let (name, key) = checked_tool.map_err(problem)?;
        if def.kind != Some(ToolKind::Mcp)
            && let Some(warning) = super::builtin::check(def, &path).map_err(problem)?
        {
            builtin_warnings.push(warning);
        }
        if let Some(first) = names.insert(name.clone(), i) {
            return Err(at(
                path.key(key),
                format!(
                    "a tool named `{name}` is declared twice (first at tools[{first}]); tool names must be unique"
                ),
            ));
        }
        if let Some(file) = &def.count_file
            && let Err(why) = check_count_file(file, scenario.data_dir.as_deref())
        {
            return Err(at(path.key("count_file"), why).help(
                "write a path such as \"counts/charge.log\"; it is created inside the data directory (inside the workspace on a PostgreSQL store)",
            ));
        }
    }

    // Hooks: matchers, names, and commands resolved next to the scenario file.
    let hooks_path = root.key("hooks");
    let mut hook_names: BTreeMap<String, usize> = BTreeMap::new();
    for (i, def) in scenario.hooks.iter_mut().enumerate() {
        let path = hooks_path.index(i);
        super::hooks::check(def, &path, &loaded.dir)
            .map_err(|(path, message)| at(path, message))?;
        if let Some(first) = hook_names.insert(def.name_at(i), i) {
            return Err(at(
                path.key("name"),
                format!(
                    "a hook named `{}` is declared twice (first at hooks[{first}]); hook names must be unique",
                    def.name_at(i)
                ),
            ));
        }
    }

    // Budget names.
    for name in scenario.policies.budgets.keys() {
        if let Err(e) = BudgetName::new(name.as_str()) {
            return Err(at(
                root.key("policies").key("budgets").key(name.as_str()),
                e.to_string(),
            ));
        }
    }

    // The script: paths the file tools would refuse, tools nobody declared.
    let mut warnings = builtin_warnings;
    let steps: &[_] = match &scenario.planner {
        super::model::PlannerDef::Scripted(steps) => steps,
        super::model::PlannerDef::Llm(def) => {
            super::llm::check(def, &scenario.tools).map_err(|(key, message)| {
                at(root.key("planner").key("llm").key(key), message).help(format!(
                    "an LLM planner looks like {}",
                    super::llm::example()
                ))
            })?;
            // A `cost` budget binds only calls whose cost is known: every model priced.
            if scenario
                .policies
                .budgets
                .contains_key(BudgetName::COST.as_str())
            {
                rein::llm::Prices::check_priced(
                    def.planner.prices.as_ref(),
                    def.providers().map(|p| p.model.as_str()),
                )
                .map_err(|e| {
                    at(
                        root.key("policies")
                            .key("budgets")
                            .key(BudgetName::COST.as_str()),
                        e.to_string(),
                    )
                })?;
            }
            &[]
        }
    };
    let scripts = std::iter::once((root.key("planner").key("scripted"), steps)).chain(
        scenario
            .planners
            .iter()
            .map(|(name, steps)| (root.key("planners").key(name.as_str()), steps.as_slice())),
    );
    for (script_path, steps) in scripts {
        for (i, step) in steps.iter().enumerate() {
            let step_path = script_path.index(i);
            // Each decision with the path that names it; a sequence's members each.
            let mut decisions = Vec::new();
            for (field, decision) in [
                ("decision", Some(step.decision())),
                ("otherwise", step.otherwise()),
            ] {
                let path = step_path.key(field);
                match decision {
                    Some(Decision::Sequence {
                        decisions: members, ..
                    }) => decisions.extend(
                        members
                            .iter()
                            .enumerate()
                            .map(|(j, m)| (path.key("decisions").index(j), m)),
                    ),
                    Some(decision) => decisions.push((path, decision)),
                    None => {}
                }
            }
            for (path, decision) in decisions {
                if let Decision::Delegate {
                    planner: Some(planner),
                    ..
                } = decision
                    && !scenario.planners.contains_key(planner)
                {
                    warnings.push(format!(
                        "{path} delegates to planner `{planner}`, which `planners` does not define; the engine will reject the delegation"
                    ));
                }
                // A call, or each call of a batch, with the path that names it.
                let calls: Vec<_> = match decision {
                    Decision::CallTool { tool, input, .. } => vec![(path, &**tool, input)],
                    Decision::CallTools { calls, .. } => calls
                        .iter()
                        .enumerate()
                        .map(|(j, c)| (path.key("calls").index(j), &*c.tool, &c.input))
                        .collect(),
                    _ => continue,
                };
                for (path, tool, input) in calls {
                    // `skills` brings its own tool, `skill.load`, registered with them.
                    let skill_load =
                        scenario.skills.is_some() && tool == rein::tools::SkillLoad::NAME;
                    if !names.contains_key(tool)
                        && !super::mcp::provides(&names, tool)
                        && !skill_load
                    {
                        warnings.push(format!(
                            "{path} calls `{tool}`, which no tool in the scenario provides; the engine will reject the call"
                        ));
                    }
                    if tool.starts_with("fs.")
                        && let Some(file) = input.get("path").and_then(|p| p.as_str())
                        && let Err(why) = check_script_path(scenario.workspace.as_deref(), file)
                    {
                        return Err(at(path.key("input").key("path"), why).help(
                            "the file tools take paths relative to the workspace and can never leave it",
                        ));
                    }
                }
            }
        }
    }

    // A durable approval is decided by `rein approve`, never by the scenario's approver.
    if scenario.policies.approvals.mode() == rein::policy::ApprovalMode::Durable
        && scenario.approver.is_some()
    {
        warnings.push(format!(
            "{} is durable, so the scenario's \"approver\" is never asked: a call that needs approval pauses the run until `rein approve`",
            root.key("policies").key("approvals").key("mode")
        ));
    }

    // The engine is the authority on policies: build it, and point its refusals into the file.
    if let Err(e) = builder(&scenario, 0).build() {
        return Err(locate_build_error(loaded, &scenario, &e));
    }
    Ok(Checked { scenario, warnings })
}

/// Checks one tool definition; its name and the key that gave it.
fn check_tool(
    def: &ToolDef,
    path: &JsonPath,
    has_workspace: bool,
) -> Result<(String, &'static str), ToolProblem> {
    match (&def.builtin, &def.fixture) {
        (Some(_), Some(_)) => Err((
            path.clone(),
            "a tool is either built-in (\"builtin\") or a fixture (\"fixture\"), not both"
                .to_owned(),
            None,
        )),
        (None, None) => Err((
            path.clone(),
            "a tool needs \"builtin\" or \"fixture\"".to_owned(),
            Some(
                "write {\"builtin\": \"fs.read\"} (`rein tools` lists the built-ins) or {\"fixture\": \"name\", \"behavior\": {\"output\": …}}",
            ),
        )),
        (Some(kind), None) => {
            if let Some((field, _)) = def.fixture_fields().iter().find(|(_, set)| *set) {
                return Err((
                    path.key(*field),
                    format!(
                        "`{field}` applies to fixture tools only; built-in `{}` has a fixed description, annotations and schema",
                        kind.name()
                    ),
                    None,
                ));
            }
            if !has_workspace && *kind != super::model::Builtin::Http {
                return Err((
                    path.key("builtin"),
                    format!(
                        "built-in `{}` needs a workspace to be confined to",
                        kind.name()
                    ),
                    Some(
                        "add \"workspace\": \"DIR\" (relative to the scenario file) or pass --workspace DIR",
                    ),
                ));
            }
            Ok((kind.name().to_owned(), "builtin"))
        }
        (None, Some(name)) => {
            if let Err(e) = ToolName::new(name.as_str()) {
                return Err((path.key("fixture"), e.to_string(), None));
            }
            match &def.behavior {
                None => Err((
                    path.clone(),
                    format!("fixture `{name}` needs a \"behavior\""),
                    Some(
                        "behavior is {\"output\": …}, {\"sequence\": […]}, \"echo\", \"hang\", {\"panic\": \"…\"} or {\"fail\": {\"message\": \"…\"}}",
                    ),
                )),
                Some(Behavior::Sequence(values)) if values.is_empty() => Err((
                    path.key("behavior").key("sequence"),
                    "a sequence needs at least one value".to_owned(),
                    None,
                )),
                Some(_) => {
                    if def
                        .count_file
                        .as_ref()
                        .is_some_and(|f| f.as_os_str().is_empty())
                    {
                        return Err((
                            path.key("count_file"),
                            "the count file's path is empty".to_owned(),
                            None,
                        ));
                    }
                    Ok((name.clone(), "fixture"))
                }
            }
        }
    }
}

/// Points an engine build error at the part of the file it is about.
fn locate_build_error(loaded: &Loaded, scenario: &Scenario, e: &BuildError) -> ScenarioError {
    let root = JsonPath::root();
    let index = SpanIndex::new(&loaded.text);
    let allow = root.key("policies").key("eligibility").key("allow");
    let tool_index = |name: &str| {
        scenario.tools.iter().position(|t| {
            t.fixture.as_deref() == Some(name) || t.builtin.is_some_and(|b| b.name() == name)
        })
    };
    let in_rule = |state: &str, tool: &str| {
        let list = allow.key(state);
        match index.find_string_in(&list, tool) {
            Some(i) => list.index(i),
            None => list,
        }
    };
    let (path, help) = match e {
        BuildError::InvalidSchema { tool, .. } => (
            tool_index(tool.as_str()).map_or(root.key("tools"), |i| {
                root.key("tools").index(i).key("input_schema")
            }),
            Some(
                "input_schema is a JSON Schema, e.g. {\"type\": \"object\", \"properties\": {\"q\": {\"type\": \"string\"}}, \"required\": [\"q\"]}",
            ),
        ),
        BuildError::Eligibility(EligibilityError::SideEffectOutsideAct { tool, state }) => (
            in_rule(state.as_str(), tool.as_str()),
            Some("tools that are not read_only run only in act: list them under \"act\" only"),
        ),
        BuildError::Eligibility(EligibilityError::UnknownTool { tool, .. }) => {
            let state = scenario_rule_state(scenario, tool);
            (
                state.map_or(allow.clone(), |s| in_rule(&s, tool.as_str())),
                Some("declare the tool under \"tools\", or remove it from the rule"),
            )
        }
        BuildError::Eligibility(EligibilityError::TerminalState { state }) => (
            allow.key(state.as_str()),
            Some("done and failed run nothing: remove the rule"),
        ),
        BuildError::Eligibility(_) => (root.key("policies").key("eligibility"), None),
        BuildError::Transitions(_) => (root.key("policies").key("transitions"), None),
        BuildError::DuplicateTool(_) => (root.key("tools"), None),
        BuildError::InvalidOption {
            option: "deadline", ..
        } => (
            root.key("policies").key("deadline").key("time_ms"),
            Some("a deadline is milliseconds from the run's start, above 0 and at most a year"),
        ),
        BuildError::InvalidOption { .. } => (root.key("policies"), None),
        BuildError::InvalidResultSchema { .. } => (
            root.key("policies").key("result_schema"),
            Some(
                "result_schema is a JSON Schema for the finish's result, e.g. {\"type\": \"object\", \"required\": [\"answer\"]}",
            ),
        ),
        BuildError::MaxDepthTooLarge { .. } => (
            root.key("max_depth"),
            Some(
                "max_depth counts the levels of delegation below the run: its children are at 1, theirs at 2",
            ),
        ),
        _ => (root, None),
    };
    let error = ScenarioError::at(&loaded.file, &loaded.text, path, e.to_string());
    match help {
        Some(help) => error.help(help),
        None => error,
    }
}

/// The state whose explicit eligibility rule names `tool`.
fn scenario_rule_state(scenario: &Scenario, tool: &ToolName) -> Option<String> {
    let rein::policy::EligibilityRules::Explicit { allow } = &scenario.policies.eligibility else {
        return None;
    };
    allow
        .iter()
        .find(|(_, tools)| tools.contains(tool))
        .map(|(state, _)| state.as_str().to_owned())
}
