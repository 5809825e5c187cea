//! Configuration: engine-wide defaults, per-tool overrides, and the policy one tool runs under.

use std::collections::BTreeMap;
use std::num::{NonZeroU32, NonZeroUsize};
use std::time::Duration;

use rein_tool::{ToolName, ToolSpec};

/// How the execution stack runs tools: engine-wide defaults plus per-tool overrides.
///
/// Every field is public and every value is valid, so a config cannot fail to build a stack.
/// [`ResilienceConfig::policy_for`] resolves what one tool gets, most specific first:
///
/// | setting | per-tool override | tool's annotations | engine default |
/// |---|---|---|---|
/// | timeout of one attempt | [`ToolOverrides::timeout`] | [`Annotations::timeout`] | [`default_timeout`](Self::default_timeout) |
/// | bulkhead | [`ToolOverrides::bulkhead`] | – | [`bulkhead`](Self::bulkhead) |
/// | retry | [`ToolOverrides::retry`] | only if [`Annotations::is_idempotent`] | [`retry`](Self::retry) |
/// | circuit breaker | [`ToolOverrides::breaker`] | – | [`breaker`](Self::breaker) |
///
/// The operator's override wins over the tool author's annotation; no override can make a
/// tool that is not idempotent retry.
///
/// ```
/// use std::num::NonZeroUsize;
/// use std::time::Duration;
/// use rein_resilience::{Bulkhead, ResilienceConfig, ToolOverrides};
///
/// let config = ResilienceConfig {
///     default_timeout: Duration::from_secs(10),
///     ..ResilienceConfig::default()
/// }
/// .with_override(
///     "web.fetch".parse()?,
///     ToolOverrides {
///         bulkhead: Some(Bulkhead::FailFast { max_concurrent: NonZeroUsize::new(4).unwrap() }),
///         ..ToolOverrides::default()
///     },
/// );
/// assert_eq!(config.overrides.len(), 1);
/// # Ok::<(), rein_tool::ToolNameError>(())
/// ```
///
/// [`Annotations::timeout`]: rein_tool::Annotations::timeout
/// [`Annotations::is_idempotent`]: rein_tool::Annotations::is_idempotent
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResilienceConfig {
    /// How long one attempt of a tool may take when neither an override nor the tool's
    /// annotations say otherwise. Default: 30 s.
    pub default_timeout: Duration,
    /// How many calls of one tool may run at once. Default: [`Bulkhead::Unlimited`].
    pub bulkhead: Bulkhead,
    /// How idempotent tools are retried. Default: [`RetryConfig::default`].
    pub retry: RetryConfig,
    /// When a tool's circuit breaker opens and for how long. Default:
    /// [`BreakerConfig::default`].
    pub breaker: BreakerConfig,
    /// Per-tool settings that replace the defaults above for the named tools.
    pub overrides: BTreeMap<ToolName, ToolOverrides>,
}

/// How many calls of one tool may run at once, and what happens to the call that finds the
/// bulkhead full. The permit is held for the whole call, retries and backoff included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bulkhead {
    /// No limit.
    Unlimited,
    /// At most `max_concurrent` calls run; further calls wait for a free slot.
    Queue {
        /// The most calls of the tool that run at once.
        max_concurrent: NonZeroUsize,
    },
    /// At most `max_concurrent` calls run; a further call fails at once with
    /// [`ToolError::Overloaded`](rein_tool::ToolError::Overloaded).
    FailFast {
        /// The most calls of the tool that run at once.
        max_concurrent: NonZeroUsize,
    },
}

/// How an idempotent tool is retried after a [transient] error.
///
/// The delay before retry `n` (after attempt `n` failed) is `min_backoff × 2ⁿ⁻¹`, capped at
/// `max_backoff`, then spread by [`jitter`](Self::jitter). Nothing else is ever retried:
/// not a tool that is not idempotent, not a permanent error, not an open circuit, not an
/// attempt the caller vetoed.
///
/// [transient]: rein_tool::ToolError::is_transient
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryConfig {
    /// The most attempts of one call, the first included (`1` means no retry). Default: 3.
    pub max_attempts: NonZeroU32,
    /// The delay before the first retry, before jitter. Default: 100 ms.
    pub min_backoff: Duration,
    /// The longest delay between two attempts; a `max_backoff` below `min_backoff` acts as
    /// `min_backoff`. Default: 5 s.
    pub max_backoff: Duration,
    /// How delays are randomised so that callers failing together do not retry together.
    /// Default: [`Jitter::Equal`].
    pub jitter: Jitter,
}

/// How a retry delay `d` is randomised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// Exactly `d`: deterministic, for tests and for single callers.
    None,
    /// Uniform in `[d/2, d]`: spread out, but never much sooner than planned.
    Equal,
    /// Uniform in `[0, d]`: the widest spread.
    Full,
}

/// When a tool's circuit breaker opens and how long it stays open.
///
/// Counted as failures: [transient] errors (including timeouts), panics and attempts dropped
/// while running. Any other outcome — success, invalid input, a permanent failure — shows
/// the tool is alive and resets the count.
///
/// [transient]: rein_tool::ToolError::is_transient
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    /// How many failed attempts in a row open the breaker. Default: 5.
    pub consecutive_failures: NonZeroU32,
    /// How long an open breaker rejects calls before it lets trial calls through
    /// (half-open); a failed trial opens it again for as long. Measured on tokio's clock.
    /// Default: 30 s.
    pub open_for: Duration,
}

/// Settings for one tool that replace the engine's defaults; `None` keeps the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolOverrides {
    /// The timeout of one attempt; wins over the tool's own [`Annotations::timeout`].
    ///
    /// [`Annotations::timeout`]: rein_tool::Annotations::timeout
    pub timeout: Option<Duration>,
    /// The tool's bulkhead.
    pub bulkhead: Option<Bulkhead>,
    /// The tool's retry settings (applied only if the tool is idempotent).
    pub retry: Option<RetryConfig>,
    /// The tool's circuit breaker settings.
    pub breaker: Option<BreakerConfig>,
}

/// The resolved policy one tool's stack runs under (see [`ResilienceConfig::policy_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolPolicy {
    /// The timeout of one attempt.
    pub timeout: Duration,
    /// The tool's bulkhead.
    pub bulkhead: Bulkhead,
    /// How the tool is retried; `None` when it is not idempotent or may make one attempt only.
    pub retry: Option<RetryConfig>,
    /// The tool's circuit breaker.
    pub breaker: BreakerConfig,
}

impl ResilienceConfig {
    /// Returns the config with `overrides` set for `tool` (replacing earlier ones).
    #[must_use]
    pub fn with_override(mut self, tool: ToolName, overrides: ToolOverrides) -> Self {
        self.overrides.insert(tool, overrides);
        self
    }

    /// The policy the tool described by `spec` runs under.
    ///
    /// ```
    /// use std::time::Duration;
    /// use rein_resilience::ResilienceConfig;
    /// use rein_tool::{Annotations, ToolSpec};
    ///
    /// let config = ResilienceConfig::default();
    /// let search = ToolSpec::new("search".parse()?, "")
    ///     .with_annotations(Annotations::read_only().with_timeout(Duration::from_secs(2)));
    /// let deploy = ToolSpec::new("deploy".parse()?, "")
    ///     .with_annotations(Annotations::side_effecting());
    ///
    /// assert_eq!(config.policy_for(&search).timeout, Duration::from_secs(2));
    /// assert!(config.policy_for(&search).retry.is_some()); // read-only tools are idempotent
    /// assert_eq!(config.policy_for(&deploy).timeout, config.default_timeout);
    /// assert!(config.policy_for(&deploy).retry.is_none());
    /// # Ok::<(), rein_tool::ToolNameError>(())
    /// ```
    #[must_use]
    pub fn policy_for(&self, spec: &ToolSpec) -> ToolPolicy {
        let overrides = self.overrides.get(spec.name()).copied().unwrap_or_default();
        let annotations = spec.annotations();
        let retry = overrides.retry.unwrap_or(self.retry);
        ToolPolicy {
            timeout: overrides
                .timeout
                .or(annotations.timeout())
                .unwrap_or(self.default_timeout),
            bulkhead: overrides.bulkhead.unwrap_or(self.bulkhead),
            retry: (annotations.is_idempotent() && retry.max_attempts.get() > 1).then_some(retry),
            breaker: overrides.breaker.unwrap_or(self.breaker),
        }
    }
}

impl Default for ResilienceConfig {
    /// 30 s per attempt, no bulkhead, [`RetryConfig::default`], [`BreakerConfig::default`],
    /// no overrides.
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(30),
            bulkhead: Bulkhead::Unlimited,
            retry: RetryConfig::default(),
            breaker: BreakerConfig::default(),
            overrides: BTreeMap::new(),
        }
    }
}

impl RetryConfig {
    /// One attempt, no retry.
    #[must_use]
    pub const fn disabled() -> Self {
        Self {
            max_attempts: NonZeroU32::MIN,
            min_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
            jitter: Jitter::None,
        }
    }

    /// The delay before retry `retry` (1 for the first retry), before jitter.
    pub(crate) fn base_delay(&self, retry: u32) -> Duration {
        let cap = self.max_backoff.max(self.min_backoff);
        2_u32
            .checked_pow(retry.saturating_sub(1))
            .and_then(|factor| self.min_backoff.checked_mul(factor))
            .map_or(cap, |delay| delay.min(cap))
    }
}

impl Default for RetryConfig {
    /// 3 attempts, 100 ms doubling up to 5 s, [`Jitter::Equal`].
    fn default() -> Self {
        Self {
            max_attempts: const { NonZeroU32::new(3).unwrap() },
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            jitter: Jitter::Equal,
        }
    }
}

impl Default for BreakerConfig {
    /// Opens after 5 failed attempts in a row, for 30 s.
    fn default() -> Self {
        Self {
            consecutive_failures: const { NonZeroU32::new(5).unwrap() },
            open_for: Duration::from_secs(30),
        }
    }
}

#[cfg(test)]
mod tests {
    use rein_tool::Annotations;

    use super::*;

    fn spec(name: &str, annotations: Annotations) -> ToolSpec {
        ToolSpec::new(ToolName::new(name).unwrap(), "").with_annotations(annotations)
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let retry = RetryConfig {
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            ..RetryConfig::default()
        };
        let delays: Vec<_> = (1..=5).map(|n| retry.base_delay(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 350, 350, 350]);
        assert_eq!(retry.base_delay(u32::MAX), Duration::from_millis(350));
    }

    #[test]
    fn a_cap_below_the_minimum_acts_as_the_minimum() {
        let retry = RetryConfig {
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::ZERO,
            ..RetryConfig::default()
        };
        assert_eq!(retry.base_delay(3), Duration::from_millis(100));
    }

    #[test]
    fn overrides_beat_annotations_beat_defaults() {
        let name = ToolName::new("slow").unwrap();
        let annotated = Annotations::read_only().with_timeout(Duration::from_secs(2));
        let config = ResilienceConfig::default();
        assert_eq!(
            config.policy_for(&spec("slow", annotated)).timeout,
            Duration::from_secs(2)
        );

        let config = config.with_override(
            name,
            ToolOverrides {
                timeout: Some(Duration::from_secs(7)),
                ..ToolOverrides::default()
            },
        );
        assert_eq!(
            config.policy_for(&spec("slow", annotated)).timeout,
            Duration::from_secs(7)
        );
        assert_eq!(
            config
                .policy_for(&spec("other", Annotations::read_only()))
                .timeout,
            config.default_timeout
        );
    }

    #[test]
    fn no_override_makes_a_side_effecting_tool_retry() {
        let config = ResilienceConfig::default().with_override(
            ToolName::new("send").unwrap(),
            ToolOverrides {
                retry: Some(RetryConfig::default()),
                ..ToolOverrides::default()
            },
        );
        assert_eq!(
            config
                .policy_for(&spec("send", Annotations::side_effecting()))
                .retry,
            None
        );
        let idempotent = Annotations::side_effecting().with_idempotent(true);
        assert!(config.policy_for(&spec("send", idempotent)).retry.is_some());
    }

    #[test]
    fn one_attempt_means_no_retry_layer() {
        let config = ResilienceConfig {
            retry: RetryConfig::disabled(),
            ..ResilienceConfig::default()
        };
        assert_eq!(
            config
                .policy_for(&spec("read", Annotations::read_only()))
                .retry,
            None
        );
    }
}
