//! A compact-JSON writer that makes exactly the bytes `serde_json::to_writer` makes, faster:
//! the encoding every entry's hash is defined over.
//!
//! serde_json writes through `io::Write` and escapes strings with a bounds-checked loop that
//! costs about as much per key as the bytes around it; an entry is mostly short keys and
//! strings, so that overhead was most of an entry's encoding. This writer appends straight to
//! a `Vec<u8>`. It covers what entries hold (structs, enums, maps with string keys, strings,
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
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut rest = s.as_bytes();
    out.reserve(rest.len() + 2);
    out.push(b'"');
    loop {
        let clean = clean_prefix(rest);
        out.extend_from_slice(&rest[..clean]);
        let Some((&b, tail)) = rest[clean..].split_first() else {
            break;
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
        rest = tail;
    }
    out.push(b'"');
}

/// How many bytes at the start of `bytes` go into a JSON string as they are. Eight bytes
/// at a time while none of them is a control character, `"` or `\` (most strings in an
/// entry are names, hex digests and prose, with nothing to escape), then byte by byte.
fn clean_prefix(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    /// Whether any byte of `x` is below `n` (n <= 0x80): exact as a yes or no.
    const fn any_below(x: u64, n: u8) -> bool {
        x.wrapping_sub(ONES * n as u64) & !x & HIGH != 0
    }
    const fn any_equal(x: u64, b: u8) -> bool {
        any_below(x ^ (ONES * b as u64), 1)
    }
    let mut clean = 0;
    for chunk in bytes.chunks_exact(8) {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let x = u64::from_le_bytes(word);
        if any_below(x, 0x20) || any_equal(x, b'"') || any_equal(x, b'\\') {
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

/// Appends `n` in decimal.
pub(crate) fn unsigned(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        // `n % 10` is below 10: the cast keeps every bit.
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
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

    /// `"key":` for a field or a string key.
    fn key(&mut self, key: &str) {
        self.comma();
        string(self.writer.out, key);
        self.writer.out.push(b':');
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
        self.comma();
        key.serialize(KeyWriter {
            out: self.writer.out,
        })?;
        self.writer.out.push(b':');
        Ok(())
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
struct KeyWriter<'a> {
    out: &'a mut Vec<u8>,
}

/// The error of every [`KeyWriter`] method but `serialize_str`.
macro_rules! not_a_str_key {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {$(
        fn $method(self, $(_: $arg),*) -> Result<(), Unsupported> {
            Err(Unsupported)
        }
    )*};
}

impl ser::Serializer for KeyWriter<'_> {
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
        string(self.out, v);
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
