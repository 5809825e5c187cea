//! The built-in tools through the engine, not only by direct calls: a scripted agent greps
//! a small repository in `explore`, edits a file in `act` after approval, runs a harmless
//! command through `shell.run` (approved too), and its ledger verifies and tells the story
//! — the grep's matches, the edit's unified diff and checksums, the command's output. And
//! the annotations decide eligibility: a side effect proposed in `explore` is refused.

mod support;

use rein::ledger::{EntryKind, Violation};
use rein::policy::ApprovalReason;
use rein::run::Payload;
use rein::shell::{ShellConfig, ShellGuard, ShellRun};
use rein::tools::{FsOp, FsTool, Workspace};
use rein::{
    AutoApprover, Decision, Engine, RunStatus, ScriptStep, ScriptedPlanner, State, Value, json,
};
use support::{assert_chain, violations, walk_to};

/// A small repository: two sources and an ignored build directory.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn greet() -> &'static str {\n    \"helo\"\n}\n",
    )
    .unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(root.join("target/stale.rs"), "\"helo\"\n").unwrap();
    dir
}

fn engine(root: &std::path::Path, steps: Vec<ScriptStep>) -> Engine {
    let ws = Workspace::open(root).unwrap();
    let guard = ShellGuard::new(["echo", "cargo", "rustc"], Vec::<&str>::new());
    Engine::builder()
        .tool(FsTool::new(FsOp::Grep, ws.clone()))
        .tool(FsTool::new(FsOp::Read, ws.clone()))
        .tool(FsTool::new(FsOp::Edit, ws.clone()))
        .tool(ShellRun::new(ws, ShellConfig::new(guard)))
        .approver(AutoApprover)
        .planner(ScriptedPlanner::new(steps))
        .build()
        .unwrap()
}

/// The inline outputs of every successful tool call, in order, with the tool's name.
fn outputs(ledger: &rein::Ledger) -> Vec<(String, Value)> {
    ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolResult {
                tool,
                output: Payload::Inline(value),
                ..
            } => Some((tool.as_str().to_owned(), value.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_agent_greps_in_explore_edits_after_approval_and_runs_a_command() {
    let repo = repository();
    let edit = json!({"path": "src/lib.rs", "old_string": "\"helo\"", "new_string": "\"hello\""});
    let steps = vec![
        ScriptStep::expect(State::Intake, Decision::transition(State::Explore, "look")),
        ScriptStep::expect(
            State::Explore,
            Decision::call_tool("fs.grep", json!({"pattern": "helo"}), "find the typo"),
        ),
        ScriptStep::expect(State::Explore, Decision::transition(State::Decide, "found")),
        ScriptStep::expect(State::Decide, Decision::transition(State::Act, "fix it")),
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("fs.edit", edit.clone(), "fix"),
        ),
        ScriptStep::expect(
            State::Act,
            Decision::call_tool("shell.run", json!({"argv": ["echo", "built"]}), "check"),
        ),
        ScriptStep::expect(State::Act, Decision::transition(State::Validate, "verify")),
        ScriptStep::expect(
            State::Validate,
            Decision::call_tool("fs.read", json!({"path": "src/lib.rs"}), "read back"),
        ),
        ScriptStep::expect(
            State::Validate,
            Decision::finish("fixed", json!({"ok": true})),
        ),
    ];
    let engine = engine(repo.path(), steps);
    let run = engine.run("fix the greeting").await.unwrap();
    assert_eq!(run.status(), RunStatus::Completed, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(repo.path().join("src/lib.rs")).unwrap(),
        "pub fn greet() -> &'static str {\n    \"hello\"\n}\n"
    );

    let ledger = engine.ledger(run.id()).await.unwrap();
    assert_chain(&ledger);
    // The edit and the command were approved (high risk / destructive); the reads were not asked about.
    let asked: Vec<(String, String)> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ApprovalRequested { tool, reason, .. } => {
                Some((tool.as_str().to_owned(), reason.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        [
            (
                "fs.edit".to_owned(),
                ApprovalReason::Risk {
                    level: rein::RiskLevel::High,
                    threshold: rein::RiskLevel::High,
                }
                .to_string()
            ),
            (
                "shell.run".to_owned(),
                ApprovalReason::Destructive.to_string()
            ),
        ]
    );
    let outputs = outputs(&ledger);
    let names: Vec<&str> = outputs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["fs.grep", "fs.edit", "shell.run", "fs.read"]);
    // The grep found the typo in the source, not in the ignored build directory.
    assert_eq!(
        outputs[0].1["matches"],
        json!([{"path": "src/lib.rs", "line": 2, "text": "    \"helo\""}])
    );
    // The edit is on the record: a unified diff and both checksums.
    let diff = outputs[1].1["diff"].as_str().unwrap();
    assert!(diff.contains("-    \"helo\"\n+    \"hello\"\n"), "{diff}");
    assert!(
        outputs[1].1["before_sha256"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_ne!(outputs[1].1["before_sha256"], outputs[1].1["after_sha256"]);
    assert_eq!(outputs[2].1["stdout"], "built\n");
    assert_eq!(outputs[2].1["exit_code"], 0);
    assert!(outputs[3].1["content"].as_str().unwrap().contains("hello"));
}

#[tokio::test]
async fn annotations_keep_side_effects_out_of_explore() {
    let repo = repository();
    let before = std::fs::read_to_string(repo.path().join("src/lib.rs")).unwrap();
    let mut steps = walk_to(State::Explore);
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::call_tool(
            "fs.edit",
            json!({"path": "src/lib.rs", "old_string": "helo", "new_string": "x"}),
            "too early",
        ),
    ));
    steps.push(ScriptStep::expect(
        State::Explore,
        Decision::call_tool("shell.run", json!({"argv": ["echo", "x"]}), "too early"),
    ));
    let engine = engine(repo.path(), steps);
    let run = engine.run("edit too early").await.unwrap();
    assert_eq!(run.status(), RunStatus::Failed);
    let ledger = engine.ledger(run.id()).await.unwrap();
    assert_eq!(violations(&ledger), [(Violation::IneligibleTool, false)]);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("src/lib.rs")).unwrap(),
        before
    );
}

#[tokio::test]
async fn a_refused_path_is_a_recorded_tool_error_and_nothing_changes() {
    let repo = repository();
    let mut steps = walk_to(State::Act);
    steps.push(ScriptStep::expect(
        State::Act,
        Decision::call_tool(
            "fs.edit",
            json!({"path": "../escape.rs", "old_string": "a", "new_string": "b"}),
            "escape",
        ),
    ));
    let engine = engine(repo.path(), steps);
    let run = engine.run("escape").await.unwrap();
    assert_eq!(run.status(), RunStatus::Failed);
    let ledger = engine.ledger(run.id()).await.unwrap();
    let errors: Vec<String> = ledger
        .entries()
        .iter()
        .filter_map(|e| match e.event() {
            EntryKind::ToolError { error, .. } => Some(error.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("\"../escape.rs\" contains `..`"),
        "{errors:?}"
    );
}

/// Skills reach the planner in every plan request, and loading one through `skill.load`
/// puts its name and checksum in the ledger at that step; they add no tool.
#[tokio::test]
async fn skills_are_offered_to_the_planner_and_a_loaded_skill_is_on_the_record() {
    use rein::PlannerError;
    use rein::planner::MockPlanner;
    use rein::tools::{SkillLoad, load_skills};

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("review")).unwrap();
    std::fs::write(
        dir.path().join("review/SKILL.md"),
        "---\nname: code-review\ndescription: How to review a change\ntriggers: [review]\n---\nRead the diff first.\n",
    )
    .unwrap();
    let skills = load_skills(dir.path()).unwrap();
    let checksum = format!("sha256:{}", skills[0].checksum());
    let planner = MockPlanner::new(|request| {
        let names: Vec<&str> = request
            .skills()
            .iter()
            .map(rein::run::Skill::name)
            .collect();
        if names != ["code-review"] {
            return Err(PlannerError::failed(format!("skills offered: {names:?}")));
        }
        // The skill adds no tool: only skill.load is offered in explore.
        if request.state() == State::Explore && request.tools().len() != 1 {
            return Err(PlannerError::failed("a skill added a tool"));
        }
        Ok(match request.step() {
            0 => Decision::transition(State::Explore, "look"),
            1 => Decision::call_tool("skill.load", json!({"name": "code-review"}), "how?"),
            2 => Decision::transition(State::Decide, "know how"),
            _ => Decision::finish("reviewed", json!({})),
        })
    });
    let engine = Engine::builder()
        .tool(SkillLoad::new(skills.clone()))
        .skills(skills)
        .planner(planner)
        .build()
        .unwrap();
    let run = engine.run("review the change").await.unwrap();
    assert_eq!(run.status(), RunStatus::Completed, "{run:?}");
    let ledger = engine.ledger(run.id()).await.unwrap();
    assert_chain(&ledger);
    let loaded = outputs(&ledger);
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].0, "skill.load");
    assert_eq!(loaded[0].1["name"], "code-review");
    assert_eq!(loaded[0].1["checksum"], checksum);
    assert_eq!(loaded[0].1["body"], "Read the diff first.\n");
}
