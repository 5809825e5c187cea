//! Serde: every public type round-trips through `serde_json` unchanged, and an entry read
//! back from its JSON line hashes the same.

mod common;

use common::{entry_kind, every_kind, from_lines, json_value, ledger, run_id};
use proptest::prelude::*;
use rein_ledger::{
    Entry, EntryKind, InterruptKind, Ledger, LoadedLedger, Problem, TornTail, VerifyError,
    Violation,
};
use rein_run::{State, Timestamp};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

/// `value` survives serialization and deserialization unchanged.
fn check<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
    let text = serde_json::to_string(value).unwrap();
    let back: T = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, value, "{text}");
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        text,
        "not stable: {text}"
    );
}

#[test]
fn every_entry_kind_round_trips_and_is_tagged_with_its_name() {
    let kinds = every_kind();
    let mut names: Vec<_> = kinds.iter().map(EntryKind::name).collect();
    for kind in &kinds {
        check(kind);
        assert_eq!(serde_json::to_value(kind).unwrap()["type"], kind.name());
    }
    names.dedup();
    assert_eq!(names.len(), 21, "one example per kind: {names:?}");
}

#[test]
fn every_other_public_type_round_trips() {
    for v in [
        Violation::UnknownTool,
        Violation::InvalidInput,
        Violation::IneligibleTool,
        Violation::TransitionRefused,
        Violation::ApprovalDenied,
        Violation::BudgetExhausted,
        Violation::InvalidAnswer,
        Violation::MaxSteps,
        Violation::DelegationRefused,
    ] {
        check(&v);
    }
    check(&InterruptKind::Graceful);
    check(&InterruptKind::Abort);
    for problem in [
        Problem::Edited,
        Problem::Dropped { missing: 3 },
        Problem::Reordered { found: 4 },
        Problem::Inserted { found: 2 },
        Problem::WrongRun {
            found: "other".parse().unwrap(),
        },
        Problem::BrokenLink,
    ] {
        assert_eq!(
            serde_json::to_value(&problem).unwrap()["kind"],
            problem.name()
        );
        check(&VerifyError { seq: 3, problem });
    }
    check(&TornTail { line: 9, bytes: 17 });

    let mut ledger = Ledger::new(run_id());
    for kind in every_kind() {
        ledger.append(Timestamp::from_unix_millis(1), State::Act, kind);
    }
    check(&ledger);
    for entry in ledger.entries() {
        check(entry);
    }
    check(&LoadedLedger {
        ledger: ledger.clone(),
        torn_tail: None,
    });
    check(&LoadedLedger {
        ledger,
        torn_tail: Some(TornTail {
            line: 21,
            bytes: 40,
        }),
    });
}

#[test]
fn unknown_fields_are_refused() {
    let mut ledger = Ledger::new(run_id());
    let entry = ledger.append(
        Timestamp::EPOCH,
        State::Intake,
        EntryKind::Steering { note: "n".into() },
    );
    let mut json = serde_json::to_value(entry).unwrap();
    json["extra"] = json!(1);
    assert!(
        serde_json::from_value::<Entry>(json)
            .unwrap_err()
            .to_string()
            .contains("extra")
    );
    let err =
        serde_json::from_value::<EntryKind>(json!({"type": "steering", "note": "n", "who": "x"}))
            .unwrap_err();
    assert!(err.to_string().contains("who"), "{err}");
    let err = serde_json::from_value::<EntryKind>(json!({"type": "explosion"})).unwrap_err();
    assert!(err.to_string().contains("explosion"), "{err}");
}

#[test]
fn a_float_that_default_serde_json_misparses_keeps_its_hash() {
    // Without `float_roundtrip`, serde_json reads this back as ...6873 and the entry fails
    // verification after a round trip through storage.
    let mut ledger = Ledger::new(run_id());
    let result = json!({"x": 965_540_831_818.687_1_f64});
    ledger.append(
        Timestamp::EPOCH,
        State::Done,
        EntryKind::RunCompleted {
            summary: "s".into(),
            result,
        },
    );
    let back = from_lines(&ledger.entries()[0].to_json_line());
    assert_eq!(back, ledger.entries());
    Ledger::from_entries(run_id(), back).unwrap();
}

/// An entry's line is exactly `serde_json`'s encoding of it: the hash covers the bytes
/// `serde_json` makes, whichever writer made them.
fn check_line(entry: &Entry) {
    let serde_json = format!("{}\n", serde_json::to_string(entry).unwrap());
    assert_eq!(entry.to_json_line(), serde_json);
}

/// Every byte a JSON string escapes, the ones it does not, and text beyond ASCII, in a
/// string, in an object key and in a nested value; and numbers at their limits.
#[test]
fn lines_escape_and_print_numbers_as_serde_json_does() {
    let every_ascii: String = (0u8..0x80).map(char::from).collect();
    let text = format!("{every_ascii} é ∑ 😀 \u{2028}\u{7f}");
    let numbers = json!([
        0,
        -1,
        1,
        i64::MIN,
        i64::MAX,
        u64::MAX,
        0.5,
        -0.0,
        1e300,
        5e-324,
        1e-7,
        123456789.125,
        f64::from(f32::MAX),
        9007199254740993_u64
    ]);
    let mut ledger = Ledger::new(run_id());
    let t = Timestamp::from_unix_millis(u64::MAX);
    let kinds = every_kind().into_iter().chain([
        EntryKind::Steering { note: text.clone() },
        EntryKind::Steering {
            note: String::new(),
        },
        EntryKind::RunCompleted {
            summary: text.clone(),
            result: json!({ text.clone(): [text, {"": null, "\"": true}], "n": numbers }),
        },
    ]);
    for kind in kinds {
        check_line(ledger.append(t, State::Act, kind));
    }
}

proptest! {
    /// Any entry's line is serde_json's encoding of it.
    #[test]
    fn lines_are_serde_json_bytes(ledger in ledger(1..6)) {
        for entry in ledger.entries() {
            let serde_json = format!("{}\n", serde_json::to_string(entry).unwrap());
            prop_assert_eq!(entry.to_json_line(), serde_json);
        }
    }

    /// Arbitrary events (floats, unicode, nested values) read back from their JSON line to
    /// the same entry, with the same canonical bytes and hash.
    #[test]
    fn entries_round_trip_with_the_same_hash(ledger in ledger(1..6)) {
        for entry in ledger.entries() {
            let back = from_lines(&entry.to_json_line()).remove(0);
            prop_assert_eq!(&back, entry);
            prop_assert_eq!(back.canonical_bytes(), entry.canonical_bytes());
            prop_assert_eq!(back.computed_hash(), entry.hash());
        }
    }

    /// Any event kind round-trips on its own.
    #[test]
    fn entry_kinds_round_trip(kind in entry_kind()) {
        let text = serde_json::to_string(&kind).unwrap();
        prop_assert_eq!(serde_json::from_str::<EntryKind>(&text).unwrap(), kind);
    }

    /// Any JSON value re-encodes to the same bytes after a round trip (floats included:
    /// this needs serde_json's `float_roundtrip`, which this crate turns on).
    #[test]
    fn values_re_encode_to_the_same_bytes(value in json_value()) {
        let text = serde_json::to_string(&value).unwrap();
        let reparsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(serde_json::to_string(&reparsed).unwrap(), text);
    }
}
