//! Bulkhead: a cap on concurrent calls per tool; queueing by default, fail-fast on request.

use std::num::NonZeroUsize;
use std::time::Duration;

use futures_util::future::join_all;
use rein_resilience::{Bulkhead, ResilienceConfig, ToolOverrides};
use rein_tool::{Annotations, ToolError};

use crate::support::{Script, call, config, fake, name};

fn limited(bulkhead: Bulkhead) -> ResilienceConfig {
    ResilienceConfig {
        bulkhead,
        ..config()
    }
}

fn two() -> NonZeroUsize {
    NonZeroUsize::new(2).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_queueing_bulkhead_caps_concurrency_and_runs_every_call() {
    let (tool, probe) = fake(
        "slow",
        Annotations::side_effecting(),
        Script::Sleep(Duration::from_secs(1)),
    );
    let stack = crate::support::stack(
        tool,
        limited(Bulkhead::Queue {
            max_concurrent: two(),
        }),
    );
    let results = join_all((0..6).map(|_| call(&stack))).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(probe.calls(), 6);
    assert_eq!(probe.max_in_flight(), 2);
}

#[tokio::test(start_paused = true)]
async fn without_a_bulkhead_calls_run_side_by_side() {
    let (tool, probe) = fake(
        "slow",
        Annotations::side_effecting(),
        Script::Sleep(Duration::from_secs(1)),
    );
    let stack = crate::support::stack(tool, limited(Bulkhead::Unlimited));
    join_all((0..6).map(|_| call(&stack))).await;
    assert_eq!(probe.max_in_flight(), 6);
}

#[tokio::test(start_paused = true)]
async fn a_fail_fast_bulkhead_rejects_with_overloaded_and_frees_its_slots() {
    let (tool, probe) = fake(
        "slow",
        Annotations::side_effecting(),
        Script::Sleep(Duration::from_secs(1)),
    );
    let stack = crate::support::stack(
        tool,
        limited(Bulkhead::FailFast {
            max_concurrent: two(),
        }),
    );
    let results = join_all((0..4).map(|_| call(&stack))).await;
    let overloaded = Err(ToolError::Overloaded { tool: name("slow") });
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 2);
    assert_eq!(results.iter().filter(|r| **r == overloaded).count(), 2);
    assert_eq!(probe.calls(), 2, "a rejected call never reaches the tool");

    // The slots are free again once the calls are done.
    assert!(
        join_all((0..2).map(|_| call(&stack)))
            .await
            .iter()
            .all(Result::is_ok)
    );
}

#[tokio::test(start_paused = true)]
async fn a_per_tool_bulkhead_overrides_the_default() {
    let config = limited(Bulkhead::Unlimited).with_override(
        name("slow"),
        ToolOverrides {
            bulkhead: Some(Bulkhead::Queue {
                max_concurrent: NonZeroUsize::MIN,
            }),
            ..ToolOverrides::default()
        },
    );
    let (tool, probe) = fake(
        "slow",
        Annotations::side_effecting(),
        Script::Sleep(Duration::from_secs(1)),
    );
    let stack = crate::support::stack(tool, config);
    join_all((0..3).map(|_| call(&stack))).await;
    assert_eq!(probe.max_in_flight(), 1);
}
