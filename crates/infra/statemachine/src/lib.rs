//! The run lifecycle of rein as a state machine: seven states, and a guard on every move.
//!
//! A [`Lifecycle`] is where a run is (`intake`, `explore`, `decide`, `act`, `validate`,
//! `done`, `failed`) and the only way to move it. Every request to move is checked against
//! the [`Transitions`](rein_policy::Transitions) table, and a move into `act` also against
//! the budgets: while any limited budget has nothing left, the run may not enter `act`.
//! Terminal states have no way out, whatever the table says.
//!
//! Nothing here is silent. An accepted request returns the [`Transition`] it made, for the
//! engine to ledger; a refused one returns a [`TransitionError`] naming from, to and the rule
//! that refused it, and the lifecycle stays where it was.
//!
//! The machine is built on [`statig`](https://docs.rs/statig) (blocking flavour), which stays
//! an implementation detail: no statig type appears in this crate's API. A [`Lifecycle`] is
//! `Send + Sync` and owned by the one task that drives its run, for as long as it drives
//! it; a resumed run gets it back with [`Lifecycle::rebuild`], which follows the moves its
//! record shows. The engine's own ends of a run (a budget, a deadline, an abort) go through
//! [`Lifecycle::fail`].
//!
//! ```
//! use rein_policy::{Budget, RefusalRule, Transitions};
//! use rein_run::{BudgetName, BudgetUsage, State};
//! use rein_statemachine::{Lifecycle, Transition, TransitionError};
//!
//! let mut run = Lifecycle::new(State::Intake, Transitions::default())?;
//! let budget = Budget::new().with_limit(BudgetName::TOOL_CALLS, 1);
//! let mut usage = BudgetUsage::default();
//!
//! let moved = run.transition(State::Explore, &budget, &usage)?;
//! assert_eq!(moved, Transition { from: State::Intake, to: State::Explore });
//!
//! // Not in the table: refused, and the run stays in explore.
//! let err = run.transition(State::Act, &budget, &usage).unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "transition explore → act refused: not in the transition table; from explore the run may go to decide, failed"
//! );
//! assert_eq!(run.state(), State::Explore);
//!
//! // The only tool call is spent: act is refused, other moves are not.
//! budget.charge(&mut usage, &BudgetName::TOOL_CALLS, 1)?;
//! run.transition(State::Decide, &budget, &usage)?;
//! let err = run.transition(State::Act, &budget, &usage).unwrap_err();
//! assert!(matches!(
//!     err.refusal().map(|r| &r.rule),
//!     Some(RefusalRule::BudgetExhausted { name }) if *name == BudgetName::TOOL_CALLS
//! ));
//! run.transition(State::Done, &budget, &usage)?;
//! assert!(matches!(run.transition(State::Explore, &budget, &usage), Err(TransitionError::Refused(_))));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod lifecycle;
mod machine;

pub use error::{LifecycleError, TransitionError};
pub use lifecycle::{Lifecycle, Transition};
