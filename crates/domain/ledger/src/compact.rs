//! A compact-JSON writer that makes exactly the bytes `serde_json::to_writer` makes, faster:
//! the encoding every entry's hash is defined over.
//!
//! `serde_json` writes through `io::Write` and escapes strings with a bounds-checked loop that
//! costs about as much per key as the bytes around it; an entry is mostly short keys and
//! strings, so that overhead was most of an entry's encoding. This writer appends straight to
//! a `Vec<u8>`, looks for bytes to escape eight at a time, writes a key with its quotes,
//! comma and colon in one piece, and integers two digits at a time. It covers what entries hold (structs, enums, maps with string keys, strings,
//! integers, booleans, `null`) and hands floats to `serde_json` itself, so their digits are
//! `serde_json`'s. Anything else (a map key that is not a string, 128-bit integers, raw bytes)
//! makes it give up with [`Unsupported`], and [`write`] encodes the value with `serde_json`
//! instead: the bytes are the same either way. The tests compare both writers on every kind
//! of entry and on generated JSON values.

use std::fmt;

use serde::ser::{self, Serialize};

#[cfg(test)]
mod tests;
mod text;

use text::{needs_escape, signed};
pub(crate) use text::{string, unsigned};

/// Appends the compact JSON of `value` to `out`: the bytes `serde_json::to_writer` would
/// write.
///
/// # Errors
/// What `serde_json`'s own encoding fails with (a map whose keys are not strings), with `out`
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

/// Something this writer leaves to `serde_json`.
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

/// Floats are `serde_json`'s own digits (and `null` when not finite, as `serde_json` writes).
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
/// `serde_json`, which quotes numbers and refuses the rest.
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
