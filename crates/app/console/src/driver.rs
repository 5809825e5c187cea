//! The driver port: how the console gets an engine that can drive a run on after a
//! decision (the run's tools and planner), and who holds the run meanwhile.

use std::future::Future;
use std::pin::Pin;

use rein::{Engine, RunId};

/// A boxed, `Send` future (what [`RunDriver`] returns).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An engine opened to act on one run, and what to do when the console is done with it.
pub struct OpenedRun {
    /// An engine on the run's stores, with its tools and planner.
    pub engine: Engine,
    /// Awaited once the decision is given and the run driven on (or dropped unpolled when
    /// nothing was done): it releases what opening took (a lock, connected servers).
    pub release: BoxFuture<'static, ()>,
}

impl std::fmt::Debug for OpenedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedRun").finish_non_exhaustive()
    }
}

/// Opens an engine that can drive a given run: `rein serve` rebuilds it from the scenario
/// the run was started from, under the run's lock; an embedding application returns its
/// own engine.
///
/// # Contract
/// - `open` MUST return an engine on the same stores the console reads, or the console
///   shows one thing and decides on another.
/// - `open` MAY wait while another process drives the run; it MUST NOT hand out an engine
///   that another process drives the run with at the same time.
/// - Errors are shown to the operator as they are: say what is wrong and what to do.
pub trait RunDriver: Send + Sync + 'static {
    /// Opens an engine for run `id`.
    fn open<'a>(&'a self, id: &'a RunId) -> BoxFuture<'a, Result<OpenedRun, String>>;

    /// Who drives run `id` on after a decision, in a sentence for the run's page (for
    /// `rein serve`: this console process, with the scenario the run was started from).
    fn describe(&self, id: &RunId) -> String;
}
