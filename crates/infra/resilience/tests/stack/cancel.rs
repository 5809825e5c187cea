//! Cancellation: dropping a call drops the tool's future; nothing keeps running.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;

use rein_tool::{Annotations, ToolError};

use crate::support::{Event, Recorder, Script, config, fake, observed_call, stack};

#[tokio::test(start_paused = true)]
async fn dropping_the_call_drops_the_tool_future_and_reports_cancelled() {
    let (tool, probe) = fake(
        "hang",
        Annotations::read_only(),
        Script::HangTimes { times: u32::MAX },
    );
    let stack = stack(tool, config());
    let recorder = Arc::new(Recorder::default());
    {
        let mut call = pin!(stack.call(observed_call(&recorder)));
        let polled = poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await;
        assert!(polled.is_pending());
        assert_eq!(
            probe.in_flight(),
            1,
            "the tool is running inside the call's future"
        );
    }
    assert_eq!(probe.in_flight(), 0);
    assert_eq!(probe.dropped_unfinished(), 1);
    match recorder.events().as_slice() {
        [
            Event::Started(1),
            Event::Finished {
                attempt: 1,
                outcome,
                ..
            },
        ] => {
            assert_eq!(outcome, &Err(ToolError::Cancelled));
        }
        events => panic!("unexpected events {events:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_call_that_was_never_polled_never_reaches_the_tool() {
    let (tool, probe) = fake("hang", Annotations::read_only(), Script::Succeed);
    let stack = stack(tool, config());
    drop(stack.call(crate::support::observed_call(
        &Arc::new(Recorder::default()),
    )));
    assert_eq!(probe.calls(), 0);
}
