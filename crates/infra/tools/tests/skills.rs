//! Skills from disk: folders with a `SKILL.md` load sorted and checksummed; broken front
//! matter, bad names and duplicates are typed errors naming the file; `skill.load` returns
//! name, checksum and body, and refuses an unknown name.

use std::path::Path;

use rein_tool::ToolError;
use rein_tools::{SkillLoad, SkillLoadError, load_skills};
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
    let names: Vec<&str> = skills.iter().map(|s| s.name()).collect();
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
