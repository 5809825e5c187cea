//! `OtelError`: what can go wrong when telemetry export starts.

/// Why telemetry export could not start. Messages never quote a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The collector's endpoint is not a usable `http://` or `https://` URL.
    #[error(
        "invalid OTLP endpoint `{endpoint}`: {problem}; give the collector's base URL, \
         like http://127.0.0.1:4318"
    )]
    InvalidEndpoint {
        /// The endpoint as given (credentials in it are never shown: such an endpoint is
        /// [`OtelError::EndpointCredentials`]).
        endpoint: String,
        /// What is wrong with it.
        problem: EndpointProblem,
    },
    /// The endpoint carries a user name or password, which would end up in logs.
    #[error(
        "the OTLP endpoint carries credentials in its URL: remove the user part and send \
         them as headers of the collector instead"
    )]
    EndpointCredentials,
    /// The service name is empty.
    #[error("the service name is empty: give a name, or leave OTEL_SERVICE_NAME unset")]
    EmptyServiceName,
    /// A queue, batch or timeout setting is zero.
    #[error("the telemetry setting `{setting}` must be more than zero")]
    ZeroSetting {
        /// The setting's name.
        setting: &'static str,
    },
    /// The OTLP exporter could not be built.
    #[error("cannot build the OTLP {signal} exporter: {message}")]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// What failed.
        message: String,
    },
    /// The process already has a global `tracing` subscriber.
    #[error("a global tracing subscriber is already installed: add Telemetry::layer to it instead")]
    SubscriberSet,
    /// The export thread could not be started.
    #[error("cannot start the telemetry export thread: {0}")]
    Thread(String),
}

/// What is wrong with an OTLP endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointProblem {
    /// It does not parse as a URL.
    #[error("it is not a URL")]
    NotUrl,
    /// Its scheme is neither `http` nor `https`.
    #[error("its scheme must be http or https")]
    Scheme,
    /// It names no host.
    #[error("it names no host")]
    NoHost,
    /// It has a query or a fragment.
    #[error("it must have no query or fragment")]
    Query,
}
