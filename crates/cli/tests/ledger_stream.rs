//! `rein ledger verify` reads a ledger line by line (bounded memory): a big generated ledger
//! and the stored golden vectors verify, the first broken entry is named exactly as the
//! whole-file reading (`--tree`) names it, and the standard-tools recipe in
//! docs/RELIABILITY.md agrees with rein.

mod support;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use rein::ledger::{Entry, EntryKind};
use rein::run::Timestamp;
use rein::{Ledger, RunId, State};
use support::{Outcome, Scratch, rein};

/// Writes a ledger of `n` entries of run `id` to `path`.
fn generate(path: &Path, id: &str, n: u64) -> Vec<u8> {
    let id: RunId = id.parse().unwrap();
    let mut ledger = Ledger::new(id);
    let mut bytes = Vec::new();
    for i in 0..n {
        let entry = ledger.append(
            Timestamp::from_unix_millis(1_700_000_000_000 + i),
            State::Explore,
            EntryKind::Steering {
                note: format!("note {i}: ümlaut \"quoted\" \\ and a float 1.25e-7"),
            },
        );
        bytes.extend_from_slice(entry.json_line());
    }
    std::fs::File::create(path)
        .unwrap()
        .write_all(&bytes)
        .unwrap();
    bytes
}

fn verify(path: &Path, tree: bool) -> Outcome {
    let mut cmd = rein();
    cmd.args(["ledger", "verify"]).arg(path);
    if tree {
        cmd.arg("--tree");
    }
    Outcome::of(&cmd.output().unwrap())
}

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../domain/ledger/tests/golden/every_kind.jsonl")
}

#[test]
fn a_big_generated_ledger_verifies_line_by_line() {
    let scratch = Scratch::new();
    let path = scratch.dir.path().join("big.jsonl");
    let bytes = generate(&path, "big-run", 60_000);
    let last: Entry = serde_json::from_slice(
        bytes[..bytes.len() - 1]
            .rsplit(|&b| b == b'\n')
            .next()
            .unwrap(),
    )
    .unwrap();
    verify(&path, false).expect_code(0).stdout_has(&[
        "run big-run, 60000 entries, hash chain intact — verified ✓",
        &format!("last hash {}", last.hash()),
    ]);
}

#[test]
fn the_golden_ledgers_of_earlier_versions_still_verify() {
    let text = std::fs::read_to_string(golden()).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    verify(&golden(), false).expect_code(0).stdout_has(&[
        &format!(
            "run golden-run, {} entries, hash chain intact — verified ✓",
            text.lines().count()
        ),
        &format!("last hash {}", last["hash"].as_str().unwrap()),
    ]);
}

/// Lines of a generated ledger, changed in every way a tamperer might, each verified line
/// by line and whole: the same exit code, the same message naming the first broken entry.
#[test]
fn the_first_broken_entry_is_named_as_the_whole_file_reading_names_it() {
    let scratch = Scratch::new();
    let path = scratch.dir.path().join("l.jsonl");
    let bytes = generate(&path, "r", 400);
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let edited = String::from_utf8(lines[250].to_vec())
        .unwrap()
        .replace("note 250", "note 999");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "edited",
            [
                &lines[..250].concat(),
                edited.as_bytes(),
                &lines[251..].concat(),
            ]
            .concat(),
            "entry 251",
        ),
        (
            "dropped",
            [lines[..100].concat(), lines[101..].concat()].concat(),
            "entry 101",
        ),
        (
            "swapped",
            [
                lines[..300].concat(),
                lines[301].to_vec(),
                lines[300].to_vec(),
                lines[302..].concat(),
            ]
            .concat(),
            "entry 301",
        ),
        (
            "duplicated",
            [lines[..200].concat(), lines[199..].concat()].concat(),
            "entry 201",
        ),
        (
            "an unreadable line",
            [
                &lines[..50].concat()[..],
                b"{not json\n",
                &lines[50..].concat(),
            ]
            .concat(),
            "entry 51 (line 51) is not a readable ledger entry",
        ),
        ("a torn tail", [&bytes[..], &lines[3][..10]].concat(), ""),
    ];
    for (what, bytes, named) in cases {
        std::fs::write(&path, &bytes).unwrap();
        let streamed = verify(&path, false);
        let whole = verify(&path, true);
        assert_eq!(
            streamed.code, whole.code,
            "{what}: {streamed:?} / {whole:?}"
        );
        assert_eq!(streamed.stderr, whole.stderr, "{what}");
        if named.is_empty() {
            streamed.expect_code(0).stdout_has(&[
                "note: line 401 (10 bytes) is a torn final write",
                "400 entries, hash chain intact",
            ]);
        } else {
            streamed.expect_code(4).stderr_has(&[named]);
        }
    }
    // Files that are not ledgers get the same bad-input message either way.
    for (what, bytes) in [
        ("empty", &b"\n \n"[..]),
        ("not a ledger", &b"hello\n"[..]),
        ("only a torn line", &lines[0][..20]),
    ] {
        std::fs::write(&path, bytes).unwrap();
        let streamed = verify(&path, false);
        let whole = verify(&path, true);
        assert_eq!(streamed.code, 2, "{what}: {streamed:?}");
        assert_eq!(streamed.stderr, whole.stderr, "{what}");
    }
}

/// The recipe in docs/RELIABILITY.md, between its markers.
fn recipe() -> String {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/RELIABILITY.md"),
    )
    .unwrap();
    let start = doc
        .find("<!-- recipe: verify-ledger -->")
        .expect("the recipe marker");
    let body = &doc[start..];
    let open = body.find("```bash\n").expect("a bash block") + "```bash\n".len();
    let close = body[open..].find("```").expect("the block ends");
    // The function only: the doc's own call names a ledger that is not here.
    body[open..open + close]
        .lines()
        .filter(|line| !line.starts_with("verify_ledger <"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs the recipe's `verify_ledger` over `path`.
fn recipe_verify(path: &Path) -> Outcome {
    let script = format!("{}\nverify_ledger < \"$1\"\n", recipe());
    let output = std::process::Command::new("bash")
        .args(["-c", &script, "recipe"])
        .arg(path)
        .output()
        .expect("bash runs (the recipe needs bash, jq, xxd, sed and sha256sum)");
    Outcome::of(&output)
}

#[test]
fn the_standard_tools_recipe_verifies_what_rein_verifies() {
    let scratch = Scratch::new();
    // The golden vectors (floats, escapes, every kind) and a ledger a real run wrote.
    scratch.run("happy-path.json", &[]).expect_code(0);
    let id = scratch.new_run_id(&[]);
    for path in [golden(), scratch.ledger(&id)] {
        let ours = verify(&path, false);
        ours.expect_code(0);
        let last = ours
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("last hash "))
            .unwrap()
            .to_owned();
        recipe_verify(&path)
            .expect_code(0)
            .stdout_has(&[&format!("last hash {last}")]);
    }
    // A changed entry fails it, named.
    let path = scratch.dir.path().join("edited.jsonl");
    let bytes = generate(&path, "r", 5);
    let text = String::from_utf8(bytes)
        .unwrap()
        .replacen("note 3", "note 7", 1);
    std::fs::write(&path, text).unwrap();
    recipe_verify(&path)
        .expect_code(1)
        .stderr_has(&["entry 4: its hash does not match its content"]);
}
