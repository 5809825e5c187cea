//! The `ArtifactStore` port and its object-safe twin `DynArtifactStore`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::{ArtifactError, ArtifactId, ArtifactRef, StoreOptions};

/// A boxed, `Send` future: what the object-safe [`DynArtifactStore`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where artifacts live: content-addressed bytes, each with the [`ArtifactRef`] that
/// describes it. Implement it with plain `async fn`s.
///
/// The engine moves large tool outputs here and keeps the returned reference in the run's
/// evidence; `get` gives the bytes back, verified.
///
/// # Contract
///
/// **Addressing.**
/// - `put` MUST store `bytes` under [`ArtifactId::of`]`(&bytes)` and MUST return
///   [`ArtifactRef::for_content`]`(&bytes, options)`: the id, checksum and size of these
///   bytes, with the name, content type and metadata this call gave.
/// - A store MUST derive every location (path, key, row) from the [`ArtifactId`] alone, for
///   example with [`ArtifactId::shard`]. Never from the name, content type or metadata:
///   those are arbitrary caller text. An id is 64 lowercase hex digits and nothing else, so
///   a location built from it never escapes the store's root.
///
/// **Writes.**
/// - Content is write-once. A `put` of content that is already stored MUST succeed and MUST
///   NOT rewrite the stored bytes or reference: the store keeps the reference of the first
///   `put`, so `stat` and `get` MAY return a name, content type or metadata other than a
///   later `put` of the same bytes was given.
/// - Concurrent writers of the same content, in one process or several, MUST be safe: every
///   `put` succeeds, and no reader ever sees partially written bytes or a reference without
///   its bytes (write to a temporary location and rename it into place, or hold a lock).
/// - `put` MAY refuse content above a configured size with [`ArtifactError::TooLarge`],
///   before storing anything.
///
/// **Reads.**
/// - `get` MUST verify the bytes it read against the stored reference on *every* read
///   ([`ArtifactRef::verify`] does it) and MUST return [`ArtifactError::ChecksumMismatch`]
///   instead of bytes that fail. It MUST return a reference whose id is `id`, and
///   [`ArtifactError::Corrupt`] if what is stored under `id` says otherwise.
/// - `stat` returns the stored reference without reading the content; it MAY skip
///   verifying the bytes, and MUST report a reference for another id as
///   [`ArtifactError::Corrupt`].
/// - `get` and `stat` of an id that was never stored MUST return [`ArtifactError::NotFound`].
///
/// **Failures.** Infrastructure errors MUST be translated at the seam into
/// [`ArtifactError::Io`] (see [`ArtifactError::io`]) with the cause as its source; a store
/// MUST NOT panic on bad data found at rest.
///
/// # Locations: wrong and right
///
/// ```text
/// root.join(options.name().unwrap())    // wrong: a name of "../../.ssh/id_rsa" escapes root
/// let (folder, file) = id.shard();      // right: hex digits only, always inside root
/// root.join(folder).join(file)
/// ```
///
/// # Example: an in-memory store
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::{Mutex, PoisonError};
///
/// use rein_artifact::{ArtifactError, ArtifactId, ArtifactRef, ArtifactStore, StoreOptions};
///
/// #[derive(Debug, Default)]
/// struct MemoryStore(Mutex<HashMap<ArtifactId, (ArtifactRef, Vec<u8>)>>);
///
/// impl ArtifactStore for MemoryStore {
///     async fn put(
///         &self,
///         bytes: Vec<u8>,
///         options: StoreOptions,
///     ) -> Result<ArtifactRef, ArtifactError> {
///         let reference = ArtifactRef::for_content(&bytes, options);
///         let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
///         // Write-once: the first put of some content keeps its reference.
///         map.entry(reference.id().clone()).or_insert_with(|| (reference.clone(), bytes));
///         Ok(reference)
///     }
///
///     async fn get(&self, id: &ArtifactId) -> Result<(ArtifactRef, Vec<u8>), ArtifactError> {
///         let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
///         let (reference, bytes) =
///             map.get(id).cloned().ok_or_else(|| ArtifactError::NotFound { id: id.clone() })?;
///         reference.verify(&bytes)?; // on every read
///         Ok((reference, bytes))
///     }
///
///     async fn stat(&self, id: &ArtifactId) -> Result<ArtifactRef, ArtifactError> {
///         let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
///         let (reference, _) =
///             map.get(id).ok_or_else(|| ArtifactError::NotFound { id: id.clone() })?;
///         Ok(reference.clone())
///     }
/// }
///
/// # fn block_on<F: std::future::Future>(future: F) -> F::Output {
/// #     let mut future = std::pin::pin!(future);
/// #     let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
/// #     match future.as_mut().poll(&mut cx) {
/// #         std::task::Poll::Ready(output) => output,
/// #         std::task::Poll::Pending => unreachable!("the memory store never waits"),
/// #     }
/// # }
/// let store = MemoryStore::default();
/// let options = StoreOptions::new().with_name("out.txt");
/// let reference = block_on(store.put(b"big output".to_vec(), options))?;
/// let (again, bytes) = block_on(store.get(reference.id()))?;
/// assert_eq!((again, bytes), (reference, b"big output".to_vec()));
/// # Ok::<(), ArtifactError>(())
/// ```
pub trait ArtifactStore: Send + Sync + 'static {
    /// Stores `bytes` (once per content) and returns their reference.
    fn put(
        &self,
        bytes: Vec<u8>,
        options: StoreOptions,
    ) -> impl Future<Output = Result<ArtifactRef, ArtifactError>> + Send;

    /// The reference and the verified bytes stored under `id`.
    fn get(
        &self,
        id: &ArtifactId,
    ) -> impl Future<Output = Result<(ArtifactRef, Vec<u8>), ArtifactError>> + Send;

    /// The reference stored under `id`, without the bytes.
    fn stat(
        &self,
        id: &ArtifactId,
    ) -> impl Future<Output = Result<ArtifactRef, ArtifactError>> + Send;
}

/// The object-safe twin of [`ArtifactStore`], implemented for every `ArtifactStore`. The
/// engine holds stores as [`SharedArtifactStore`]s; you never implement this yourself.
///
/// ```
/// use std::sync::Arc;
/// use rein_artifact::{
///     ArtifactError, ArtifactId, ArtifactRef, ArtifactStore, SharedArtifactStore, StoreOptions,
/// };
///
/// #[derive(Debug)]
/// struct Empty;
///
/// impl ArtifactStore for Empty {
///     async fn put(&self, bytes: Vec<u8>, _: StoreOptions) -> Result<ArtifactRef, ArtifactError> {
///         Err(ArtifactError::TooLarge { size: bytes.len() as u64, limit: 0 })
///     }
///     async fn get(&self, id: &ArtifactId) -> Result<(ArtifactRef, Vec<u8>), ArtifactError> {
///         Err(ArtifactError::NotFound { id: id.clone() })
///     }
///     async fn stat(&self, id: &ArtifactId) -> Result<ArtifactRef, ArtifactError> {
///         Err(ArtifactError::NotFound { id: id.clone() })
///     }
/// }
///
/// let store: SharedArtifactStore = Arc::new(Empty);
/// let id = ArtifactId::of(b"x");
/// let _future = store.stat_boxed(&id); // a boxed, `Send` future
/// ```
pub trait DynArtifactStore: Send + Sync + 'static {
    /// [`ArtifactStore::put`], boxed.
    fn put_boxed(
        &self,
        bytes: Vec<u8>,
        options: StoreOptions,
    ) -> BoxFuture<'_, Result<ArtifactRef, ArtifactError>>;

    /// [`ArtifactStore::get`], boxed.
    fn get_boxed<'a>(
        &'a self,
        id: &'a ArtifactId,
    ) -> BoxFuture<'a, Result<(ArtifactRef, Vec<u8>), ArtifactError>>;

    /// [`ArtifactStore::stat`], boxed.
    fn stat_boxed<'a>(
        &'a self,
        id: &'a ArtifactId,
    ) -> BoxFuture<'a, Result<ArtifactRef, ArtifactError>>;
}

impl<T: ArtifactStore> DynArtifactStore for T {
    fn put_boxed(
        &self,
        bytes: Vec<u8>,
        options: StoreOptions,
    ) -> BoxFuture<'_, Result<ArtifactRef, ArtifactError>> {
        Box::pin(self.put(bytes, options))
    }

    fn get_boxed<'a>(
        &'a self,
        id: &'a ArtifactId,
    ) -> BoxFuture<'a, Result<(ArtifactRef, Vec<u8>), ArtifactError>> {
        Box::pin(self.get(id))
    }

    fn stat_boxed<'a>(
        &'a self,
        id: &'a ArtifactId,
    ) -> BoxFuture<'a, Result<ArtifactRef, ArtifactError>> {
        Box::pin(self.stat(id))
    }
}

/// An artifact store shared by the engine and its runs.
pub type SharedArtifactStore = Arc<dyn DynArtifactStore>;

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::{Mutex, PoisonError};
    use std::task::{Context, Poll, Waker};

    use super::*;
    use crate::Checksum;

    /// The test fake: an in-memory store that keeps the contract, with a way to damage it.
    #[derive(Debug, Default)]
    struct MemoryStore {
        limit: Option<u64>,
        entries: Mutex<HashMap<ArtifactId, (ArtifactRef, Vec<u8>)>>,
    }

    impl MemoryStore {
        fn entries(
            &self,
        ) -> std::sync::MutexGuard<'_, HashMap<ArtifactId, (ArtifactRef, Vec<u8>)>> {
            self.entries.lock().unwrap_or_else(PoisonError::into_inner)
        }

        /// Flips the first bit of the bytes stored under `id`, as a bad disk would.
        fn damage(&self, id: &ArtifactId) {
            if let Some((_, bytes)) = self.entries().get_mut(id) {
                bytes[0] ^= 1;
            }
        }

        /// Files the reference of `from` under `to`, as a mixed-up index would.
        fn misfile(&self, from: &ArtifactId, to: &ArtifactId) {
            let mut entries = self.entries();
            let reference = entries[from].0.clone();
            entries.get_mut(to).unwrap().0 = reference;
        }

        fn stored(&self, id: &ArtifactId) -> Result<(ArtifactRef, Vec<u8>), ArtifactError> {
            let (reference, bytes) = self
                .entries()
                .get(id)
                .cloned()
                .ok_or_else(|| ArtifactError::NotFound { id: id.clone() })?;
            if reference.id() != id {
                return Err(ArtifactError::Corrupt {
                    id: id.clone(),
                    reason: format!("it holds the reference of artifact {}", reference.id()),
                });
            }
            Ok((reference, bytes))
        }
    }

    impl ArtifactStore for MemoryStore {
        async fn put(
            &self,
            bytes: Vec<u8>,
            options: StoreOptions,
        ) -> Result<ArtifactRef, ArtifactError> {
            let size = bytes.len() as u64;
            if let Some(limit) = self.limit.filter(|&limit| size > limit) {
                return Err(ArtifactError::TooLarge { size, limit });
            }
            let reference = ArtifactRef::for_content(&bytes, options);
            self.entries()
                .entry(reference.id().clone())
                .or_insert_with(|| (reference.clone(), bytes));
            Ok(reference)
        }

        async fn get(&self, id: &ArtifactId) -> Result<(ArtifactRef, Vec<u8>), ArtifactError> {
            let (reference, bytes) = self.stored(id)?;
            reference.verify(&bytes)?;
            Ok((reference, bytes))
        }

        async fn stat(&self, id: &ArtifactId) -> Result<ArtifactRef, ArtifactError> {
            self.stored(id).map(|(reference, _)| reference)
        }
    }

    /// Runs a future that never waits (the fake store's) to completion.
    fn block_on<F: Future>(future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        match future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(output) => output,
            Poll::Pending => panic!("the memory store never waits"),
        }
    }

    fn _ports_are_object_safe(_: &dyn DynArtifactStore) {}

    fn assert_send<T: Send>(_: &T) {}

    #[test]
    fn every_store_is_a_dyn_store_with_send_futures() {
        let store: SharedArtifactStore = Arc::new(MemoryStore::default());
        let id = ArtifactId::of(b"x");
        let put = store.put_boxed(b"x".to_vec(), StoreOptions::new());
        assert_send(&put);
        assert_eq!(block_on(put).unwrap().id(), &id);
        let get = store.get_boxed(&id);
        assert_send(&get);
        assert_eq!(block_on(get).unwrap().1, b"x");
        let stat = store.stat_boxed(&id);
        assert_send(&stat);
        assert_eq!(block_on(stat).unwrap().size(), 1);
    }

    #[test]
    fn put_returns_the_callers_reference_and_the_store_keeps_the_first() {
        let store = MemoryStore::default();
        let first =
            block_on(store.put(b"same".to_vec(), StoreOptions::new().with_name("a"))).unwrap();
        let second =
            block_on(store.put(b"same".to_vec(), StoreOptions::new().with_name("b"))).unwrap();
        assert_eq!(first.id(), second.id());
        assert_eq!(second.name(), Some("b"));
        assert_eq!(block_on(store.stat(first.id())).unwrap(), first);
    }

    #[test]
    fn get_verifies_every_read() {
        let store = MemoryStore::default();
        let reference = block_on(store.put(b"payload".to_vec(), StoreOptions::new())).unwrap();
        store.damage(reference.id());
        match block_on(store.get(reference.id())) {
            Err(ArtifactError::ChecksumMismatch {
                id,
                expected,
                actual,
            }) => {
                assert_eq!(&id, reference.id());
                assert_eq!(expected, Checksum::of(b"payload"));
                assert_ne!(actual, expected);
            }
            other => panic!("expected a checksum mismatch, got {other:?}"),
        }
        // `stat` does not read the bytes, so it still answers.
        assert_eq!(block_on(store.stat(reference.id())).unwrap(), reference);
    }

    #[test]
    fn a_misfiled_reference_is_corrupt() {
        let store = MemoryStore::default();
        let a = block_on(store.put(b"a".to_vec(), StoreOptions::new())).unwrap();
        let b = block_on(store.put(b"b".to_vec(), StoreOptions::new())).unwrap();
        store.misfile(a.id(), b.id());
        for result in [
            block_on(store.stat(b.id())),
            block_on(store.get(b.id())).map(|(r, _)| r),
        ] {
            assert!(matches!(result, Err(ArtifactError::Corrupt { ref id, .. }) if id == b.id()));
        }
    }

    #[test]
    fn unknown_ids_and_oversized_content_are_typed_errors() {
        let store = MemoryStore {
            limit: Some(4),
            ..MemoryStore::default()
        };
        let id = ArtifactId::of(b"never stored");
        let missing = block_on(store.get(&id));
        assert!(matches!(missing, Err(ArtifactError::NotFound { id: ref e }) if *e == id));
        assert!(matches!(
            block_on(store.stat(&id)),
            Err(ArtifactError::NotFound { .. })
        ));
        assert!(matches!(
            block_on(store.put(vec![0; 5], StoreOptions::new())),
            Err(ArtifactError::TooLarge { size: 5, limit: 4 })
        ));
        assert!(store.entries().is_empty(), "a refused put stores nothing");
    }
}
