//! Time and identity as injectable inputs: `Clock` and `IdGenerator`.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rein_run::{RunId, Timestamp};

/// Where the engine gets the time. Inject a [`ManualClock`] in tests so runs are
/// reproducible byte for byte.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        Timestamp::from_unix_millis(u64::try_from(millis).unwrap_or(u64::MAX))
    }
}

/// A clock that moves only when told, by a fixed step per reading (0: never).
///
/// ```
/// use rein_engine::{Clock, ManualClock};
/// let clock = ManualClock::starting_at(1_000).with_step(10);
/// assert_eq!(clock.now().as_unix_millis(), 1_000);
/// assert_eq!(clock.now().as_unix_millis(), 1_010);
/// clock.advance(5);
/// assert_eq!(clock.now().as_unix_millis(), 1_025);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
    step: u64,
}

impl ManualClock {
    /// A clock reading `millis` since the Unix epoch.
    #[must_use]
    pub const fn starting_at(millis: u64) -> Self {
        Self {
            now: AtomicU64::new(millis),
            step: 0,
        }
    }

    /// Moves forward `step` milliseconds after every reading.
    #[must_use]
    pub const fn with_step(mut self, step: u64) -> Self {
        self.step = step;
        self
    }

    /// Moves the clock forward.
    pub fn advance(&self, millis: u64) {
        self.now.fetch_add(millis, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_unix_millis(self.now.fetch_add(self.step, Ordering::Relaxed))
    }
}

/// Where the engine gets new run ids.
pub trait IdGenerator: Send + Sync + fmt::Debug + 'static {
    /// A fresh, unique run id.
    fn run_id(&self) -> RunId;
}

/// UUID v7 ids: unique, and sorted by creation time (so listings come out in order).
#[derive(Debug, Clone, Copy, Default)]
pub struct UuidV7Ids;

impl IdGenerator for UuidV7Ids {
    fn run_id(&self) -> RunId {
        let id = uuid::Uuid::now_v7().hyphenated().to_string();
        // A hyphenated UUID is 36 hex digits and hyphens: always a valid run id.
        RunId::new(id).unwrap_or_else(|_| unreachable_run_id())
    }
}

#[cold]
fn unreachable_run_id() -> RunId {
    // Kept total instead of panicking; a UUID never fails RunId's alphabet.
    RunId::new("run").unwrap_or_else(|_| unreachable_run_id())
}

/// Ids `run-1`, `run-2`, … for tests and reproducible examples.
///
/// ```
/// use rein_engine::{IdGenerator, SequentialIds};
/// let ids = SequentialIds::new("run");
/// assert_eq!(ids.run_id().as_str(), "run-1");
/// assert_eq!(ids.run_id().as_str(), "run-2");
/// ```
#[derive(Debug)]
pub struct SequentialIds {
    prefix: String,
    next: AtomicU64,
}

impl SequentialIds {
    /// Ids `<prefix>-1`, `<prefix>-2`, …; `prefix` is cleaned to the run-id alphabet.
    #[must_use]
    pub fn new(prefix: &str) -> Self {
        let prefix: String = prefix
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .take(100)
            .collect();
        Self {
            prefix: if prefix.is_empty() {
                "run".into()
            } else {
                prefix
            },
            next: AtomicU64::new(1),
        }
    }
}

impl IdGenerator for SequentialIds {
    fn run_id(&self) -> RunId {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        RunId::new(format!("{}-{n}", self.prefix)).unwrap_or_else(|_| unreachable_run_id())
    }
}
