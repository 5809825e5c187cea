//! Skills from disk: folders with a `SKILL.md` load sorted and checksummed; broken front
//! matter, bad names and duplicates are typed errors naming the file; `skill.load` returns
//! name, checksum and body, and refuses an unknown name. Front matter nesting is bounded
//! before it is parsed, and skills are confined to their folder (no link out).

use std::path::Path;

use rein_tool::ToolError;
use rein_tools::{MAX_FRONT_MATTER_BRACKETS, SkillLoad, SkillLoadError, load_skills, parse_skill};
use serde_json::json;

fn skill(dir: &Path, folder: &str, text: &str) {
    std::fs::create_dir_all(dir.join(folder)).unwrap();
    std::fs::write(dir.join(folder).join("SKILL.md"), text).unwrap();
}

const REVIEW: &str = "---\nname: code-review\ndescription: How to review a change\ntriggers:\n  - review\n  - PR\n---\n# Review\nRead the diff first.\n";

#[test]
fn folders_with_a_skill_md_load_sorted() {
    let dir = tempfile::tempdir().unwrap();
    skill(dir.path(), "b-review", REVIEW);
    skill(
        dir.path(),
        "a-notes",
        "---\nname: notes\ndescription: Notes\n---\nbody\n",
    );
    std::fs::create_dir_all(dir.path().join("not-a-skill")).unwrap();
    std::fs::write(dir.path().join("b-review/checklist.md"), "extra").unwrap();
    let skills = load_skills(dir.path()).unwrap();
    let names: Vec<&str> = skills.iter().map(rein_run::Skill::name).collect();
    assert_eq!(names, ["notes", "code-review"]);
    assert_eq!(skills[1].triggers(), ["review", "PR"]);
    assert_eq!(skills[1].body(), "# Review\nRead the diff first.\n");
    assert!(skills[1].is_triggered_by("please review my pr"));
}

#[test]
fn broken_skills_are_typed_errors_naming_the_file() {
    type Expect = fn(&SkillLoadError) -> bool;
    let cases: [(&str, Expect); 5] = [
        ("no front matter\n", |e| {
            matches!(e, SkillLoadError::NoFrontMatter { .. })
        }),
        ("---\nname: x\ndescription: d\n", |e| {
            matches!(e, SkillLoadError::NoFrontMatter { .. })
        }),
        ("---\nname: [unclosed\n---\nbody", |e| {
            matches!(e, SkillLoadError::FrontMatter { .. })
        }),
        (
            "---\nname: x\n---\nbody",
            |e| matches!(e, SkillLoadError::FrontMatter { message, .. } if message.contains("description")),
        ),
        ("---\nname: Bad Name\ndescription: d\n---\n", |e| {
            matches!(e, SkillLoadError::Invalid { .. })
        }),
    ];
    for (text, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        skill(dir.path(), "broken", text);
        let e = load_skills(dir.path()).unwrap_err();
        assert!(expected(&e), "{text:?}: {e:?}");
        assert!(e.to_string().contains("broken/SKILL.md"), "{e}");
    }
    let dir = tempfile::tempdir().unwrap();
    skill(dir.path(), "one", REVIEW);
    skill(dir.path(), "two", REVIEW);
    let e = load_skills(dir.path()).unwrap_err();
    assert!(matches!(e, SkillLoadError::Duplicate { .. }), "{e:?}");
    let e = load_skills(&dir.path().join("missing")).unwrap_err();
    assert!(matches!(e, SkillLoadError::Io { .. }), "{e:?}");
}

#[test]
fn skill_load_returns_name_checksum_and_body() {
    let dir = tempfile::tempdir().unwrap();
    skill(dir.path(), "review", REVIEW);
    let skills = load_skills(dir.path()).unwrap();
    let checksum = format!("sha256:{}", skills[0].checksum());
    let tool = SkillLoad::new(skills);
    let out = tool.run(json!({"name": "code-review"})).unwrap();
    assert_eq!(
        out,
        json!({"name": "code-review", "checksum": checksum, "body": "# Review\nRead the diff first.\n"})
    );
    let e = tool.run(json!({"name": "deploy"})).unwrap_err();
    assert!(matches!(e, ToolError::InvalidInput { .. }), "{e:?}");
    assert!(e.to_string().contains("code-review"), "{e}");
    assert!(rein_tool::Tool::spec(&tool).annotations().is_read_only());
}

fn front_matter(fields: &str) -> String {
    format!("---\nname: deep\ndescription: d\n{fields}\n---\nbody\n")
}

#[test]
fn nesting_in_the_front_matter_is_bounded_before_it_is_parsed() {
    let path = Path::new("deep/SKILL.md");
    // 100 000 nested `[` (200 KB, under the size cap): the YAML parser's time grows with
    // the square of that; the count refuses it in one pass.
    let deep = front_matter(&format!("triggers: {}", "[".repeat(100_000)));
    let e = parse_skill(&deep, path).unwrap_err();
    assert!(
        matches!(e, SkillLoadError::TooManyBrackets { line: 4, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("deep/SKILL.md"), "{e}");
    // Brackets in quoted text count too: quoting cannot hide a nest from the count.
    let quoted = front_matter(&format!(
        "triggers: ['{}', {}",
        "]".repeat(200),
        "[".repeat(200)
    ));
    assert!(matches!(
        parse_skill(&quoted, path),
        Err(SkillLoadError::TooManyBrackets { .. })
    ));
    // At the limit, a front matter parses.
    let at_limit = front_matter(&format!(
        "triggers: [\"{}\"]",
        "[]".repeat(MAX_FRONT_MATTER_BRACKETS - 1)
    ));
    let skill = parse_skill(&at_limit, path).unwrap();
    assert_eq!(skill.triggers().len(), 1);
    // Nesting by indentation, as deep as the size cap allows, costs the parser linear
    // time and no stack: an error under a known field, skipped under an unknown one.
    let blocks = |field: &str| front_matter(&format!("{field}:\n{}a", "- ".repeat(100_000)));
    let e = parse_skill(&blocks("triggers"), path).unwrap_err();
    assert!(matches!(e, SkillLoadError::FrontMatter { .. }), "{e:?}");
    assert!(parse_skill(&blocks("extra"), path).is_ok());
}

#[cfg(unix)]
#[test]
fn skills_linked_out_of_their_folder_are_refused_and_links_inside_are_followed() {
    let outside = tempfile::tempdir().unwrap();
    skill(outside.path(), "review", REVIEW);
    let dir = tempfile::tempdir().unwrap();
    // A SKILL.md linked out.
    std::fs::create_dir_all(dir.path().join("review")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("review/SKILL.md"),
        dir.path().join("review/SKILL.md"),
    )
    .unwrap();
    let e = load_skills(dir.path()).unwrap_err();
    assert!(
        matches!(&e, SkillLoadError::Escapes { path, .. } if path.ends_with("review/SKILL.md")),
        "{e:?}"
    );
    // A whole skill folder linked out.
    std::fs::remove_dir_all(dir.path().join("review")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("review"), dir.path().join("review")).unwrap();
    let e = load_skills(dir.path()).unwrap_err();
    assert!(
        matches!(&e, SkillLoadError::Escapes { path, .. } if path.ends_with("review")),
        "{e:?}"
    );
    assert!(!e.to_string().contains("Read the diff"), "{e}");
    // A link that stays inside the skills folder is followed.
    std::fs::remove_file(dir.path().join("review")).unwrap();
    std::fs::write(dir.path().join("review.md"), REVIEW).unwrap();
    std::fs::create_dir_all(dir.path().join("review")).unwrap();
    std::os::unix::fs::symlink("../review.md", dir.path().join("review/SKILL.md")).unwrap();
    let skills = load_skills(dir.path()).unwrap();
    assert_eq!(skills[0].name(), "code-review");
    // A hard-linked SKILL.md may share its content with a file anywhere.
    std::fs::remove_file(dir.path().join("review/SKILL.md")).unwrap();
    std::fs::hard_link(
        outside.path().join("review/SKILL.md"),
        dir.path().join("review/SKILL.md"),
    )
    .unwrap();
    let e = load_skills(dir.path()).unwrap_err();
    assert!(
        matches!(e, SkillLoadError::HardLinked { links: 2, .. }),
        "{e:?}"
    );
}

#[cfg(unix)]
#[test]
fn a_fifo_named_skill_md_is_skipped_not_opened() {
    let dir = tempfile::tempdir().unwrap();
    skill(dir.path(), "review", REVIEW);
    std::fs::create_dir_all(dir.path().join("pipe")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("pipe/SKILL.md"))
        .status()
        .unwrap();
    assert!(made.success());
    // Opening it would block until a writer came; it is no file, so it is no skill.
    let skills = load_skills(dir.path()).unwrap();
    assert_eq!(skills.len(), 1);
}
