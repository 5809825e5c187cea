//! Golden vector for a `planner_call` with the fields the model's dialogue added (cache
//! tokens, the reply): its canonical bytes and hash, pinned. The same entry without them is
//! pinned in `golden.rs`, as every earlier version wrote it.
//!
//! CHANGING AN EXPECTED VALUE HERE BREAKS EVERY LEDGER ALREADY STORED THAT HOLDS THIS KIND:
//! fix the encoding, not the vector.

use rein_ledger::{Entry, EntryKind, Ledger};
use rein_run::{
    Cost, Currency, Digest, ModelCall, ModelReply, Money, PlannerCall, RunId, State, Timestamp,
};

fn ledger() -> Ledger {
    let run: RunId = "golden-run".parse().unwrap();
    let mut ledger = Ledger::new(run);
    ledger.append(
        Timestamp::from_unix_millis(1_700_000_000_000),
        State::Explore,
        EntryKind::PlannerCall {
            step: 3,
            call: PlannerCall {
                provider: "anthropic".into(),
                model: "claude-x".into(),
                request_hash: Digest::of_bytes(b"{\"model\":\"claude-x\"}"),
                input_tokens: 520,
                output_tokens: 85,
                // Written before costs named their currency: a bare number.
                cost: Cost::Known(Money::from_micros(4_321, Currency::UNNAMED)),
                latency_ms: 950,
                finish_reason: Some("tool_use".into()),
                cache_read_tokens: 519,
                cache_write_tokens: 0,
                reply: Some(ModelReply {
                    text: "Reading it.".into(),
                    calls: vec![ModelCall {
                        id: "toolu_01".into(),
                        name: "fs_read".into(),
                        arguments: "{\"path\":\"a.txt\"}".into(),
                    }],
                }),
            },
        },
    );
    ledger
}

#[test]
fn a_planner_call_with_its_reply_encodes_and_hashes_as_pinned() {
    let ledger = ledger();
    let entry = &ledger.entries()[0];
    assert_eq!(
        String::from_utf8(entry.canonical_bytes()).unwrap(),
        r#"{"seq":1,"at":1700000000000,"run_id":"golden-run","state":"explore","event":{"type":"planner_call","step":3,"call":{"provider":"anthropic","model":"claude-x","request_hash":"343308cce1d781219a20bf8de2230924db8ff3648883db9dfc3cd465ef0a5db4","input_tokens":520,"output_tokens":85,"cost":4321,"latency_ms":950,"finish_reason":"tool_use","cache_read_tokens":519,"reply":{"text":"Reading it.","calls":[{"id":"toolu_01","name":"fs_read","arguments":"{\"path\":\"a.txt\"}"}]}}},"prev":"0000000000000000000000000000000000000000000000000000000000000000"}"#
    );
    assert_eq!(
        entry.hash().to_string(),
        "12bb10cf1b33792aeca39f7dbfc2c5b990b986aa4e3e1dacca1226fb33d16c2a"
    );
    let line = serde_json::to_string(entry).unwrap();
    let back: Entry = serde_json::from_str(&line).unwrap();
    assert_eq!(back.event(), entry.event());
    let run: RunId = "golden-run".parse().unwrap();
    Ledger::from_entries(run, vec![back])
        .unwrap()
        .verify()
        .unwrap();
}
