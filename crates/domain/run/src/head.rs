//! `LedgerHead`: the last ledger entry a run snapshot was saved after, its anchor in the chain.

use serde::{Deserialize, Serialize};

use crate::Digest;

/// The head of a run's ledger: the sequence number and hash of its last entry.
///
/// The engine appends a run's ledger entries *before* it saves the run's snapshot, and
/// records in the snapshot the head of the ledger at that moment
/// ([`Run::anchor`](crate::Run::anchor)). A ledger read back later must still hold an
/// entry with this number and this hash: a hash chain alone cannot see whole entries cut
/// from its end (what is left is a shorter valid chain), but it cannot hide them from a
/// head recorded outside it.
///
/// ```
/// use rein_run::{Digest, LedgerHead};
///
/// let head = LedgerHead::new(7, Digest::of_bytes(b"entry 7"));
/// assert_eq!(head.seq, 7);
/// let json = serde_json::to_value(head)?;
/// assert_eq!(json["seq"], 7);
/// assert_eq!(serde_json::from_value::<LedgerHead>(json)?, head);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerHead {
    /// The entry's sequence number (entries count from 1).
    pub seq: u64,
    /// The entry's hash.
    pub hash: Digest,
}

impl LedgerHead {
    /// The head at entry `seq` with hash `hash`.
    #[must_use]
    pub const fn new(seq: u64, hash: Digest) -> Self {
        Self { seq, hash }
    }
}

impl std::fmt::Display for LedgerHead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "entry {} (hash {})", self.seq, self.hash)
    }
}
