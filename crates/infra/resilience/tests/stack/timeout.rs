//! Timeout: per attempt, from the tool's annotations or the stack's default.

use std::sync::Arc;
use std::time::Duration;

use rein_tool::{Annotations, ToolError};

use crate::support::{Recorder, Script, call, config, fake, observed_call, stack};

/// Calls a fake that sleeps `takes` under `annotations`; returns the result.
async fn check(annotations: Annotations, takes: Duration) -> Result<(), ToolError> {
    let (tool, _) = fake("slow", annotations, Script::Sleep(takes));
    call(&stack(tool, config())).await.map(drop)
}

#[tokio::test(start_paused = true)]
async fn a_slow_tool_times_out_after_its_annotated_timeout() {
    let annotations = Annotations::side_effecting().with_timeout(Duration::from_secs(2));
    assert_eq!(
        check(annotations, Duration::from_secs(3)).await,
        Err(ToolError::TimedOut {
            after: Duration::from_secs(2)
        })
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_without_a_timeout_gets_the_default() {
    // The test config's default is 10 s.
    assert_eq!(
        check(Annotations::side_effecting(), Duration::from_secs(60)).await,
        Err(ToolError::TimedOut {
            after: Duration::from_secs(10)
        })
    );
    assert_eq!(
        check(Annotations::side_effecting(), Duration::from_secs(9)).await,
        Ok(())
    );
}

#[tokio::test(start_paused = true)]
async fn a_hanging_tool_times_out() {
    let (tool, probe) = fake(
        "hang",
        Annotations::side_effecting(),
        Script::HangTimes { times: 1 },
    );
    let result = call(&stack(tool, config())).await;
    assert_eq!(
        result,
        Err(ToolError::TimedOut {
            after: Duration::from_secs(10)
        })
    );
    assert_eq!(
        probe.dropped_unfinished(),
        1,
        "the timed-out tool future was dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn the_timeout_is_per_attempt_and_a_timed_out_attempt_is_retried() {
    let annotations = Annotations::read_only().with_timeout(Duration::from_secs(1));
    let (tool, probe) = fake("hang", annotations, Script::HangTimes { times: 2 });
    let recorder = Arc::new(Recorder::default());
    let result = stack(tool, config()).call(observed_call(&recorder)).await;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(probe.calls(), 3);
    let timed_out = Err(ToolError::TimedOut {
        after: Duration::from_secs(1),
    });
    assert_eq!(
        recorder.finished(),
        [(1, timed_out.clone()), (2, timed_out), (3, Ok(()))]
    );
}
