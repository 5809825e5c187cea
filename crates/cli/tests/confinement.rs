//! Every path a scenario names is confined like the built-in tools confine theirs: count
//! files stay in the data directory (`../../x` and absolute paths refused, symbolic links
//! that lead out too), and `rein validate` refuses a script path that the run would refuse,
//! symbolic-link escapes included. Also the long form of a built-in entry and the new
//! built-ins, end to end.
#![cfg(unix)]

mod support;

use support::{Outcome, Scratch, rein};

/// A scenario with one fixture counting into `count_file`, called once in `act`.
fn counting(count_file: &str) -> String {
    format!(
        r#"{{
  "goal": "g",
  "tools": [{{"fixture": "charge", "behavior": "echo", "count_file": "{count_file}"}}],
  "approver": "auto",
  "planner": {{"scripted": [
    {{"expect": "intake", "decision": {{"type": "transition", "to": "explore"}}}},
    {{"expect": "explore", "decision": {{"type": "transition", "to": "decide"}}}},
    {{"expect": "decide", "decision": {{"type": "transition", "to": "act"}}}},
    {{"expect": "act", "decision": {{"type": "call_tool", "tool": "charge", "input": {{}}}}}},
    {{"expect": "act", "decision": {{"type": "fail", "reason": "end"}}}}
  ]}}
}}"#
    )
}

fn run(scratch: &Scratch, file: &std::path::Path) -> Outcome {
    Outcome::of(
        &rein()
            .arg("run")
            .arg(file)
            .arg("--data-dir")
            .arg(scratch.data())
            .output()
            .unwrap(),
    )
}

fn validate(file: &std::path::Path, extra: &[&str]) -> Outcome {
    Outcome::of(
        &rein()
            .arg("validate")
            .arg(file)
            .args(extra)
            .output()
            .unwrap(),
    )
}

#[test]
fn count_files_outside_the_data_directory_are_refused() {
    let scratch = Scratch::new();
    let outside = scratch.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let absolute = outside.join("abs.log");
    for (name, path, expect) in [
        ("parent", "../../x.log".to_owned(), "contains `..`"),
        (
            "parent-deep",
            "counts/../../x.log".to_owned(),
            "contains `..`",
        ),
        ("absolute", absolute.display().to_string(), "is absolute"),
    ] {
        let file = scratch.write(&format!("{name}.json"), &counting(&path));
        for outcome in [validate(&file, &[]), run(&scratch, &file)] {
            outcome.expect_code(2).stderr_has(&[
                expect,
                "at: tools[0].count_file",
                "data directory",
            ]);
        }
    }
    assert!(!scratch.dir.path().join("x.log").exists());
    assert!(!absolute.exists());
}

#[test]
fn a_count_file_through_a_link_out_of_the_data_directory_is_refused() {
    let scratch = Scratch::new();
    let outside = scratch.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(scratch.data()).unwrap();
    std::os::unix::fs::symlink(&outside, scratch.data().join("counts")).unwrap();
    let file = scratch.write("linked.json", &counting("counts/charge.log"));
    run(&scratch, &file)
        .expect_code(2)
        .stderr_has(&["leads outside", "at: tools[0].count_file"]);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn a_count_file_inside_the_data_directory_is_written() {
    let scratch = Scratch::new();
    let file = scratch.write("inside.json", &counting("counts/charge.log"));
    run(&scratch, &file).expect_code(1);
    let text = std::fs::read_to_string(scratch.data().join("counts/charge.log")).unwrap();
    assert!(text.contains("\"execution\":1"), "{text}");
}

/// A scenario whose script calls built-in `tool` with `path`, in a workspace `ws`.
fn calling(tool: &str, path: &str) -> String {
    format!(
        r#"{{
  "goal": "g",
  "workspace": "ws",
  "tools": [{{"kind": "builtin", "name": "{tool}"}}],
  "planner": {{"scripted": [
    {{"expect": "intake", "decision": {{"type": "transition", "to": "explore"}}}},
    {{"expect": "explore", "decision": {{"type": "call_tool", "tool": "{tool}", "input": {{"path": "{path}"}}}}}},
    {{"expect": "explore", "decision": {{"type": "fail", "reason": "end"}}}}
  ]}}
}}"#
    )
}

#[test]
fn validate_refuses_a_script_path_that_escapes_through_a_link() {
    let scratch = Scratch::new();
    let ws = scratch.dir.path().join("scenarios/ws");
    let outside = scratch.dir.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink("../../outside", ws.join("outdir")).unwrap();
    for (tool, path) in [
        ("fs.read", "outdir/secret.txt"),
        ("fs.list", "outdir"),
        ("fs.grep", "outdir"),
    ] {
        let file = scratch.write("escape.json", &calling(tool, path));
        validate(&file, &[]).expect_code(2).stderr_has(&[
            "leads outside the workspace",
            "at: planner.scripted[1].decision.input.path",
        ]);
    }
    // A path that stays inside is valid.
    std::fs::write(ws.join("notes.txt"), "n").unwrap();
    let file = scratch.write("inside.json", &calling("fs.read", "notes.txt"));
    validate(&file, &[]).expect_code(0);
}

#[test]
fn the_long_form_and_the_new_builtins_run() {
    let scratch = Scratch::new();
    let ws = scratch.dir.path().join("scenarios/ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), "fn needle() {}\n").unwrap();
    let text = r#"{
  "goal": "g",
  "workspace": "ws",
  "tools": [{"kind": "builtin", "name": "fs.grep"}, {"builtin": "fs.edit"}],
  "approver": "auto",
  "planner": {"scripted": [
    {"expect": "intake", "decision": {"type": "transition", "to": "explore"}},
    {"expect": "explore", "decision": {"type": "call_tool", "tool": "fs.grep", "input": {"pattern": "needle"}}},
    {"expect": "explore", "decision": {"type": "transition", "to": "decide"}},
    {"expect": "decide", "decision": {"type": "transition", "to": "act"}},
    {"expect": "act", "decision": {"type": "call_tool", "tool": "fs.edit", "input": {"path": "src/lib.rs", "old_string": "needle", "new_string": "pin"}}},
    {"expect": "act", "decision": {"type": "transition", "to": "validate"}},
    {"expect": "validate", "decision": {"type": "finish", "summary": "edited", "result": {}}}
  ]}
}"#;
    let file = scratch.write("long.json", text);
    run(&scratch, &file).expect_code(0);
    assert_eq!(
        std::fs::read_to_string(ws.join("src/lib.rs")).unwrap(),
        "fn pin() {}\n"
    );
    for (tools, expect) in [
        (
            r#"[{"kind": "builtin", "name": "fs.nope"}]"#,
            "there is no built-in tool `fs.nope`",
        ),
        (r#"[{"kind": "builtin"}]"#, "needs a \"name\""),
        (r#"[{"name": "fs.read"}]"#, "`name` goes with \"kind\""),
    ] {
        let file = scratch.write(
            "bad-long.json",
            &text.replacen(
                r#"[{"kind": "builtin", "name": "fs.grep"}, {"builtin": "fs.edit"}]"#,
                tools,
                1,
            ),
        );
        validate(&file, &[])
            .expect_code(2)
            .stderr_has(&[expect, "at: tools[0]"]);
    }
}

#[test]
fn a_skills_folder_is_loaded_and_a_broken_skill_is_refused_at_check_time() {
    let scratch = Scratch::new();
    let skills = scratch.dir.path().join("scenarios/skills/review");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(
        skills.join("SKILL.md"),
        "---\nname: code-review\ndescription: How to review\n---\nRead the diff.\n",
    )
    .unwrap();
    let text = r#"{
  "goal": "g",
  "skills": "skills",
  "planner": {"scripted": [
    {"expect": "intake", "decision": {"type": "transition", "to": "explore"}},
    {"expect": "explore", "decision": {"type": "call_tool", "tool": "skill.load", "input": {"name": "code-review"}}},
    {"expect": "explore", "decision": {"type": "transition", "to": "decide"}},
    {"expect": "decide", "decision": {"type": "finish", "summary": "done", "result": {}}}
  ]}
}"#;
    let file = scratch.write("skills.json", text);
    // `skill.load` comes with the skills: no warning that no tool provides it.
    let checked = validate(&file, &[]);
    checked
        .expect_code(0)
        .stdout_has(&["valid ✓", "tools: skill.load"]);
    assert!(!checked.stderr.contains("warning"), "{}", checked.stderr);
    run(&scratch, &file)
        .expect_code(0)
        .stdout_has(&["skill.load ×1"]);
    std::fs::write(skills.join("SKILL.md"), "---\nname: [broken\n---\n").unwrap();
    validate(&file, &[]).expect_code(2).stderr_has(&[
        "invalid front matter",
        "review/SKILL.md",
        "at: skills",
    ]);
}

/// A scenario offering the skills in `scenarios/skills` and loading `code-review`.
const LOADS_A_SKILL: &str = r#"{
  "goal": "g",
  "skills": "skills",
  "planner": {"scripted": [
    {"expect": "intake", "decision": {"type": "transition", "to": "explore"}},
    {"expect": "explore", "decision": {"type": "call_tool", "tool": "skill.load", "input": {"name": "code-review"}}},
    {"expect": "explore", "decision": {"type": "transition", "to": "decide"}},
    {"expect": "decide", "decision": {"type": "finish", "summary": "done", "result": {}}}
  ]}
}"#;

const SECRET_SKILL: &str =
    "---\nname: code-review\ndescription: How to review\n---\nthe secret body outside\n";

#[test]
fn a_skill_linked_from_outside_the_skills_folder_is_refused_not_followed() {
    let scratch = Scratch::new();
    let outside = scratch.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("SKILL.md"), SECRET_SKILL).unwrap();
    let skills = scratch.dir.path().join("scenarios/skills");
    let file = scratch.write("skills.json", LOADS_A_SKILL);
    // A SKILL.md linked out, then a whole skill folder linked out.
    let review = skills.join("review");
    std::fs::create_dir_all(&review).unwrap();
    std::os::unix::fs::symlink(outside.join("SKILL.md"), review.join("SKILL.md")).unwrap();
    for link in ["review/SKILL.md", "review"] {
        for outcome in [validate(&file, &[]), run(&scratch, &file)] {
            outcome.expect_code(2).stderr_has(&[
                link,
                "leads out of the skills folder",
                "at: skills",
            ]);
            assert!(
                !outcome.stderr.contains("secret body"),
                "{}",
                outcome.stderr
            );
        }
        std::fs::remove_dir_all(&review).unwrap();
        std::os::unix::fs::symlink(&outside, &review).unwrap();
    }
    assert!(scratch.run_ids().is_empty(), "no run started");
    // A link that stays inside the skills folder is followed, as in the workspace.
    std::fs::remove_file(&review).unwrap();
    std::fs::create_dir_all(&review).unwrap();
    std::fs::write(
        skills.join("common.md"),
        SECRET_SKILL.replace("outside", "inside"),
    )
    .unwrap();
    std::os::unix::fs::symlink("../common.md", review.join("SKILL.md")).unwrap();
    run(&scratch, &file)
        .expect_code(0)
        .stdout_has(&["skill.load ×1"]);
}

#[test]
fn a_deeply_nested_skill_front_matter_is_refused_at_once() {
    let scratch = Scratch::new();
    let review = scratch.dir.path().join("scenarios/skills/review");
    std::fs::create_dir_all(&review).unwrap();
    // 200 KB of nested brackets, under the 256 KiB cap: the YAML parser would take minutes.
    let nested = format!(
        "---\nname: code-review\ndescription: d\ntriggers: {}\n---\nbody\n",
        "[".repeat(100_000)
    );
    std::fs::write(review.join("SKILL.md"), nested).unwrap();
    let file = scratch.write("skills.json", LOADS_A_SKILL);
    for outcome in [validate(&file, &[]), run(&scratch, &file)] {
        outcome.expect_code(2).stderr_has(&[
            "review/SKILL.md",
            "more than 100 `[` and `{`",
            "line 4",
            "at: skills",
        ]);
    }
}
