//! Hostile and malformed input, table-driven: decisions from a planner (unknown tools, wrong
//! types, huge and deeply nested JSON, decisions as raw text), tool inputs against schemas,
//! tool outputs, run variables, ledger files (edited, reordered, truncated, duplicated,
//! foreign, invalid UTF-8, symbolic links), artifact ids and planted files, run ids,
//! approval answers, and resume inputs.
//!
//! Every case goes through [`check`]: it feeds the input, names the typed outcome it got
//! (never a panic, never a stack overflow), and asserts the invariants that hold for every
//! case: a ledger that exists still verifies; a refused resume leaves the ledger file byte
//! for byte as it was; no tool ran without a `tool_call` entry for it. A ledger that falls
//! short of the head its run's snapshot was saved after (whole lines cut, the head entry
//! torn, emptied, removed) is refused on resume with `LedgerBehindSnapshot`.

mod chaos;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chaos::{Counter, assert_chain, count, counted, counted_with, deep_array, deep_object};
use rein::ledger::{EntryKind, MAX_JSON_DEPTH, Violation};
use rein::planner::MockPlanner;
use rein::policy::OnViolation;
use rein::run::FailureKind;
use rein::store::{
    ArtifactError, ArtifactId, ArtifactStore, FsStores, LedgerStore, LedgerStoreError, StoreOptions,
};
use rein::{
    Annotations, ApprovalRequest, ApprovalResponse, Approver, ApproverError, Decision, Engine,
    EngineError, Ledger, PlanRequest, RunId, RunSpec, RunStatus, State, Value, json,
};

// ---- the table ---------------------------------------------------------------------------------

/// One hostile input and the typed outcome it must get.
struct Case {
    name: &'static str,
    input: Input,
    expect: Outcome,
}

/// What a case feeds in.
enum Input {
    /// The planner walks to `State` and proposes this decision there (built fresh, so a
    /// deep value never has to be cloned by the test).
    Decide(State, fn() -> Decision),
    /// As `Decide`, with rejections handed back to the planner (at most 2) instead.
    DecideHandBack(State, fn() -> Decision),
    /// Raw bytes a planner (a model) answered, parsed as a decision.
    DecisionText(fn() -> Vec<u8>),
    /// A tool called in `explore` returns this value.
    Output(fn() -> Value),
    /// The run starts with this variable.
    Var(fn() -> Value),
    /// The ledger file of a paused run, split into lines (without their `\n`), is edited.
    LedgerLines(fn(&mut Vec<Vec<u8>>, &Other)),
    /// The ledger file of a paused run is edited as bytes.
    LedgerBytes(fn(&mut Vec<u8>)),
    /// The ledger file's path is replaced by something else (`outside` is a directory
    /// outside the store's root).
    LedgerPath(fn(&Path, &Path)),
    /// A string is parsed as an artifact id.
    ArtifactIdText(fn() -> String),
    /// A stored artifact's files are tampered with (`artifacts` dir, `outside` dir, its id).
    ArtifactPlant(fn(&Path, &Path, &ArtifactId)),
    /// A string is parsed as a run id.
    RunIdText(fn() -> String),
    /// The approver answers a call of the destructive `deploy {"env": "prod"}` like this.
    Approval(fn(&ApprovalRequest) -> Result<ApprovalResponse, ApproverError>),
    /// A paused run is resumed like this.
    Resume(ResumeInput),
}

/// How a paused run (asked "Proceed?", options yes/no) is resumed.
#[derive(Clone, Copy)]
enum ResumeInput {
    /// With this answer.
    Answer(fn() -> String),
    /// Without an answer.
    NoAnswer,
    /// A run id nobody started.
    Unknown,
    /// After it finished (answered "yes" and ran to the end), without an answer.
    Finished,
    /// After it finished, with an answer.
    FinishedWithAnswer,
    /// Twice at once on one engine: the second while the first is inside a tool.
    TwiceAtOnce,
    /// Twice at once by two processes (two sets of stores over one directory).
    TwiceByTwoProcesses,
}

/// Another run's ledger lines, for splicing foreign entries in.
struct Other {
    lines: Vec<Vec<u8>>,
}

/// The typed outcome of a case.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    /// The run completed.
    Completed,
    /// The run failed with this kind, having recorded this violation (if any).
    Failed(FailureKind, Option<Violation>),
    /// The run is paused (a rejection was handed back, then it asked).
    Paused,
    /// The engine refused the call with this error variant.
    Refused(&'static str),
    /// A parser refused the text with a typed error.
    Unparsable,
    /// The ledger store refused the file: a broken chain (the problem's name), `corrupt`,
    /// `io` or `not_found`.
    Ledger(&'static str),
    /// The ledger loaded after cutting a torn final line (reported).
    TornTailCut,
    /// The ledger loaded without error but shorter than written: whole final lines were
    /// removed, which a plain hash chain cannot detect (docs/RELIABILITY.md). The engine
    /// refuses such a ledger when the run's snapshot was saved after the lines cut
    /// (`Refused("LedgerBehindSnapshot")`), so no case of a paused run ends here.
    LoadedShorter,
    /// The ledger loaded whole (a harmless change).
    Loaded,
    /// The artifact store refused with this kind.
    Artifact(&'static str),
}

fn cases() -> Vec<Case> {
    use Input::*;
    use Outcome::*;
    use ResumeInput as R;
    let rejected = |v| Failed(FailureKind::PolicyViolation, Some(v));
    vec![
        // ---- decisions from a planner ----
        Case {
            name: "unknown tool",
            input: Decide(State::Explore, || {
                Decision::call_tool("nope", json!({}), "x")
            }),
            expect: rejected(Violation::UnknownTool),
        },
        Case {
            name: "empty tool name",
            input: Decide(State::Explore, || Decision::call_tool("", json!({}), "x")),
            expect: rejected(Violation::UnknownTool),
        },
        Case {
            name: "tool name as a path",
            input: Decide(State::Explore, || {
                Decision::call_tool("../typed", json!({"name": "a"}), "x")
            }),
            expect: rejected(Violation::UnknownTool),
        },
        Case {
            name: "tool name with NUL",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed\0", json!({"name": "a"}), "x")
            }),
            expect: rejected(Violation::UnknownTool),
        },
        Case {
            name: "tool name of 1 MiB",
            input: Decide(State::Explore, || {
                Decision::call_tool("t".repeat(1 << 20), json!({}), "x")
            }),
            expect: rejected(Violation::UnknownTool),
        },
        Case {
            name: "tool name differing in case",
            input: Decide(State::Explore, || {
                Decision::call_tool("TYPED", json!({"name": "a"}), "x")
            }),
            expect: rejected(Violation::UnknownTool),
        },
        Case {
            name: "side effect outside act",
            input: Decide(State::Explore, || {
                Decision::call_tool("side", json!({}), "x")
            }),
            expect: rejected(Violation::IneligibleTool),
        },
        Case {
            name: "any tool in intake",
            input: Decide(State::Intake, || {
                Decision::call_tool("free", json!({}), "x")
            }),
            expect: rejected(Violation::IneligibleTool),
        },
        Case {
            name: "transition intake to done",
            input: Decide(State::Intake, || Decision::transition(State::Done, "skip")),
            expect: rejected(Violation::TransitionRefused),
        },
        Case {
            name: "finish from explore",
            input: Decide(State::Explore, || Decision::finish("early", json!(1))),
            expect: rejected(Violation::TransitionRefused),
        },
        Case {
            name: "transition to act skipping decide",
            input: Decide(State::Explore, || Decision::transition(State::Act, "rush")),
            expect: rejected(Violation::TransitionRefused),
        },
        Case {
            name: "empty question",
            input: Decide(State::Explore, || Decision::ask_human("  ", ["a"])),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "repeated options",
            input: Decide(State::Explore, || Decision::ask_human("which?", ["a", "a"])),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "blank option",
            input: Decide(State::Explore, || Decision::ask_human("which?", ["a", " "])),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "input 10 000 arrays deep",
            input: Decide(State::Explore, || {
                Decision::call_tool("free", deep_array(10_000), "deep")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "input 10 000 objects deep",
            input: Decide(State::Explore, || {
                Decision::call_tool("free", deep_object(10_000), "deep")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "input one level past MAX_JSON_DEPTH",
            input: Decide(State::Explore, || {
                Decision::call_tool("free", deep_object(MAX_JSON_DEPTH + 1), "deep")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "input at MAX_JSON_DEPTH reads back",
            input: Decide(State::Explore, || {
                Decision::call_tool("free", deep_object(MAX_JSON_DEPTH), "deep")
            }),
            expect: Completed,
        },
        Case {
            name: "result 10 000 levels deep",
            input: Decide(State::Decide, || {
                Decision::finish("deep", deep_array(10_000))
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "deep input is never handed back",
            input: DecideHandBack(State::Explore, || {
                Decision::call_tool("free", deep_array(5_000), "deep")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "unknown tool handed back, then corrected",
            input: DecideHandBack(State::Explore, || {
                Decision::call_tool("nope", json!({}), "x")
            }),
            expect: Completed,
        },
        Case {
            name: "summary of 1 MiB",
            input: Decide(State::Decide, || {
                Decision::finish("s".repeat(1 << 20), json!(null))
            }),
            expect: Completed,
        },
        // ---- tool inputs against schemas ----
        Case {
            name: "input is a string",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed", json!("name"), "x")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "input is an array",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed", json!([{"name": "a"}]), "x")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "input is null",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed", Value::Null, "x")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "required field missing",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed", json!({"count": 1}), "x")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "field of the wrong type",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed", json!({"name": 7}), "x")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "integer as a float string",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed", json!({"name": "a", "count": "1"}), "x")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "integer out of range",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed", json!({"name": "a", "count": u64::MAX}), "x")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "negative integer",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed", json!({"name": "a", "count": -1}), "x")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "float where an integer is due",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed", json!({"name": "a", "count": 1.5}), "x")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "extra field",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed", json!({"name": "a", "sudo": true}), "x")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "1 MiB string past maxLength",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed", json!({"name": "n".repeat(1 << 20)}), "x")
            }),
            expect: rejected(Violation::InvalidInput),
        },
        Case {
            name: "1 MiB string where any size goes",
            input: Decide(State::Explore, || {
                Decision::call_tool("free", json!({"blob": "b".repeat(1 << 20)}), "x")
            }),
            expect: Completed,
        },
        Case {
            name: "100 000 keys",
            input: Decide(State::Explore, || {
                Decision::call_tool(
                    "free",
                    Value::Object((0..100_000).map(|i| (format!("k{i}"), json!(i))).collect()),
                    "x",
                )
            }),
            expect: Completed,
        },
        Case {
            name: "control characters and lone escapes",
            input: Decide(State::Explore, || {
                Decision::call_tool("typed", json!({"name": "\u{0}\u{1b}[2J\u{202e}"}), "x")
            }),
            expect: Completed,
        },
        // ---- tool outputs and run variables ----
        Case {
            name: "output 10 000 levels deep",
            input: Output(|| deep_array(10_000)),
            expect: Failed(FailureKind::ToolFailed, None),
        },
        Case {
            name: "output one level past MAX_JSON_DEPTH",
            input: Output(|| deep_object(MAX_JSON_DEPTH + 1)),
            expect: Failed(FailureKind::ToolFailed, None),
        },
        Case {
            name: "output of 2 MiB goes to the artifact store",
            input: Output(|| json!({"blob": "o".repeat(2 << 20)})),
            expect: Completed,
        },
        Case {
            name: "variable 200 levels deep",
            input: Var(|| deep_array(200)),
            expect: Refused("VarTooDeep"),
        },
        Case {
            name: "variable 10 000 levels deep",
            input: Var(|| deep_object(10_000)),
            expect: Refused("VarTooDeep"),
        },
        // ---- decisions as raw text ----
        Case {
            name: "decision text: unknown type",
            input: DecisionText(|| br#"{"type":"rm_rf","path":"/"}"#.to_vec()),
            expect: Unparsable,
        },
        Case {
            name: "decision text: missing field",
            input: DecisionText(|| br#"{"type":"call_tool","input":{}}"#.to_vec()),
            expect: Unparsable,
        },
        Case {
            name: "decision text: wrong field type",
            input: DecisionText(|| br#"{"type":"transition","to":7,"reason":"x"}"#.to_vec()),
            expect: Unparsable,
        },
        Case {
            name: "decision text: unknown state",
            input: DecisionText(|| br#"{"type":"transition","to":"root","reason":"x"}"#.to_vec()),
            expect: Unparsable,
        },
        Case {
            name: "decision text: 10 000 brackets",
            input: DecisionText(|| {
                format!(
                    r#"{{"type":"call_tool","tool":"t","reason":"r","input":{}{}}}"#,
                    "[".repeat(10_000),
                    "]".repeat(10_000)
                )
                .into_bytes()
            }),
            expect: Unparsable,
        },
        Case {
            name: "decision text: invalid UTF-8",
            input: DecisionText(|| b"{\"type\":\"fail\",\"reason\":\"\xff\xfe\"}".to_vec()),
            expect: Unparsable,
        },
        Case {
            name: "decision text: lone surrogate escape",
            input: DecisionText(|| br#"{"type":"fail","reason":"\ud800"}"#.to_vec()),
            expect: Unparsable,
        },
        Case {
            name: "decision text: truncated",
            input: DecisionText(|| br#"{"type":"fail","reason":"x"#.to_vec()),
            expect: Unparsable,
        },
        Case {
            name: "decision text: trailing garbage",
            input: DecisionText(|| br#"{"type":"fail","reason":"x"} ; rm -rf /"#.to_vec()),
            expect: Unparsable,
        },
        Case {
            name: "decision text: empty",
            input: DecisionText(Vec::new),
            expect: Unparsable,
        },
        // ---- ledger files ----
        Case {
            name: "ledger: an entry edited",
            input: LedgerLines(|l, _| replace(&mut l[0], b"hostile input", b"hostile inpuT")),
            expect: Ledger("edited"),
        },
        Case {
            name: "ledger: a hash edited",
            input: LedgerLines(|l, _| {
                let n = l[2].len();
                l[2][n - 3] = if l[2][n - 3] == b'0' { b'1' } else { b'0' };
            }),
            expect: Ledger("edited"),
        },
        Case {
            name: "ledger: a hash made non-hex",
            input: LedgerLines(|l, _| {
                let n = l[2].len();
                l[2][n - 3] = b'g';
            }),
            expect: Ledger("corrupt"),
        },
        Case {
            name: "ledger: two entries swapped",
            input: LedgerLines(|l, _| l.swap(2, 3)),
            expect: Ledger("reordered"),
        },
        Case {
            name: "ledger: an entry duplicated",
            input: LedgerLines(|l, _| {
                let d = l[3].clone();
                l.insert(4, d);
            }),
            expect: Ledger("inserted"),
        },
        Case {
            name: "ledger: an entry dropped",
            input: LedgerLines(|l, _| {
                l.remove(2);
            }),
            expect: Ledger("dropped"),
        },
        Case {
            name: "ledger: the first entry dropped",
            input: LedgerLines(|l, _| {
                l.remove(0);
            }),
            expect: Ledger("dropped"),
        },
        Case {
            name: "ledger: a foreign run's entry spliced in",
            input: LedgerLines(|l, o| l[3].clone_from(&o.lines[3])),
            expect: Ledger("wrong_run"),
        },
        Case {
            name: "ledger: another run's whole ledger",
            input: LedgerLines(|l, o| l.clone_from(&o.lines)),
            expect: Ledger("wrong_run"),
        },
        Case {
            name: "ledger: an unknown field",
            input: LedgerLines(|l, _| replace(&mut l[1], b"{\"seq\"", b"{\"admin\":true,\"seq\"")),
            expect: Ledger("corrupt"),
        },
        Case {
            name: "ledger: a blank line",
            input: LedgerLines(|l, _| l.insert(2, Vec::new())),
            expect: Ledger("corrupt"),
        },
        Case {
            name: "ledger: invalid UTF-8 in an entry",
            input: LedgerLines(|l, _| replace(&mut l[0], b"hostile", b"host\xff\xfee")),
            expect: Ledger("corrupt"),
        },
        Case {
            name: "ledger: NUL bytes",
            input: LedgerLines(|l, _| l[1] = vec![0; 64]),
            expect: Ledger("corrupt"),
        },
        Case {
            name: "ledger: 10 000 brackets",
            input: LedgerLines(|l, _| {
                l.push(format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes());
            }),
            expect: Ledger("corrupt"),
        },
        Case {
            name: "ledger: torn final line after the snapshot's head",
            input: LedgerBytes(|b| {
                // A power cut in the middle of appending the next entry: a prefix of a line.
                let last = b[..b.len() - 1].iter().rposition(|&c| c == b'\n').unwrap() + 1;
                let next = b[last..b.len() - 20].to_vec();
                b.extend_from_slice(&next);
            }),
            expect: TornTailCut,
        },
        Case {
            name: "ledger: the snapshot's head entry torn (behind the snapshot's head)",
            input: LedgerBytes(|b| {
                b.truncate(b.len() - 20);
            }),
            expect: Refused("LedgerBehindSnapshot"),
        },
        Case {
            name: "ledger: torn final line of invalid UTF-8",
            input: LedgerBytes(|b| b.extend_from_slice(b"{\"seq\":\xff\xfe")),
            expect: TornTailCut,
        },
        Case {
            name: "ledger: cut in the middle",
            input: LedgerBytes(|b| {
                let at = b.len() / 2;
                b.drain(at..at + 40);
            }),
            expect: Ledger("corrupt"),
        },
        Case {
            name: "ledger: whole final lines cut (behind the snapshot's head)",
            input: LedgerLines(|l, _| {
                l.truncate(l.len() - 2);
            }),
            expect: Refused("LedgerBehindSnapshot"),
        },
        Case {
            name: "ledger: CRLF line ends (harmless)",
            input: LedgerLines(|l, _| l.iter_mut().for_each(|line| line.push(b'\r'))),
            expect: Loaded,
        },
        Case {
            name: "ledger: emptied (behind the snapshot's head)",
            input: LedgerBytes(Vec::clear),
            expect: Refused("LedgerBehindSnapshot"),
        },
        Case {
            name: "ledger: only a torn first line (behind the snapshot's head)",
            input: LedgerBytes(|b| {
                let first = b.iter().position(|&c| c == b'\n').unwrap();
                b.truncate(first - 5);
            }),
            expect: Refused("LedgerBehindSnapshot"),
        },
        Case {
            name: "ledger: a symlink to a file outside",
            input: LedgerPath(|p, out| {
                let target = out.join("planted.jsonl");
                std::fs::copy(p, &target).unwrap();
                std::fs::remove_file(p).unwrap();
                std::os::unix::fs::symlink(&target, p).unwrap();
            }),
            expect: Ledger("io"),
        },
        Case {
            name: "ledger: a directory",
            input: LedgerPath(|p, _| {
                std::fs::remove_file(p).unwrap();
                std::fs::create_dir(p).unwrap();
            }),
            expect: Ledger("io"),
        },
        Case {
            name: "ledger: removed (the snapshot's head is missing)",
            input: LedgerPath(|p, _| std::fs::remove_file(p).unwrap()),
            expect: Ledger("not_found"),
        },
        // ---- artifact ids and planted files ----
        Case {
            name: "artifact id: traversal",
            input: ArtifactIdText(|| "../../etc/passwd".into()),
            expect: Unparsable,
        },
        Case {
            name: "artifact id: absolute path",
            input: ArtifactIdText(|| "/etc/passwd".into()),
            expect: Unparsable,
        },
        Case {
            name: "artifact id: 62 hex and a slash",
            input: ArtifactIdText(|| format!("ab/{}", "c".repeat(61))),
            expect: Unparsable,
        },
        Case {
            name: "artifact id: upper-case hex",
            input: ArtifactIdText(|| "A".repeat(64)),
            expect: Unparsable,
        },
        Case {
            name: "artifact id: 63 digits",
            input: ArtifactIdText(|| "a".repeat(63)),
            expect: Unparsable,
        },
        Case {
            name: "artifact id: 65 digits",
            input: ArtifactIdText(|| "a".repeat(65)),
            expect: Unparsable,
        },
        Case {
            name: "artifact id: NUL inside",
            input: ArtifactIdText(|| format!("{}\0{}", "a".repeat(32), "a".repeat(31))),
            expect: Unparsable,
        },
        Case {
            name: "artifact id: full-width digits",
            input: ArtifactIdText(|| "\u{ff10}".repeat(64)),
            expect: Unparsable,
        },
        Case {
            name: "artifact: shard folder is a symlink out of the root",
            input: ArtifactPlant(|dir, out, id| {
                let (shard, _) = id.shard();
                let shard = dir.join(shard);
                copy_dir(&shard, out);
                std::fs::remove_dir_all(&shard).unwrap();
                std::os::unix::fs::symlink(out, &shard).unwrap();
            }),
            expect: Artifact("corrupt"),
        },
        Case {
            name: "artifact: content file is a symlink out of the root",
            input: ArtifactPlant(|dir, out, id| {
                let bin = content_path(dir, id, "bin");
                let target = out.join("x.bin");
                std::fs::copy(&bin, &target).unwrap();
                std::fs::remove_file(&bin).unwrap();
                std::os::unix::fs::symlink(&target, &bin).unwrap();
            }),
            expect: Artifact("corrupt"),
        },
        Case {
            name: "artifact: content tampered",
            input: ArtifactPlant(|dir, _, id| {
                std::fs::write(content_path(dir, id, "bin"), b"evil").unwrap();
            }),
            expect: Artifact("checksum_mismatch"),
        },
        Case {
            name: "artifact: reference of another id",
            input: ArtifactPlant(|dir, _, id| {
                let path = content_path(dir, id, "json");
                let text = std::fs::read_to_string(&path)
                    .unwrap()
                    .replace(id.as_str(), &"0".repeat(64));
                std::fs::write(path, text).unwrap();
            }),
            expect: Artifact("corrupt"),
        },
        Case {
            name: "artifact: reference unreadable",
            input: ArtifactPlant(|dir, _, id| {
                std::fs::write(content_path(dir, id, "json"), b"\xff{").unwrap();
            }),
            expect: Artifact("corrupt"),
        },
        // ---- run ids ----
        Case {
            name: "run id: traversal",
            input: RunIdText(|| "../runs/x".into()),
            expect: Unparsable,
        },
        Case {
            name: "run id: absolute path",
            input: RunIdText(|| "/tmp/x".into()),
            expect: Unparsable,
        },
        Case {
            name: "run id: a dot",
            input: RunIdText(|| "run.jsonl".into()),
            expect: Unparsable,
        },
        Case {
            name: "run id: empty",
            input: RunIdText(String::new),
            expect: Unparsable,
        },
        Case {
            name: "run id: 129 bytes",
            input: RunIdText(|| "r".repeat(129)),
            expect: Unparsable,
        },
        Case {
            name: "run id: shell characters",
            input: RunIdText(|| "x;rm -rf ~".into()),
            expect: Unparsable,
        },
        // ---- approval answers ----
        Case {
            name: "approval: granted for another input",
            input: Approval(|r| {
                Ok(ApprovalResponse::grant(
                    &forged(r, json!({"env": "dev"})),
                    "ops",
                    "dev is fine",
                ))
            }),
            expect: rejected(Violation::ApprovalDenied),
        },
        Case {
            name: "approval: granted for a near-identical input",
            input: Approval(|r| {
                Ok(ApprovalResponse::grant(
                    &forged(r, json!({"env": "prod "})),
                    "ops",
                    "ok",
                ))
            }),
            expect: rejected(Violation::ApprovalDenied),
        },
        Case {
            name: "approval: the approver fails",
            input: Approval(|_| Err(ApproverError::new("pager down"))),
            expect: rejected(Violation::ApprovalDenied),
        },
        Case {
            name: "approval: denied",
            input: Approval(|r| Ok(ApprovalResponse::deny(r, "ops", "no"))),
            expect: rejected(Violation::ApprovalDenied),
        },
        Case {
            name: "approval: granted, with a 1 MiB reason",
            input: Approval(|r| Ok(ApprovalResponse::grant(r, "ops", "y".repeat(1 << 20)))),
            expect: Completed,
        },
        // ---- resume inputs ----
        Case {
            name: "resume: answer not offered",
            input: Resume(R::Answer(|| "maybe".into())),
            expect: Refused("InvalidAnswer"),
        },
        Case {
            name: "resume: answer in another case",
            input: Resume(R::Answer(|| "YES".into())),
            expect: Refused("InvalidAnswer"),
        },
        Case {
            name: "resume: answer with a NUL",
            input: Resume(R::Answer(|| "yes\0".into())),
            expect: Refused("InvalidAnswer"),
        },
        Case {
            name: "resume: empty answer",
            input: Resume(R::Answer(String::new)),
            expect: Refused("InvalidAnswer"),
        },
        Case {
            name: "resume: blank answer",
            input: Resume(R::Answer(|| " \t\n".into())),
            expect: Refused("InvalidAnswer"),
        },
        Case {
            name: "resume: answer of 1 MiB",
            input: Resume(R::Answer(|| "y".repeat(1 << 20))),
            expect: Refused("InvalidAnswer"),
        },
        Case {
            name: "resume: no answer",
            input: Resume(R::NoAnswer),
            expect: Refused("AwaitingAnswer"),
        },
        Case {
            name: "resume: unknown run",
            input: Resume(R::Unknown),
            expect: Refused("RunNotFound"),
        },
        Case {
            name: "resume: finished run",
            input: Resume(R::Finished),
            expect: Refused("RunFinished"),
        },
        Case {
            name: "resume: finished run with an answer",
            input: Resume(R::FinishedWithAnswer),
            expect: Refused("RunFinished"),
        },
        Case {
            name: "resume: twice at once",
            input: Resume(R::TwiceAtOnce),
            expect: Refused("AlreadyActive"),
        },
        Case {
            name: "resume: twice at once from two processes",
            input: Resume(R::TwiceByTwoProcesses),
            expect: Refused("LedgerStore"),
        },
        Case {
            name: "resume: the right answer (control)",
            input: Resume(R::Answer(|| "yes".into())),
            expect: Completed,
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_input_gets_a_typed_outcome_and_breaks_nothing() {
    let cases = cases();
    assert!(cases.len() >= 50, "{} cases", cases.len());
    let mut failures = Vec::new();
    for case in cases {
        let name = case.name;
        let expect = case.expect.clone();
        // Each case on its own task, so one failure does not hide the others.
        match tokio::spawn(check(case)).await {
            Ok(got) if got == expect => {}
            Ok(got) => failures.push(format!("{name}: expected {expect:?}, got {got:?}")),
            Err(panic) => failures.push(format!("{name}: panicked: {panic}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Feeds `case` in, checks the invariants every case keeps, and returns the outcome.
async fn check(case: Case) -> Outcome {
    match case.input {
        Input::Decide(state, decision) => decide(state, decision, false).await,
        Input::DecideHandBack(state, decision) => decide(state, decision, true).await,
        Input::DecisionText(text) => match serde_json::from_slice::<Decision>(&text()) {
            Ok(decision) => panic!("{}: parsed {decision:?}", case.name),
            Err(_) => Outcome::Unparsable,
        },
        Input::Output(output) => produce(output).await,
        Input::Var(var) => {
            let dir = tempfile::tempdir().expect("tempdir");
            let (engine, tools) = engine_in(dir.path(), false, finish_in(State::Explore));
            let spec = RunSpec::new("hostile input").with_var("v", var());
            let outcome = outcome_of(engine.run(spec).await);
            assert_eq!(
                engine.list_runs().await.expect("list"),
                [],
                "nothing was recorded"
            );
            assert_eq!(tools.total(), 0);
            outcome
        }
        Input::LedgerLines(edit) => {
            tamper(|bytes, other| {
                let mut lines: Vec<Vec<u8>> = split_lines(bytes);
                edit(&mut lines, other);
                *bytes = lines
                    .into_iter()
                    .flat_map(|mut l| {
                        l.push(b'\n');
                        l
                    })
                    .collect();
            })
            .await
        }
        Input::LedgerBytes(edit) => tamper(|bytes, _| edit(bytes)).await,
        Input::LedgerPath(edit) => {
            let dir = tempfile::tempdir().expect("tempdir");
            let outside = tempfile::tempdir().expect("outside");
            let id = paused_run(dir.path()).await;
            let path = ledger_path(dir.path(), &id);
            edit(&path, outside.path());
            let before = snapshot_dir(outside.path());
            let outcome = load_fresh(dir.path(), &id, 0).await;
            let (engine, _) = engine_in(dir.path(), false, ask_then_finish());
            let resumed = engine.resume_with_input(&id, "yes").await;
            match &outcome {
                Outcome::Ledger("not_found") => {
                    // The run's snapshot was saved after entries the ledger no longer has.
                    assert!(
                        matches!(
                            resumed,
                            Err(EngineError::LedgerBehindSnapshot { last: 0, .. })
                        ),
                        "{resumed:?}"
                    );
                }
                _ => assert!(
                    matches!(resumed, Err(EngineError::LedgerStore(_))),
                    "{resumed:?}"
                ),
            }
            assert_eq!(
                snapshot_dir(outside.path()),
                before,
                "nothing outside the root changed"
            );
            outcome
        }
        Input::ArtifactIdText(text) => match text().parse::<ArtifactId>() {
            Ok(id) => panic!("{}: parsed {id}", case.name),
            Err(_) => Outcome::Unparsable,
        },
        Input::ArtifactPlant(plant) => {
            let dir = tempfile::tempdir().expect("tempdir");
            let outside = tempfile::tempdir().expect("outside");
            let stores = FsStores::open(dir.path()).expect("stores");
            let reference = stores
                .artifacts()
                .put(b"secret content".to_vec(), StoreOptions::new())
                .await
                .expect("put");
            let id = reference.id().clone();
            plant(&dir.path().join("artifacts"), outside.path(), &id);
            let before = snapshot_dir(outside.path());
            let fresh = FsStores::open(dir.path()).expect("stores");
            let got = fresh.artifacts().get(&id).await;
            assert_eq!(
                snapshot_dir(outside.path()),
                before,
                "nothing outside the root changed"
            );
            match got {
                Ok((_, bytes)) => panic!("{}: read {} bytes", case.name, bytes.len()),
                Err(e) => Outcome::Artifact(artifact_kind(&e)),
            }
        }
        Input::RunIdText(text) => match text().parse::<RunId>() {
            Ok(id) => panic!("{}: parsed {id}", case.name),
            Err(_) => Outcome::Unparsable,
        },
        Input::Approval(answer) => approve(answer).await,
        Input::Resume(how) => resume(how).await,
    }
}

// ---- decisions ---------------------------------------------------------------------------------

/// Three tools: `typed` (read-only, strict schema), `free` (read-only, any object) and
/// `side` (side-effecting), plus `gate` when a test needs a call held in flight.
struct Tools {
    typed: Counter,
    free: Counter,
    side: Counter,
}

impl Tools {
    fn total(&self) -> usize {
        self.typed.get() + self.free.get() + self.side.get()
    }
}

type Plan = Arc<dyn Fn(&PlanRequest<'_>) -> Decision + Send + Sync>;

/// An engine over filesystem stores in `dir` with the three tools and `plan`.
fn engine_in(dir: &Path, hand_back: bool, plan: Plan) -> (Engine, Tools) {
    let (typed, typed_n) = counted_with(
        "typed",
        Annotations::read_only(),
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 64},
                "count": {"type": "integer", "minimum": 0, "maximum": 10}
            },
            "required": ["name"],
            "additionalProperties": false
        }),
        |_| json!({"ok": true}),
    );
    let (free, free_n) = counted_with(
        "free",
        Annotations::read_only(),
        json!({"type": "object"}),
        |_| json!({"ok": true}),
    );
    let (side, side_n) = counted("side", Annotations::side_effecting());
    let mut builder = Engine::builder()
        .tool(typed)
        .tool(free)
        .tool(side)
        .planner(MockPlanner::new(move |request| Ok(plan(request))))
        .budget("tool_calls", 10)
        .max_steps(20)
        .filesystem(dir);
    if hand_back {
        builder = builder.on_violation(OnViolation::HandBack { limit: 2 });
    }
    let engine = builder.build().expect("engine builds");
    let tools = Tools {
        typed: typed_n,
        free: free_n,
        side: side_n,
    };
    (engine, tools)
}

const PATH: [State; 5] = [
    State::Intake,
    State::Explore,
    State::Decide,
    State::Act,
    State::Validate,
];

/// The decision that walks on from `state` towards `done`.
fn onwards(state: State) -> Decision {
    match state {
        State::Intake => Decision::transition(State::Explore, "walk"),
        State::Explore => Decision::transition(State::Decide, "walk"),
        State::Act => Decision::transition(State::Validate, "walk"),
        _ => Decision::finish("walked", json!("end")),
    }
}

/// Walks to `target`, proposes `hostile` there once, then walks on to `done`.
fn walk_and(target: State, hostile: fn() -> Decision) -> Plan {
    let at = PATH
        .iter()
        .position(|&s| s == target)
        .expect("a working state") as u32;
    Arc::new(move |request: &PlanRequest<'_>| {
        if request.step() == at {
            return hostile();
        }
        let state = request.state();
        if request.step() < at {
            return Decision::transition(
                PATH[PATH.iter().position(|&s| s == state).unwrap() + 1],
                "walk",
            );
        }
        onwards(state)
    })
}

fn finish_in(_: State) -> Plan {
    Arc::new(|request: &PlanRequest<'_>| onwards(request.state()))
}

async fn decide(state: State, hostile: fn() -> Decision, hand_back: bool) -> Outcome {
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, tools) = engine_in(dir.path(), hand_back, walk_and(state, hostile));
    let result = engine.run("hostile input").await;
    let outcome = outcome_of_run(&engine, result, &tools).await;
    // The ledger the engine wrote reads back in a fresh process.
    let fresh = FsStores::open(dir.path()).expect("stores");
    for id in engine.list_runs().await.expect("list") {
        let loaded = fresh
            .ledgers()
            .load(&id)
            .await
            .expect("a written ledger reads back");
        assert_chain(&loaded.ledger);
    }
    outcome
}

/// A tool in `explore` returns `output()`.
async fn produce(output: fn() -> Value) -> Outcome {
    let dir = tempfile::tempdir().expect("tempdir");
    let runs = Counter::default();
    let hits = runs.clone();
    let tool = rein::FnTool::builder("produce")
        .annotations(Annotations::read_only())
        .handler(move |_: Value| {
            hits.hit();
            async move { Ok(output()) }
        })
        .build()
        .expect("tool");
    let engine = Engine::builder()
        .tool(tool)
        .planner(MockPlanner::new(|request| {
            Ok(match (request.state(), request.step()) {
                (State::Explore, 1) => Decision::call_tool("produce", json!({}), "produce"),
                (state, _) => onwards(state),
            })
        }))
        .inline_output_limit(64 * 1024)
        .filesystem(dir.path())
        .build()
        .expect("engine");
    let run = engine
        .run("hostile output")
        .await
        .expect("a run, failed or not");
    assert_eq!(runs.get(), 1);
    let fresh = FsStores::open(dir.path()).expect("stores");
    let loaded = fresh
        .ledgers()
        .load(run.id())
        .await
        .expect("the ledger reads back");
    assert_chain(&loaded.ledger);
    assert_eq!(count(&loaded.ledger, "tool_call"), 1);
    run_outcome(&engine, &run).await
}

async fn outcome_of_run(
    engine: &Engine,
    result: Result<rein::Run, EngineError>,
    tools: &Tools,
) -> Outcome {
    let run = match result {
        Ok(run) => run,
        Err(e) => return Outcome::Refused(error_name(&e)),
    };
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    assert_eq!(
        tools.total(),
        count(&ledger, "tool_call"),
        "every execution has its call on record"
    );
    for entry in ledger.entries() {
        if let EntryKind::PolicyViolation { message, .. } = entry.event() {
            // What the planner proposed is echoed, cut short: a megabyte in, not a megabyte back.
            assert!(
                message.len() < 4096,
                "a {} byte rejection message",
                message.len()
            );
        }
    }
    run_outcome(engine, &run).await
}

async fn run_outcome(engine: &Engine, run: &rein::Run) -> Outcome {
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    match run.status() {
        RunStatus::Completed => Outcome::Completed,
        RunStatus::Paused => Outcome::Paused,
        RunStatus::Failed => {
            let failure = run.failure().expect("a failure");
            Outcome::Failed(failure.kind, last_violation(&ledger))
        }
        other => panic!("unexpected status {other:?}"),
    }
}

fn last_violation(ledger: &Ledger) -> Option<Violation> {
    ledger.entries().iter().rev().find_map(|e| match e.event() {
        EntryKind::PolicyViolation { violation, .. } => Some(*violation),
        _ => None,
    })
}

fn outcome_of(result: Result<rein::Run, EngineError>) -> Outcome {
    match result {
        Ok(run) => panic!("expected a refusal, got a run {:?}", run.status()),
        Err(e) => Outcome::Refused(error_name(&e)),
    }
}

/// The variant of an engine error, by name.
fn error_name(e: &EngineError) -> &'static str {
    match e {
        EngineError::RunNotFound { .. } => "RunNotFound",
        EngineError::RunFinished { .. } => "RunFinished",
        EngineError::AwaitingAnswer { .. } => "AwaitingAnswer",
        EngineError::InvalidAnswer { .. } => "InvalidAnswer",
        EngineError::AlreadyActive { .. } => "AlreadyActive",
        EngineError::RunExists { .. } => "RunExists",
        EngineError::RunStore(_) => "RunStore",
        EngineError::LedgerStore(_) => "LedgerStore",
        EngineError::ArtifactStore(_) => "ArtifactStore",
        EngineError::InconsistentLedger { .. } => "InconsistentLedger",
        EngineError::InvalidRecordedPolicy { .. } => "InvalidRecordedPolicy",
        EngineError::TaskFailed { .. } => "TaskFailed",
        EngineError::VarTooDeep { .. } => "VarTooDeep",
        EngineError::LedgerBehindSnapshot { .. } => "LedgerBehindSnapshot",
        _ => "other",
    }
}

fn artifact_kind(e: &ArtifactError) -> &'static str {
    e.kind()
}

// ---- ledger files --------------------------------------------------------------------------------

/// Asks "Proceed?" (yes/no) in explore; on "yes" calls the `gate`-free `free` tool and finishes.
fn ask_then_finish() -> Plan {
    Arc::new(
        |request: &PlanRequest<'_>| match (request.step(), request.state()) {
            (0, _) => Decision::transition(State::Explore, "walk"),
            (1, _) => Decision::ask_human("Proceed?", ["yes", "no"]),
            (2, State::Explore) => Decision::call_tool("free", json!({"go": true}), "go"),
            (_, state) => onwards(state),
        },
    )
}

/// Starts a run in `dir` that pauses on a question; returns its id.
async fn paused_run(dir: &Path) -> RunId {
    let (engine, _) = engine_in(dir, false, ask_then_finish());
    let run = engine.run("hostile input").await.expect("run");
    assert_eq!(run.status(), RunStatus::Paused);
    run.id().clone()
}

fn ledger_path(dir: &Path, id: &RunId) -> PathBuf {
    dir.join("ledgers").join(format!("{id}.jsonl"))
}

fn split_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    body.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

fn replace(line: &mut Vec<u8>, from: &[u8], to: &[u8]) {
    let at = line
        .windows(from.len())
        .position(|w| w == from)
        .expect("the text to replace is in the line");
    line.splice(at..at + from.len(), to.iter().copied());
}

/// Edits the ledger file of a paused run, then loads it in a fresh process and resumes it:
/// the load's outcome is returned; a resume of a refused ledger must change nothing.
async fn tamper(edit: impl FnOnce(&mut Vec<u8>, &Other)) -> Outcome {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = paused_run(dir.path()).await;
    let other_dir = tempfile::tempdir().expect("tempdir");
    let other_id = paused_run(other_dir.path()).await;
    let other = Other {
        lines: split_lines(&std::fs::read(ledger_path(other_dir.path(), &other_id)).expect("read")),
    };
    let path = ledger_path(dir.path(), &id);
    let original = std::fs::read(&path).expect("read");
    let written = split_lines(&original).len();
    let mut bytes = original;
    edit(&mut bytes, &other);
    std::fs::write(&path, &bytes).expect("write");

    let outcome = load_fresh(dir.path(), &id, written).await;
    // A fresh engine must refuse to resume a ledger it cannot trust, and write nothing.
    let before = std::fs::read(&path).expect("read");
    let (engine, tools) = engine_in(dir.path(), false, ask_then_finish());
    let resumed = engine.resume_with_input(&id, "yes").await;
    match &outcome {
        Outcome::Ledger(_) => {
            assert!(
                matches!(resumed, Err(EngineError::LedgerStore(_))),
                "{resumed:?}"
            );
            assert_eq!(
                std::fs::read(&path).expect("read"),
                before,
                "a refused ledger is never written"
            );
            assert_eq!(tools.total(), 0);
        }
        Outcome::Refused(_) => {
            let err = resumed.expect_err("refused");
            assert_eq!(
                std::fs::read(&path).expect("read"),
                before,
                "a refused ledger is never written"
            );
            return Outcome::Refused(error_name(&err));
        }
        _ => {
            if let Err(err @ EngineError::LedgerBehindSnapshot { .. }) = &resumed {
                // It loaded, but falls short of the head the run's snapshot was saved after.
                assert_eq!(
                    std::fs::read(&path).expect("read"),
                    before,
                    "a refused ledger is never written"
                );
                assert_eq!(tools.total(), 0);
                return Outcome::Refused(error_name(err));
            }
            // A torn line after the snapshot's head held nothing the run acted on.
            if outcome == Outcome::TornTailCut {
                assert!(resumed.is_ok(), "{resumed:?}");
            }
            // It loaded: whatever resume does, the ledger it leaves verifies.
            if resumed.is_ok() {
                let fresh = FsStores::open(dir.path()).expect("stores");
                assert_chain(&fresh.ledgers().load(&id).await.expect("loads").ledger);
            }
        }
    }
    outcome
}

/// Loads the ledger of `id` in a fresh process and names the outcome.
async fn load_fresh(dir: &Path, id: &RunId, written: usize) -> Outcome {
    let fresh = FsStores::open(dir).expect("stores");
    match fresh.ledgers().load(id).await {
        Ok(loaded) => {
            assert_chain(&loaded.ledger);
            if loaded.torn_tail.is_some() {
                Outcome::TornTailCut
            } else if loaded.ledger.is_empty() {
                // Loads (a crash right after creating the file leaves it so); the engine
                // refuses to resume it, which `tamper` reports.
                Outcome::Refused("empty")
            } else if loaded.ledger.len() < written {
                Outcome::LoadedShorter
            } else {
                Outcome::Loaded
            }
        }
        Err(LedgerStoreError::Broken { source, .. }) => Outcome::Ledger(source.problem.name()),
        Err(LedgerStoreError::Corrupt { .. }) => Outcome::Ledger("corrupt"),
        Err(LedgerStoreError::Io { .. }) => Outcome::Ledger("io"),
        Err(LedgerStoreError::NotFound { .. }) => Outcome::Ledger("not_found"),
        Err(e) => panic!("unexpected ledger error {e}"),
    }
}

/// Every file under `dir` with its bytes, to prove nothing there was written.
fn snapshot_dir(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).expect("read")));
            }
        }
    }
    files.sort();
    files
}

// ---- artifacts -----------------------------------------------------------------------------------

fn content_path(dir: &Path, id: &ArtifactId, ext: &str) -> PathBuf {
    let (shard, file) = id.shard();
    dir.join(shard).join(format!("{file}.{ext}"))
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, to.join(path.file_name().expect("a name"))).expect("copy");
    }
}

// ---- approvals -----------------------------------------------------------------------------------

/// A request like `request` for another input.
fn forged(request: &ApprovalRequest, input: Value) -> ApprovalRequest {
    let spec = rein::ToolSpec::new(request.tool().clone(), "forged")
        .with_annotations(Annotations::destructive());
    ApprovalRequest::new(
        request.run_id().clone(),
        request.step(),
        request.state(),
        &spec,
        input,
        request.reason(),
    )
}

/// An approver that answers with a function.
struct Answering(fn(&ApprovalRequest) -> Result<ApprovalResponse, ApproverError>);

impl Approver for Answering {
    async fn decide(&self, request: &ApprovalRequest) -> Result<ApprovalResponse, ApproverError> {
        (self.0)(request)
    }
}

async fn approve(
    answer: fn(&ApprovalRequest) -> Result<ApprovalResponse, ApproverError>,
) -> Outcome {
    let (deploy, runs) = counted("deploy", Annotations::destructive());
    let engine = Engine::builder()
        .tool(deploy)
        .approver(Answering(answer))
        .planner(MockPlanner::new(|request| {
            Ok(match (request.step(), request.state()) {
                (0, _) => Decision::transition(State::Explore, "walk"),
                (1, _) => Decision::transition(State::Decide, "walk"),
                (2, _) => Decision::transition(State::Act, "walk"),
                (3, State::Act) => Decision::call_tool("deploy", json!({"env": "prod"}), "ship"),
                (_, state) => onwards(state),
            })
        }))
        .build()
        .expect("engine");
    let run = engine.run("deploy").await.expect("run");
    let ledger = engine.ledger(run.id()).await.expect("ledger");
    assert_chain(&ledger);
    assert_eq!(count(&ledger, "approval_requested"), 1);
    match run.status() {
        RunStatus::Completed => {
            assert_eq!(count(&ledger, "approval_granted"), 1);
            assert_eq!(runs.get(), 1);
        }
        _ => {
            assert_eq!(
                count(&ledger, "approval_denied"),
                1,
                "the denial is on record"
            );
            assert_eq!(runs.get(), 0, "a call without a valid approval never runs");
        }
    }
    run_outcome(&engine, &run).await
}

// ---- resume --------------------------------------------------------------------------------------

/// A plan that asks, then (on an answer) calls `gated` and finishes.
fn ask_then_gate() -> Plan {
    Arc::new(
        |request: &PlanRequest<'_>| match (request.step(), request.state()) {
            (0, _) => Decision::transition(State::Explore, "walk"),
            (1, _) => Decision::ask_human("Proceed?", ["yes", "no"]),
            (2, State::Explore) => Decision::call_tool("gate", json!({}), "hold"),
            (_, state) => onwards(state),
        },
    )
}

/// An engine in `dir` whose `gate` tool signals when entered and waits to be released.
fn gated_engine(
    dir: &Path,
    entered: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Notify>,
) -> (Engine, Counter) {
    let runs = Counter::default();
    let hits = runs.clone();
    let (free, _) = counted("free", Annotations::read_only());
    let gate = rein::FnTool::builder("gate")
        .annotations(Annotations::read_only())
        .handler(move |_: Value| {
            hits.hit();
            let (entered, release) = (Arc::clone(&entered), Arc::clone(&release));
            async move {
                entered.notify_one();
                release.notified().await;
                Ok(json!({"released": true}))
            }
        })
        .build()
        .expect("tool");
    let plan = ask_then_gate();
    let engine = Engine::builder()
        .tool(gate)
        .tool(free)
        .planner(MockPlanner::new(move |request| Ok(plan(request))))
        .filesystem(dir)
        .build()
        .expect("engine");
    (engine, runs)
}

async fn resume(how: ResumeInput) -> Outcome {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = paused_run(dir.path()).await;
    let path = ledger_path(dir.path(), &id);
    let (engine, tools) = engine_in(dir.path(), false, ask_then_finish());
    let before = std::fs::read(&path).expect("read");
    let refused = |result: Result<rein::Run, EngineError>, path: &Path, before: &[u8]| {
        let err = result.expect_err("refused");
        assert_eq!(
            std::fs::read(path).expect("read"),
            before,
            "a refused resume writes nothing"
        );
        Outcome::Refused(error_name(&err))
    };
    match how {
        ResumeInput::Answer(answer) => {
            let result = engine.resume_with_input(&id, &answer()).await;
            if result.is_err() {
                return refused(result, &path, &before);
            }
            let run = result.expect("resumed");
            assert_eq!(tools.free.get(), 1);
            run_outcome(&engine, &run).await
        }
        ResumeInput::NoAnswer => refused(engine.resume(&id).await, &path, &before),
        ResumeInput::Unknown => {
            let unknown: RunId = "never-started".parse().expect("id");
            let err = engine.resume(&unknown).await.expect_err("unknown");
            let err2 = engine
                .resume_with_input(&unknown, "yes")
                .await
                .expect_err("unknown");
            assert_eq!(error_name(&err), error_name(&err2));
            assert!(
                !ledger_path(dir.path(), &unknown).exists(),
                "no ledger was created"
            );
            Outcome::Refused(error_name(&err))
        }
        ResumeInput::Finished | ResumeInput::FinishedWithAnswer => {
            let run = engine
                .resume_with_input(&id, "yes")
                .await
                .expect("finishes");
            assert_eq!(run.status(), RunStatus::Completed);
            let before = std::fs::read(&path).expect("read");
            let result = match how {
                ResumeInput::Finished => engine.resume(&id).await,
                _ => engine.resume_with_input(&id, "no").await,
            };
            refused(result, &path, &before)
        }
        ResumeInput::TwiceAtOnce => {
            let (entered, release) = (
                Arc::new(tokio::sync::Notify::new()),
                Arc::new(tokio::sync::Notify::new()),
            );
            let (gated, _) = gated_engine(dir.path(), Arc::clone(&entered), Arc::clone(&release));
            drop(engine);
            let first = gated
                .start_resume(&id, Some("yes"))
                .await
                .expect("first resume");
            entered.notified().await;
            let second = gated.resume_with_input(&id, "yes").await;
            let third = gated.resume(&id).await;
            release.notify_one();
            let run = first.wait().await.expect("the first resume finishes");
            assert_eq!(run.status(), RunStatus::Completed);
            let ledger = gated.ledger(&id).await.expect("ledger");
            assert_chain(&ledger);
            assert_eq!(
                count(&ledger, "human_input_received"),
                1,
                "one answer on record"
            );
            assert!(
                matches!(third, Err(EngineError::AlreadyActive { .. })),
                "{third:?}"
            );
            Outcome::Refused(error_name(&second.expect_err("the second is refused")))
        }
        ResumeInput::TwiceByTwoProcesses => {
            let (entered, release) = (
                Arc::new(tokio::sync::Notify::new()),
                Arc::new(tokio::sync::Notify::new()),
            );
            let (first_process, _) =
                gated_engine(dir.path(), Arc::clone(&entered), Arc::clone(&release));
            let (second_process, _) = gated_engine(
                dir.path(),
                Arc::new(tokio::sync::Notify::new()),
                Arc::new(tokio::sync::Notify::new()),
            );
            drop(engine);
            let first = first_process
                .start_resume(&id, Some("yes"))
                .await
                .expect("first resume");
            entered.notified().await;
            // The second process sees the call in flight as in doubt, or the answer given.
            let second = second_process.resume(&id).await;
            release.notify_one();
            let first = first.wait().await;
            // Whatever happened, one chain: the ledger still verifies in a third process.
            let fresh = FsStores::open(dir.path()).expect("stores");
            let loaded = fresh.ledgers().load(&id).await;
            let loaded = loaded.unwrap_or_else(|e| panic!("two processes broke the ledger: {e}"));
            assert_chain(&loaded.ledger);
            match (first, second) {
                (Ok(_), Err(e)) | (Err(e), Ok(_)) => Outcome::Refused(error_name(&e)),
                (a, b) => panic!("exactly one process may drive the run: {a:?} / {b:?}"),
            }
        }
    }
}
