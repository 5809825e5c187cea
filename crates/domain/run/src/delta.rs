//! `ModelDelta` and `DeltaSink`: a model's reply as it streams in, for whoever watches a
//! run live. Never recorded: the ledger keeps the whole reply (`planner_call`), these are
//! only a view of it arriving.

use std::fmt;
use std::sync::Arc;

use crate::PlanMeter;

/// A piece of a model's reply, as it streams in. The pieces of one attempt, in order, add up
/// to the reply: the text pieces to its prose, the argument pieces of call `index` to that
/// call's arguments (as the model wrote them, before any check).
///
/// ```
/// use rein_run::ModelDelta;
/// let pieces = [
///     ModelDelta::Text("Reading ".into()),
///     ModelDelta::Text("the notes.".into()),
///     ModelDelta::ToolArguments { index: 0, name: "fs_read".into(), piece: "{\"path\":".into() },
///     ModelDelta::ToolArguments { index: 0, name: "fs_read".into(), piece: "\"a.txt\"}".into() },
/// ];
/// let text: String = pieces.iter().filter_map(ModelDelta::text).collect();
/// assert_eq!(text, "Reading the notes.");
/// assert_eq!(pieces[2].to_string(), "{\"path\":"); // the piece itself
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelDelta {
    /// More of the reply's prose.
    Text(String),
    /// More of a function call's arguments (JSON text, incomplete until the call ends).
    ToolArguments {
        /// The call's place in the reply, from 0 (its order in the recorded reply).
        index: u32,
        /// The function's name as the model wrote it (the wire name, e.g. `fs_read` for the
        /// tool `fs.read`).
        name: String,
        /// The next piece of its arguments.
        piece: String,
    },
}

impl ModelDelta {
    /// The piece of prose, when this is one.
    #[must_use]
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::ToolArguments { .. } => None,
        }
    }
}

/// The piece itself, as the model wrote it: printed one after the other, the pieces show
/// the reply being typed.
impl fmt::Display for ModelDelta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text(piece) | Self::ToolArguments { piece, .. } => f.write_str(piece),
        }
    }
}

/// Where a [`PlanMeter`] sends the [`ModelDelta`]s a planner publishes: the engine's live
/// events. Implemented by the engine; a planner only sees it through the meter.
///
/// # Contract
/// - `delta` MUST NOT block or wait: it runs inside the planner's read of the model's
///   stream. A sink that cannot keep up drops pieces (a watcher is told it missed some);
///   the ledger still has the whole reply.
/// - `wanted` SHOULD be cheap and say `false` when nobody watches, so a planner builds no
///   piece for nobody.
pub trait DeltaSink: Send + Sync + fmt::Debug {
    /// Whether anybody watches now.
    fn wanted(&self) -> bool;
    /// Publishes `delta`.
    fn delta(&self, delta: ModelDelta);
}

impl PlanMeter {
    /// The same meter, publishing the [`ModelDelta`]s the planner streams to `sink` (the
    /// engine's live events).
    #[must_use]
    pub fn with_deltas(mut self, sink: Arc<dyn DeltaSink>) -> Self {
        self.deltas = Some(sink);
        self
    }

    /// Whether anybody watches the reply stream in: a planner that streams MAY skip building
    /// [`ModelDelta`]s when this is `false`.
    #[must_use]
    pub fn streams(&self) -> bool {
        self.deltas.as_ref().is_some_and(|sink| sink.wanted())
    }

    /// Publishes a piece of the reply of the model call in flight (announced with
    /// [`PlanMeter::begin`]). Never waits and never fails: nothing is recorded, and a piece
    /// nobody watches is dropped.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use rein_run::{DeltaSink, ModelDelta, PlanMeter};
    ///
    /// #[derive(Debug, Default)]
    /// struct Screen(Mutex<String>);
    /// impl DeltaSink for Screen {
    ///     fn wanted(&self) -> bool { true }
    ///     fn delta(&self, delta: ModelDelta) { self.0.lock().unwrap().push_str(&delta.to_string()) }
    /// }
    ///
    /// let screen = Arc::new(Screen::default());
    /// let meter = PlanMeter::unlimited().with_deltas(screen.clone());
    /// assert!(meter.streams());
    /// meter.delta(ModelDelta::Text("Hel".into()));
    /// meter.delta(ModelDelta::Text("lo".into()));
    /// assert_eq!(*screen.0.lock().unwrap(), "Hello");
    /// assert!(!PlanMeter::unlimited().streams()); // outside an engine nobody watches
    /// ```
    pub fn delta(&self, delta: ModelDelta) {
        if let Some(sink) = &self.deltas {
            sink.delta(delta);
        }
    }
}
