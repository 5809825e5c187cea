//! Tool eligibility: which tool may run in which state — explicit rules, the default derived
//! from annotations, and the rule above both: side effects only in `act`.

mod support;

use std::sync::{Arc, Mutex};

use rein::ledger::Violation;
use rein::planner::MockPlanner;
use rein::policy::EligibilityRules;
use rein::run::FailureKind;
use rein::{
    Annotations, AutoApprover, BuildError, Decision, Engine, RunStatus, ScriptStep,
    ScriptedPlanner, State, json,
};
use support::{echo, violations, walk_to};

const WORKING: [State; 5] = [
    State::Intake,
    State::Explore,
    State::Decide,
    State::Act,
    State::Validate,
];

/// Walks to `state`, calls a tool annotated `annotations` there (under `rules`), and checks
/// whether it ran — and, if not, that the refusal was recorded and failed the run.
async fn check(
    annotations: Annotations,
    rules: Option<EligibilityRules>,
    state: State,
    expect_allowed: bool,
) {
    let (tool, probe) = echo("probe", annotations);
    let mut steps = walk_to(state);
    steps.push(ScriptStep::expect(
        state,
        Decision::call_tool("probe", json!({}), "try it"),
    ));
    steps.push(ScriptStep::any(Decision::fail("stop here")));
    let mut builder = Engine::builder()
        .tool(tool)
        .approver(AutoApprover)
        .planner(ScriptedPlanner::new(steps));
    if let Some(rules) = rules {
        builder = builder.eligibility(rules);
    }
    let engine = builder.build().expect("engine builds");
    let run = engine.run("eligibility").await.expect("run is driven");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    let what = format!("{annotations:?} in {state}");
    if expect_allowed {
        assert_eq!(probe.calls(), 1, "{what}: the tool ran");
        assert_eq!(violations(&ledger), [], "{what}");
        assert_eq!(
            run.failure().map(|f| f.kind),
            Some(FailureKind::PlannerGaveUp)
        );
    } else {
        assert_eq!(probe.calls(), 0, "{what}: the tool did not run");
        assert_eq!(
            violations(&ledger),
            [(Violation::IneligibleTool, false)],
            "{what}"
        );
        assert_eq!(run.status(), RunStatus::Failed, "{what}");
        assert_eq!(
            run.failure().map(|f| f.kind),
            Some(FailureKind::PolicyViolation),
            "{what}"
        );
    }
}

#[tokio::test]
async fn default_eligibility_derives_from_annotations() {
    // DESIGN.md §2: read-only tools in explore, act, validate; other tools in act; nothing
    // in intake and decide.
    let read_only = [false, true, false, true, true];
    let side_effecting = [false, false, false, true, false];
    for (state, (ro, fx)) in WORKING
        .into_iter()
        .zip(read_only.into_iter().zip(side_effecting))
    {
        check(Annotations::read_only(), None, state, ro).await;
        check(Annotations::side_effecting(), None, state, fx).await;
        check(Annotations::destructive(), None, state, fx).await;
    }
}

#[tokio::test]
async fn explicit_rules_allow_exactly_the_listed_states() {
    let name = "probe".parse().expect("tool name");
    let rules = EligibilityRules::explicit([(State::Validate, [name])]);
    for state in WORKING {
        check(
            Annotations::read_only(),
            Some(rules.clone()),
            state,
            state == State::Validate,
        )
        .await;
    }
}

#[tokio::test]
async fn side_effects_run_only_in_act_even_when_rules_try_otherwise() {
    // Rules that would let a side-effecting tool run outside act are refused at build time.
    for state in [
        State::Intake,
        State::Explore,
        State::Decide,
        State::Validate,
    ] {
        let (tool, _) = echo("write", Annotations::side_effecting());
        let rules = EligibilityRules::explicit([(state, ["write".parse().expect("tool name")])]);
        let built = Engine::builder()
            .tool(tool)
            .eligibility(rules)
            .planner(ScriptedPlanner::new([]))
            .build();
        assert!(
            matches!(built, Err(BuildError::Eligibility(_))),
            "side effects in {state}: {built:?}"
        );
    }
    // In act, the same rule is fine, and a read-only tool may be listed anywhere.
    let act = EligibilityRules::explicit([(State::Act, ["probe".parse().expect("tool name")])]);
    check(
        Annotations::side_effecting(),
        Some(act.clone()),
        State::Act,
        true,
    )
    .await;
    check(
        Annotations::side_effecting(),
        Some(act),
        State::Explore,
        false,
    )
    .await;
}

#[tokio::test]
async fn the_planner_is_offered_only_the_tools_eligible_in_its_state() {
    type Offered = Vec<(State, Vec<String>)>;
    let seen: Arc<Mutex<Offered>> = Arc::default();
    let log = Arc::clone(&seen);
    let planner = MockPlanner::new(move |request| {
        let names = request
            .tools()
            .iter()
            .map(|t| t.name().to_string())
            .collect();
        log.lock().expect("lock").push((request.state(), names));
        Ok(match request.state() {
            State::Intake => Decision::transition(State::Explore, "next"),
            State::Explore => Decision::transition(State::Decide, "next"),
            State::Decide => Decision::transition(State::Act, "next"),
            State::Act => Decision::transition(State::Validate, "next"),
            _ => Decision::finish("seen them all", json!(null)),
        })
    });
    let (read, _) = echo("read", Annotations::read_only());
    let (write, _) = echo("write", Annotations::side_effecting());
    let engine = Engine::builder()
        .tool(read)
        .tool(write)
        .planner(planner)
        .build()
        .expect("engine builds");
    let run = engine.run("list tools").await.expect("run");
    assert_eq!(run.status(), RunStatus::Completed);
    let seen = seen.lock().expect("lock").clone();
    let names = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        seen,
        vec![
            (State::Intake, names(&[])),
            (State::Explore, names(&["read"])),
            (State::Decide, names(&[])),
            (State::Act, names(&["read", "write"])),
            (State::Validate, names(&["read"])),
        ]
    );
}

#[tokio::test]
async fn eligibility_rules_naming_unknown_tools_or_terminal_states_are_refused() {
    let (tool, _) = echo("read", Annotations::read_only());
    let unknown = EligibilityRules::explicit([(State::Explore, ["nope".parse().expect("name")])]);
    let built = Engine::builder()
        .tool(tool.clone())
        .eligibility(unknown)
        .planner(ScriptedPlanner::new([]))
        .build();
    assert!(
        matches!(built, Err(BuildError::Eligibility(_))),
        "{built:?}"
    );

    let terminal = EligibilityRules::explicit([(State::Done, ["read".parse().expect("name")])]);
    let built = Engine::builder()
        .tool(tool)
        .eligibility(terminal)
        .planner(ScriptedPlanner::new([]))
        .build();
    assert!(
        matches!(built, Err(BuildError::Eligibility(_))),
        "{built:?}"
    );
}
