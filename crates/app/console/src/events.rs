//! `GET /runs/{id}/events`: server-sent events from the tail of a run's ledger. The stream
//! reads the ledger through the store port, so it sees entries any process appends; it
//! holds nothing between reads, and a client that goes away ends it at the next tick.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use rein::RunId;

use crate::error::HttpError;
use crate::found::{parse_id, stored};

/// How often the ledger's tail is read.
const TICK: Duration = Duration::from_millis(500);

/// Where a stream is: the ledger's length last seen, and whether it has ended.
struct Tail {
    state: Arc<crate::State>,
    id: RunId,
    seen: Option<usize>,
    done: bool,
}

/// `GET /runs/{id}/events`: `hello` at once, `entries` whenever the ledger grows, and `end`
/// once the run is finished and nothing more comes; each carries the number of entries, so
/// a page rendered before the last of them knows to refresh.
pub(crate) async fn events(
    State(state): State<Arc<crate::State>>,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>> + use<>>, HttpError> {
    let id = parse_id(&id)?;
    stored(&state, &id).await?;
    let start = Tail {
        state,
        id,
        seen: None,
        done: false,
    };
    let stream = futures_util::stream::unfold(start, |mut tail| async move {
        if tail.done {
            return None;
        }
        loop {
            if tail.seen.is_some() {
                tokio::time::sleep(TICK).await;
            }
            let len = tail
                .state
                .stores
                .ledger(&tail.id)
                .await
                .map_or(0, |l| l.ledger.entries().len());
            let finished = tail
                .state
                .stores
                .snapshot(&tail.id)
                .await
                .is_ok_and(|r| r.is_finished());
            let first = tail.seen.is_none();
            let grew = tail.seen.is_some_and(|seen| len != seen);
            tail.seen = Some(len);
            if grew {
                let event = Event::default().event("entries").data(len.to_string());
                return Some((Ok(event), tail));
            }
            if finished && !first {
                tail.done = true;
                let event = Event::default().event("end").data(len.to_string());
                return Some((Ok(event), tail));
            }
            if first {
                let event = Event::default().event("hello").data(len.to_string());
                return Some((Ok(event), tail));
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
