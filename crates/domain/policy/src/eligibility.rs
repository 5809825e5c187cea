//! `Eligibility`: which tools may run in which state.

use std::collections::{BTreeMap, BTreeSet};

use rein_run::{State, ToolName, ToolSpec};
use serde::{Deserialize, Serialize};

/// The rules as configured: derived from annotations, or explicit allow-lists per state.
/// Plain data; [`Eligibility::new`] validates it against the registered tools.
///
/// Serialized as `{"mode": "derived"}` or
/// `{"mode": "explicit", "allow": {"explore": ["search"], "act": ["search", "deploy"]}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum EligibilityRules {
    /// The default: read-only tools in `explore`, `act` and `validate`; other tools in `act`;
    /// nothing in `intake` and `decide`.
    #[default]
    Derived,
    /// Exactly the tools listed for each state (a state not listed allows nothing).
    Explicit {
        /// Tool names allowed, per state.
        allow: BTreeMap<State, BTreeSet<ToolName>>,
    },
}

impl EligibilityRules {
    /// Explicit rules from `(state, tools)` pairs.
    ///
    /// ```
    /// use rein_policy::EligibilityRules;
    /// use rein_run::State;
    /// let rules = EligibilityRules::explicit([
    ///     (State::Explore, vec!["search".parse()?]),
    ///     (State::Act, vec!["search".parse()?, "deploy".parse()?]),
    /// ]);
    /// # let _ = rules;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn explicit<I, T>(rules: I) -> Self
    where
        I: IntoIterator<Item = (State, T)>,
        T: IntoIterator<Item = ToolName>,
    {
        let mut allow: BTreeMap<State, BTreeSet<ToolName>> = BTreeMap::new();
        for (state, tools) in rules {
            allow.entry(state).or_default().extend(tools);
        }
        Self::Explicit { allow }
    }
}

/// Which tools may run in which state, validated against the registered tools.
///
/// Whatever the rules say, a tool that is not read-only runs only in `act`: explicit rules
/// that allow one elsewhere are refused when the eligibility is built, and [`Eligibility::check`]
/// enforces it again on every call.
///
/// ```
/// use rein_policy::{Eligibility, EligibilityError, EligibilityRules};
/// use rein_run::State;
/// use rein_tool::{Annotations, ToolSpec};
///
/// let search = ToolSpec::new("search".parse()?, "").with_annotations(Annotations::read_only());
/// let delete = ToolSpec::new("delete".parse()?, "").with_annotations(Annotations::destructive());
/// let tools = [search.clone(), delete.clone()];
///
/// let derived = Eligibility::new(EligibilityRules::Derived, &tools)?;
/// assert!(derived.check(State::Explore, &search).is_ok());
/// assert!(derived.check(State::Explore, &delete).is_err());
/// assert!(derived.check(State::Act, &delete).is_ok());
///
/// let unsafe_rules = EligibilityRules::explicit([(State::Explore, vec!["delete".parse()?])]);
/// assert!(matches!(
///     Eligibility::new(unsafe_rules, &tools),
///     Err(EligibilityError::SideEffectOutsideAct { .. })
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eligibility {
    rules: EligibilityRules,
}

/// Why eligibility rules were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EligibilityError {
    /// A rule lets a tool with side effects run outside `act`.
    #[error(
        "eligibility rule lets `{tool}` run in {state}, but it is not read-only and side effects run only in act; move it to act or mark it read-only"
    )]
    SideEffectOutsideAct {
        /// The tool.
        tool: ToolName,
        /// The state the rule allows it in.
        state: State,
    },
    /// A rule names a tool that is not registered.
    #[error("eligibility rule names unknown tool `{tool}`; registered tools: {known:?}")]
    UnknownTool {
        /// The name in the rule.
        tool: ToolName,
        /// The registered tool names.
        known: Vec<String>,
    },
    /// A rule allows a tool in a terminal state, where nothing runs.
    #[error("eligibility rule allows tools in {state}, a terminal state where nothing runs")]
    TerminalState {
        /// The terminal state.
        state: State,
    },
}

/// A tool is not allowed in the run's state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}` is not eligible in {state}: {reason}")]
pub struct Ineligible {
    /// The tool.
    pub tool: ToolName,
    /// The run's state.
    pub state: State,
    /// Why, in words, with the states where it is eligible.
    pub reason: String,
}

impl Eligibility {
    /// Validates `rules` against the registered `tools`.
    ///
    /// # Errors
    /// [`EligibilityError`] when an explicit rule allows a non-read-only tool outside `act`,
    /// names an unregistered tool, or allows anything in a terminal state.
    pub fn new(rules: EligibilityRules, tools: &[ToolSpec]) -> Result<Self, EligibilityError> {
        if let EligibilityRules::Explicit { allow } = &rules {
            for (&state, names) in allow {
                if state.is_terminal() && !names.is_empty() {
                    return Err(EligibilityError::TerminalState { state });
                }
                for name in names {
                    let Some(spec) = tools.iter().find(|t| t.name() == name) else {
                        return Err(EligibilityError::UnknownTool {
                            tool: name.clone(),
                            known: tools.iter().map(|t| t.name().to_string()).collect(),
                        });
                    };
                    if !spec.annotations().is_read_only() && !state.allows_side_effects() {
                        return Err(EligibilityError::SideEffectOutsideAct {
                            tool: name.clone(),
                            state,
                        });
                    }
                }
            }
        }
        Ok(Self { rules })
    }

    /// The rules it was built from.
    #[must_use]
    pub const fn rules(&self) -> &EligibilityRules {
        &self.rules
    }

    /// Whether the tool described by `spec` may run in `state`.
    #[must_use]
    pub fn allows(&self, state: State, spec: &ToolSpec) -> bool {
        if state.is_terminal() {
            return false;
        }
        let read_only = spec.annotations().is_read_only();
        // Side effects only in act, whatever the rules say (defence in depth).
        if !read_only && !state.allows_side_effects() {
            return false;
        }
        match &self.rules {
            EligibilityRules::Derived => {
                matches!(state, State::Act)
                    || (read_only && matches!(state, State::Explore | State::Validate))
            }
            EligibilityRules::Explicit { allow } => allow
                .get(&state)
                .is_some_and(|names| names.contains(spec.name())),
        }
    }

    /// Checks that `spec`'s tool may run in `state`.
    ///
    /// # Errors
    /// [`Ineligible`] naming the tool, the state, and where the tool is eligible.
    pub fn check(&self, state: State, spec: &ToolSpec) -> Result<(), Ineligible> {
        if self.allows(state, spec) {
            return Ok(());
        }
        let eligible_in: Vec<&str> = State::ALL
            .into_iter()
            .filter(|&s| self.allows(s, spec))
            .map(State::as_str)
            .collect();
        let why = if !spec.annotations().is_read_only() && !state.allows_side_effects() {
            "it has side effects, which run only in act"
        } else {
            "the eligibility rules do not allow it here"
        };
        let reason = if eligible_in.is_empty() {
            format!("{why}; it is eligible in no state")
        } else {
            format!("{why}; it is eligible in {}", eligible_in.join(", "))
        };
        Err(Ineligible {
            tool: spec.name().clone(),
            state,
            reason,
        })
    }

    /// The specs among `tools` allowed in `state`, in the given order.
    pub fn allowed_in<'a>(
        &'a self,
        state: State,
        tools: &'a [ToolSpec],
    ) -> impl Iterator<Item = &'a ToolSpec> + 'a {
        tools.iter().filter(move |spec| self.allows(state, spec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_tool::Annotations;

    fn spec(name: &str, annotations: Annotations) -> ToolSpec {
        ToolSpec::new(ToolName::new(name).unwrap(), "").with_annotations(annotations)
    }

    #[test]
    fn derived_default_follows_the_design_table() {
        let ro = spec("ro", Annotations::read_only());
        let fx = spec("fx", Annotations::side_effecting());
        let e = Eligibility::new(EligibilityRules::Derived, &[ro.clone(), fx.clone()]).unwrap();
        let allowed = |s: &ToolSpec| {
            State::ALL
                .into_iter()
                .filter(|&st| e.allows(st, s))
                .collect::<Vec<_>>()
        };
        assert_eq!(allowed(&ro), [State::Explore, State::Act, State::Validate]);
        assert_eq!(allowed(&fx), [State::Act]);
        let err = e.check(State::Validate, &fx).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool `fx` is not eligible in validate: it has side effects, which run only in act; it is eligible in act"
        );
    }

    #[test]
    fn explicit_rules_allow_exactly_what_they_list() {
        let ro = spec("ro", Annotations::read_only());
        let other = spec("other", Annotations::read_only());
        let rules = EligibilityRules::explicit([(State::Validate, vec![ro.name().clone()])]);
        let e = Eligibility::new(rules, &[ro.clone(), other.clone()]).unwrap();
        assert!(e.allows(State::Validate, &ro));
        assert!(!e.allows(State::Explore, &ro));
        assert!(!e.allows(State::Validate, &other));
        assert_eq!(e.allowed_in(State::Validate, &[ro, other]).count(), 1);
    }

    #[test]
    fn construction_refuses_unsafe_or_unknown_rules() {
        let fx = spec("fx", Annotations::destructive());
        for state in [
            State::Intake,
            State::Explore,
            State::Decide,
            State::Validate,
        ] {
            let rules = EligibilityRules::explicit([(state, vec![fx.name().clone()])]);
            assert_eq!(
                Eligibility::new(rules, std::slice::from_ref(&fx)),
                Err(EligibilityError::SideEffectOutsideAct {
                    tool: fx.name().clone(),
                    state
                })
            );
        }
        let rules =
            EligibilityRules::explicit([(State::Act, vec![ToolName::new("ghost").unwrap()])]);
        assert!(matches!(
            Eligibility::new(rules, &[fx]),
            Err(EligibilityError::UnknownTool { .. })
        ));
    }

    #[test]
    fn rules_round_trip_through_serde() {
        let rules = EligibilityRules::explicit([(State::Act, vec![ToolName::new("a").unwrap()])]);
        let v = serde_json::to_value(&rules).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"mode": "explicit", "allow": {"act": ["a"]}})
        );
        assert_eq!(
            serde_json::from_value::<EligibilityRules>(v).unwrap(),
            rules
        );
        let d = serde_json::to_value(EligibilityRules::Derived).unwrap();
        assert_eq!(
            serde_json::from_value::<EligibilityRules>(d).unwrap(),
            EligibilityRules::Derived
        );
    }
}
