//! A compact-JSON writer that makes exactly the bytes `serde_json::to_writer` makes, faster:
//! the encoding every entry's hash is defined over.
//!
//! serde_json writes through `io::Write` and escapes strings with a bounds-checked loop that
//! costs about as much per key as the bytes around it; an entry is mostly short keys and
//! strings, so that overhead was most of an entry's encoding. This writer appends straight to
//! a `Vec<u8>`, looks for bytes to escape eight at a time, writes a key with its quotes,
//! comma and colon in one piece, and integers two digits at a time. It covers what entries hold (structs, enums, maps with string keys, strings,
//! integers, booleans, `null`) and hands floats to serde_json itself, so their digits are
//! serde_json's. Anything else (a map key that is not a string, 128-bit integers, raw bytes)
//! makes it give up with [`Unsupported`], and [`write`] encodes the value with serde_json
//! instead: the bytes are the same either way. The tests compare both writers on every kind
//! of entry and on generated JSON values.

use std::fmt;

use serde::ser::{self, Serialize};

/// Appends the compact JSON of `value` to `out`: the bytes `serde_json::to_writer` would
/// write.
///
/// # Errors
/// What serde_json's own encoding fails with (a map whose keys are not strings), with `out`
/// as it was.
pub(crate) fn write<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    if value.serialize(&mut Writer { out }).is_ok() {
        return Ok(());
    }
    out.truncate(start);
    let written = serde_json::to_writer(&mut *out, value);
    if written.is_err() {
        out.truncate(start);
    }
    written
}

/// The writer: compact JSON appended to `out`.
struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

/// Something this writer leaves to serde_json.
#[derive(Debug)]
pub(crate) struct Unsupported;

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("left to serde_json")
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Self
    }
}

/// What a byte becomes inside a JSON string: 0 for itself, else the letter after `\`
/// (`u` for `\u00XX`). serde_json's table, the same escapes.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Appends `s` as a JSON string, escaped as serde_json escapes it.
pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // Most strings in an entry (names, hex digests, prose) have nothing to escape: one
    // copy.
    if needs_escape(bytes) {
        escaped(out, bytes);
    } else {
        out.extend_from_slice(bytes);
    }
    out.push(b'"');
}

/// Appends the inside of a JSON string holding `bytes`, some of which are escaped.
#[cold]
fn escaped(out: &mut Vec<u8>, mut bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    loop {
        let clean = clean_prefix(bytes);
        out.extend_from_slice(&bytes[..clean]);
        let Some((&b, tail)) = bytes[clean..].split_first() else {
            return;
        };
        match ESCAPE[usize::from(b)] {
            b'u' => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
            escape => out.extend_from_slice(&[b'\\', escape]),
        }
        bytes = tail;
    }
}

/// 1 in every byte of a word.
const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte of a word.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of `x` is a control character, `"` or `\`: exact as a yes or no.
/// Each test sets the high bit of a byte where it holds (and may set it above a byte where
/// it holds, never elsewhere), so their union is exact too; one branch for the three.
const fn any_to_escape(x: u64) -> bool {
    /// The high bit of each byte of `x` below `n` (n <= 0x80), and maybe above one.
    const fn below(x: u64, n: u8) -> u64 {
        x.wrapping_sub(ONES * n as u64) & !x
    }
    const fn equal(x: u64, b: u8) -> u64 {
        below(x ^ (ONES * b as u64), 1)
    }
    (below(x, 0x20) | equal(x, b'"') | equal(x, b'\\')) & HIGH != 0
}

/// Whether any byte of `bytes` is escaped in a JSON string. Words of eight bytes, the
/// last one overlapping the one before; a string shorter than a word is read as one word
/// made of its first and last four bytes (or two, or its one byte repeated), which overlap
/// and cover it: no byte is looked at on its own.
fn needs_escape(bytes: &[u8]) -> bool {
    let word = if let Some(last) = bytes.last_chunk::<8>() {
        let mut words = bytes.chunks_exact(8);
        if words.any(|w| <[u8; 8]>::try_from(w).is_ok_and(|w| any_to_escape(u64::from_le_bytes(w))))
        {
            return true;
        }
        u64::from_le_bytes(*last)
    } else if let (Some(first), Some(last)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        u64::from(u32::from_le_bytes(*first)) | u64::from(u32::from_le_bytes(*last)) << 32
    } else if let (Some(first), Some(last)) = (bytes.first_chunk::<2>(), bytes.last_chunk::<2>()) {
        let half =
            u64::from(u16::from_le_bytes(*first)) | u64::from(u16::from_le_bytes(*last)) << 16;
        half | half << 32
    } else if let Some(&b) = bytes.first() {
        ONES * u64::from(b)
    } else {
        return false;
    };
    any_to_escape(word)
}

/// How many bytes at the start of `bytes` go into a JSON string as they are: eight bytes
/// at a time while none of them needs escaping, then byte by byte.
fn clean_prefix(bytes: &[u8]) -> usize {
    let mut clean = 0;
    for chunk in bytes.chunks_exact(8) {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        if any_to_escape(u64::from_le_bytes(word)) {
            break;
        }
        clean += 8;
    }
    clean
        + bytes[clean..]
            .iter()
            .position(|&b| ESCAPE[usize::from(b)] != 0)
            .unwrap_or(bytes.len() - clean)
}

/// The two decimal digits of every number below 100.
static PAIRS: [[u8; 2]; 100] = {
    let mut pairs = [[0; 2]; 100];
    let mut n = 0;
    while n < 100 {
        // Both are below 10: the casts keep every bit.
        pairs[n] = [b'0' + (n / 10) as u8, b'0' + (n % 10) as u8];
        n += 1;
    }
    pairs
};

/// Appends `n` in decimal.
pub(crate) fn unsigned(out: &mut Vec<u8>, mut n: u64) {
    if n < 10 {
        // Below 10: the cast keeps every bit.
        out.push(b'0' + n as u8);
        return;
    }
    // Two digits at a time, from the last.
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    while n >= 100 {
        at -= 2;
        // `n % 100` is below 100: the cast keeps every bit.
        digits[at..at + 2].copy_from_slice(&PAIRS[(n % 100) as usize]);
        n /= 100;
    }
    if n >= 10 {
        at -= 2;
        // Below 100: the cast keeps every bit.
        digits[at..at + 2].copy_from_slice(&PAIRS[n as usize]);
    } else {
        at -= 1;
        // Below 10: the cast keeps every bit.
        digits[at] = b'0' + n as u8;
    }
    out.extend_from_slice(&digits[at..]);
}

fn signed(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    unsigned(out, n.unsigned_abs());
}

/// Floats are serde_json's own digits (and `null` when not finite, as serde_json writes).
fn float<T: Serialize>(out: &mut Vec<u8>, v: T) -> Result<(), Unsupported> {
    serde_json::to_writer(out, &v).map_err(|_| Unsupported)
}

/// An array or object being written; `first` until its first element is.
struct Compound<'w, 'a> {
    writer: &'w mut Writer<'a>,
    first: bool,
}

impl Compound<'_, '_> {
    fn comma(&mut self) {
        if self.first {
            self.first = false;
        } else {
            self.writer.out.push(b',');
        }
    }

    /// `"key":` for a field or a string key, after a comma unless it is the first. A key
    /// with nothing to escape (every field name an entry holds, most map keys) is written
    /// in one piece.
    fn key(&mut self, key: &str) {
        let out = &mut *self.writer.out;
        let bytes = key.as_bytes();
        if needs_escape(bytes) {
            self.comma();
            string(self.writer.out, key);
            self.writer.out.push(b':');
            return;
        }
        out.reserve(bytes.len() + 4);
        if self.first {
            self.first = false;
            out.push(b'"');
        } else {
            out.extend_from_slice(b",\"");
        }
        out.extend_from_slice(bytes);
        out.extend_from_slice(b"\":");
    }
}

impl<'w, 'a> ser::Serializer for &'w mut Writer<'a> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Compound<'w, 'a>;
    type SerializeTuple = Compound<'w, 'a>;
    type SerializeTupleStruct = Compound<'w, 'a>;
    type SerializeTupleVariant = Compound<'w, 'a>;
    type SerializeMap = Compound<'w, 'a>;
    type SerializeStruct = Compound<'w, 'a>;
    type SerializeStructVariant = Compound<'w, 'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Unsupported> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }

    fn serialize_i8(self, v: i8) -> Result<(), Unsupported> {
        signed(self.out, v.into());
        Ok(())
    }

    fn serialize_i16(self, v: i16) -> Result<(), Unsupported> {
        signed(self.out, v.into());
        Ok(())
    }

    fn serialize_i32(self, v: i32) -> Result<(), Unsupported> {
        signed(self.out, v.into());
        Ok(())
    }

    fn serialize_i64(self, v: i64) -> Result<(), Unsupported> {
        signed(self.out, v);
        Ok(())
    }

    fn serialize_u8(self, v: u8) -> Result<(), Unsupported> {
        unsigned(self.out, v.into());
        Ok(())
    }

    fn serialize_u16(self, v: u16) -> Result<(), Unsupported> {
        unsigned(self.out, v.into());
        Ok(())
    }

    fn serialize_u32(self, v: u32) -> Result<(), Unsupported> {
        unsigned(self.out, v.into());
        Ok(())
    }

    fn serialize_u64(self, v: u64) -> Result<(), Unsupported> {
        unsigned(self.out, v);
        Ok(())
    }

    fn serialize_f32(self, v: f32) -> Result<(), Unsupported> {
        float(self.out, v)
    }

    fn serialize_f64(self, v: f64) -> Result<(), Unsupported> {
        float(self.out, v)
    }

    fn serialize_char(self, v: char) -> Result<(), Unsupported> {
        string(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, v: &str) -> Result<(), Unsupported> {
        string(self.out, v);
        Ok(())
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<(), Unsupported> {
        Err(Unsupported)
    }

    fn serialize_none(self) -> Result<(), Unsupported> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Unsupported> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Unsupported> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Unsupported> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Unsupported> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        self.out.push(b'{');
        string(self.out, variant);
        self.out.push(b':');
        value.serialize(&mut *self)?;
        self.out.push(b'}');
        Ok(())
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'w, 'a>, Unsupported> {
        self.out.push(b'[');
        Ok(Compound {
            writer: self,
            first: true,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'w, 'a>, Unsupported> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Compound<'w, 'a>, Unsupported> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'w, 'a>, Unsupported> {
        self.out.push(b'{');
        string(self.out, variant);
        self.out.push(b':');
        self.serialize_seq(Some(len))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'w, 'a>, Unsupported> {
        self.out.push(b'{');
        Ok(Compound {
            writer: self,
            first: true,
        })
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Compound<'w, 'a>, Unsupported> {
        // serde_json's own private structs (`$serde_json::private::Number` when a crate turns
        // on `arbitrary_precision`, `RawValue`) are written differently by serde_json: left
        // to it. No derived struct has a name starting with `$`.
        if name.starts_with('$') {
            return Err(Unsupported);
        }
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'w, 'a>, Unsupported> {
        self.out.push(b'{');
        string(self.out, variant);
        self.out.push(b':');
        self.serialize_map(Some(len))
    }
}

impl ser::SerializeSeq for Compound<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        self.comma();
        value.serialize(&mut *self.writer)
    }

    fn end(self) -> Result<(), Unsupported> {
        self.writer.out.push(b']');
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        ser::SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Result<(), Unsupported> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        ser::SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Result<(), Unsupported> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        ser::SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Result<(), Unsupported> {
        self.writer.out.extend_from_slice(b"]}");
        Ok(())
    }
}

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Unsupported> {
        key.serialize(KeyWriter { compound: self })
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        value.serialize(&mut *self.writer)
    }

    fn end(self) -> Result<(), Unsupported> {
        self.writer.out.push(b'}');
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        self.key(key);
        value.serialize(&mut *self.writer)
    }

    fn end(self) -> Result<(), Unsupported> {
        ser::SerializeMap::end(self)
    }
}

impl ser::SerializeStructVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }

    fn end(self) -> Result<(), Unsupported> {
        self.writer.out.extend_from_slice(b"}}");
        Ok(())
    }
}

/// Map keys: only strings are written here (a `Value`'s keys, names); any other key goes to
/// serde_json, which quotes numbers and refuses the rest.
struct KeyWriter<'c, 'w, 'a> {
    compound: &'c mut Compound<'w, 'a>,
}

/// The error of every [`KeyWriter`] method but `serialize_str`.
macro_rules! not_a_str_key {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {$(
        fn $method(self, $(_: $arg),*) -> Result<(), Unsupported> {
            Err(Unsupported)
        }
    )*};
}

impl ser::Serializer for KeyWriter<'_, '_, '_> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = ser::Impossible<(), Unsupported>;
    type SerializeTuple = ser::Impossible<(), Unsupported>;
    type SerializeTupleStruct = ser::Impossible<(), Unsupported>;
    type SerializeTupleVariant = ser::Impossible<(), Unsupported>;
    type SerializeMap = ser::Impossible<(), Unsupported>;
    type SerializeStruct = ser::Impossible<(), Unsupported>;
    type SerializeStructVariant = ser::Impossible<(), Unsupported>;

    fn serialize_str(self, v: &str) -> Result<(), Unsupported> {
        self.compound.key(v);
        Ok(())
    }

    not_a_str_key! {
        serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32),
        serialize_i64(i64), serialize_u8(u8), serialize_u16(u16), serialize_u32(u32),
        serialize_u64(u64), serialize_f32(f32), serialize_f64(f64), serialize_char(char),
        serialize_bytes(&[u8]), serialize_none(), serialize_unit(),
        serialize_unit_struct(&'static str),
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Unsupported> {
        Err(Unsupported)
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), Unsupported> {
        Err(Unsupported)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), Unsupported> {
        Err(Unsupported)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Unsupported> {
        Err(Unsupported)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Unsupported> {
        Err(Unsupported)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use rein_run::State;
    use serde_json::json;

    use super::*;
    use crate::EntryKind;

    /// This writer alone (no serde_json fallback) makes serde_json's bytes for `value`.
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
}
