//! Shared by the reliability suites (faults, hostile input, policy bypass, properties): a
//! fault-injecting wrapper over any store, tools that count their executions, and ledger
//! helpers. Everything goes through the facade.

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use rein::ledger::{Entry, LoadedLedger};
use rein::store::{
    ArtifactError, ArtifactId, ArtifactRef, ArtifactStore, LedgerStore, LedgerStoreError, RunStore,
    RunStoreError, StoreOptions,
};
use rein::{Annotations, FnTool, Ledger, Run, RunId, Value, json};

// ---- fault injection ---------------------------------------------------------------------------

/// Which faults to inject, shared by the wrappers made from it and changeable while a run
/// goes (arm a fault between two calls). Every counter counts calls *into* the wrapper.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    /// Appends that reached the inner store.
    appends: AtomicU64,
    /// After this many appends reached the inner store, every further append fails as a
    /// full disk would (`StorageFull`, ENOSPC), and stores nothing.
    disk_full_after: AtomicU64,
    disk_full_armed: AtomicBool,
    /// Syncs asked for (failed or not).
    syncs: AtomicU64,
    /// The sync with this number (from 1) and every later one fails (EIO), after the inner
    /// store synced nothing.
    fail_sync_from: AtomicU64,
    /// Ledger loads fail with a read error (EIO).
    fail_load: AtomicBool,
    /// Run snapshot saves that reached the inner store.
    saves: AtomicU64,
    /// After this many saves, every further save fails (ENOSPC).
    fail_save_after: AtomicU64,
    fail_save_armed: AtomicBool,
    /// Run snapshot loads fail (EIO).
    fail_run_load: AtomicBool,
    /// Artifact puts fail (ENOSPC); gets fail (EIO).
    fail_put: AtomicBool,
    fail_get: AtomicBool,
}

impl Faults {
    /// No fault armed.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Every append after the first `n` successful ones fails with a full disk.
    pub(crate) fn disk_full_after(&self, n: u64) -> &Self {
        self.disk_full_after.store(n, Ordering::SeqCst);
        self.disk_full_armed.store(true, Ordering::SeqCst);
        self
    }

    /// Sync number `k` (from 1) and every later one fails.
    pub(crate) fn fail_sync_from(&self, k: u64) -> &Self {
        self.fail_sync_from.store(k, Ordering::SeqCst);
        self
    }

    /// Ledger loads fail (or succeed again) with a read error.
    pub(crate) fn fail_load(&self, on: bool) -> &Self {
        self.fail_load.store(on, Ordering::SeqCst);
        self
    }

    /// Every run snapshot save after the first `n` fails with a full disk.
    pub(crate) fn fail_save_after(&self, n: u64) -> &Self {
        self.fail_save_after.store(n, Ordering::SeqCst);
        self.fail_save_armed.store(true, Ordering::SeqCst);
        self
    }

    /// Run snapshot loads fail with a read error.
    pub(crate) fn fail_run_load(&self, on: bool) -> &Self {
        self.fail_run_load.store(on, Ordering::SeqCst);
        self
    }

    /// Artifact puts fail with a full disk.
    pub(crate) fn fail_put(&self, on: bool) -> &Self {
        self.fail_put.store(on, Ordering::SeqCst);
        self
    }

    /// Artifact gets fail with a read error.
    pub(crate) fn fail_get(&self, on: bool) -> &Self {
        self.fail_get.store(on, Ordering::SeqCst);
        self
    }

    /// How many appends reached the inner store.
    pub(crate) fn appends(&self) -> u64 {
        self.appends.load(Ordering::SeqCst)
    }

    /// How many syncs were asked for.
    pub(crate) fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::SeqCst)
    }

    /// How many run snapshot saves reached the inner store.
    pub(crate) fn saves(&self) -> u64 {
        self.saves.load(Ordering::SeqCst)
    }
}

/// The error a full disk gives (ENOSPC).
pub(crate) fn enospc() -> io::Error {
    io::Error::new(
        io::ErrorKind::StorageFull,
        "no space left on device (injected)",
    )
}

/// The error a failing disk gives (EIO).
pub(crate) fn eio(what: &str) -> io::Error {
    io::Error::other(format!("input/output error while {what} (injected)"))
}

/// A store that forwards to `inner` until a fault in [`Faults`] says otherwise. It wraps a
/// ledger store, a run store or an artifact store, whichever `S` is; the inner store is
/// shared, so a second, healthy engine can be built over what the faulty one left behind.
#[derive(Debug)]
pub(crate) struct Faulty<S> {
    pub(crate) inner: Arc<S>,
    pub(crate) faults: Arc<Faults>,
}

impl<S> Faulty<S> {
    /// `inner` behind the faults armed in `faults`.
    pub(crate) fn new(inner: &Arc<S>, faults: &Arc<Faults>) -> Self {
        Self {
            inner: Arc::clone(inner),
            faults: Arc::clone(faults),
        }
    }
}

impl<S: LedgerStore> LedgerStore for Faulty<S> {
    async fn append(&self, entry: &Entry) -> Result<(), LedgerStoreError> {
        let f = &self.faults;
        if f.disk_full_armed.load(Ordering::SeqCst)
            && f.appends.load(Ordering::SeqCst) >= f.disk_full_after.load(Ordering::SeqCst)
        {
            return Err(LedgerStoreError::Io {
                context: format!("appending entry {} of run {}", entry.seq(), entry.run_id()),
                source: enospc(),
            });
        }
        self.inner.append(entry).await?;
        f.appends.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn sync(&self, run_id: &RunId) -> Result<(), LedgerStoreError> {
        let f = &self.faults;
        let n = f.syncs.fetch_add(1, Ordering::SeqCst) + 1;
        let from = f.fail_sync_from.load(Ordering::SeqCst);
        if from != 0 && n >= from {
            return Err(LedgerStoreError::Io {
                context: format!("syncing the ledger of run {run_id}"),
                source: eio("fsync"),
            });
        }
        self.inner.sync(run_id).await
    }

    async fn load(&self, run_id: &RunId) -> Result<LoadedLedger, LedgerStoreError> {
        if self.faults.fail_load.load(Ordering::SeqCst) {
            return Err(LedgerStoreError::Io {
                context: format!("reading the ledger of run {run_id}"),
                source: eio("reading"),
            });
        }
        self.inner.load(run_id).await
    }

    async fn list(&self) -> Result<Vec<RunId>, LedgerStoreError> {
        self.inner.list().await
    }
}

impl<S: RunStore> RunStore for Faulty<S> {
    async fn save(&self, run: &Run) -> Result<(), RunStoreError> {
        let f = &self.faults;
        if f.fail_save_armed.load(Ordering::SeqCst)
            && f.saves.load(Ordering::SeqCst) >= f.fail_save_after.load(Ordering::SeqCst)
        {
            return Err(RunStoreError::Io {
                context: format!("saving run {}", run.id()),
                source: enospc(),
            });
        }
        self.inner.save(run).await?;
        f.saves.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn load(&self, id: &RunId) -> Result<Run, RunStoreError> {
        if self.faults.fail_run_load.load(Ordering::SeqCst) {
            return Err(RunStoreError::Io {
                context: format!("loading run {id}"),
                source: eio("reading"),
            });
        }
        self.inner.load(id).await
    }

    async fn list(&self) -> Result<Vec<RunId>, RunStoreError> {
        self.inner.list().await
    }
}

impl<S: ArtifactStore> ArtifactStore for Faulty<S> {
    async fn put(
        &self,
        bytes: Vec<u8>,
        options: StoreOptions,
    ) -> Result<ArtifactRef, ArtifactError> {
        if self.faults.fail_put.load(Ordering::SeqCst) {
            return Err(ArtifactError::io("writing an artifact", enospc()));
        }
        self.inner.put(bytes, options).await
    }

    async fn get(&self, id: &ArtifactId) -> Result<(ArtifactRef, Vec<u8>), ArtifactError> {
        if self.faults.fail_get.load(Ordering::SeqCst) {
            return Err(ArtifactError::io("reading an artifact", eio("reading")));
        }
        self.inner.get(id).await
    }

    async fn stat(&self, id: &ArtifactId) -> Result<ArtifactRef, ArtifactError> {
        if self.faults.fail_get.load(Ordering::SeqCst) {
            return Err(ArtifactError::io("reading an artifact", eio("reading")));
        }
        self.inner.stat(id).await
    }
}

// ---- tools that count ----------------------------------------------------------------------------

/// Counts how often a tool's handler ran.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counter(Arc<AtomicUsize>);

impl Counter {
    /// How many times the handler ran.
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    /// Counts one execution.
    pub(crate) fn hit(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A tool answering `{"echo": input}` that counts its executions.
pub(crate) fn counted(name: &str, annotations: Annotations) -> (FnTool, Counter) {
    counted_with(
        name,
        annotations,
        json!({"type": "object"}),
        |input| json!({"echo": input}),
    )
}

/// A tool with `schema` answering `answer(input)` that counts its executions.
pub(crate) fn counted_with(
    name: &str,
    annotations: Annotations,
    schema: Value,
    answer: fn(Value) -> Value,
) -> (FnTool, Counter) {
    let counter = Counter::default();
    let hits = counter.clone();
    let tool = FnTool::builder(name)
        .description("counts its executions")
        .annotations(annotations)
        .input_schema(schema)
        .handler(move |input: Value| {
            hits.hit();
            async move { Ok(answer(input)) }
        })
        .build()
        .expect("a valid tool");
    (tool, counter)
}

/// Lets a test hold a tool call in flight: the tool signals `entered`, then waits for
/// `release`. Permits are stored, so neither side can miss the other.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gate {
    entered: Arc<tokio::sync::Notify>,
    release: Arc<tokio::sync::Notify>,
}

impl Gate {
    /// Waits until a call has entered the tool.
    pub(crate) async fn entered(&self) {
        self.entered.notified().await;
    }

    /// Lets one waiting (or the next) call return.
    pub(crate) fn release(&self) {
        self.release.notify_one();
    }
}

/// A read-only tool that blocks in every call until its gate releases it.
pub(crate) fn gated(name: &str) -> (FnTool, Gate) {
    let gate = Gate::default();
    let g = gate.clone();
    let tool = FnTool::builder(name)
        .annotations(Annotations::read_only())
        .handler(move |_: Value| {
            let g = g.clone();
            async move {
                g.entered.notify_one();
                g.release.notified().await;
                Ok(json!({"released": true}))
            }
        })
        .build()
        .expect("a valid tool");
    (tool, gate)
}

// ---- ledgers -------------------------------------------------------------------------------------

/// The names of the ledger's entry kinds, in order.
pub(crate) fn kinds(ledger: &Ledger) -> Vec<&'static str> {
    ledger.entries().iter().map(|e| e.event().name()).collect()
}

/// How many entries of kind `name` the ledger holds.
pub(crate) fn count(ledger: &Ledger, name: &str) -> usize {
    ledger
        .entries()
        .iter()
        .filter(|e| e.event().name() == name)
        .count()
}

/// Checks the chain, that sequence numbers run 1, 2, 3, … and that every entry is the run's.
pub(crate) fn assert_chain(ledger: &Ledger) {
    ledger.verify().expect("the ledger verifies");
    for (i, entry) in ledger.entries().iter().enumerate() {
        assert_eq!(entry.seq(), i as u64 + 1, "sequence numbers are contiguous");
        assert_eq!(entry.run_id(), ledger.run_id(), "every entry is the run's");
    }
}

// ---- deep values ----------------------------------------------------------------------------------

/// `[[[…1…]]]`, `depth` arrays deep, built without recursion.
pub(crate) fn deep_array(depth: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

/// `{"a":{"a":…1…}}`, `depth` objects deep, built without recursion.
pub(crate) fn deep_object(depth: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..depth {
        let mut map = serde_json::Map::new();
        map.insert("a".into(), value);
        value = Value::Object(map);
    }
    value
}

/// Drops `value` without recursion: `serde_json`'s own `Drop` recurses once per level, which
/// overflows a test thread's stack a few thousand levels down.
pub(crate) fn dispose(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}
