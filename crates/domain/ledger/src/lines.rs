//! `LedgerLines`: how the bytes of a stored ledger (one JSON entry per line) are read — the
//! one reading shared by the file store, which cuts a torn tail, and the CLI, which only
//! reports it.

use crate::{Entry, TornTail};

/// The bytes of a ledger stored as JSON lines, split the way every reader splits them: the
/// complete lines (each ends in `\n`) and the torn tail after the last newline, if any.
///
/// A line without its newline was being written when the writer stopped: the entry it
/// holds was never acknowledged, whatever its bytes say, so it is never read as an entry.
///
/// ```
/// use rein_ledger::{Entry, EntryKind, Ledger, LedgerLines, TornTail};
/// use rein_run::{State, Timestamp};
///
/// let mut ledger = Ledger::new("run-1".parse()?);
/// let t = Timestamp::from_unix_millis(0);
/// ledger.append(t, State::Intake, EntryKind::Steering { note: "one".into() });
/// let mut bytes = ledger.entries()[0].to_json_line().into_bytes(); // ends in `\n`
/// bytes.extend_from_slice(b"{\"seq\":2,"); // the process died mid-write
///
/// let lines = LedgerLines::split(&bytes);
/// assert_eq!(lines.torn(), Some(TornTail { line: 2, bytes: 9 }));
/// let entries: Vec<Entry> = lines.entries().collect::<Result<_, _>>()?;
/// assert_eq!(entries, ledger.entries());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct LedgerLines<'a> {
    complete: &'a [u8],
    torn: usize,
}

/// A complete line that is not a ledger entry.
#[derive(Debug, thiserror::Error)]
#[error("line {line} is not a valid ledger entry: {source}")]
pub struct LineError {
    /// The line number, from 1.
    pub line: u64,
    /// Why it does not parse.
    #[source]
    pub source: serde_json::Error,
}

impl<'a> LedgerLines<'a> {
    /// Splits `bytes` after their last newline.
    #[must_use]
    pub fn split(bytes: &'a [u8]) -> Self {
        let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        Self {
            complete: &bytes[..end],
            torn: bytes.len() - end,
        }
    }

    /// The complete lines, each with its newline.
    #[must_use]
    pub const fn complete(&self) -> &'a [u8] {
        self.complete
    }

    /// How many complete lines there are.
    #[must_use]
    #[expect(
        clippy::naive_bytecount,
        reason = "a dependency for counting newlines is not worth it"
    )]
    pub fn count(&self) -> u64 {
        self.complete.iter().filter(|&&b| b == b'\n').count() as u64
    }

    /// The torn tail after the last complete line, if the bytes do not end in a newline.
    #[must_use]
    pub fn torn(&self) -> Option<TornTail> {
        (self.torn > 0).then(|| TornTail {
            line: self.count() + 1,
            bytes: self.torn as u64,
        })
    }

    /// The complete lines with their numbers (from 1), without their newlines.
    pub fn lines(&self) -> impl Iterator<Item = (u64, &'a [u8])> + 'a {
        self.complete
            .strip_suffix(b"\n")
            .map(|body| body.split(|&b| b == b'\n'))
            .into_iter()
            .flatten()
            .zip(1..)
            .map(|(line, number)| (number, line))
    }

    /// The last complete line and its number: where the tip of the chain is read from,
    /// without parsing the lines before it.
    #[must_use]
    pub fn last(&self) -> Option<(u64, &'a [u8])> {
        let body = self.complete.strip_suffix(b"\n")?;
        let start = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        Some((self.count(), &body[start..]))
    }

    /// Each complete line parsed as an [`Entry`], in order.
    pub fn entries(&self) -> impl Iterator<Item = Result<Entry, LineError>> + 'a {
        self.lines().map(|(line, bytes)| Self::parse(line, bytes))
    }

    /// Parses line number `line` (from 1) as an entry.
    ///
    /// # Errors
    /// [`LineError`] naming the line when it is not an entry.
    pub fn parse(line: u64, bytes: &[u8]) -> Result<Entry, LineError> {
        serde_json::from_slice(bytes).map_err(|source| LineError { line, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_after_the_last_newline() {
        let lines = LedgerLines::split(b"a\nb\nc");
        assert_eq!(lines.complete(), b"a\nb\n");
        assert_eq!(lines.count(), 2);
        assert_eq!(lines.torn(), Some(TornTail { line: 3, bytes: 1 }));
        let all: Vec<_> = lines.lines().collect();
        assert_eq!(all, [(1, &b"a"[..]), (2, &b"b"[..])]);
        assert_eq!(lines.last(), Some((2, &b"b"[..])));
    }

    #[test]
    fn empty_and_newline_only_inputs() {
        let empty = LedgerLines::split(b"");
        assert_eq!((empty.count(), empty.torn(), empty.last()), (0, None, None));
        assert_eq!(empty.lines().count(), 0);
        let torn_only = LedgerLines::split(b"{\"seq\"");
        assert_eq!(torn_only.torn(), Some(TornTail { line: 1, bytes: 6 }));
        assert_eq!(torn_only.lines().count(), 0);
        let blank = LedgerLines::split(b"\n");
        assert_eq!(blank.lines().collect::<Vec<_>>(), [(1, &b""[..])]);
    }

    #[test]
    fn a_bad_line_is_named_by_number() {
        let lines = LedgerLines::split(b"nope\n");
        let err = lines.entries().next().and_then(Result::err);
        assert_eq!(err.map(|e| e.line), Some(1));
    }
}
