//! `Sharded`: a hash map split over several short-held mutexes, for per-run and per-artifact data.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// How many independent locks a [`Sharded`] map has: enough that concurrent runs rarely
/// meet, few enough that listing every key stays cheap.
const SHARDS: usize = 32;

/// A map whose keys are spread over [`SHARDS`] mutex-guarded maps by hash.
///
/// Callers take one shard's lock for one short, synchronous update and never hold it across
/// an `.await`. A poisoned lock is recovered: every update here is a single map operation,
/// so a panic elsewhere cannot leave a shard half-written.
pub(crate) struct Sharded<K, V> {
    hasher: RandomState,
    shards: Box<[Mutex<HashMap<K, V>>]>,
}

impl<K: Hash + Eq, V> Sharded<K, V> {
    /// An empty map.
    pub(crate) fn new() -> Self {
        Self {
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    /// Locks the shard that holds `key`.
    pub(crate) fn lock<Q>(&self, key: &Q) -> MutexGuard<'_, HashMap<K, V>>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + ?Sized,
    {
        // The modulo keeps the index in range whatever the hash, so indexing cannot fail.
        let index = usize::try_from(self.hasher.hash_one(key) % SHARDS as u64).unwrap_or(0);
        lock(&self.shards[index])
    }

    /// Calls `f` on every entry, one shard lock at a time.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&K, &V)) {
        for shard in &self.shards {
            for (key, value) in lock(shard).iter() {
                f(key, value);
            }
        }
    }

    /// The number of entries (a snapshot: shards are counted one after the other).
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|shard| lock(shard).len()).sum()
    }
}

impl<K: Hash + Eq, V> Default for Sharded<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

#[expect(
    clippy::missing_fields_in_debug,
    reason = "the shards are shown by count, not entry by entry"
)]
impl<K: Hash + Eq, V> fmt::Debug for Sharded<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sharded")
            .field("shards", &self.shards.len())
            .field("len", &self.len())
            .finish()
    }
}

/// Locks `mutex`, recovering it if a panic poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
