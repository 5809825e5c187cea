//! `Deadline`: a run's wall-clock limit (its `time` budget), read from the engine's clock.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long a run may take, from its start, on the engine's clock. No step starts after
/// it, a tool call in flight gets at most the time that remains, and the run fails as
/// `deadline_exceeded`. Time spent paused — waiting for a human's answer or a durable
/// approval — does not count unless `count_paused` is set; time stopped by an interrupt
/// or a crash does.
///
/// ```
/// use std::time::Duration;
/// use rein_policy::Deadline;
///
/// let deadline = Deadline::new(Duration::from_secs(60));
/// assert!(!deadline.count_paused());
/// assert_eq!(serde_json::to_value(deadline)?, serde_json::json!({"time_ms": 60000}));
/// assert!(Deadline::new(Duration::ZERO).check().is_err()); // a run with no time at all
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deadline {
    #[serde(rename = "time_ms", with = "rein_tool::duration_ms")]
    time: Duration,
    /// Omitted when false (the default), so the field and the whole read the same.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    count_paused: bool,
}

/// A deadline no run can meet or no one means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeadlineError {
    /// Zero: the run could not take a single step.
    #[error("a deadline of 0 ms leaves a run no time for a single step; give it a time above 0")]
    Zero,
    /// Longer than [`Deadline::MAX`]: almost certainly a unit mistake.
    #[error(
        "a deadline of {ms} ms is more than a year ({} ms), which is no deadline; check the \
         unit (milliseconds) or leave the deadline out", Deadline::MAX.as_millis()
    )]
    TooLong {
        /// The deadline asked for, in milliseconds.
        ms: u128,
    },
}

impl Deadline {
    /// The longest deadline accepted: 366 days.
    pub const MAX: Duration = Duration::from_secs(366 * 24 * 60 * 60);

    /// A deadline `time` after the run starts; paused time does not count.
    #[must_use]
    pub const fn new(time: Duration) -> Self {
        Self {
            time,
            count_paused: false,
        }
    }

    /// Whether time spent paused (waiting for a human or an approval) counts.
    #[must_use]
    pub const fn counting_paused(mut self, count: bool) -> Self {
        self.count_paused = count;
        self
    }

    /// How long a run may take.
    #[must_use]
    pub const fn time(&self) -> Duration {
        self.time
    }

    /// Whether time spent paused counts.
    #[must_use]
    pub const fn count_paused(&self) -> bool {
        self.count_paused
    }

    /// Whether a run can be held to it: more than zero, at most [`Deadline::MAX`].
    ///
    /// # Errors
    /// [`DeadlineError`] saying what to change.
    pub fn check(&self) -> Result<(), DeadlineError> {
        if self.time.is_zero() {
            return Err(DeadlineError::Zero);
        }
        if self.time > Self::MAX {
            return Err(DeadlineError::TooLong {
                ms: self.time.as_millis(),
            });
        }
        Ok(())
    }

    /// Whether `self` allows no more time than `wider`: no longer, and paused time counted
    /// if `wider` counts it. No deadline (`None`) is the widest.
    #[must_use]
    pub fn is_within(this: Option<&Self>, wider: Option<&Self>) -> bool {
        match (this, wider) {
            (_, None) => true,
            (None, Some(_)) => false,
            (Some(a), Some(b)) => a.time <= b.time && (a.count_paused || !b.count_paused),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrower_deadline_is_shorter_and_counts_no_less() {
        let minute = Deadline::new(Duration::from_secs(60));
        let hour = Deadline::new(Duration::from_secs(3600));
        assert!(Deadline::is_within(Some(&minute), Some(&hour)));
        assert!(!Deadline::is_within(Some(&hour), Some(&minute)));
        assert!(Deadline::is_within(Some(&hour), None));
        assert!(!Deadline::is_within(None, Some(&hour)));
        let counting = hour.counting_paused(true);
        assert!(Deadline::is_within(Some(&counting), Some(&hour)));
        assert!(!Deadline::is_within(Some(&hour), Some(&counting)));
        assert_eq!(
            Deadline::new(Deadline::MAX + Duration::from_millis(1)).check(),
            Err(DeadlineError::TooLong {
                ms: Deadline::MAX.as_millis() + 1
            })
        );
        assert_eq!(Deadline::new(Deadline::MAX).check(), Ok(()));
    }
}
