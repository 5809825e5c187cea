//! `Entry`: one sealed link of a run's hash chain, and its canonical encoding.

use std::io;

use rein_run::{Digest, RunId, State, Timestamp};
use serde::{Deserialize, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

use crate::EntryKind;

/// One record of a run's ledger: what happened ([`EntryKind`]), when, in which state, and
/// where it sits in the hash chain.
///
/// Entries are made by [`Ledger::append`](crate::Ledger::append), which numbers them from 1
/// and seals each with its hash; they cannot be changed afterwards. An entry read back from
/// storage (through serde) is only trustworthy once its ledger has verified
/// ([`Ledger::from_entries`](crate::Ledger::from_entries)).
///
/// # Canonical encoding
///
/// `hash = SHA-256(prev's 32 raw bytes ‖ canonical bytes)`, where the canonical bytes are
/// the compact JSON of the entry *without* its `hash` field: struct fields in declaration
/// order (`seq, at, run_id, state, event, prev`), object keys inside JSON values sorted
/// (serde_json's default map; nothing in the build may enable `preserve_order`). The
/// serialized form of an entry is the canonical object with `"hash"` appended last, so a
/// JSON line holds exactly the bytes that were hashed:
///
/// ```
/// use rein_ledger::{EntryKind, Ledger};
/// use rein_run::{State, Timestamp};
///
/// let mut ledger = Ledger::new("r1".parse()?);
/// let entry = ledger.append(
///     Timestamp::from_unix_millis(5),
///     State::Intake,
///     EntryKind::Steering { note: "hi".into() },
/// );
/// assert_eq!(
///     String::from_utf8(entry.canonical_bytes())?,
///     r#"{"seq":1,"at":5,"run_id":"r1","state":"intake","event":{"type":"steering","note":"hi"},"prev":"0000000000000000000000000000000000000000000000000000000000000000"}"#
/// );
/// assert_eq!(entry.computed_hash(), entry.hash());
/// assert_eq!(entry.to_json_line(), format!("{}\n", serde_json::to_string(entry)?));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    // Declaration order is serialization order, and part of the canonical encoding.
    seq: u64,
    at: Timestamp,
    run_id: RunId,
    state: State,
    event: EntryKind,
    prev: Digest,
    hash: Digest,
}

impl Entry {
    /// Numbers, links and seals a new entry. Only the ledger calls it.
    pub(crate) fn seal(
        seq: u64,
        at: Timestamp,
        run_id: RunId,
        state: State,
        event: EntryKind,
        prev: Digest,
    ) -> Self {
        let mut entry = Self {
            seq,
            at,
            run_id,
            state,
            event,
            prev,
            hash: Digest::ZERO,
        };
        entry.hash = entry.computed_hash();
        entry
    }

    /// The entry's sequence number: 1 for the first entry of a run, then one more each.
    #[must_use]
    pub const fn seq(&self) -> u64 {
        self.seq
    }

    /// When it was recorded (the engine's clock).
    #[must_use]
    pub const fn at(&self) -> Timestamp {
        self.at
    }

    /// The run whose ledger it belongs to.
    #[must_use]
    pub const fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The run's state when it was recorded.
    #[must_use]
    pub const fn state(&self) -> State {
        self.state
    }

    /// What happened.
    #[must_use]
    pub const fn event(&self) -> &EntryKind {
        &self.event
    }

    /// The hash of the previous entry; [`Digest::ZERO`] for the first.
    #[must_use]
    pub const fn prev(&self) -> Digest {
        self.prev
    }

    /// The hash the entry was sealed with.
    #[must_use]
    pub const fn hash(&self) -> Digest {
        self.hash
    }

    /// The hash this entry's `prev` and content call for, computed now. It equals
    /// [`hash`](Self::hash) unless the entry was changed after it was sealed; verification
    /// compares the two.
    #[must_use]
    pub fn computed_hash(&self) -> Digest {
        let mut hasher = Sha256::new();
        hasher.update(self.prev.as_bytes());
        write_json(HashWriter(&mut hasher), &self.body());
        Digest::from_bytes(hasher.finalize().into())
    }

    /// The canonical bytes the hash covers (after `prev`'s raw bytes): the compact JSON of
    /// the entry without its `hash` field.
    #[must_use]
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        write_json(&mut out, &self.body());
        out
    }

    /// Appends the entry's JSON and a newline to `out`: the line a JSONL store writes.
    ///
    /// The bytes are exactly `serde_json::to_vec(self)` followed by `\n`, produced faster:
    /// the canonical body is serialized once and `,"hash":"…"}` is appended to it, so a
    /// store can reuse one buffer for every line.
    pub fn write_json_line(&self, out: &mut Vec<u8>) {
        write_json(&mut *out, &self.body());
        // The body is a JSON object: replace its closing brace with the hash field.
        out.pop();
        let mut hex = [0u8; 64];
        self.hash.write_hex(&mut hex);
        out.extend_from_slice(b",\"hash\":\"");
        out.extend_from_slice(&hex);
        out.extend_from_slice(b"\"}\n");
    }

    /// The entry as one newline-terminated JSON line (see [`write_json_line`](Self::write_json_line)).
    #[must_use]
    pub fn to_json_line(&self) -> String {
        let mut out = Vec::with_capacity(320);
        self.write_json_line(&mut out);
        String::from_utf8(out).expect("serde_json writes UTF-8 and the hash is ASCII hex")
    }

    /// The entry without its hash, borrowed: what the canonical encoding serializes.
    const fn body(&self) -> EntryBody<'_> {
        EntryBody {
            seq: self.seq,
            at: self.at,
            run_id: &self.run_id,
            state: self.state,
            event: &self.event,
            prev: &self.prev,
        }
    }
}

/// The canonical body of an [`Entry`]: every field but `hash`, same names, same order.
#[derive(Serialize)]
struct EntryBody<'a> {
    seq: u64,
    at: Timestamp,
    run_id: &'a RunId,
    state: State,
    event: &'a EntryKind,
    #[serde(serialize_with = "hex_digest")]
    prev: &'a Digest,
}

/// Serializes a digest as its hex string, like `Digest`'s own impl but without allocating.
fn hex_digest<S: Serializer>(digest: &&Digest, serializer: S) -> Result<S::Ok, S::Error> {
    let mut hex = [0u8; 64];
    digest.write_hex(&mut hex);
    // The buffer holds ASCII hex digits only.
    serializer.serialize_str(std::str::from_utf8(&hex).map_err(serde::ser::Error::custom)?)
}

/// Streams `body` as compact JSON into `writer`.
fn write_json<W: io::Write>(writer: W, body: &EntryBody<'_>) {
    // Cannot fail: the writers are in memory and every map in an entry has string keys
    // (serde_json's `Value` cannot hold a NaN or infinite number either).
    let written = serde_json::to_writer(writer, body);
    debug_assert!(written.is_ok(), "entry serialization failed: {written:?}");
}

/// Adapts the hasher to `io::Write` (sha2's hashers do not implement it) so serde_json
/// streams into it without a buffer.
struct HashWriter<'a>(&'a mut Sha256);

impl io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry() -> Entry {
        Entry::seal(
            3,
            Timestamp::from_unix_millis(7),
            "r".parse().unwrap(),
            State::Act,
            EntryKind::RunCompleted {
                summary: "s".into(),
                result: json!({"b": 1, "a": [1.5, null]}),
            },
            Digest::of_bytes(b"prev"),
        )
    }

    #[test]
    fn hash_is_sha256_of_prev_then_canonical_bytes() {
        let e = entry();
        let mut bytes = e.prev().as_bytes().to_vec();
        bytes.extend(e.canonical_bytes());
        assert_eq!(e.hash(), Digest::of_bytes(&bytes));
    }

    #[test]
    fn json_line_is_serde_json_plus_newline() {
        let e = entry();
        let line = e.to_json_line();
        assert_eq!(line, format!("{}\n", serde_json::to_string(&e).unwrap()));
        let mut buf = b"earlier\n".to_vec();
        e.write_json_line(&mut buf);
        assert_eq!(buf, format!("earlier\n{line}").into_bytes());
    }

    #[test]
    fn canonical_bytes_sort_keys_inside_values() {
        let text = String::from_utf8(entry().canonical_bytes()).unwrap();
        assert!(
            text.contains(r#""result":{"a":[1.5,null],"b":1}"#),
            "{text}"
        );
        assert!(!text.contains("\"hash\""), "{text}");
    }
}
