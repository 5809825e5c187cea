//! Planners for tests and scenarios: [`ScriptedPlanner`] follows a script, [`MockPlanner`]
//! asks a closure.
//!
//! Both implement [`rein_run::Planner`], so the engine drives them like any other planner;
//! they only *propose* decisions, which the engine checks against its policies.
//!
//! A [`ScriptedPlanner`] is **stateless across runs**: the script position is the run's step
//! number ([`PlanRequest::step`](rein_run::PlanRequest::step)), so one planner serves any
//! number of concurrent runs, and a resumed run continues where it stopped. A
//! [`ScriptStep`] may expect the run in a state (a mismatch is an error, not a guess) and
//! may branch on a [`Condition`] over the evidence. Scripts are plain JSON, so scenario
//! files can carry them.
//!
//! ```
//! use std::collections::BTreeMap;
//! use rein_planner::{Condition, ScriptStep, ScriptedPlanner};
//! use rein_run::{BudgetSnapshot, BudgetUsage, Decision, PlanRequest, Planner, Run, State, Timestamp};
//! use serde_json::json;
//!
//! let planner = ScriptedPlanner::new([
//!     ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "start")),
//!     ScriptStep::expect(State::Explore, Decision::call_tool("greet", json!({"name": "World"}), "greet")),
//!     ScriptStep::any(Decision::finish("greeted", json!({"status": "done"})))
//!         .when(Condition::LastToolSucceeded, Decision::fail("greeting failed")),
//! ]);
//!
//! // The engine builds the request; here, a fresh run at step 0.
//! let now = Timestamp::from_unix_millis(0);
//! let run = Run::new("run-1".parse()?, "Say hello", Default::default(), json!({}), now);
//! let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
//! let request = PlanRequest::new(&run, &[], BudgetSnapshot::new(&limits, &usage));
//!
//! let decision = tokio::runtime::Builder::new_current_thread()
//!     .build()?
//!     .block_on(planner.plan(request))?;
//! assert_eq!(decision, Decision::transition(State::Explore, "start"));
//!
//! // The same script as JSON, as a scenario file would hold it.
//! let json = serde_json::to_value(planner.steps())?;
//! assert_eq!(json[0], json!({"expect": "intake", "decision": {"type": "transition", "to": "explore", "reason": "start"}}));
//! let back: Vec<ScriptStep> = serde_json::from_value(json)?;
//! assert_eq!(back, planner.steps());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod condition;
mod mock;
mod script;

pub use condition::Condition;
pub use mock::MockPlanner;
pub use script::{ScriptStep, ScriptedPlanner};
