//! What each fuzz target checks, shared by the `cargo fuzz` targets (`fuzz/fuzz_targets/`)
//! and the corpus replay that runs under plain `cargo test` (`tests/tests/fuzz_replay.rs`).
//!
//! Every function takes arbitrary bytes — what a user, a model or a damaged disk can hand
//! rein — and must never panic, overflow the stack or hang; where the input is accepted, it
//! asserts the invariants that make acceptance safe.

// Each includer uses a different subset.
#![allow(dead_code)]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use rein::ledger::Entry;
use rein::policy::{EligibilityRules, PolicySnapshot, Transitions};
use rein::run::BudgetName;
use rein::shell::{METACHARACTERS, ShellGuard};
use rein::store::{ArtifactId, Checksum, FsStores, FsyncPolicy, LedgerStore};
use rein::{ApprovalPolicy, Decision, Ledger, RunId, ScriptStep, State, ToolName, Value};

/// A check over arbitrary bytes.
pub(crate) type Check = fn(&[u8]);

/// Every target, by name: what `cargo fuzz run NAME` and the replay call.
pub(crate) const TARGETS: &[(&str, Check)] = &[
    ("ledger_line", ledger_line),
    ("ledger_file", ledger_file),
    ("decision", decision),
    ("ids", ids),
    ("policy", policy),
    ("shell", shell),
    ("scenario", scenario),
];

/// One ledger line, and a ledger made of lines: parse, re-encode, verify.
pub(crate) fn ledger_line(data: &[u8]) {
    let mut entries = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let Ok(entry) = serde_json::from_slice::<Entry>(line) else {
            continue;
        };
        // An entry that parses writes the same line back and hashes without panicking.
        let again: Entry =
            serde_json::from_str(&entry.to_json_line()).expect("a written line reads back");
        assert_eq!(again, entry);
        let _ = entry.computed_hash();
        entries.push(entry);
    }
    if let Some(first) = entries.first() {
        let run_id = first.run_id().clone();
        if let Ok(ledger) = Ledger::from_entries(run_id, entries) {
            ledger
                .verify()
                .expect("a ledger that was accepted verifies");
        }
    }
}

/// A whole ledger file on disk, loaded by the filesystem store: torn tails, bad lines,
/// broken chains, invalid UTF-8.
pub(crate) fn ledger_file(data: &[u8]) {
    // One folder per thread for all its inputs; no fsync (nothing here must survive).
    thread_local! {
        static DIR: tempfile::TempDir = tempfile::tempdir().expect("tempdir");
    }
    DIR.with(|dir| load_ledger_file(dir.path(), data));
}

fn load_ledger_file(dir: &std::path::Path, data: &[u8]) {
    let id: RunId = "fuzz".parse().expect("id");
    let path = dir.join("ledgers").join("fuzz.jsonl");
    let stores = configure(
        |config| FsStores::open_with(dir, config),
        |config| config.with_fsync(FsyncPolicy::Relaxed),
    )
    .expect("stores");
    std::fs::write(&path, data).expect("write");
    match block_on(stores.ledgers().load(&id)) {
        Ok(loaded) => {
            loaded.ledger.verify().expect("a loaded ledger verifies");
            let len = std::fs::metadata(&path).expect("stat").len() as usize;
            match loaded.torn_tail {
                // Opening reports the torn final line and rewrites nothing (the next append
                // writes over it); what it reports is a last line without its newline.
                Some(torn) => {
                    assert_eq!(len, data.len(), "opening rewrites nothing");
                    let tail = data.len() - torn.bytes as usize;
                    assert!(!data[tail..].contains(&b'\n'), "only the last line is torn");
                    assert!(tail == 0 || data[tail - 1] == b'\n');
                }
                None => assert_eq!(len, data.len(), "nothing is rewritten"),
            }
        }
        Err(_) => assert_eq!(
            std::fs::read(&path).expect("read"),
            data,
            "a refused ledger is never written"
        ),
    }
}

/// A decision or a script, as a model or a scenario file would give it.
pub(crate) fn decision(data: &[u8]) {
    if let Ok(decision) = serde_json::from_slice::<Decision>(data) {
        let value = serde_json::to_value(&decision).expect("serializes");
        assert_eq!(
            serde_json::from_value::<Decision>(value).expect("reads back"),
            decision
        );
    }
    if let Ok(steps) = serde_json::from_slice::<Vec<ScriptStep>>(data) {
        let value = serde_json::to_value(&steps).expect("serializes");
        assert_eq!(
            serde_json::from_value::<Vec<ScriptStep>>(value).expect("reads back"),
            steps
        );
    }
}

/// Run ids, artifact ids, tool names, budget names, checksums.
pub(crate) fn ids(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(id) = text.parse::<RunId>() {
        let s = id.as_str();
        assert!(!s.is_empty() && s.len() <= 128);
        assert!(
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{s:?}"
        );
    }
    if let Ok(id) = text.parse::<ArtifactId>() {
        let (folder, file) = id.shard();
        for part in [folder, file] {
            assert!(
                part.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                "{part:?}"
            );
        }
        assert_eq!(folder.len() + file.len(), 64);
    }
    if let Ok(name) = ToolName::new(text) {
        assert!(!name.as_str().contains(['/', '\\', '\n', '\0']), "{name}");
    }
    let _ = BudgetName::new(text);
    if let Ok(checksum) = text.parse::<Checksum>() {
        assert_eq!(
            checksum
                .to_string()
                .parse::<Checksum>()
                .expect("reads back"),
            checksum
        );
    }
}

/// Transition tables, eligibility rules, approval policies and whole policy snapshots (a
/// snapshot is read back from every ledger on resume).
pub(crate) fn policy(data: &[u8]) {
    if let Ok(table) = serde_json::from_slice::<Transitions>(data) {
        for terminal in [State::Done, State::Failed] {
            assert_eq!(
                table.targets(terminal).count(),
                0,
                "a terminal state has no way out"
            );
        }
        assert_eq!(
            Transitions::from_edges(table.edges()).expect("its own edges validate"),
            table
        );
    }
    let _ = serde_json::from_slice::<EligibilityRules>(data);
    let _ = serde_json::from_slice::<ApprovalPolicy>(data);
    if let Ok(value) = serde_json::from_slice::<Value>(data)
        && let Ok(snapshot) = PolicySnapshot::from_value(&value)
    {
        assert_eq!(
            PolicySnapshot::from_value(&snapshot.to_value()).expect("reads back"),
            snapshot
        );
    }
}

/// A command line a planner proposes to a command-running tool.
pub(crate) fn shell(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let guard = ShellGuard::new(["ls", "cat", "rm", "git"], ["sudo"])
        .deny_flags("rm", &[&["-r", "-R", "--recursive"], &["-f", "--force"]]);
    if let Ok(argv) = guard.check(line) {
        for word in argv.words() {
            assert!(!word.contains(METACHARACTERS), "{word:?}");
            assert!(
                !word.chars().any(|c| c.is_control() && c != '\t'),
                "{word:?}"
            );
        }
        assert!(
            ["ls", "cat", "rm", "git"].contains(&argv.program()),
            "{argv:?}"
        );
        let flags = argv.flags();
        let recursive = ["-r", "-R", "--recursive"]
            .iter()
            .any(|f| flags.contains(*f));
        let force = ["-f", "--force"].iter().any(|f| flags.contains(*f));
        assert!(!(argv.program() == "rm" && recursive && force), "{argv:?}");
    }
}

/// Builds the default of a config type the facade does not name (`FsConfig`, taken from
/// `open`'s signature), changes it with `set`, and opens with it.
fn configure<C: Default, T>(open: impl FnOnce(C) -> T, set: impl FnOnce(C) -> C) -> T {
    open(set(C::default()))
}

/// Runs a future that never waits: the filesystem stores work inline outside a runtime.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a store call outside a runtime does not wait"),
    }
}

/// A scenario file's text, checked as `rein validate` checks it: parsing, the field rules,
/// building the engine, and the error locator that points into the text.
pub(crate) fn scenario(data: &[u8]) {
    // Scenario files are read as UTF-8 (`rein` refuses other bytes before parsing); lossy
    // decoding keeps the rest of a damaged input worth parsing.
    let text = String::from_utf8_lossy(data);
    thread_local! {
        static DIR: tempfile::TempDir = tempfile::tempdir().expect("tempdir");
    }
    let result = DIR.with(|dir| rein_cli::check_scenario(&text, dir.path()));
    if let Err(error) = result {
        // Every refusal says something, and where it points is inside the text.
        assert!(!error.message().is_empty(), "{error:?}");
        if let Some((line, column)) = error.line_column() {
            let lines = text.split('\n').count();
            assert!(
                line >= 1 && line <= lines,
                "line {line} of {lines}: {error}"
            );
            assert!(column >= 1, "{error}");
        }
        let _ = error.to_string();
    }
}
