//! `Digest`: a SHA-256 digest, hex in text, computed over exact bytes or canonical JSON.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// A SHA-256 digest. Shown and serialized as 64 lowercase hex digits.
///
/// rein uses it for the hash of a tool input that an approval covers (so an approval can
/// never be reused for a different input) and for the ledger's hash chain.
///
/// ```
/// use rein_tool::Digest;
/// use serde_json::json;
///
/// let a = Digest::of_json(&json!({"b": 1, "a": 2}));
/// let b = Digest::of_json(&json!({"a": 2, "b": 1}));
/// assert_eq!(a, b); // canonical: object keys are sorted
/// assert_eq!(a.to_string().len(), 64);
/// assert_eq!(a.to_string().parse::<Digest>()?, a);
/// # Ok::<(), rein_tool::DigestError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct Digest([u8; 32]);

/// Why a string is not a [`Digest`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid SHA-256 digest {value:?}: expected 64 lowercase hex digits")]
pub struct DigestError {
    /// The rejected value (cut to 80 characters).
    pub value: String,
}

impl Digest {
    /// The digest of nothing hashed yet: 32 zero bytes. The ledger's first entry links to it.
    pub const ZERO: Self = Self([0; 32]);

    /// The SHA-256 of `bytes`.
    #[must_use]
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// The SHA-256 of the canonical encoding of `value`: compact JSON with object keys
    /// sorted (`serde_json`'s default map).
    #[must_use]
    pub fn of_json(value: &Value) -> Self {
        let mut hasher = HashWriter(Sha256::new());
        // Writing a `Value` to an in-memory hasher cannot fail: no I/O, keys are strings.
        let _ = serde_json::to_writer(&mut hasher, value);
        Self(hasher.0.finalize().into())
    }

    /// Wraps 32 raw bytes.
    #[must_use]
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The 32 raw bytes.
    #[must_use]
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Writes the 64 hex digits into `out` without allocating.
    pub fn write_hex(&self, out: &mut [u8; 64]) {
        /// The two hex digits of every byte (every entry of a ledger writes two digests).
        const PAIRS: [[u8; 2]; 256] = {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let mut pairs = [[0; 2]; 256];
            let mut byte = 0;
            while byte < 256 {
                pairs[byte] = [HEX[byte >> 4], HEX[byte & 0x0f]];
                byte += 1;
            }
            pairs
        };
        for (pair, &byte) in out.chunks_exact_mut(2).zip(&self.0) {
            pair.copy_from_slice(&PAIRS[usize::from(byte)]);
        }
    }
}

impl Serialize for Digest {
    /// The 64 hex digits, as a string (written from the stack: ledger hashing serializes
    /// digests on every entry).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut hex = [0u8; 64];
        self.write_hex(&mut hex);
        let hex = std::str::from_utf8(&hex).map_err(serde::ser::Error::custom)?;
        serializer.serialize_str(hex)
    }
}

/// Adapts a hasher to `io::Write` so `serde_json` streams into it without a buffer.
struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut hex = [0u8; 64];
        self.write_hex(&mut hex);
        // The buffer holds ASCII hex digits only.
        f.write_str(std::str::from_utf8(&hex).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl FromStr for Digest {
    type Err = DigestError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let error = || DigestError {
            value: s.chars().take(80).collect(),
        };
        let bytes = s.as_bytes();
        if bytes.len() != 64 {
            return Err(error());
        }
        let nibble = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            let (Some(hi), Some(lo)) = (nibble(pair[0]), nibble(pair[1])) else {
                return Err(error());
            };
            out[i] = (hi << 4) | lo;
        }
        Ok(Self(out))
    }
}

impl TryFrom<String> for Digest {
    type Error = DigestError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<Digest> for String {
    fn from(d: Digest) -> Self {
        d.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(
            Digest::of_bytes(b"abc").to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn every_byte_is_written_as_its_two_hex_digits_in_place() {
        for first in (0..=u8::MAX).step_by(32) {
            let bytes: [u8; 32] = std::array::from_fn(|i| first + i as u8);
            let expected: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let mut hex = [0u8; 64];
            Digest::from_bytes(bytes).write_hex(&mut hex);
            assert_eq!(std::str::from_utf8(&hex).unwrap(), expected);
        }
    }

    #[test]
    fn rejects_malformed_hex() {
        for bad in ["", "abc", &"A".repeat(64), &"g".repeat(64), &"0".repeat(65)] {
            assert!(bad.parse::<Digest>().is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn hex_round_trips(bytes in any::<[u8; 32]>()) {
            let d = Digest::from_bytes(bytes);
            prop_assert_eq!(d.to_string().parse::<Digest>().unwrap(), d);
            let json = serde_json::to_string(&d).unwrap();
            prop_assert_eq!(serde_json::from_str::<Digest>(&json).unwrap(), d);
        }
    }
}
