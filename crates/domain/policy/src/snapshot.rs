//! `PolicySnapshot`: the policy a run starts under, recorded with it.

use rein_run::{Digest, State, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    ApprovalMode, ApprovalPolicy, Budget, Deadline, Eligibility, EligibilityRules, OnToolError,
    OnViolation, Transitions,
};

/// Everything that decides what a run may do, as recorded when it starts. Resume uses the
/// recorded snapshot, so restarting with a different configuration cannot widen what a
/// running run may do.
///
/// ```
/// use rein_policy::PolicySnapshot;
/// let snap = PolicySnapshot::default();
/// assert_eq!(snap.max_steps, 100);
/// let value = snap.to_value();
/// assert_eq!(serde_json::from_str::<PolicySnapshot>("{}")?, snap); // serde and Default agree
/// assert_eq!(PolicySnapshot::from_value(&value)?, snap);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Omitted fields take their value from `Default` (container-level `default`), never from
// their type's own default, so one omitted field and an omitted whole agree.
#[serde(deny_unknown_fields, default)]
pub struct PolicySnapshot {
    /// Budget limits.
    pub budget: Budget,
    /// Eligibility rules.
    pub eligibility: EligibilityRules,
    /// The transition table.
    pub transitions: Transitions,
    /// The approval policy.
    pub approvals: ApprovalPolicy,
    /// The most decisions a run may take.
    pub max_steps: u32,
    /// Whether rejected decisions are handed back to the planner, and how often. Recorded
    /// only when it is not the default, so ledgers written before it existed read the same.
    #[serde(default, skip_serializing_if = "OnViolation::is_fail_run")]
    pub on_violation: OnViolation,
    /// Whether a failed tool call is handed back to the planner or fails the run. Recorded
    /// only when it is not the default, so ledgers written before it existed read the same.
    #[serde(default, skip_serializing_if = "OnToolError::is_fail_run")]
    pub on_tool_error: OnToolError,
    /// How long a run may take on the engine's clock (its `time` budget); `None`: no limit.
    /// Recorded only when set, so ledgers written before it existed read the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Deadline>,
    /// The JSON Schema a `finish`'s result must match; `None`: any result. A result that
    /// does not match is a rejected decision. Recorded only when set, so ledgers written
    /// before it existed read the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_schema: Option<Value>,
    /// The hooks the run is governed by, in the order they are asked: a resume whose
    /// engine lacks one of them refuses to drive the run. Recorded only when there are
    /// some, so ledgers written before hooks existed read the same.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookRef>,
}

/// A hook as a policy snapshot names it: its name and, for a command hook, the SHA-256 of
/// its command line and of the script file it runs (so a changed script is another hook).
///
/// ```
/// use rein_policy::HookRef;
/// let hook = HookRef::named("audit");
/// assert_eq!(serde_json::to_value(&hook)?, serde_json::json!({"name": "audit"}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookRef {
    /// The hook's name.
    pub name: String,
    /// For a command hook: the SHA-256 of its command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Digest>,
    /// For a command hook: the SHA-256 of the script file it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<Digest>,
}

impl HookRef {
    /// An in-process hook, known by its name alone.
    #[must_use]
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            command: None,
            script: None,
        }
    }
}

impl std::fmt::Display for HookRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.name)?;
        if let Some(command) = &self.command {
            write!(f, " (command sha256 {command}")?;
            if let Some(script) = &self.script {
                write!(f, ", script sha256 {script}")?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

const fn default_max_steps() -> u32 {
    100
}

impl Default for PolicySnapshot {
    /// The default policies of DESIGN.md §2, no budget limits, at most 100 steps.
    fn default() -> Self {
        Self {
            budget: Budget::default(),
            eligibility: EligibilityRules::default(),
            transitions: Transitions::default(),
            approvals: ApprovalPolicy::default(),
            max_steps: default_max_steps(),
            on_violation: OnViolation::FailRun,
            on_tool_error: OnToolError::FailRun,
            deadline: None,
            result_schema: None,
            hooks: Vec::new(),
        }
    }
}

impl PolicySnapshot {
    /// The snapshot as JSON, as a run records it.
    #[must_use]
    pub fn to_value(&self) -> Value {
        // Serializing plain data with string keys into a `Value` cannot fail.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Reads a snapshot a run recorded.
    ///
    /// # Errors
    /// When the JSON is not a valid snapshot (an invalid transition table, unknown fields…).
    pub fn from_value(value: &Value) -> Result<Self, serde_json::Error> {
        Self::deserialize(value)
    }

    /// Whether `self` allows nothing that `wider` does not, for the registered `tools`:
    /// budget limits within, no more steps, no more rejections or tool errors handed back, the same or
    /// fewer transitions, no tool eligible in a state where `wider` does not let it run,
    /// every call that `wider` sends for approval sent for approval here too, no longer an
    /// approval timeout, no in-process approval where `wider`'s are durable, no more
    /// time, and the same result schema (or one where `wider` has none). Rules that cannot
    /// be built over `tools` are within nothing.
    /// This is what narrowing a live run's policy must keep.
    ///
    /// ```
    /// use rein_policy::{EligibilityRules, PolicySnapshot};
    /// use rein_run::State;
    /// use rein_tool::{Annotations, ToolSpec};
    ///
    /// let tools = [ToolSpec::new("read".parse()?, "").with_annotations(Annotations::read_only())];
    /// let wide = PolicySnapshot::default();
    /// let narrow = PolicySnapshot {
    ///     eligibility: EligibilityRules::explicit([(State::Explore, vec!["read".parse()?])]),
    ///     max_steps: 10,
    ///     ..PolicySnapshot::default()
    /// };
    /// assert!(narrow.is_within(&wide, &tools));
    /// assert!(!wide.is_within(&narrow, &tools));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn is_within(&self, wider: &Self, tools: &[ToolSpec]) -> bool {
        let (Ok(mine), Ok(theirs)) = (
            Eligibility::new(self.eligibility.clone(), tools),
            Eligibility::new(wider.eligibility.clone(), tools),
        ) else {
            return false;
        };
        self.budget.is_within(&wider.budget)
            // A hook the wider policy asks is asked here too.
            && wider.hooks.iter().all(|hook| self.hooks.contains(hook))
            && self.max_steps <= wider.max_steps
            && self.on_violation.is_within(&wider.on_violation)
            && self.on_tool_error.is_within(&wider.on_tool_error)
            && self.approvals.timeout() <= wider.approvals.timeout()
            // A verdict that waits for a person is never traded for one the engine's approver
            // gives in process.
            && (self.approvals.mode() == wider.approvals.mode()
                || self.approvals.mode() == ApprovalMode::Durable)
            && Deadline::is_within(self.deadline.as_ref(), wider.deadline.as_ref())
            // A result schema is kept as it is: whether one schema accepts less than another
            // is not decidable here, so only adding one where there was none narrows.
            && (wider.result_schema.is_none() || self.result_schema == wider.result_schema)
            && tools.iter().all(|spec| {
                (wider.approvals.requires(spec).is_none()
                    || self.approvals.requires(spec).is_some())
                    && State::ALL
                        .into_iter()
                        .all(|state| !mine.allows(state, spec) || theirs.allows(state, spec))
            })
            && State::ALL.into_iter().all(|from| {
                State::ALL.into_iter().all(|to| {
                    !self.transitions.allows(from, to) || wider.transitions.allows(from, to)
                })
            })
    }
}
