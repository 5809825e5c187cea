//! Run with: cargo run -p rein-examples --example `custom_planner`
//!
//! A custom [`rein::Planner`] that computes each decision from the run's evidence: it looks up
//! the weather of every city in the run's variables, one call per step, then decides where to
//! go and finishes. The planner only proposes; the engine checks every decision.

#![allow(clippy::print_stdout)]

use rein::prelude::*;
use rein::run::{EvidenceKind, Payload};
use rein::{PlanRequest, PlannerError, RunSpec};

/// Looks up each city once, then picks the warmest.
#[derive(Debug)]
struct WarmestCity;

impl WarmestCity {
    /// The temperatures gathered so far, by city.
    fn readings(request: &PlanRequest<'_>) -> Vec<(String, f64)> {
        request
            .evidence()
            .iter()
            .filter_map(|e| match &e.kind {
                EvidenceKind::ToolResult {
                    output: Payload::Inline(out),
                    ..
                } => Some((out["city"].as_str()?.to_owned(), out["celsius"].as_f64()?)),
                _ => None,
            })
            .collect()
    }
}

impl Planner for WarmestCity {
    async fn plan(&self, request: PlanRequest<'_>) -> Result<Decision, PlannerError> {
        let cities: Vec<&str> = request.vars()["cities"]
            .as_array()
            .ok_or_else(|| PlannerError::failed("the run needs a `cities` array variable"))?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let readings = Self::readings(&request);
        Ok(match request.state() {
            State::Intake => Decision::transition(State::Explore, "gather the weather"),
            State::Explore => match cities
                .iter()
                .find(|c| !readings.iter().any(|(r, _)| r == *c))
            {
                Some(city) => {
                    Decision::call_tool("weather", json!({"city": city}), format!("need {city}"))
                }
                None => Decision::transition(State::Decide, "every city looked up"),
            },
            State::Decide => {
                let warmest = readings
                    .iter()
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .ok_or_else(|| PlannerError::failed("no readings"))?;
                Decision::finish(
                    format!("go to {}", warmest.0),
                    json!({"city": warmest.0, "celsius": warmest.1}),
                )
            }
            other => Decision::fail(format!("this planner does not work in {other}")),
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let weather = FnTool::builder("weather")
        .description("Current temperature of a city")
        .annotations(Annotations::read_only().with_cacheable(true))
        .input_schema(json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}))
        .handler(|input: Value| async move {
            let city = input["city"].as_str().unwrap_or_default().to_owned();
            // A stand-in for a real weather service.
            let celsius = city.bytes().map(f64::from).sum::<f64>() % 30.0;
            Ok(json!({"city": city, "celsius": celsius}))
        })
        .build()?;
    let engine = Engine::builder()
        .tool(weather)
        .planner(WarmestCity)
        .budget("tool_calls", 10)
        .build()?;

    let spec = RunSpec::new("Pick the warmest city")
        .with_var("cities", json!(["Oslo", "Lisbon", "Tunis"]));
    let run = engine.run(spec).await?;
    println!(
        "run {} is {} after {} steps",
        run.id(),
        run.status(),
        run.steps()
    );
    for evidence in run.evidence() {
        if let EvidenceKind::ToolResult {
            output: Payload::Inline(out),
            ..
        } = &evidence.kind
        {
            println!("  {} is {} °C", out["city"], out["celsius"]);
        }
    }
    println!(
        "decision: {} {}",
        run.summary().unwrap_or("-"),
        run.result().unwrap_or(&Value::Null)
    );
    engine.ledger(&run.id).await?.verify()?;
    println!("ledger verified");
    Ok(())
}
