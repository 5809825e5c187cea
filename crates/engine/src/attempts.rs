//! `AttemptLog`: the engine's observer on the resilience stack — it vetoes retries the
//! budget cannot pay for and remembers every attempt so the engine can ledger it.

use std::sync::Mutex;
use std::time::Duration;

use rein_resilience::{AttemptObserver, AttemptReport};
use rein_run::ToolName;
use rein_tool::ToolError;

/// How one attempt ended. Successful outputs are not copied: the call's result carries it.
#[derive(Debug, Clone)]
pub(crate) struct AttemptRecord {
    pub(crate) attempt: u32,
    pub(crate) error: Option<ToolError>,
    pub(crate) elapsed: Duration,
}

#[derive(Debug, Default)]
struct Log {
    records: Vec<AttemptRecord>,
    vetoed: bool,
}

/// Allows attempt 1 (already paid for and ledgered by the engine) and as many retries as
/// `retries_affordable`; records each finished attempt.
#[derive(Debug)]
pub(crate) struct AttemptLog {
    retries_affordable: Option<u64>,
    log: Mutex<Log>,
}

/// The veto's error: never seen by the planner (the engine reports the last real attempt's
/// error), but named so a user layer that logs it is not confused.
pub(crate) const VETO_MESSAGE: &str = "no retry: the tool_calls budget has nothing left";

impl AttemptLog {
    pub(crate) fn new(retries_affordable: Option<u64>) -> Self {
        Self {
            retries_affordable,
            log: Mutex::new(Log::default()),
        }
    }

    /// The attempts, in order, and whether a retry was vetoed for lack of budget.
    pub(crate) fn finish(&self) -> (Vec<AttemptRecord>, bool) {
        let mut log = self
            .log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (std::mem::take(&mut log.records), log.vetoed)
    }
}

impl AttemptObserver for AttemptLog {
    fn before_attempt(&self, _tool: &ToolName, attempt: u32) -> Result<(), ToolError> {
        if attempt <= 1 {
            return Ok(());
        }
        let retries = u64::from(attempt - 1);
        if self
            .retries_affordable
            .is_some_and(|affordable| retries > affordable)
        {
            let mut log = self
                .log
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            log.vetoed = true;
            return Err(ToolError::failed(VETO_MESSAGE));
        }
        Ok(())
    }

    fn after_attempt(&self, report: &AttemptReport<'_>) {
        let record = AttemptRecord {
            attempt: report.attempt,
            error: report.outcome.as_ref().err().cloned(),
            elapsed: report.elapsed,
        };
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .records
            .push(record);
    }
}
