//! `PgArtifactStore`: content-addressed artifacts as `bytea`, deduplicated, verified on read.

use std::sync::Arc;

use rein_artifact::{ArtifactError, ArtifactId, ArtifactRef, ArtifactStore, StoreOptions};

use crate::failure::Explain;
use crate::prepared;
use crate::stores::Shared;

/// An [`ArtifactStore`] in `PostgreSQL`: table `rein_artifacts`, one row per content keyed
/// by its [`ArtifactId`] (the SHA-256 of the bytes), holding the reference of the first
/// `put` and the bytes as `bytea`. A second `put` of the same content stores nothing
/// (`ON CONFLICT DO NOTHING`), so concurrent writers in any number of processes are safe.
/// `get` verifies the bytes against the reference on every read.
///
/// Content above [`PgConfig::max_artifact_size`](crate::PgConfig::max_artifact_size)
/// (64 MiB unless configured) is refused with [`ArtifactError::TooLarge`] before anything
/// is sent: a value is held whole in memory on both ends, and `bytea` stops at 1 GiB.
#[derive(Debug, Clone)]
pub struct PgArtifactStore {
    shared: Arc<Shared>,
}

fn backend(context: String, source: impl Explain) -> ArtifactError {
    ArtifactError::Backend {
        context,
        source: source.explain(),
    }
}

impl PgArtifactStore {
    pub(crate) const fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    async fn client(
        &self,
        context: impl FnOnce() -> String,
    ) -> Result<deadpool_postgres::Object, ArtifactError> {
        self.shared
            .client()
            .await
            .map_err(|e| backend(context(), e))
    }

    /// The stored reference and (when `with_bytes`) bytes of `id`, the reference checked
    /// to be for `id`.
    async fn stored(
        &self,
        id: &ArtifactId,
        with_bytes: bool,
    ) -> Result<(ArtifactRef, Option<Vec<u8>>), ArtifactError> {
        let context = || format!("reading artifact {id}");
        let client = self.client(context).await?;
        let sql = if with_bytes {
            "SELECT reference, bytes FROM rein_artifacts WHERE id = $1"
        } else {
            "SELECT reference FROM rein_artifacts WHERE id = $1"
        };
        let row = prepared::query_opt(&client, sql, &[&id.to_string()])
            .await
            .map_err(|e| backend(context(), e))?
            .ok_or_else(|| ArtifactError::NotFound { id: id.clone() })?;
        let json: &str = row.get(0);
        let reference: ArtifactRef =
            serde_json::from_str(json).map_err(|e| ArtifactError::Corrupt {
                id: id.clone(),
                reason: format!("its stored reference is not readable: {e}"),
            })?;
        if reference.id() != id {
            return Err(ArtifactError::Corrupt {
                id: id.clone(),
                reason: format!("it holds the reference of artifact {}", reference.id()),
            });
        }
        Ok((reference, with_bytes.then(|| row.get(1))))
    }
}

impl ArtifactStore for PgArtifactStore {
    async fn put(
        &self,
        bytes: Vec<u8>,
        options: StoreOptions,
    ) -> Result<ArtifactRef, ArtifactError> {
        let size = bytes.len() as u64;
        let limit = self.shared.config.max_artifact_size();
        if size > limit {
            return Err(ArtifactError::TooLarge { size, limit });
        }
        let reference = ArtifactRef::for_content(&bytes, options);
        let id = reference.id();
        let context = || format!("storing artifact {id}");
        let json = serde_json::to_string(&reference).map_err(|e| backend(context(), e))?;
        let client = self.client(context).await?;
        prepared::execute(
            &client,
            "INSERT INTO rein_artifacts (id, reference, bytes) VALUES ($1, $2, $3)
                 ON CONFLICT (id) DO NOTHING",
            &[&id.to_string(), &json, &bytes],
        )
        .await
        .map_err(|e| backend(context(), e))?;
        Ok(reference)
    }

    async fn get(&self, id: &ArtifactId) -> Result<(ArtifactRef, Vec<u8>), ArtifactError> {
        let (reference, bytes) = self.stored(id, true).await?;
        let bytes = bytes.unwrap_or_default();
        reference.verify(&bytes)?;
        Ok((reference, bytes))
    }

    async fn stat(&self, id: &ArtifactId) -> Result<ArtifactRef, ArtifactError> {
        Ok(self.stored(id, false).await?.0)
    }
}
