//! Cacheable tools: a second identical call in the same run is served from the cache — recorded
//! with `cached: true`, not executed, not charged — while a different input, a tool that is
//! not cacheable, or another run calls the tool again.

mod support;

use rein::ledger::EntryKind;
use rein::run::{BudgetName, EvidenceKind, Payload};
use rein::{Annotations, Decision, Engine, ScriptStep, ScriptedPlanner, State, Value, json};
use support::{count, echo, walk_to};

/// Calls `lookup` with each input in explore, then finishes; checks which calls were served
/// from the cache and how often the tool ran.
async fn check(annotations: Annotations, inputs: &[Value], cached: &[bool], runs: usize) {
    let (lookup, probe) = echo("lookup", annotations);
    let mut steps = walk_to(State::Explore);
    steps.extend(inputs.iter().map(|input| {
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("lookup", input.clone(), "look up"),
        )
    }));
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::transition(State::Decide, "enough"),
    ));
    steps.push(ScriptStep::expect(
        State::Decide,
        Decision::finish("done", json!(null)),
    ));
    let engine = Engine::builder()
        .tool(lookup)
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("engine builds");
    let executed = cached.iter().filter(|c| !**c).count();
    for n in 1..=runs {
        let run = engine.run("cache").await.expect("run");
        let ledger = engine.ledger(run.id()).await.expect("ledger");
        let results: Vec<(bool, u32, u64, Payload)> = ledger
            .entries()
            .iter()
            .filter_map(|e| match e.event() {
                EntryKind::ToolResult {
                    cached,
                    attempt,
                    duration_ms,
                    output,
                    ..
                } => Some((*cached, *attempt, *duration_ms, output.clone())),
                _ => None,
            })
            .collect();
        let flags: Vec<bool> = results.iter().map(|r| r.0).collect();
        assert_eq!(flags, cached, "run {n}");
        for (result, input) in results.iter().zip(inputs) {
            assert_eq!(result.3, Payload::Inline(json!({ "echo": input })));
            if result.0 {
                assert_eq!((result.1, result.2), (0, 0), "a cache hit is no attempt");
            }
        }
        assert_eq!(count(&ledger, "tool_call"), executed, "run {n}");
        assert_eq!(
            run.usage().used(&BudgetName::TOOL_CALLS),
            executed as u64,
            "only executions are charged"
        );
        let evidence: Vec<bool> = run
            .evidence()
            .iter()
            .filter_map(|e| match &e.kind {
                EvidenceKind::ToolResult { cached, .. } => Some(*cached),
                _ => None,
            })
            .collect();
        assert_eq!(evidence, cached, "run {n}");
        assert_eq!(probe.calls(), executed * n, "run {n}");
    }
}

#[tokio::test]
async fn a_second_identical_call_is_served_from_the_cache() {
    let cacheable = Annotations::read_only().with_cacheable(true);
    let (a, b) = (json!({"key": "a"}), json!({"key": "b"}));
    check(cacheable, &[a.clone(), a.clone()], &[false, true], 1).await;
    check(
        cacheable,
        &[a.clone(), b.clone(), a.clone(), b],
        &[false, false, true, true],
        1,
    )
    .await;
    // Inputs are compared by value, not by spelling: key order does not matter.
    let ab = json!({"x": 1, "y": 2});
    let ba: Value = serde_json::from_str(r#"{"y": 2, "x": 1}"#).expect("json");
    check(cacheable, &[ab, ba], &[false, true], 1).await;
    // The cache belongs to a run: another run calls the tool again.
    check(cacheable, &[a.clone(), a], &[false, true], 2).await;
}

#[tokio::test]
async fn a_tool_that_is_not_cacheable_runs_every_time() {
    let a = json!({"key": "a"});
    check(
        Annotations::read_only(),
        &[a.clone(), a.clone(), a],
        &[false, false, false],
        1,
    )
    .await;
}
