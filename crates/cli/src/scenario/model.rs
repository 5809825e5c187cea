//! The scenario file format, as serde types. Unknown fields are errors everywhere; every
//! field is documented with an example in `docs/SCENARIOS.md`, and `rein schema scenario`
//! prints the JSON Schema (kept in step with these types by a test).

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::PathBuf;

use rein::policy::{EligibilityRules, Transitions};
use rein::{ApprovalPolicy, ScriptStep, Value};
use serde::{Deserialize, Serialize};
use serde_json::Map;

mod llm;
mod tool;

pub(crate) use llm::LlmDef;
pub(crate) use tool::{
    Behavior, Builtin, ElicitFrom, IsolationDef, SampleFrom, SecretValue, ToolDef, ToolKind,
};

/// A scenario: a goal, the policies it runs under, the tools it may use, and a planner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Scenario {
    /// Where an editor finds the schema (ignored by rein).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub(crate) schema: Option<String>,
    /// What the scenario shows, in one line.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) description: String,
    /// The run's goal, as the planner sees it.
    pub(crate) goal: String,
    /// Variables the planner can read.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub(crate) vars: Map<String, Value>,
    /// The most decisions the run may take (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_steps: Option<u32>,
    /// Budgets, eligibility, transitions, approvals, and what rejections and tool errors do.
    #[serde(default)]
    pub(crate) policies: Policies,
    /// Who answers approval requests; none means every request is denied (fail closed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) approver: Option<ApproverDef>,
    /// The tools: built-in file tools and fixture tools.
    #[serde(default)]
    pub(crate) tools: Vec<ToolDef>,
    /// Who proposes the decisions.
    pub(crate) planner: PlannerDef,
    /// Answers to the run's questions to a human, used in order when it pauses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) answers: Vec<String>,
    /// The directory the built-in file tools are confined to, relative to the scenario file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) workspace: Option<PathBuf>,
    /// Timeouts, retries and circuit breakers.
    #[serde(default)]
    pub(crate) resilience: ResilienceDef,
    /// A folder of skills (one folder per skill, each with a SKILL.md), relative to the
    /// scenario file: offered to the planner, loaded with the `skill.load` tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) skills: Option<PathBuf>,
    /// Planners a `delegate` decision may name, each a script (as `planner.scripted`): the
    /// child runs it delegates are driven by the one it names.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) planners: BTreeMap<String, Vec<ScriptStep>>,
    /// How deep delegation may go: the run is at depth 0, its children at 1 (default 2, at
    /// most `rein::subrun::MAX_DEPTH_CEILING`, which building the engine checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_depth: Option<u32>,
    /// Command hooks: programs asked at points of the run, whose verdicts can only narrow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) hooks: Vec<super::hooks::HookDef>,
    /// The data directory count files are confined to: set by the check from the command
    /// line, never read from or written to the file.
    #[serde(skip)]
    pub(crate) data_dir: Option<PathBuf>,
}

/// The policies a run starts under (recorded in its ledger).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Policies {
    /// Budget limits by name (`tool_calls`, `steps`, `tokens`, or your own).
    #[serde(default)]
    pub(crate) budgets: BTreeMap<String, u64>,
    /// Which tools may run in which state.
    #[serde(default)]
    pub(crate) eligibility: EligibilityRules,
    /// Which state may follow which (default: the standard table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) transitions: Option<Transitions>,
    /// Which calls need approval.
    #[serde(default)]
    pub(crate) approvals: ApprovalPolicy,
    /// What a rejected decision does; none: what the planner asks for (handed back to a
    /// model, the run failed under a script).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) on_violation: Option<OnViolationDef>,
    /// What a failed tool call does; none: what the planner asks for, as `on_violation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) on_tool_error: Option<OnToolErrorDef>,
    /// How long the run may take (its `time` budget), on the engine's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) deadline: Option<rein::policy::Deadline>,
    /// The JSON Schema the run's `finish` result must match; none: any result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) result_schema: Option<serde_json::Value>,
}

/// What a rejected decision does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum OnViolationDef {
    /// The run fails (the default).
    #[default]
    Fail,
    /// The rejection goes back to the planner as evidence, at most `limit` times.
    HandBack {
        /// How many rejections may be handed back.
        limit: u64,
    },
}

/// What a failed tool call does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OnToolErrorDef {
    /// The run fails (the default).
    #[default]
    Fail,
    /// The failure goes back to the planner as evidence.
    HandBack,
}

/// Who answers approval requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ApproverDef {
    /// Grants every request.
    Auto,
    /// Denies every request.
    Deny,
    /// Answers requests in order from a list.
    Scripted(Vec<ScriptedAnswer>),
}

/// One answer of a scripted approver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScriptedAnswer {
    /// Grant or deny.
    pub(crate) answer: Answer,
    /// Why (recorded in the ledger).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) reason: String,
    /// How long the approver takes to answer, to exercise the approval timeout.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) delay_ms: u64,
}

/// A scripted approver's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Answer {
    /// Approve the call.
    Grant,
    /// Refuse the call.
    Deny,
}

/// Who proposes the decisions: `{"scripted": [...]}`, `{"llm": {...}}`, or the same model
/// spelled `{"kind": "llm", "provider": {...}, "planner": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PlannerDef {
    /// A script: step `n` of the run gets the script's step `n`.
    Scripted(Vec<ScriptStep>),
    /// A model, through an OpenAI-compatible or Anthropic server.
    Llm(Box<LlmDef>),
}

impl<'de> Deserialize<'de> for PlannerDef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PlannerVisitor)
    }
}

/// Reads a planner as it streams by, so an error inside a script keeps its position.
struct PlannerVisitor;

/// The keys a planner object may have.
const PLANNER_KEYS: &[&str] = &[
    "scripted",
    "llm",
    "kind",
    "provider",
    "fallbacks",
    "planner",
];

impl<'de> serde::de::Visitor<'de> for PlannerVisitor {
    type Value = PlannerDef;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(r#"{"scripted": [...]}, {"llm": {...}} or {"kind": "llm", "provider": {...}}"#)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<PlannerDef, A::Error> {
        use serde::de::Error as _;
        let (mut tagged, mut kind, mut provider, mut planner) = (Vec::new(), false, None, None);
        let mut fallbacks = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "scripted" => tagged.push(PlannerDef::Scripted(map.next_value()?)),
                "llm" => tagged.push(PlannerDef::Llm(map.next_value()?)),
                "kind" => {
                    let named: String = map.next_value()?;
                    if named != "llm" {
                        return Err(A::Error::invalid_value(
                            serde::de::Unexpected::Str(&named),
                            &r#""llm" (a script is {"scripted": [...]})"#,
                        ));
                    }
                    kind = true;
                }
                "provider" => provider = Some(map.next_value()?),
                "fallbacks" => fallbacks = Some(map.next_value()?),
                "planner" => planner = Some(map.next_value()?),
                other => return Err(A::Error::unknown_field(other, PLANNER_KEYS)),
            }
        }
        let flat = kind || provider.is_some() || fallbacks.is_some() || planner.is_some();
        match (tagged.pop(), tagged.is_empty(), flat) {
            (Some(def), true, false) => Ok(def),
            (None, _, true) if !kind => Err(A::Error::missing_field("kind")),
            (None, _, true) => Ok(PlannerDef::Llm(Box::new(LlmDef {
                provider: provider.ok_or_else(|| A::Error::missing_field("provider"))?,
                fallbacks: fallbacks.unwrap_or_default(),
                planner: planner.unwrap_or_default(),
            }))),
            (None, _, false) => Err(A::Error::custom(
                r#"the planner is empty: give {"scripted": [...]}, {"llm": {...}} or {"kind": "llm", "provider": {...}}"#,
            )),
            _ => Err(A::Error::custom(
                "give one planner: \"scripted\", \"llm\" or \"kind\": \"llm\", not several",
            )),
        }
    }
}

/// How tools run: timeouts, retries, circuit breakers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResilienceDef {
    /// The timeout of each attempt of a tool without a `timeout_ms` annotation (default
    /// 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) default_timeout_ms: Option<u64>,
    /// Retries of idempotent tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) retry: Option<RetryDef>,
    /// The per-tool circuit breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) breaker: Option<BreakerDef>,
}

/// Retries of idempotent tools after transient errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RetryDef {
    /// Attempts per call, the first included (1 = no retries; default 3).
    pub(crate) max_attempts: NonZeroU32,
    /// The first backoff (default 100); it doubles each retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) min_backoff_ms: Option<u64>,
    /// The longest backoff (default 5000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_backoff_ms: Option<u64>,
}

/// The per-tool circuit breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BreakerDef {
    /// Consecutive failed calls that open the breaker (default 5).
    pub(crate) consecutive_failures: NonZeroU32,
    /// How long it stays open (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) open_for_ms: Option<u64>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
const fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;
    use serde_json::json;

    /// For every subset of `full`'s fields, removes them, reads the rest (plus `required`)
    /// and checks that each removed field reads back as in `default` and each kept one as
    /// in `full` read back: omitting one field and omitting the whole object agree.
    fn check<T: Serialize + DeserializeOwned>(default: &T, required: &Value, full: &Value) {
        let read = |fields: &Map<String, Value>| {
            let mut input = required.as_object().cloned().unwrap_or_default();
            input.extend(fields.clone());
            let t: T = serde_json::from_value(Value::Object(input)).unwrap();
            serde_json::to_value(t).unwrap()
        };
        let default = serde_json::to_value(default).unwrap();
        let full = full.as_object().unwrap();
        let full_back = read(full);
        let keys: Vec<&String> = full.keys().collect();
        for mask in 0u32..(1 << keys.len()) {
            let kept: Map<String, Value> = keys
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) == 0)
                .map(|(_, k)| ((*k).clone(), full[*k].clone()))
                .collect();
            let back = read(&kept);
            for key in &keys {
                let want = if kept.contains_key(*key) {
                    full_back.get(*key)
                } else {
                    default.get(*key)
                };
                assert_eq!(back.get(*key), want, "with {kept:?}, field `{key}`");
            }
        }
    }

    #[test]
    fn every_scenario_def_defaults_field_by_field_like_the_whole() {
        check(
            &Policies::default(),
            &json!({}),
            &json!({
                "budgets": {"tool_calls": 2},
                "eligibility": {"mode": "explicit", "allow": {"act": ["x"]}},
                "transitions": {"intake": ["done"]},
                "approvals": {"timeout_ms": 5},
                "on_violation": {"hand_back": {"limit": 1}},
                "on_tool_error": "hand_back",
                "result_schema": {"type": "object"},
            }),
        );
        check(
            &ResilienceDef::default(),
            &json!({}),
            &json!({
                "default_timeout_ms": 5,
                "retry": {"max_attempts": 2},
                "breaker": {"consecutive_failures": 1},
            }),
        );
        check(
            &ToolDef::default(),
            &json!({}),
            &json!({
                "fixture": "x",
                "description": "d",
                "annotations": {"idempotent": true},
                "input_schema": {"type": "object"},
                "behavior": "echo",
                "fail_first": 1,
                "delay_ms": 2,
                "count_file": "c",
            }),
        );
        let answer = ScriptedAnswer {
            answer: Answer::Grant,
            reason: String::new(),
            delay_ms: 0,
        };
        check(
            &answer,
            &json!({"answer": "grant"}),
            &json!({"reason": "r", "delay_ms": 5}),
        );
    }
}
