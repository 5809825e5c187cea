//! `OtelConfig`: where telemetry goes, under what name, and its bounds.

use std::fmt;
use std::time::Duration;

use crate::error::{EndpointProblem, OtelError};

/// The standard variable naming the collector's base URL.
pub const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The standard variable naming the service.
pub const SERVICE_NAME_VAR: &str = "OTEL_SERVICE_NAME";
/// The service name when none is given.
pub const DEFAULT_SERVICE_NAME: &str = "rein";

/// Whether prompts, model replies, tool inputs and outputs and the reasons of governed
/// decisions are exported. Secrets (API keys, header values, passwords) never are: rein
/// records none of them in the first place.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Content {
    /// Content is left out (the default).
    #[default]
    Omitted,
    /// Content goes out as span events.
    Captured,
}

/// A collector's OTLP/HTTP base URL, checked: `http` or `https`, a host, no credentials,
/// no query. The signal paths (`/v1/traces`, `/v1/metrics`) are appended to it.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint(String);

impl Endpoint {
    /// Checks `url`.
    ///
    /// # Errors
    /// [`OtelError::InvalidEndpoint`] naming what is wrong;
    /// [`OtelError::EndpointCredentials`] for a URL with a user part.
    ///
    /// ```
    /// use rein_otel::Endpoint;
    /// assert_eq!(Endpoint::new("http://127.0.0.1:4318/")?.traces(), "http://127.0.0.1:4318/v1/traces");
    /// assert!(Endpoint::new("127.0.0.1:4318").is_err());
    /// # Ok::<(), rein_otel::OtelError>(())
    /// ```
    pub fn new(url: &str) -> Result<Self, OtelError> {
        let url = url.trim();
        let invalid = |problem| OtelError::InvalidEndpoint {
            endpoint: url.to_owned(),
            problem,
        };
        // Checked before parsing so that no error ever quotes a password.
        let authority = url
            .split_once("://")
            .map_or(url, |(_, rest)| rest)
            .split(['/', '?', '#'])
            .next()
            .unwrap_or_default();
        if authority.contains('@') {
            return Err(OtelError::EndpointCredentials);
        }
        let uri: http::Uri = url.parse().map_err(|_| invalid(EndpointProblem::NotUrl))?;
        match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https") => {}
            _ => return Err(invalid(EndpointProblem::Scheme)),
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err(invalid(EndpointProblem::NoHost));
        }
        if uri.query().is_some() || url.contains('#') {
            return Err(invalid(EndpointProblem::Query));
        }
        Ok(Self(url.trim_end_matches('/').to_owned()))
    }

    /// The URL spans are posted to.
    #[must_use]
    pub fn traces(&self) -> String {
        format!("{}/v1/traces", self.0)
    }

    /// The URL metrics are posted to.
    #[must_use]
    pub fn metrics(&self) -> String {
        format!("{}/v1/metrics", self.0)
    }

    /// The base URL.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Endpoint").field(&self.0).finish()
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where rein's spans and metrics are exported, and the bounds that keep a slow or absent
/// collector from slowing a run.
///
/// ```
/// use std::time::Duration;
/// use rein_otel::{Content, OtelConfig};
/// let config = OtelConfig::new("http://127.0.0.1:4318")?
///     .with_service_name("billing-agent")?
///     .with_content(Content::Omitted)
///     .with_flush_timeout(Duration::from_secs(2));
/// assert_eq!(config.service_name(), "billing-agent");
/// # Ok::<(), rein_otel::OtelError>(())
/// ```
#[derive(Debug, Clone)]
pub struct OtelConfig {
    endpoint: Endpoint,
    service_name: String,
    content: Content,
    queue_capacity: usize,
    max_batch: usize,
    batch_delay: Duration,
    export_timeout: Duration,
    flush_timeout: Duration,
    metrics_interval: Duration,
}

impl OtelConfig {
    /// Export to the collector at `endpoint` (its OTLP/HTTP base URL).
    ///
    /// # Errors
    /// See [`Endpoint::new`].
    pub fn new(endpoint: &str) -> Result<Self, OtelError> {
        Ok(Self {
            endpoint: Endpoint::new(endpoint)?,
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            content: Content::Omitted,
            queue_capacity: 2048,
            max_batch: 512,
            batch_delay: Duration::from_secs(1),
            export_timeout: Duration::from_secs(10),
            flush_timeout: Duration::from_secs(5),
            metrics_interval: Duration::from_secs(30),
        })
    }

    /// The configuration the standard variables ask for, read through `var` (the CLI
    /// passes `std::env::var`): `OTEL_EXPORTER_OTLP_ENDPOINT` and `OTEL_SERVICE_NAME`.
    /// `None` when no endpoint is set (or it is empty): export is off.
    ///
    /// # Errors
    /// A malformed endpoint or an empty service name.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, OtelError> {
        let Some(endpoint) = var(ENDPOINT_VAR).filter(|e| !e.trim().is_empty()) else {
            return Ok(None);
        };
        let config = Self::new(&endpoint)?;
        match var(SERVICE_NAME_VAR) {
            Some(name) => config.with_service_name(&name).map(Some),
            None => Ok(Some(config)),
        }
    }

    /// The service name spans are exported under (`rein` unless given).
    ///
    /// # Errors
    /// [`OtelError::EmptyServiceName`].
    pub fn with_service_name(mut self, name: &str) -> Result<Self, OtelError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(OtelError::EmptyServiceName);
        }
        name.clone_into(&mut self.service_name);
        Ok(self)
    }

    /// Whether content is exported ([`Content::Omitted`] unless given).
    #[must_use]
    pub fn with_content(mut self, content: Content) -> Self {
        self.content = content;
        self
    }

    /// At most this many finished spans wait for export; past it spans are dropped and
    /// counted, never waited for (2048 unless given).
    ///
    /// # Errors
    /// [`OtelError::ZeroSetting`] for 0.
    pub fn with_queue_capacity(mut self, spans: usize) -> Result<Self, OtelError> {
        self.queue_capacity = nonzero(spans, "queue_capacity")?;
        self.max_batch = self.max_batch.min(spans);
        Ok(self)
    }

    /// How long one export may take before it is given up (10 s unless given).
    #[must_use]
    pub fn with_export_timeout(mut self, timeout: Duration) -> Self {
        self.export_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long shutdown waits for what is queued to be sent (5 s unless given).
    #[must_use]
    pub fn with_flush_timeout(mut self, timeout: Duration) -> Self {
        self.flush_timeout = timeout;
        self
    }

    /// How often metrics are sent (30 s unless given; shutdown sends them too).
    #[must_use]
    pub fn with_metrics_interval(mut self, interval: Duration) -> Self {
        self.metrics_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// The collector's endpoint.
    #[must_use]
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The service name.
    #[must_use]
    pub fn service_name(&self) -> &str {
        &self.service_name
    }

    /// Whether content is exported.
    #[must_use]
    pub fn content(&self) -> Content {
        self.content
    }

    pub(crate) fn queue_capacity(&self) -> usize {
        self.queue_capacity
    }

    pub(crate) fn max_batch(&self) -> usize {
        self.max_batch
    }

    pub(crate) fn batch_delay(&self) -> Duration {
        self.batch_delay
    }

    pub(crate) fn export_timeout(&self) -> Duration {
        self.export_timeout
    }

    pub(crate) fn flush_timeout(&self) -> Duration {
        self.flush_timeout
    }

    pub(crate) fn metrics_interval(&self) -> Duration {
        self.metrics_interval
    }
}

fn nonzero(value: usize, setting: &'static str) -> Result<usize, OtelError> {
    if value == 0 {
        Err(OtelError::ZeroSetting { setting })
    } else {
        Ok(value)
    }
}
