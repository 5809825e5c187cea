//! `MemoryArtifactStore`: content-addressed artifacts kept in process memory.

use std::sync::Arc;

use rein_artifact::{ArtifactError, ArtifactId, ArtifactRef, ArtifactStore, StoreOptions};

use super::shard::Sharded;
use crate::blocking;

/// An [`ArtifactStore`] that keeps content in memory, verified on every read like any store.
///
/// Content is hashed outside any lock (large content on tokio's blocking pool); the lock is held only to insert or to take a shared
/// handle to the bytes. Write-once: a second `put` of the same bytes keeps the first
/// reference. Set a size limit with [`MemoryArtifactStore::with_max_size`].
///
/// ```
/// use rein_artifact::{ArtifactStore, StoreOptions};
/// use rein_storage::MemoryArtifactStore;
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let store = MemoryArtifactStore::new();
/// let reference = store.put(b"big output".to_vec(), StoreOptions::new().with_name("out")).await?;
/// let (again, bytes) = store.get(reference.id()).await?;
/// assert_eq!((again, bytes), (reference, b"big output".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct MemoryArtifactStore {
    artifacts: Sharded<ArtifactId, Stored>,
    max_size: Option<u64>,
}

/// One stored artifact: its first reference and its bytes, shared with readers.
#[derive(Debug)]
struct Stored {
    reference: ArtifactRef,
    bytes: Arc<Vec<u8>>,
}

impl MemoryArtifactStore {
    /// An empty store without a size limit.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The same store, refusing content larger than `bytes` with [`ArtifactError::TooLarge`].
    ///
    /// ```
    /// use rein_artifact::{ArtifactError, ArtifactStore, StoreOptions};
    /// use rein_storage::MemoryArtifactStore;
    ///
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let store = MemoryArtifactStore::new().with_max_size(4);
    /// let refused = store.put(vec![0; 5], StoreOptions::new()).await;
    /// assert!(matches!(refused, Err(ArtifactError::TooLarge { size: 5, limit: 4 })));
    /// # });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_max_size(mut self, bytes: u64) -> Self {
        self.max_size = Some(bytes);
        self
    }

    /// The stored reference and a handle to the bytes, or `NotFound`.
    fn stored(&self, id: &ArtifactId) -> Result<(ArtifactRef, Arc<Vec<u8>>), ArtifactError> {
        let shard = self.artifacts.lock(id);
        let stored = shard
            .get(id)
            .ok_or_else(|| ArtifactError::NotFound { id: id.clone() })?;
        Ok((stored.reference.clone(), Arc::clone(&stored.bytes)))
    }
}

impl ArtifactStore for MemoryArtifactStore {
    async fn put(
        &self,
        bytes: Vec<u8>,
        options: StoreOptions,
    ) -> Result<ArtifactRef, ArtifactError> {
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if let Some(limit) = self.max_size.filter(|&limit| size > limit) {
            return Err(ArtifactError::TooLarge { size, limit });
        }
        let (reference, bytes) = blocking::compute(bytes.len(), move || {
            (ArtifactRef::for_content(&bytes, options), bytes)
        })
        .await
        .map_err(|source| ArtifactError::io("hashing content in memory", source))?;
        self.artifacts
            .lock(reference.id())
            .entry(reference.id().clone())
            .or_insert_with(|| Stored {
                reference: reference.clone(),
                bytes: Arc::new(bytes),
            });
        Ok(reference)
    }

    async fn get(&self, id: &ArtifactId) -> Result<(ArtifactRef, Vec<u8>), ArtifactError> {
        let (reference, bytes) = self.stored(id)?;
        blocking::compute(bytes.len(), move || {
            reference.verify(&bytes)?;
            Ok((reference, bytes.to_vec()))
        })
        .await
        .map_err(|source| ArtifactError::io(format!("verifying artifact {id} in memory"), source))?
    }

    async fn stat(&self, id: &ArtifactId) -> Result<ArtifactRef, ArtifactError> {
        self.stored(id).map(|(reference, _)| reference)
    }
}
