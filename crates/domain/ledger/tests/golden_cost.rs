//! Golden vectors for costs that name their currency: a `planner_call` priced in USD (its
//! amount in micro-units, the currency beside it), one whose model has no price (`null`,
//! never 0), and a `planner_attempt`'s worst cost. The bare numbers every earlier version
//! wrote are pinned in `golden.rs` and `golden_dialogue.rs`, and still read and verify.
//!
//! CHANGING AN EXPECTED VALUE HERE BREAKS EVERY LEDGER ALREADY STORED THAT HOLDS THIS KIND:
//! fix the encoding, not the vector.

use rein_ledger::{Entry, EntryKind, Ledger};
use rein_run::{
    Cost, Currency, Digest, Money, PlannerAttempt, PlannerCall, RunId, State, Timestamp,
};

fn call(cost: Cost) -> EntryKind {
    EntryKind::PlannerCall {
        step: 1,
        call: PlannerCall {
            provider: "openai".into(),
            model: "gpt-x".into(),
            request_hash: Digest::of_bytes(b"{}"),
            input_tokens: 1000,
            output_tokens: 100,
            cost,
            latency_ms: 10,
            finish_reason: None,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            reply: None,
        },
    }
}

fn ledger() -> Ledger {
    let run: RunId = "golden-run".parse().unwrap();
    let mut ledger = Ledger::new(run);
    let at = Timestamp::from_unix_millis(1_700_000_000_000);
    ledger.append(
        at,
        State::Explore,
        EntryKind::PlannerAttempt {
            step: 1,
            attempt: PlannerAttempt {
                attempt: 1,
                provider: "openai".into(),
                model: "gpt-x".into(),
                request_hash: Digest::of_bytes(b"{}"),
                worst_tokens: 2000,
                worst_cost: Cost::Known(Money::from_micros(9_000, Currency::EUR)),
            },
        },
    );
    ledger.append(
        at,
        State::Explore,
        call(Cost::Known(Money::from_micros(1_500, Currency::USD))),
    );
    ledger.append(at, State::Explore, call(Cost::Unknown));
    ledger
}

#[test]
fn costs_in_a_currency_and_unknown_costs_encode_as_pinned_and_read_back() {
    let ledger = ledger();
    let json = |i: usize| String::from_utf8(ledger.entries()[i].canonical_bytes()).unwrap();
    assert!(
        json(0).contains(r#""worst_tokens":2000,"worst_cost":9000,"currency":"EUR"}"#),
        "{}",
        json(0)
    );
    assert!(
        json(1).contains(r#""cost":1500,"currency":"USD","latency_ms":10"#),
        "{}",
        json(1)
    );
    assert!(
        json(2).contains(r#""cost":null,"latency_ms":10"#),
        "{}",
        json(2)
    );
    let hashes: Vec<String> = ledger
        .entries()
        .iter()
        .map(|e| e.hash().to_string())
        .collect();
    assert_eq!(
        hashes,
        [
            "3dca92d20248731fb528420d75841c4d0e59866a860a4e1efe044b6879b384fe",
            "d5293f3dbb212e861eedf8a04bac9d020a1697fff0d7acf1552bf8b277e46cd1",
            "0a6b400f10e9a815d2bfd6a8621f4477dd0641c0b7f9cdf62a9b52c48dec2184",
        ]
    );
    // Each reads back as it was, and the chain verifies.
    let run: RunId = "golden-run".parse().unwrap();
    let back: Vec<Entry> = ledger
        .entries()
        .iter()
        .map(|e| serde_json::from_str(&serde_json::to_string(e).unwrap()).unwrap())
        .collect();
    assert_eq!(
        back.iter().map(Entry::event).collect::<Vec<_>>(),
        ledger
            .entries()
            .iter()
            .map(Entry::event)
            .collect::<Vec<_>>()
    );
    Ledger::from_entries(run, back).unwrap().verify().unwrap();
    // A currency without an amount is not a cost.
    let line = serde_json::to_string(&ledger.entries()[2])
        .unwrap()
        .replace(r#""cost":null"#, r#""cost":null,"currency":"USD""#);
    assert!(serde_json::from_str::<Entry>(&line).is_err());
}
