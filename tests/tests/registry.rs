//! The `Registry` port: an engine takes every tool a catalogue lists at build time, runs
//! them like any other tool, and refuses a catalogue that collides or lies.

mod support;

use rein::run::FailureKind;
use rein::store::RegistryBuilder;
use rein::tool::{Registry, SharedTool};
use rein::{
    Annotations, BuildError, Decision, Engine, RunStatus, ScriptStep, ScriptedPlanner, State,
    ToolSpec, json,
};
use support::{echo, walk_to};

#[tokio::test]
async fn an_engine_runs_the_tools_of_a_registry() {
    let (lookup, lookups) = echo("catalogue.lookup", Annotations::read_only());
    let (other, _) = echo("catalogue.other", Annotations::read_only());
    let mut catalogue = RegistryBuilder::new();
    catalogue.register(lookup).expect("unique");
    catalogue.register(other).expect("unique");
    let catalogue = catalogue.build();

    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::call_tool("catalogue.lookup", json!({"q": 1}), "look it up"),
    ));
    steps.push(ScriptStep::any(Decision::fail(
        "looked it up; nothing more to do",
    )));
    let engine = Engine::builder()
        .registry(&catalogue)
        .planner(ScriptedPlanner::new(steps))
        .build()
        .expect("builds");
    let names: Vec<&str> = engine.tools().iter().map(|s| s.name().as_str()).collect();
    assert_eq!(names, ["catalogue.lookup", "catalogue.other"]);
    let run = engine.run("use the catalogue").await.expect("driven");
    assert_eq!(lookups.calls(), 1);
    assert_eq!(run.status(), RunStatus::Failed);
    assert_eq!(
        run.failure().map(|f| f.kind),
        Some(FailureKind::PlannerGaveUp),
        "the script ran to its end"
    );
}

#[test]
fn a_name_in_the_registry_and_on_the_builder_is_a_duplicate() {
    let (a, _) = echo("a", Annotations::read_only());
    let (again, _) = echo("a", Annotations::read_only());
    let mut catalogue = RegistryBuilder::new();
    catalogue.register(a).expect("unique");
    let catalogue = catalogue.build();
    let err = Engine::builder()
        .tool(again)
        .registry(&catalogue)
        .planner(ScriptedPlanner::new([]))
        .build()
        .expect_err("refused");
    assert!(
        matches!(err, BuildError::DuplicateTool(ref name) if name.as_str() == "a"),
        "{err}"
    );
}

/// A registry that lists a tool it cannot return.
struct Lying(ToolSpec);

impl Registry for Lying {
    fn get(&self, _name: &str) -> Option<SharedTool> {
        None
    }

    fn specs(&self) -> Vec<ToolSpec> {
        vec![self.0.clone()]
    }
}

#[test]
fn a_registry_that_lists_what_it_cannot_return_is_a_build_error() {
    let lying = Lying(ToolSpec::new("ghost".parse().expect("name"), "never there"));
    let err = Engine::builder()
        .registry(&lying)
        .planner(ScriptedPlanner::new([]))
        .build()
        .expect_err("refused");
    assert!(matches!(err, BuildError::RegistryBroken { ref tool } if tool.as_str() == "ghost"));
    assert!(err.to_string().contains("`ghost`"), "{err}");
}
