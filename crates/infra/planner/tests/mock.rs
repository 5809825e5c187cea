//! `MockPlanner`: decisions computed from the request by a closure; both planners are usable
//! behind the engine's object-safe wrapper.

mod support;

use std::sync::Arc;

use rein_planner::{MockPlanner, ScriptedPlanner};
use rein_run::{Decision, DynPlanner, PlannerError, State};
use serde_json::json;
use support::{plan, run_at};

#[tokio::test]
async fn the_closure_computes_the_decision_from_the_request() {
    let planner = MockPlanner::new(|request| {
        Ok(match request.state() {
            State::Intake => Decision::transition(State::Explore, request.goal()),
            _ => Decision::finish(
                format!("step {}", request.step()),
                json!(request.evidence().len()),
            ),
        })
    });
    let run = run_at("run-1", State::Intake, 0, vec![]);
    assert_eq!(
        plan(&planner, &run).await.unwrap(),
        Decision::transition(State::Explore, "test goal")
    );
    let run = run_at("run-1", State::Decide, 3, vec![]);
    assert_eq!(
        plan(&planner, &run).await.unwrap(),
        Decision::finish("step 3", json!(0))
    );
}

#[tokio::test]
async fn the_closures_errors_reach_the_caller() {
    let planner = MockPlanner::new(|request| {
        Err(PlannerError::failed(format!(
            "no plan for {}",
            request.state()
        )))
    });
    let run = run_at("run-1", State::Act, 0, vec![]);
    let err = plan(&planner, &run).await.unwrap_err();
    assert_eq!(err.to_string(), "planner failed: no plan for act");
    assert_eq!(format!("{planner:?}"), "MockPlanner { .. }");
}

#[tokio::test]
async fn both_planners_work_behind_the_object_safe_wrapper() {
    let planners: Vec<Arc<dyn DynPlanner>> = vec![
        Arc::new(MockPlanner::new(|_| Ok(Decision::fail("mock")))),
        Arc::new(ScriptedPlanner::new([rein_planner::ScriptStep::any(
            Decision::fail("script"),
        )])),
    ];
    let run = run_at("run-1", State::Intake, 0, vec![]);
    let (limits, usage) = (Default::default(), Default::default());
    let mut reasons = Vec::new();
    for planner in &planners {
        let request =
            rein_run::PlanRequest::new(&run, &[], rein_run::BudgetSnapshot::new(&limits, &usage));
        reasons.push(planner.plan_boxed(request).await.unwrap());
    }
    assert_eq!(reasons, [Decision::fail("mock"), Decision::fail("script")]);
}
