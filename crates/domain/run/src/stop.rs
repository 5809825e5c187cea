//! Stop requests: an operator's abort or interrupt of a run, persisted where the process
//! that drives the run (or the next one to resume it) finds it.

use std::future::Future;

use serde::{Deserialize, Serialize};

use crate::{BoxFuture, RunId, RunStoreError, Timestamp};

/// How an operator asked a run to stop.
///
/// ```
/// use rein_run::StopKind;
/// assert_eq!(serde_json::to_string(&StopKind::Abort)?, r#""abort""#);
/// assert_eq!(StopKind::Interrupt.to_string(), "interrupt");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    /// Nothing new starts (a tool call in progress finishes and is recorded); the run is
    /// left `interrupted`, and a resume continues it.
    Interrupt,
    /// In-flight calls are dropped and the run fails as aborted.
    Abort,
}

impl std::fmt::Display for StopKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Interrupt => "interrupt",
            Self::Abort => "abort",
        })
    }
}

/// A request to stop a run, made from outside the process that drives it (an operator in
/// the console). The driving engine honours it at its next step; a run nobody drives
/// honours it when it is next resumed. Either way the ledger records it, with `by`.
///
/// ```
/// use rein_run::{StopKind, StopRequest, Timestamp};
/// let first = StopRequest::new(StopKind::Abort, "alice", "runaway", Timestamp::from_unix_millis(1));
/// let later = StopRequest::new(StopKind::Interrupt, "bob", "pause it", Timestamp::from_unix_millis(2));
/// // An abort is never softened by a later interrupt.
/// assert_eq!(first.clone().then(later.clone()), first);
/// assert_eq!(later.clone().then(first.clone()), first);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopRequest {
    /// Abort or interrupt.
    pub kind: StopKind,
    /// Who asked (an operator's name, as their token names them).
    pub by: String,
    /// Why, as they said.
    pub reason: String,
    /// When they asked.
    pub requested_at: Timestamp,
}

impl StopRequest {
    /// A request of `kind` by `by`, for `reason`, made at `requested_at`.
    #[must_use]
    pub fn new(
        kind: StopKind,
        by: impl Into<String>,
        reason: impl Into<String>,
        requested_at: Timestamp,
    ) -> Self {
        Self {
            kind,
            by: by.into(),
            reason: reason.into(),
            requested_at,
        }
    }

    /// The request that stands when `newer` arrives while `self` waits: the newer one,
    /// unless it would soften an abort into an interrupt.
    #[must_use]
    pub fn then(self, newer: Self) -> Self {
        if self.kind == StopKind::Abort && newer.kind == StopKind::Interrupt {
            self
        } else {
            newer
        }
    }
}

/// Keeps stop requests, at most one per run. Implement it with plain `async fn`s.
///
/// # Contract
/// - `request` MUST be durable when it returns, and MUST keep what
///   [`StopRequest::then`] says stands when a request already waits.
/// - `pending` MUST return `Ok(None)` when no request waits for run `id` (an unknown run
///   included) and [`RunStoreError::Corrupt`] for a stored request it cannot read.
/// - `clear` MUST forget the waiting request only while it is still the one it is given
///   (compared whole), and MUST succeed when nothing waits: a request that replaced it
///   since (an abort asked while the driver recorded an interrupt) stays, and is honoured
///   next.
/// - Any process MAY call `request` while another drives the run: the store is the only
///   thing they share.
pub trait StopRequestStore: Send + Sync + 'static {
    /// Stores a request to stop run `id`.
    fn request(
        &self,
        id: &RunId,
        request: &StopRequest,
    ) -> impl Future<Output = Result<(), RunStoreError>> + Send;

    /// The request waiting for run `id`, if any.
    fn pending(
        &self,
        id: &RunId,
    ) -> impl Future<Output = Result<Option<StopRequest>, RunStoreError>> + Send;

    /// Forgets the request for run `id` if it is still `honoured` (the one the driver
    /// recorded): a newer one that replaced it since stays.
    fn clear(
        &self,
        id: &RunId,
        honoured: &StopRequest,
    ) -> impl Future<Output = Result<(), RunStoreError>> + Send;
}

/// The object-safe twin of [`StopRequestStore`], implemented for every stop request store.
pub trait DynStopRequestStore: Send + Sync + 'static {
    /// Boxed [`StopRequestStore::request`].
    fn request_boxed<'a>(
        &'a self,
        id: &'a RunId,
        request: &'a StopRequest,
    ) -> BoxFuture<'a, Result<(), RunStoreError>>;
    /// Boxed [`StopRequestStore::pending`].
    fn pending_boxed<'a>(
        &'a self,
        id: &'a RunId,
    ) -> BoxFuture<'a, Result<Option<StopRequest>, RunStoreError>>;
    /// Boxed [`StopRequestStore::clear`].
    fn clear_boxed<'a>(
        &'a self,
        id: &'a RunId,
        honoured: &'a StopRequest,
    ) -> BoxFuture<'a, Result<(), RunStoreError>>;
}

impl<S: StopRequestStore> DynStopRequestStore for S {
    fn request_boxed<'a>(
        &'a self,
        id: &'a RunId,
        request: &'a StopRequest,
    ) -> BoxFuture<'a, Result<(), RunStoreError>> {
        Box::pin(self.request(id, request))
    }
    fn pending_boxed<'a>(
        &'a self,
        id: &'a RunId,
    ) -> BoxFuture<'a, Result<Option<StopRequest>, RunStoreError>> {
        Box::pin(self.pending(id))
    }
    fn clear_boxed<'a>(
        &'a self,
        id: &'a RunId,
        honoured: &'a StopRequest,
    ) -> BoxFuture<'a, Result<(), RunStoreError>> {
        Box::pin(self.clear(id, honoured))
    }
}
