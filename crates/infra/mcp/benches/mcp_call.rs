//! The per-call overhead of governing an MCP tool: a governed call (an engine run calling
//! the imported tool: eligibility, schema check, budget, resilience stack, ledger) against a
//! direct rmcp client call to the same stdio server (`rein-mcp-test-server`, tool `echo`).
//!
//! Run with: `cargo bench -p rein-mcp --bench mcp_call`.
//!
//! Each figure is the median of `REPS` batches of `CALLS` calls (min–max over the batches),
//! the two alternating in the same process against one server process each.

#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    missing_docs,
    reason = "a benchmark reports figures to its terminal"
)]

use std::time::{Duration, Instant};

use rein_engine::Engine;
use rein_mcp::{McpServer, ServerConfig};
use rein_planner::{ScriptStep, ScriptedPlanner};
use rein_run::{Decision, RunStatus, State};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

const SERVER: &str = env!("CARGO_BIN_EXE_rein-mcp-test-server");
const CALLS: u32 = 2000;
const REPS: usize = 7;

fn stats(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort();
    let per_call = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(CALLS);
    (
        per_call(samples[samples.len() / 2]),
        per_call(samples[0]),
        per_call(samples[samples.len() - 1]),
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // Direct: the rmcp client, one `tools/call` after another.
        let direct = ()
            .serve(TokioChildProcess::new(tokio::process::Command::new(
                SERVER,
            ))?)
            .await?;
        let args = json!({"text": "hi"});
        let args = args.as_object().cloned().unwrap_or_default();

        // Governed: the same tool imported into an engine; one run makes CALLS calls in
        // explore (in-memory stores, ledger hashing on).
        let server = McpServer::connect(ServerConfig::stdio("srv".parse()?, [SERVER])).await?;
        let mut builder = Engine::builder();
        for tool in server.tools() {
            builder = builder.tool(tool);
        }
        let mut steps = vec![ScriptStep::expect(
            State::Intake,
            Decision::transition(State::Explore, "go"),
        )];
        for _ in 0..CALLS {
            steps.push(ScriptStep::expect(
                State::Explore,
                Decision::call_tool("srv.echo", json!({"text": "hi"}), "bench"),
            ));
        }
        steps.push(ScriptStep::expect(
            State::Explore,
            Decision::transition(State::Decide, "done"),
        ));
        steps.push(ScriptStep::expect(
            State::Decide,
            Decision::finish("done", json!(null)),
        ));
        let engine = builder
            .planner(ScriptedPlanner::new(steps))
            .budget("tool_calls", u64::from(CALLS) + 1)
            .max_steps(CALLS + 10)
            .build()?;

        let (mut direct_times, mut governed_times) = (Vec::new(), Vec::new());
        for _ in 0..REPS {
            let start = Instant::now();
            for _ in 0..CALLS {
                let params = CallToolRequestParams::new("echo").with_arguments(args.clone());
                direct.peer().call_tool(params).await?;
            }
            direct_times.push(start.elapsed());

            let start = Instant::now();
            let run = engine.run("bench").await?;
            governed_times.push(start.elapsed());
            assert_eq!(run.status(), RunStatus::Completed, "{:?}", run.failure());
        }
        let (d, dmin, dmax) = stats(direct_times);
        let (g, gmin, gmax) = stats(governed_times);
        println!("mcp_call: {CALLS} calls of `echo` on one stdio server, median of {REPS}");
        println!("  direct rmcp client   {d:8.1} µs/call  ({dmin:.1}–{dmax:.1})");
        println!("  governed (rein run)  {g:8.1} µs/call  ({gmin:.1}–{gmax:.1})");
        println!(
            "  ratio governed/direct {:.2}×, overhead {:.1} µs/call",
            g / d,
            g - d
        );
        server.shutdown().await;
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
