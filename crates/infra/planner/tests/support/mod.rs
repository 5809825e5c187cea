//! Helpers shared by this crate's integration tests: runs at a given state and step, and a
//! plan call with an empty budget view.

use std::collections::BTreeMap;

use rein_run::{
    BudgetSnapshot, BudgetUsage, Decision, EvidenceKind, PlanRequest, Planner, PlannerError, Run,
    State, Timestamp,
};
use serde_json::{Map, json};

/// A run named `id` in the working state `state`, with `steps` decisions taken and
/// `evidence` gathered.
pub(crate) fn run_at(id: &str, state: State, steps: u32, evidence: Vec<EvidenceKind>) -> Run {
    let now = Timestamp::from_unix_millis(1_700_000_000_000);
    let mut run = Run::new(id.parse().unwrap(), "test goal", Map::new(), json!({}), now);
    for kind in evidence {
        run.add_evidence(kind, now).unwrap();
    }
    if state != State::Intake {
        run.enter(state, now).unwrap();
    }
    for _ in 0..steps {
        run.count_step(now).unwrap();
    }
    run
}

/// What `planner` proposes for `run`, offered no tools and no budget limits.
pub(crate) async fn plan(planner: &impl Planner, run: &Run) -> Result<Decision, PlannerError> {
    let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
    planner
        .plan(PlanRequest::new(
            run,
            &[],
            BudgetSnapshot::new(&limits, &usage),
        ))
        .await
}
