//! `EarlierRun`: a finished run of the conversation a follow-up continues, as its planner
//! sees it — the run as its ledger describes it (goal, evidence, outcome) and the replies
//! its model gave — so a planner can show the whole conversation, oldest run first.

use std::sync::Arc;

use crate::{Run, RunId, Turn};

/// One finished run of a conversation, earlier than the run being planned.
///
/// The engine rebuilds each from its ledger when a follow-up starts (and again when it is
/// resumed), and lends them, oldest first, to every request of the follow-up
/// ([`PlanRequest::conversation`](crate::PlanRequest::conversation)).
///
/// ```
/// use std::sync::Arc;
/// use rein_run::{EarlierRun, Run, Timestamp};
/// use serde_json::json;
///
/// let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
/// let mut run = Run::new("run-1".parse()?, "What is 2 + 2?", Default::default(), json!({}), t0);
/// run.complete("added", json!(4), t0)?;
/// let earlier = EarlierRun::new(run, Vec::new());
/// assert_eq!((earlier.id().as_str(), earlier.run.goal()), ("run-1", "What is 2 + 2?"));
/// assert_eq!(earlier.run.result(), Some(&json!(4)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EarlierRun {
    /// The run, as its ledger describes it: its goal, its evidence (tool results, notes,
    /// answers) and how it ended.
    pub run: Run,
    /// The replies its planner's model gave, in order (empty for a planner without one).
    pub dialogue: Arc<[Turn]>,
}

impl EarlierRun {
    /// The earlier run `run`, whose model replied `dialogue`.
    #[must_use]
    pub fn new(run: Run, dialogue: impl Into<Arc<[Turn]>>) -> Self {
        Self {
            run,
            dialogue: dialogue.into(),
        }
    }

    /// The run's id.
    #[must_use]
    pub const fn id(&self) -> &RunId {
        self.run.id()
    }
}
