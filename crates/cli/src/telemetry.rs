//! `--otlp` and the standard `OTEL_*` variables: OpenTelemetry export for one command.

use std::sync::{Arc, OnceLock};

use rein::otel::{OtelConfig, OtelError, SERVICE_NAME_VAR, Telemetry, TraceContext};

use crate::exit::{CliError, Exit};

/// Starts export when `--otlp` (`flag`) or `OTEL_EXPORTER_OTLP_ENDPOINT` asks for it and
/// installs it as the process's subscriber; `None` when neither does.
///
/// # Errors
/// Bad input (exit 2) for a malformed endpoint or an empty service name, naming where it
/// came from; exit 1 when the exporter cannot start.
pub(crate) fn start(flag: Option<&str>) -> Result<Option<Telemetry>, CliError> {
    let var = |name: &str| std::env::var(name).ok();
    let config = match flag {
        Some(url) => OtelConfig::new(url)
            .and_then(|config| match var(SERVICE_NAME_VAR) {
                Some(name) => config.with_service_name(&name),
                None => Ok(config),
            })
            .map(Some)
            .map_err(|e| bad(&e, "--otlp"))?,
        None => OtelConfig::from_env(var).map_err(|e| bad(&e, "the OTEL_* variables"))?,
    };
    let Some(config) = config else {
        return Ok(None);
    };
    let telemetry = Telemetry::start(&config)
        .map_err(|e| CliError::new(Exit::Failed, format!("telemetry: {e}")))?;
    telemetry
        .install()
        .map_err(|e| CliError::new(Exit::Failed, format!("telemetry: {e}")))?;
    // One export per process, like the subscriber it installed.
    let _ = CONTEXT.set(telemetry.trace_context());
    Ok(Some(telemetry))
}

/// The trace context of this process's export, once [`start`] turned it on.
static CONTEXT: OnceLock<Arc<dyn TraceContext>> = OnceLock::new();

/// The trace context to hand the engine, the model providers and the MCP servers: `None`
/// when telemetry is off.
pub(crate) fn context() -> Option<Arc<dyn TraceContext>> {
    CONTEXT.get().cloned()
}

/// Sends what is queued (within the configured bounded time) and says on stderr what
/// could not be sent.
pub(crate) fn finish(telemetry: Option<Telemetry>) {
    let Some(telemetry) = telemetry else {
        return;
    };
    let report = telemetry.shutdown();
    if !report.metrics_sent {
        eprintln!("warning: telemetry: the metrics could not be delivered to the collector");
    }
    if report.dropped_spans > 0 || report.failed_spans > 0 || !report.flushed {
        eprintln!(
            "warning: telemetry: {} span(s) not delivered to the collector ({} dropped from a \
             full queue, {} failed to send{})",
            report.dropped_spans + report.failed_spans,
            report.dropped_spans,
            report.failed_spans,
            if report.flushed {
                ""
            } else {
                "; the flush timed out"
            }
        );
    }
}

fn bad(error: &OtelError, source: &str) -> CliError {
    CliError::bad_input(format!("{source}: {error}"))
}
