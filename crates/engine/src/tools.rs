//! The engine's tool table: per tool, its spec, its compiled input schema and its execution
//! stack — all built once per engine, never per run or per call.

use std::collections::HashMap;
use std::sync::Arc;

use rein_resilience::{ExecutionStack, ToolStack};
use rein_run::{State, ToolName, ToolSpec};
use rein_tool::SharedTool;
use serde_json::Value;

use crate::error::BuildError;

/// One registered tool, ready to run.
#[derive(Debug)]
pub(crate) struct ToolEntry {
    pub(crate) spec: ToolSpec,
    pub(crate) validator: jsonschema::Validator,
    pub(crate) stack: ToolStack,
}

impl ToolEntry {
    /// Every way `input` violates the tool's input schema, with JSON paths; empty if none.
    pub(crate) fn schema_errors(&self, input: &Value) -> Vec<String> {
        schema_errors(&self.validator, input)
    }
}

/// Every way `value` violates the schema `validator` was compiled from (at most 8), each
/// with its JSON path and clipped; empty if none.
pub(crate) fn schema_errors(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    if validator.is_valid(value) {
        return Vec::new();
    }
    validator
        .iter_errors(value)
        .take(8)
        .map(|e| {
            let path = e.instance_path().as_str();
            clip(&format!(
                "{}: {e}",
                if path.is_empty() { "/" } else { path }
            ))
        })
        .collect()
}

/// The most characters of planner-made text a rejection message repeats.
const ECHO_LIMIT: usize = 256;

/// `text` cut to [`ECHO_LIMIT`] characters (with `…`): a rejection repeats what the planner
/// proposed (a name, the value a schema refused), and a megabyte proposed must not come
/// back as megabytes in the ledger and in the evidence a planner is handed back.
pub(crate) fn clip(text: &str) -> String {
    match text.char_indices().nth(ECHO_LIMIT) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// Every tool of an engine, by name, plus the specs allowed in each state (computed once).
#[derive(Debug, Default)]
pub(crate) struct ToolTable {
    by_name: HashMap<ToolName, Arc<ToolEntry>>,
    specs: Vec<ToolSpec>,
}

impl ToolTable {
    pub(crate) fn build(tools: &[SharedTool], stacks: &ExecutionStack) -> Result<Self, BuildError> {
        let mut table = Self::default();
        for tool in tools {
            let spec = tool.spec().clone();
            if table.by_name.contains_key(spec.name()) {
                return Err(BuildError::DuplicateTool(spec.name().clone()));
            }
            let validator = jsonschema::validator_for(spec.input_schema()).map_err(|e| {
                BuildError::InvalidSchema {
                    tool: spec.name().clone(),
                    reason: e.to_string(),
                }
            })?;
            let stack = stacks.build(Arc::clone(tool));
            table.specs.push(spec.clone());
            table.by_name.insert(
                spec.name().clone(),
                Arc::new(ToolEntry {
                    spec,
                    validator,
                    stack,
                }),
            );
        }
        Ok(table)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        self.by_name.get(name)
    }

    pub(crate) fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.specs.iter().map(|s| s.name().to_string()).collect()
    }
}

/// The specs allowed in each state under one eligibility, so planners get a borrowed slice.
#[derive(Debug, Default)]
pub(crate) struct AllowedSpecs {
    per_state: [Vec<ToolSpec>; 7],
}

impl AllowedSpecs {
    pub(crate) fn new(eligibility: &rein_policy::Eligibility, specs: &[ToolSpec]) -> Self {
        let mut per_state: [Vec<ToolSpec>; 7] = Default::default();
        for state in State::ALL {
            per_state[state.index()] = eligibility.allowed_in(state, specs).cloned().collect();
        }
        Self { per_state }
    }

    pub(crate) fn in_state(&self, state: State) -> &[ToolSpec] {
        &self.per_state[state.index()]
    }
}
