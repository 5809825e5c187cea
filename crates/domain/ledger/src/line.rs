//! `SharedLine`: an entry's JSON line, shared; and the line buffer a chain reuses.

use std::fmt;
use std::sync::Arc;

/// An entry's JSON line, shared rather than copied ([`Entry::shared_json_line`](crate::Entry::shared_json_line)): what a
/// store that keeps or writes the line later holds. It derefs to the line's bytes.
///
/// A line sealed through a [`Chain`](crate::Chain) lives in the chain's line buffer, which
/// the chain writes the next entry into once nothing else holds the line: a writer that
/// hands each entry to its store and drops it seals a whole run with one buffer.
#[derive(Clone)]
pub struct SharedLine(pub(crate) Line);

/// Where a line's bytes live.
#[derive(Clone)]
pub(crate) enum Line {
    /// Exactly the line: an entry sealed on its own, or read back.
    Exact(Arc<[u8]>),
    /// A chain's line buffer, holding the line and nothing else (its spare capacity is the
    /// room the chain's later lines reuse).
    Buffer(Arc<Vec<u8>>),
}

impl std::ops::Deref for SharedLine {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Line::Exact(line) => line,
            Line::Buffer(line) => line,
        }
    }
}

impl AsRef<[u8]> for SharedLine {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for SharedLine {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl fmt::Debug for SharedLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The entry's fields are its Debug; its line is only their encoding.
        f.debug_struct("SharedLine")
            .field("len", &self.len())
            .finish()
    }
}

/// A [`Chain`](crate::Chain)'s line buffer: the last line it sealed, which the next one
/// overwrites when nothing holds it any more. Empty until the first seal.
pub(crate) struct LineBuffer(pub(crate) Option<Arc<Vec<u8>>>);

impl LineBuffer {
    /// A chain's empty buffer (allocated on the first seal).
    pub(crate) const EMPTY: Self = Self(None);
}
