//! The compact writer against `serde_json`: every kind of entry, generated values, and the
//! fast paths for strings and integers at every length and width.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rein_run::State;
use serde_json::json;

use super::text::{ESCAPE, clean_prefix};
use super::*;
use crate::EntryKind;

/// This writer alone (no `serde_json` fallback) makes `serde_json`'s bytes for `value`.
fn same_without_fallback<T: Serialize>(value: &T) {
    let mut out = Vec::new();
    assert!(value.serialize(&mut Writer { out: &mut out }).is_ok());
    assert_eq!(
        String::from_utf8(out).unwrap(),
        serde_json::to_string(value).unwrap()
    );
}

#[test]
fn entries_are_written_without_serde_json() {
    let every_ascii: String = (0u8..0x80).map(char::from).collect();
    same_without_fallback(&EntryKind::RunCompleted {
        summary: every_ascii.clone(),
        result: json!({every_ascii: [1, -2, 2.5, null, true, "é😀"], "": {}, "a": []}),
    });
    same_without_fallback(&EntryKind::Transition {
        from: State::Explore,
        to: State::Decide,
        reason: "have it".into(),
    });
    same_without_fallback(&(u64::MAX, i64::MIN, 'x', Some(()), f32::MAX, f64::NAN));
}

#[test]
fn the_clean_prefix_stops_at_the_first_byte_to_escape_wherever_it_is() {
    for at in 0..20 {
        for b in 0..=u8::MAX {
            let mut bytes = [b'a'; 20];
            bytes[at] = b;
            let expected = if ESCAPE[usize::from(b)] == 0 { 20 } else { at };
            assert_eq!(clean_prefix(&bytes), expected, "byte {b:#x} at {at}");
        }
    }
}

#[test]
fn needs_escape_finds_any_byte_to_escape_at_any_place_in_a_string_of_any_length() {
    for len in 0..=20 {
        assert!(!needs_escape(&vec![b'a'; len]), "length {len}");
        for at in 0..len {
            for b in 0..=u8::MAX {
                let mut bytes = vec![b'a'; len];
                bytes[at] = b;
                let expected = ESCAPE[usize::from(b)] != 0;
                assert_eq!(
                    needs_escape(&bytes),
                    expected,
                    "byte {b:#x} at {at} of {len}"
                );
            }
        }
    }
}

#[test]
fn unsigned_writes_the_digits_of_every_width() {
    let mut n = 1u64;
    let mut edges = vec![0, u64::MAX, u64::MAX - 1];
    while let Some(next) = n.checked_mul(10) {
        edges.extend([n - 1, n, n + 1, next - 1]);
        n = next;
    }
    for n in edges {
        let mut out = b"x".to_vec();
        unsigned(&mut out, n);
        assert_eq!(out, format!("x{n}").into_bytes());
    }
}

/// A struct with one field whose name is chosen at run time.
struct Field(&'static str, String);

impl Serialize for Field {
    fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use ser::SerializeStruct as _;
        let mut s = serializer.serialize_struct("Field", 2)?;
        s.serialize_field(self.0, &self.1)?;
        s.serialize_field(self.0, &1)?;
        s.end()
    }
}

/// Text with what JSON escapes, what it does not, and runs long enough for whole words.
fn tricky_text() -> impl Strategy<Value = String> {
    let tricky = prop_oneof![
        any::<char>(),
        (0u8..0x20).prop_map(char::from),
        prop::sample::select(vec!['"', '\\', '/', '\u{7f}', 'é', '\u{2028}', '😀', 'a']),
    ];
    prop::collection::vec(tricky, 0..48).prop_map(String::from_iter)
}

proptest! {
    /// A string, as a value, a map key or a field name, is written as serde_json writes it.
    #[test]
    fn strings_are_serde_jsons_bytes(text in tricky_text(), other in tricky_text()) {
        let mut out = Vec::new();
        string(&mut out, &text);
        prop_assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&text).unwrap());
        let map: BTreeMap<&str, &str> = [(text.as_str(), other.as_str()), ("", "")].into();
        same_without_fallback(&map);
        let name: &'static str = Box::leak(text.clone().into_boxed_str());
        same_without_fallback(&Field(name, other));
    }

    /// Any number is written with serde_json's digits.
    #[test]
    fn integers_are_serde_jsons_bytes(n in any::<u64>(), i in any::<i64>()) {
        same_without_fallback(&(n, i, n >> 20, i >> 40));
    }
}

#[test]
fn serde_jsons_private_structs_are_left_to_it() {
    struct Private;
    impl Serialize for Private {
        fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use ser::SerializeStruct as _;
            let mut s = serializer.serialize_struct("$serde_json::private::Number", 1)?;
            s.serialize_field("$serde_json::private::Number", "12")?;
            s.end()
        }
    }
    let mut out = Vec::new();
    assert!(Private.serialize(&mut Writer { out: &mut out }).is_err());
}

#[test]
fn what_it_leaves_to_serde_json_still_comes_out_the_same() {
    let numbered: BTreeMap<u32, &str> = [(1, "one"), (20, "twenty")].into();
    let mut out = b"kept".to_vec();
    assert!(numbered.serialize(&mut Writer { out: &mut out }).is_err());
    let mut out = b"kept".to_vec();
    write(&mut out, &numbered).unwrap();
    assert_eq!(out, br#"kept{"1":"one","20":"twenty"}"#);

    let refused: BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
    let mut out = b"kept".to_vec();
    assert!(write(&mut out, &refused).is_err());
    assert_eq!(out, b"kept");
}
