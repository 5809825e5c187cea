//! A run's result schema is offered to the model as the `result` parameter of `finish`, the
//! same at every step (so the prompt's prefix stays cacheable); without one, any result.

use std::collections::BTreeMap;

use rein_llm::{Compaction, PromptConfig, build_request};
use rein_run::{BudgetSnapshot, BudgetUsage, PlanRequest, Run, State, Timestamp};
use serde_json::{Value, json};

fn run_in_decide(steps: u32) -> Run {
    let t0 = Timestamp::from_unix_millis(1_700_000_000_000);
    let mut run = Run::new(
        "run-1".parse().unwrap(),
        "answer",
        Default::default(),
        json!({}),
        t0,
    );
    run.enter(State::Explore, t0).unwrap();
    run.enter(State::Decide, t0).unwrap();
    for _ in 0..steps {
        run.count_step(t0).unwrap();
    }
    run
}

/// The parameters of `finish` offered for `run`, with `schema` as the run's result schema.
fn finish_parameters(run: &Run, schema: Option<&Value>) -> Value {
    let (limits, usage) = (BTreeMap::new(), BudgetUsage::default());
    let next = [State::Done, State::Failed];
    let mut request =
        PlanRequest::new(run, &[], BudgetSnapshot::new(&limits, &usage)).with_next_states(&next);
    if let Some(schema) = schema {
        request = request.with_result_schema(schema);
    }
    build_request(
        &PromptConfig::default(),
        &request,
        Compaction::WhenOverLimit,
    )
    .functions
    .into_iter()
    .find(|f| f.name == "finish")
    .expect("finish is offered in decide")
    .parameters
}

#[test]
fn the_result_schema_is_finishs_result_parameter_at_every_step() {
    let schema = json!({"type": "object", "required": ["answer"]});
    let first = finish_parameters(&run_in_decide(0), Some(&schema));
    assert_eq!(first["properties"]["result"], schema);
    assert_eq!(first["required"], json!(["summary", "result"]));
    assert_eq!(first, finish_parameters(&run_in_decide(5), Some(&schema)));
}

#[test]
fn without_a_result_schema_any_result_is_offered() {
    let parameters = finish_parameters(&run_in_decide(0), None);
    assert_eq!(parameters["properties"]["result"], json!({}));
    assert_eq!(parameters["required"], json!(["summary"]));
}
