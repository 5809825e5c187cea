//! W1 with telemetry: the same runs with rein's OpenTelemetry export on (the layer
//! installed, the engine handed the trace context, spans exported over OTLP/HTTP to a
//! receiver on loopback in this process) against the export off, alternating in one
//! process. With the `otel` feature off the comparison is not built, and says so.

#[cfg(feature = "otel")]
pub(crate) fn w1otel() {
    use std::hint::black_box;
    use std::sync::Arc;
    use std::time::Instant;

    use rein::Engine;
    use rein::otel::tracing_subscriber::layer::SubscriberExt as _;
    use rein::otel::tracing_subscriber::util::SubscriberInitExt as _;
    use rein::otel::{OtelConfig, SpanContexts, Telemetry};

    use crate::common::{DECISIONS, current_thread, engine, repeat_pair, run_w1};

    let rt = current_thread();
    let receiver = rein_otel::receiver::Receiver::start().expect("a loopback receiver");
    let telemetry = Telemetry::start(&OtelConfig::new(&receiver.url()).expect("its URL"))
        .expect("export starts");
    let batch = 400;
    let (off, on) = repeat_pair(
        || {
            let engine = engine(Engine::builder());
            rt.block_on(async {
                for _ in 0..20 {
                    run_w1(&engine).await;
                }
                let start = Instant::now();
                for _ in 0..batch {
                    black_box(run_w1(&engine).await);
                }
                (start.elapsed(), batch)
            })
        },
        || {
            let engine = engine(Engine::builder().trace_context(Arc::new(SpanContexts)));
            // This thread's subscriber for this repetition only: the runtime has one thread.
            let _export = rein::otel::tracing_subscriber::registry()
                .with(telemetry.layer())
                .set_default();
            rt.block_on(async {
                for _ in 0..20 {
                    run_w1(&engine).await;
                }
                let start = Instant::now();
                for _ in 0..batch {
                    black_box(run_w1(&engine).await);
                }
                (start.elapsed(), batch)
            })
        },
    );
    let dropped = telemetry.dropped_spans();
    let report = telemetry.shutdown();
    let spans = receiver.spans().len();
    let per_decision = |f: crate::common::Figure| f.scaled(1e-3 / DECISIONS as f64);
    println!("\nW1 with telemetry: the export off, then on (to an OTLP/HTTP receiver on loopback)");
    println!(
        "    off           {} µs/decision",
        per_decision(off).show(3)
    );
    println!("    on            {} µs/decision", per_decision(on).show(3));
    println!("    on / off      {:.2}x", on.median / off.median);
    println!(
        "    exported      {spans} spans received, {} dropped from the full queue, {} failed",
        dropped, report.failed_spans
    );
}

#[cfg(not(feature = "otel"))]
pub(crate) fn w1otel() {
    eprintln!(
        "w1otel needs the otel feature: cargo bench -p rein --features otel --bench workloads -- w1otel"
    );
}
