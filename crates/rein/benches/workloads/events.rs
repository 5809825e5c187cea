//! W1E: what following a run live costs it. W1 run through `Engine::run` (no event
//! channel at all); W1 started through `Engine::start` with nobody subscribed (its handle
//! keeps the run's ring, so that a later subscriber is told what it missed: what starting
//! a run on its own task costs); started with a subscriber that never reads (every entry's
//! line and each step's start go into its ring, which drops the oldest once full: what the
//! subscriber costs is this against the one before); and with a subscriber that reads every
//! event.

use std::hint::black_box;
use std::time::Instant;

use rein::RunEvent;
use rein::prelude::*;

use crate::common::{DECISIONS, GOAL, current_thread, engine, repeat_each, run_w1};

/// W1 started, followed by a subscriber that never reads.
pub(crate) async fn followed_unread(engine: &Engine) -> Run {
    let handle = engine.start(GOAL).await.expect("started");
    let events = handle.subscribe();
    let run = handle.await.expect("the run is driven");
    drop(events);
    run
}

/// W1 started, nobody subscribing to its events.
pub(crate) async fn started_unwatched(engine: &Engine) -> Run {
    engine
        .start(GOAL)
        .await
        .expect("started")
        .await
        .expect("the run is driven")
}

pub(crate) fn w1e() {
    let rt = current_thread();
    let batch = 400;
    let engine = engine(Engine::builder());
    let timed = |how: u8| {
        rt.block_on(async {
            for _ in 0..20 {
                run_w1(&engine).await;
            }
            let start = Instant::now();
            for _ in 0..batch {
                match how {
                    0 => {
                        black_box(run_w1(&engine).await);
                    }
                    1 => {
                        black_box(started_unwatched(&engine).await);
                    }
                    2 => {
                        black_box(followed_unread(&engine).await);
                    }
                    _ => {
                        let handle = engine.start(GOAL).await.expect("started");
                        let mut events = handle.subscribe();
                        let reader = tokio::spawn(async move {
                            let mut seen = 0u64;
                            while let Some(event) = events.next().await {
                                seen += u64::from(!matches!(event, RunEvent::Missed(_)));
                            }
                            seen
                        });
                        black_box(handle.await.expect("the run is driven"));
                        black_box(reader.await.expect("the reader ends"));
                    }
                }
            }
            (start.elapsed(), batch)
        })
    };
    let figures = repeat_each(&mut [
        &mut || timed(0),
        &mut || timed(1),
        &mut || timed(2),
        &mut || timed(3),
    ]);
    let [plain, started, unread, read] = [figures[0], figures[1], figures[2], figures[3]];
    let per_decision = |f: crate::common::Figure| f.scaled(1e-3 / DECISIONS as f64);
    println!("\nW1E W1 followed live: a subscriber that never reads, one that reads everything");
    println!(
        "    run, no channel      {} µs/decision",
        per_decision(plain).show(3)
    );
    println!(
        "    start, nobody        {} µs/decision",
        per_decision(started).show(3)
    );
    println!(
        "    start, never read    {} µs/decision",
        per_decision(unread).show(3)
    );
    println!(
        "    start, read all      {} µs/decision",
        per_decision(read).show(3)
    );
    println!(
        "    never read / nobody  {:.3}x  (what a subscriber that never reads costs the run)",
        unread.median / started.median
    );
    println!(
        "    nobody / run         {:.2}x  (what starting the run on its own task costs)",
        started.median / plain.median
    );
    println!(
        "    never read / run     {:.2}x",
        unread.median / plain.median
    );
    println!(
        "    read all / run       {:.2}x",
        read.median / plain.median
    );
}
