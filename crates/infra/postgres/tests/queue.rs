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

/// A claim whose candidate is leased by another process after the claim's snapshot was
/// taken (the claim finds it free, then waits on that lease's insert, which commits live)
/// takes the next queued run: a busy queue is not reported empty, which would leave the
/// worker idle until its next poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_loses_its_candidate_to_a_concurrent_lease_takes_the_next_run() {
    let db = Fresh::new().await;
    let front = db.stores().await;
    let (mut other, watch) = (db.sql().await, db.sql().await);
    let (first, second): (RunId, RunId) = ("first".parse().unwrap(), "second".parse().unwrap());
    front.enqueue(&first).await.unwrap();
    front.enqueue(&second).await.unwrap();

    // Another process takes the oldest run's lease, not yet committed.
    let tx = other.transaction().await.unwrap();
    tx.execute(
        "INSERT INTO rein_leases (run_id, owner, fencing_token, expires_at)
         VALUES ($1, 'other', 1, now() + interval '10 minutes')",
        &[&first.as_str()],
    )
    .await
    .unwrap();
    let claim = {
        let stores = db.stores().await;
        tokio::spawn(async move { stores.claim("worker", TTL, &[]).await })
    };
    // The claim found `first` free in its snapshot and waits on the uncommitted lease.
    loop {
        assert!(
            !claim.is_finished(),
            "the claim did not wait for the uncommitted lease"
        );
        let waiting: i64 = watch
            .query_one(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid
                 WHERE NOT l.granted AND s.datname = current_database()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if waiting >= 1 {
            break;
        }
        tokio::task::yield_now().await;
    }
    tx.commit().await.unwrap();

    let lease = claim.await.unwrap().unwrap();
    let lease = lease.expect("the claim took the next queued run, not nothing");
    assert_eq!((lease.run_id(), lease.token()), (&second, 1));
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
