//! The policy domain of rein: the rules that decide *whether* a proposed decision may happen.
//!
//! - [`Budget`]: limits on named counters (`tool_calls`, `steps`, …), spent through
//!   reservations that can never take use over a limit.
//! - [`Eligibility`]: which tools may run in which state — explicit rules, or the default
//!   derived from annotations. Side effects run only in `act`: a rule saying otherwise is
//!   refused when the eligibility is built.
//! - [`Transitions`]: which state may follow which; terminal states have no way out.
//! - [`ApprovalPolicy`] and the [`Approver`] port: which calls need a human's (or a
//!   program's) yes, bound to the hash of the exact input.
//! - [`PolicySnapshot`]: all of the above as a run records it when it starts.
//!
//! ```
//! use rein_policy::{Transitions, Budget};
//! use rein_run::{BudgetName, BudgetUsage, State};
//!
//! let table = Transitions::default();
//! assert!(table.check(State::Decide, State::Act).is_ok());
//! assert!(table.check(State::Done, State::Explore).is_err()); // no way out of done
//!
//! let budget = Budget::new().with_limit(BudgetName::TOOL_CALLS, 1);
//! let mut usage = BudgetUsage::default();
//! budget.charge(&mut usage, &BudgetName::TOOL_CALLS, 1)?;
//! assert!(budget.charge(&mut usage, &BudgetName::TOOL_CALLS, 1).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod approval;
mod approver;
mod budget;
mod deadline;
mod eligibility;
mod snapshot;
mod transitions;
mod violations;

pub use approval::{ApprovalMode, ApprovalPolicy, ApprovalReason};
pub use approver::{
    ApprovalRequest, ApprovalResponse, Approver, ApproverError, AutoApprover, DenyApprover,
    DynApprover, Verdict,
};
pub use budget::Budget;
pub use deadline::{Deadline, DeadlineError};
pub use eligibility::{Eligibility, EligibilityError, EligibilityRules, Ineligible};
pub use rein_run::BudgetExhausted;
pub use snapshot::{HookRef, PolicySnapshot};
pub use transitions::{RefusalRule, TransitionRefused, TransitionTableError, Transitions};
pub use violations::{OnToolError, OnViolation};
