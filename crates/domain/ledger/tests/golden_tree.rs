//! Golden vectors of the sub-run kinds (`child_started`, `child_ended`, `child_of`, and the
//! `delegate` decision): their canonical encoding and hash chain, pinned byte for byte.
//!
//! CHANGING AN EXPECTED VALUE HERE BREAKS EVERY STORED LEDGER OF A TREE OF RUNS: fix the
//! code, not the vector.

use rein_ledger::{Entry, EntryKind, Ledger};
use rein_run::{
    BudgetName, ChildOutcome, Decision, Digest, Failure, FailureKind, LedgerHead, RunId, State,
    Timestamp,
};
use serde_json::json;

fn tree_kinds() -> Ledger {
    let at = |ms: u64| Timestamp::from_unix_millis(1_700_000_000_000 + ms);
    let child: RunId = "golden-child".parse().unwrap();
    let head = LedgerHead::new(7, Digest::of_bytes(b"child head"));
    let mut ledger = Ledger::new("golden-run".parse().unwrap());
    ledger.append(
        at(0),
        State::Intake,
        EntryKind::RunStarted {
            goal: "Delegate".into(),
            vars: serde_json::Map::new(),
            policy: json!({"budgets": {"tool_calls": 5}}).into(),
        },
    );
    ledger.append(
        at(1),
        State::Explore,
        EntryKind::Decision {
            step: 1,
            decision: Decision::delegate_to(
                "reader",
                "read the notes",
                [(BudgetName::TOOL_CALLS, 2)],
                "split",
            ),
        },
    );
    ledger.append(
        at(2),
        State::Explore,
        EntryKind::ChildStarted {
            child: child.clone(),
            goal: "read the notes".into(),
            carved: [(BudgetName::TOOL_CALLS, 2), (BudgetName::STEPS, 9)].into(),
            planner: Some("reader".into()),
        },
    );
    ledger.append(
        at(3),
        State::Explore,
        EntryKind::ChildEnded {
            child: child.clone(),
            head,
            outcome: ChildOutcome::Completed {
                summary: "read them".into(),
                result: json!({"notes": 3}),
            },
            spent: [(BudgetName::TOOL_CALLS, 1)].into(),
        },
    );
    ledger.append(
        at(4),
        State::Explore,
        EntryKind::ChildEnded {
            child,
            head,
            outcome: ChildOutcome::Failed {
                failure: Failure::new(FailureKind::Aborted, "aborted"),
            },
            spent: [].into(),
        },
    );
    ledger.append(
        at(5),
        State::Intake,
        EntryKind::ChildOf {
            parent: "golden-run".parse().unwrap(),
            parent_head: LedgerHead::new(3, Digest::of_bytes(b"parent entry")),
            depth: 1,
            planner: None,
        },
    );
    ledger
}

#[test]
fn the_sub_run_kinds_encode_and_hash_as_pinned() {
    let ledger = tree_kinds();
    let lines: Vec<String> = ledger
        .entries()
        .iter()
        .map(|e| String::from_utf8(e.canonical_bytes()).unwrap())
        .collect();
    assert_eq!(lines[1..], GOLDEN.lines().collect::<Vec<_>>()[..]);
    // Changing this literal breaks every stored ledger of a tree: fix the encoding instead.
    assert_eq!(ledger.last_hash().to_string(), LAST_HASH);
    // And they read back as written.
    let back: Vec<Entry> = ledger
        .entries()
        .iter()
        .map(|e| serde_json::from_str(&e.to_json_line()).unwrap())
        .collect();
    assert_eq!(
        Ledger::from_entries("golden-run".parse().unwrap(), back).unwrap(),
        ledger
    );
}

/// Entries 2 to 6, written once by the code above.
const GOLDEN: &str = r#"{"seq":2,"at":1700000000001,"run_id":"golden-run","state":"explore","event":{"type":"decision","step":1,"decision":{"type":"delegate","goal":"read the notes","budget":{"tool_calls":2},"planner":"reader","reason":"split"}},"prev":"5e9e131e087da009dcf7cfddb211774659f904b4163dc8313f221b0c4612b185"}
{"seq":3,"at":1700000000002,"run_id":"golden-run","state":"explore","event":{"type":"child_started","child":"golden-child","goal":"read the notes","carved":{"steps":9,"tool_calls":2},"planner":"reader"},"prev":"55547a79e28d694976dbc1d669e4f8df87e2c89477823208db6aa1e27e7f472a"}
{"seq":4,"at":1700000000003,"run_id":"golden-run","state":"explore","event":{"type":"child_ended","child":"golden-child","head":{"seq":7,"hash":"17b8f3b4531a8b75891615669c4a239435e827b9abdad066b966b4b5ff6438d4"},"outcome":{"status":"completed","summary":"read them","result":{"notes":3}},"spent":{"tool_calls":1}},"prev":"b81198fc7537cf6a78f9558a82745e2e7cb38b84361a31eaf531a3cd843fcb61"}
{"seq":5,"at":1700000000004,"run_id":"golden-run","state":"explore","event":{"type":"child_ended","child":"golden-child","head":{"seq":7,"hash":"17b8f3b4531a8b75891615669c4a239435e827b9abdad066b966b4b5ff6438d4"},"outcome":{"status":"failed","failure":{"kind":"aborted","message":"aborted"}},"spent":{}},"prev":"3fa60785448adff59cc743e89e18d5715a40e45168e4e243835a9830343db359"}
{"seq":6,"at":1700000000005,"run_id":"golden-run","state":"intake","event":{"type":"child_of","parent":"golden-run","parent_head":{"seq":3,"hash":"5b7096404131006d300997a4692bdfc3ee689f17aab0ea84e2126c1a1b913b99"},"depth":1,"planner":null},"prev":"d404369c5cff9f80e2ec53018ad0ef720b86c9492df01348efb072aab1f761e5"}"#;
const LAST_HASH: &str = "d2894463074d0cd96e266671ddcd3d06e81468c17598b326876721e826c0008d";
