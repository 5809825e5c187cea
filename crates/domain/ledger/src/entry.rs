//! `Entry`: one sealed link of a run's hash chain, and its canonical encoding.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use rein_run::{Digest, LedgerHead, RunId, State, Timestamp};
use serde::{Deserialize, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

use crate::line::{Line, LineBuffer, SharedLine};
use crate::{EntryKind, compact};

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
/// (`serde_json`'s default map; nothing in the build may enable `preserve_order`). The
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
///
/// # Serialized once
///
/// An entry is encoded once, when it is sealed (or read back): it keeps its JSON line, and
/// everything that needs its bytes uses that line — the hash, [`verify`](crate::Ledger::verify),
/// a JSONL store's write ([`json_line`](Self::json_line)), a memory store's copy
/// ([`shared_json_line`](Self::shared_json_line)). An entry cannot be changed after it is
/// made, so the line always encodes its fields.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "EntryRepr")]
pub struct Entry {
    // Declaration order is serialization order, and part of the canonical encoding.
    seq: u64,
    at: Timestamp,
    run_id: RunId,
    state: State,
    event: EntryKind,
    prev: Digest,
    hash: Digest,
    /// The JSON line: the canonical bytes with `,"hash":"…"` spliced in before their closing
    /// brace, then a newline (so the canonical bytes are the line less [`HASH_SUFFIX`] bytes,
    /// plus `}`).
    #[serde(skip_serializing)]
    line: SharedLine,
}

/// The length of what follows the canonical bytes (less their closing brace) in a line:
/// `,"hash":"` (9 bytes), 64 hex digits, `"}` (2) and the newline (1).
const HASH_SUFFIX: usize = 9 + 64 + 2 + 1;

impl Entry {
    /// Numbers, links and seals a new entry. Only the ledger calls it.
    ///
    /// Inlined, with the encoding and hashing out of line (`seal_bytes`): the event, over
    /// 200 bytes, then moves once, into the entry its caller returns, not through every frame.
    #[inline]
    pub(crate) fn seal(
        seq: u64,
        at: Timestamp,
        run_id: RunId,
        state: State,
        event: EntryKind,
        prev: Digest,
    ) -> Self {
        let body = EntryBody {
            seq,
            at,
            run_id: &run_id,
            state,
            event: &event,
            prev: &prev,
        };
        let (hash, line) = seal_bytes(&body);
        Self {
            seq,
            at,
            run_id,
            state,
            event,
            prev,
            hash,
            line: SharedLine(Line::Exact(line)),
        }
    }

    /// As [`seal`](Self::seal), writing the line into `buffer` when nothing else holds the
    /// buffer's last line (the writer dropped its entry), so a chain whose entries are
    /// handed on and dropped makes no allocation per entry. When the last line is still
    /// held (kept in a ledger, a subscriber's ring), the line is made on its own, as
    /// [`seal`](Self::seal) makes it.
    pub(crate) fn seal_into(
        buffer: &mut LineBuffer,
        seq: u64,
        at: Timestamp,
        run_id: RunId,
        state: State,
        event: EntryKind,
        prev: Digest,
    ) -> Self {
        /// Past this, a buffer grown by one huge entry is not reused.
        const KEEP: usize = 64 * 1024;
        /// The first buffer's room: most entries fit, so it rarely grows.
        const FIRST: usize = 1024;
        let slot = buffer
            .0
            .get_or_insert_with(|| Arc::new(Vec::with_capacity(FIRST)));
        let Some(buf) = Arc::get_mut(slot) else {
            return Self::seal(seq, at, run_id, state, event, prev);
        };
        buf.clear();
        let body = EntryBody {
            seq,
            at,
            run_id: &run_id,
            state,
            event: &event,
            prev: &prev,
        };
        write_json(buf, &body);
        let mut hasher = Sha256::new();
        hasher.update(prev.as_bytes());
        hasher.update(&buf[..]);
        let hash = Digest::from_bytes(hasher.finalize().into());
        splice_hash(buf, hash);
        let kept = buf.capacity() <= KEEP;
        let line = if kept {
            Arc::clone(slot)
        } else {
            buffer.0.take().unwrap_or_default()
        };
        Self {
            seq,
            at,
            run_id,
            state,
            event,
            prev,
            hash,
            line: SharedLine(Line::Buffer(line)),
        }
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

    /// What happened, taken out of the entry: for a writer that has handed the entry's line
    /// to its store and needs the values back, without a copy.
    #[must_use]
    pub fn into_event(self) -> EntryKind {
        self.event
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

    /// This entry as a ledger head: its sequence number and hash, what a run snapshot
    /// saved after it records.
    #[must_use]
    pub const fn head(&self) -> LedgerHead {
        LedgerHead::new(self.seq, self.hash)
    }

    /// The hash this entry's `prev` and content call for, computed now. It equals
    /// [`hash`](Self::hash) unless the entry was changed after it was sealed; verification
    /// compares the two.
    #[must_use]
    pub fn computed_hash(&self) -> Digest {
        let mut hasher = Sha256::new();
        hasher.update(self.prev.as_bytes());
        hasher.update(self.canonical_prefix());
        hasher.update(b"}");
        Digest::from_bytes(hasher.finalize().into())
    }

    /// The canonical bytes the hash covers (after `prev`'s raw bytes): the compact JSON of
    /// the entry without its `hash` field.
    #[must_use]
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let prefix = self.canonical_prefix();
        let mut out = Vec::with_capacity(prefix.len() + 1);
        out.extend_from_slice(prefix);
        out.push(b'}');
        out
    }

    /// The entry's JSON and a newline: the line a JSONL store writes. Exactly
    /// `serde_json::to_vec(self)` followed by `\n`, made when the entry was.
    #[must_use]
    pub fn json_line(&self) -> &[u8] {
        &self.line
    }

    /// [`json_line`](Self::json_line), shared rather than copied: what a store that writes
    /// the line later (on another thread) holds. Holding it past the next entry of the same
    /// chain makes that entry's line an allocation of its own (see [`SharedLine`]).
    #[must_use]
    pub fn shared_json_line(&self) -> SharedLine {
        self.line.clone()
    }

    /// Appends the entry's JSON and a newline to `out` (see [`json_line`](Self::json_line)).
    pub fn write_json_line(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.line);
    }

    /// The entry as one newline-terminated JSON line (see [`json_line`](Self::json_line)).
    #[must_use]
    pub fn to_json_line(&self) -> String {
        String::from_utf8(self.line.to_vec())
            .expect("serde_json writes UTF-8 and the hash is ASCII hex")
    }

    /// The canonical bytes less their closing brace: the start of the line.
    fn canonical_prefix(&self) -> &[u8] {
        &self.line[..self.line.len() - HASH_SUFFIX]
    }
}

#[expect(
    clippy::missing_fields_in_debug,
    reason = "the line is the same fields again, encoded"
)]
impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The line is the same fields again, encoded: left out.
        f.debug_struct("Entry")
            .field("seq", &self.seq)
            .field("at", &self.at)
            .field("run_id", &self.run_id)
            .field("state", &self.state)
            .field("event", &self.event)
            .field("prev", &self.prev)
            .field("hash", &self.hash)
            .finish()
    }
}

/// An [`Entry`] as it is read: its fields and the hash it was stored with. Reading one
/// encodes it again (its line is made from what was read, never kept from the input), so
/// verification sees exactly what the fields say.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryRepr {
    seq: u64,
    at: Timestamp,
    run_id: RunId,
    state: State,
    event: EntryKind,
    prev: Digest,
    hash: Digest,
}

impl From<EntryRepr> for Entry {
    fn from(repr: EntryRepr) -> Self {
        let EntryRepr {
            seq,
            at,
            run_id,
            state,
            event,
            prev,
            hash,
        } = repr;
        let body = EntryBody {
            seq,
            at,
            run_id: &run_id,
            state,
            event: &event,
            prev: &prev,
        };
        let line = with_scratch(|buf| {
            write_json(buf, &body);
            seal_line(buf, hash)
        });
        Self {
            seq,
            at,
            run_id,
            state,
            event,
            prev,
            hash,
            line: SharedLine(Line::Exact(line)),
        }
    }
}

/// Turns `buf`, holding canonical bytes, into the JSON line with `hash`: `,"hash":"…"` goes
/// in place of the closing brace.
/// The hash of `body` and the line it is written as: its canonical bytes, hashed after
/// the previous entry's hash, with `"hash"` appended.
fn seal_bytes(body: &EntryBody<'_>) -> (Digest, Arc<[u8]>) {
    with_scratch(|buf| {
        write_json(buf, body);
        let mut hasher = Sha256::new();
        hasher.update(body.prev.as_bytes());
        hasher.update(&buf[..]);
        let hash = Digest::from_bytes(hasher.finalize().into());
        (hash, seal_line(buf, hash))
    })
}

fn seal_line(buf: &mut Vec<u8>, hash: Digest) -> Arc<[u8]> {
    splice_hash(buf, hash);
    Arc::from(&buf[..])
}

/// Turns `buf`, holding canonical bytes, into the JSON line with `hash`, in place.
fn splice_hash(buf: &mut Vec<u8>, hash: Digest) {
    debug_assert_eq!(buf.last(), Some(&b'}'), "canonical bytes are a JSON object");
    buf.pop();
    let suffix: [u8; HASH_SUFFIX] = quoted_hex(b",\"hash\":\"", hash, b"\"}\n");
    buf.extend_from_slice(&suffix);
}

/// `before`, the hex of `digest`, then `after`, made on the stack so that a buffer takes
/// them in one copy.
fn quoted_hex<const B: usize, const A: usize, const N: usize>(
    before: &[u8; B],
    digest: Digest,
    after: &[u8; A],
) -> [u8; N] {
    const { assert!(B + 64 + A == N, "N is the length of all three") };
    let mut out = [0u8; N];
    let mut hex = [0u8; 64];
    digest.write_hex(&mut hex);
    out[..B].copy_from_slice(before);
    out[B..B + 64].copy_from_slice(&hex);
    out[B + 64..].copy_from_slice(after);
    out
}

/// Runs `f` with an empty buffer that this thread reuses, so making a line costs one
/// allocation (the line itself) rather than a growing buffer and a copy.
fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    /// Past this, a buffer grown by one huge entry is not kept.
    const KEEP: usize = 64 * 1024;
    thread_local! {
        static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            let result = f(&mut buf);
            if buf.capacity() > KEEP {
                *buf = Vec::new();
            }
            result
        }
        // Only if serializing an entry made another one, which nothing does.
        Err(_) => f(&mut Vec::new()),
    })
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
#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's serialize_with passes a reference to the field"
)]
fn hex_digest<S: Serializer>(digest: &&Digest, serializer: S) -> Result<S::Ok, S::Error> {
    let mut hex = [0u8; 64];
    digest.write_hex(&mut hex);
    // The buffer holds ASCII hex digits only.
    serializer.serialize_str(std::str::from_utf8(&hex).map_err(serde::ser::Error::custom)?)
}

/// Appends `body` as compact JSON to `out`: `serde_json`'s bytes of [`EntryBody`]. The
/// envelope's fields, whose encodings are fixed (numbers, an id, a state name, a hex
/// digest), are written directly; the event through [`compact::write`].
fn write_json(out: &mut Vec<u8>, body: &EntryBody<'_>) {
    let prev: [u8; 9 + 64 + 2] = quoted_hex(b",\"prev\":\"", *body.prev, b"\"}");
    let start = out.len();
    out.extend_from_slice(b"{\"seq\":");
    compact::unsigned(out, body.seq);
    out.extend_from_slice(b",\"at\":");
    compact::unsigned(out, body.at.as_unix_millis());
    out.extend_from_slice(b",\"run_id\":");
    compact::string(out, body.run_id.as_str());
    out.extend_from_slice(b",\"state\":");
    compact::string(out, body.state.as_str());
    out.extend_from_slice(b",\"event\":");
    if compact::write(out, body.event).is_ok() {
        out.extend_from_slice(&prev);
        return;
    }
    // Cannot happen (every map in an entry has string keys, and serde_json's `Value` holds
    // no NaN); if it did, serde_json says why in debug builds.
    out.truncate(start);
    let written = serde_json::to_writer(&mut *out, body);
    debug_assert!(written.is_ok(), "entry serialization failed: {written:?}");
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
