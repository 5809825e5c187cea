//! The run queue: concurrent claims never take one run twice, an expired lease is claimed
//! again with the next token (but never by the worker that drives the run), a run leaves
//! the queue only under its live lease, a `NOTIFY` wakes a listener, and a run's
//! configuration is kept as given.

mod support;

use std::collections::HashSet;
use std::time::Duration;

use rein_run::RunId;
use support::Fresh;

const TTL: Duration = Duration::from_secs(600);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_take_every_queued_run_exactly_once() {
    let db = Fresh::new().await;
    let front = db.stores().await;
    let mut queued = Vec::new();
    for i in 0..40 {
        let id: RunId = format!("queued-{i:02}").parse().unwrap();
        front.enqueue(&id).await.unwrap();
        front.enqueue(&id).await.unwrap(); // twice: still one entry
        queued.push(id);
    }
    assert_eq!(front.queued().await.unwrap(), queued, "oldest first");

    let mut claimers = Vec::new();
    for w in 0..6 {
        let stores = db.stores().await;
        claimers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some(lease) = stores.claim(&format!("w{w}"), TTL, &[]).await.unwrap() {
                assert_eq!(lease.token(), 1);
                mine.push(lease.run_id().clone());
            }
            mine
        }));
    }
    let mut claimed = Vec::new();
    for claimer in claimers {
        claimed.extend(claimer.await.unwrap());
    }
    let distinct: HashSet<_> = claimed.iter().cloned().collect();
    assert_eq!(claimed.len(), 40, "every run claimed once: {claimed:?}");
    assert_eq!(distinct.len(), 40);
    // Leased, still queued until their holders dequeue them.
    assert_eq!(front.queued().await.unwrap().len(), 40);
    assert!(front.claim("late", TTL, &[]).await.unwrap().is_none());
    db.drop_db().await;
}

#[tokio::test]
async fn an_expired_lease_is_claimed_again_but_never_by_the_run_s_own_driver() {
    let db = Fresh::new().await;
    let (a, b) = (db.stores().await, db.stores().await);
    let sql = db.sql().await;
    let id: RunId = "stalled".parse().unwrap();
    a.enqueue(&id).await.unwrap();
    let first = a.claim("worker-a", TTL, &[]).await.unwrap().unwrap();
    sql.execute(
        "UPDATE rein_leases SET expires_at = now() - interval '1 second' WHERE run_id = $1",
        &[&id.as_str()],
    )
    .await
    .unwrap();
    // Worker A still drives it: it does not claim it a second time.
    assert!(
        a.claim("worker-a", TTL, std::slice::from_ref(&id))
            .await
            .unwrap()
            .is_none()
    );
    let second = b.claim("worker-b", TTL, &[]).await.unwrap().unwrap();
    assert_eq!((second.run_id(), second.token()), (&id, 2));
    // A's stale lease cannot take the run off the queue; B's can.
    assert!(!a.dequeue(&first).await.unwrap());
    assert!(b.dequeue(&second).await.unwrap());
    assert!(b.queued().await.unwrap().is_empty());
    db.drop_db().await;
}

#[tokio::test]
async fn a_queued_run_wakes_a_listener_and_its_configuration_is_kept() {
    let db = Fresh::new().await;
    let (worker, front) = (db.stores().await, db.stores().await);
    let wakeups = worker.listen_queue().await.unwrap();
    let id: RunId = "wake".parse().unwrap();
    front.enqueue(&id).await.unwrap();
    wakeups.next().await;

    assert_eq!(front.run_config(&id).await.unwrap(), None);
    front
        .save_run_config(&id, r#"{"goal": "g"}"#, Some("/srv/scenario.json"))
        .await
        .unwrap();
    let config = worker.run_config(&id).await.unwrap().unwrap();
    assert_eq!(config.config, r#"{"goal": "g"}"#);
    assert_eq!(config.source.as_deref(), Some("/srv/scenario.json"));
    db.drop_db().await;
}
