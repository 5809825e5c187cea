//! Integration tests of rein-resilience, one module per area, driven by fake tools on
//! tokio's paused clock.

mod breaker;
mod bulkhead;
mod cancel;
mod observer;
mod panic;
mod retry;
mod retry_inputs;
mod send_sync;
mod support;
mod timeout;
mod user_layer;
