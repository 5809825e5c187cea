//! Leases with fencing: tokens that grow on every takeover, expiry by the database's
//! clock, and the lease-expiry race — a writer stalled past its lease is refused, in the
//! same transaction, once another took the run over.

mod support;

use std::time::Duration;

use rein_ledger::{Entry, EntryKind, Ledger, LedgerStore, LedgerStoreError};
use rein_postgres::{CommitPolicy, PgError, PgStores};
use rein_run::{Fenced, Run, RunId, RunStore, RunStoreError, State, Timestamp};
use support::Fresh;

const TTL: Duration = Duration::from_secs(600);

/// Appends `entry` and syncs its run, as the engine does at a step's end: a refusal comes
/// from the append ([`CommitPolicy::EveryEntry`]) or from the sync (`EveryStep`).
async fn write(stores: &PgStores, entry: &Entry) -> Result<(), LedgerStoreError> {
    stores.ledgers().append(entry).await?;
    stores.ledgers().sync(entry.run_id()).await
}

fn note(ledger: &mut Ledger, text: &str) {
    ledger.append(
        Timestamp::from_unix_millis(1_700_000_000_000 + ledger.len() as u64),
        State::Act,
        EntryKind::Steering { note: text.into() },
    );
}

/// Expires the lease of `run` by the database's clock, as a stalled holder's would.
async fn expire(sql: &tokio_postgres::Client, run: &RunId) {
    let expired = sql
        .execute(
            "UPDATE rein_leases SET expires_at = now() - interval '1 second' WHERE run_id = $1",
            &[&run.as_str()],
        )
        .await
        .unwrap();
    assert_eq!(expired, 1);
}

#[tokio::test]
async fn tokens_grow_on_every_takeover_and_a_live_lease_is_not_taken() {
    let db = Fresh::new().await;
    let (a, b) = (db.stores().await, db.stores().await);
    let sql = db.sql().await;
    let run: RunId = "leased".parse().unwrap();

    let first = a.acquire_lease(&run, "worker-a", TTL).await.unwrap();
    assert_eq!((first.owner(), first.token()), ("worker-a", 1));
    match b.acquire_lease(&run, "worker-b", TTL).await {
        Err(PgError::LeaseHeld {
            owner,
            token,
            remaining_ms,
            ..
        }) => {
            assert_eq!((owner.as_str(), token), ("worker-a", 1));
            assert!(remaining_ms > 0 && remaining_ms <= 600_000);
        }
        other => panic!("expected LeaseHeld, got {other:?}"),
    }
    // Renewing extends it, by the database's clock.
    let renewed = a.renew_lease(&first, TTL).await.unwrap();
    assert_eq!(renewed.token(), 1);
    assert!(renewed.expires_at_unix_ms() >= first.expires_at_unix_ms());

    // Released: the next owner takes over at once, with the next token.
    a.release_lease(&first).await.unwrap();
    let second = b.acquire_lease(&run, "worker-b", TTL).await.unwrap();
    assert_eq!(second.token(), 2);

    // Expired: taken over again; the stale holder can no longer renew.
    expire(&sql, &run).await;
    let third = a.acquire_lease(&run, "worker-a", TTL).await.unwrap();
    assert_eq!(third.token(), 3);
    match b.renew_lease(&second, TTL).await {
        Err(PgError::Fenced(Fenced {
            held: Some(2),
            current: Some(3),
            ..
        })) => {}
        other => panic!("expected Fenced, got {other:?}"),
    }
    db.drop_db().await;
}

#[tokio::test]
async fn a_writer_without_the_lease_is_kept_out_of_a_leased_run() {
    let db = Fresh::new().await;
    for commit in [CommitPolicy::EveryEntry, CommitPolicy::EveryStep] {
        let (holder, other) = (db.stores().await, db.stores_with(commit).await);
        let mut ledger = Ledger::new(format!("guarded-{commit:?}").parse().unwrap());
        note(&mut ledger, "one");
        holder
            .acquire_lease(ledger.run_id(), "holder", TTL)
            .await
            .unwrap();
        let refused = match commit {
            // Refused by the append itself…
            CommitPolicy::EveryEntry => other.ledgers().append(&ledger.entries()[0]).await,
            // …or kept until the step's commit, which is refused.
            CommitPolicy::EveryStep => {
                other.ledgers().append(&ledger.entries()[0]).await.unwrap();
                other.ledgers().sync(ledger.run_id()).await
            }
        };
        match refused {
            Err(LedgerStoreError::FencedOut(fenced)) => {
                assert_eq!((fenced.held, fenced.current), (None, Some(1)));
                assert!(fenced.to_string().contains("is leased to another worker"));
            }
            result => panic!("{commit:?}: expected FencedOut, got {result:?}"),
        }
        // Nothing of the refused writer's is kept, and the holder writes.
        other.ledgers().sync(ledger.run_id()).await.unwrap();
        assert!(matches!(
            holder.ledgers().load(ledger.run_id()).await,
            Err(LedgerStoreError::NotFound { .. })
        ));
        write(&holder, &ledger.entries()[0]).await.unwrap();
    }
    db.drop_db().await;
}

#[tokio::test]
async fn a_kept_lease_is_renewed_until_it_is_taken_over() {
    let db = Fresh::new().await;
    let (a, b) = (db.stores().await, db.stores().await);
    let sql = db.sql().await;
    let run: RunId = "kept".parse().unwrap();
    let lease = a.acquire_lease(&run, "worker-a", TTL).await.unwrap();
    let mut keeper = a.keep_lease(lease.clone(), TTL);
    let renewed = keeper.renew_now().await.unwrap();
    assert_eq!(renewed.token(), lease.token());
    assert!(renewed.expires_at_unix_ms() >= lease.expires_at_unix_ms());

    expire(&sql, &run).await;
    let taken = b.acquire_lease(&run, "worker-b", TTL).await.unwrap();
    let fenced = keeper.renew_now().await.unwrap_err();
    assert_eq!(
        (fenced.held, fenced.current),
        (Some(1), Some(taken.token()))
    );
    assert_eq!(keeper.lost().await, fenced);
    assert_eq!(keeper.lease(), Err(fenced));
    db.drop_db().await;
}

/// How many rounds of the race to run: `REIN_PG_RACE_ROUNDS` (the long form, `make
/// pg-race`, runs 200), else 20.
fn rounds() -> usize {
    std::env::var("REIN_PG_RACE_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20)
}

/// One round: worker A drives the run and is held mid-step; its lease is expired in SQL
/// (no sleeping on the wall clock); B takes over with the next token and continues from
/// the ledger; A, released, appends its next entry — which follows the chain A knew, so
/// only the fence can refuse it — and saves its snapshot: both are refused, typed, and
/// nothing of A's lands after B's takeover.
async fn race_round(a: &PgStores, b: &PgStores, sql: &tokio_postgres::Client, round: usize) {
    let run: RunId = format!("race-{:?}-{round}", a.config().commit())
        .parse()
        .unwrap();
    let lease_a = a.acquire_lease(&run, "worker-a", TTL).await.unwrap();
    let mut ledger_a = Ledger::new(run.clone());
    let mut snapshot_a = Run::new(
        run.clone(),
        "race",
        serde_json::Map::new(),
        serde_json::json!({}),
        Timestamp::from_unix_millis(0),
    );
    for step in 0..3 {
        note(&mut ledger_a, &format!("a {step}"));
        write(a, ledger_a.entries().last().unwrap()).await.unwrap();
    }
    a.runs().save(&snapshot_a).await.unwrap();

    // A is held at its failpoint mid-step; its lease runs out.
    expire(sql, &run).await;
    let lease_b = b.acquire_lease(&run, "worker-b", TTL).await.unwrap();
    assert_eq!(lease_b.token(), lease_a.token() + 1);
    let mut ledger_b = b.ledgers().load(&run).await.unwrap().ledger;
    assert_eq!(ledger_b, ledger_a);

    // A is released: its late writes are refused.
    note(&mut ledger_a, "a late");
    match write(a, ledger_a.entries().last().unwrap()).await {
        Err(LedgerStoreError::FencedOut(Fenced { held, current, .. })) => {
            assert_eq!(
                (held, current),
                (Some(lease_a.token()), Some(lease_b.token()))
            );
        }
        other => panic!("round {round}: A's late append was not fenced out: {other:?}"),
    }
    snapshot_a
        .enter(State::Explore, Timestamp::from_unix_millis(1))
        .unwrap();
    match a.runs().save(&snapshot_a).await {
        Err(RunStoreError::FencedOut(Fenced { held, .. })) => {
            assert_eq!(held, Some(lease_a.token()));
        }
        other => panic!("round {round}: A's late save was not fenced out: {other:?}"),
    }
    // And it cannot take the lease back while B's runs.
    assert!(matches!(
        a.acquire_lease(&run, "worker-a", TTL).await,
        Err(PgError::LeaseHeld { .. })
    ));

    // B continues the run.
    for step in 0..2 {
        note(&mut ledger_b, &format!("b {step}"));
        write(b, ledger_b.entries().last().unwrap()).await.unwrap();
    }
    b.release_lease(&lease_b).await.unwrap();

    // One fencing token per stretch: A's entries, then B's; the ledger verifies.
    let tokens: Vec<i64> = sql
        .query(
            "SELECT fencing_token FROM rein_ledger WHERE run_id = $1 ORDER BY seq",
            &[&run.as_str()],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let (ta, tb) = (lease_a.token() as i64, lease_b.token() as i64);
    assert_eq!(tokens, [ta, ta, ta, tb, tb], "round {round}");
    let stored = b.ledgers().load(&run).await.unwrap().ledger;
    stored.verify().unwrap();
    assert_eq!(stored, ledger_b);
}

#[tokio::test]
async fn the_lease_expiry_race_refuses_the_late_writer_every_time() {
    let db = Fresh::new().await;
    let sql = db.sql().await;
    let rounds = rounds();
    for commit in [CommitPolicy::EveryEntry, CommitPolicy::EveryStep] {
        let (a, b) = (db.stores_with(commit).await, db.stores_with(commit).await);
        for round in 0..rounds {
            race_round(&a, &b, &sql, round).await;
        }
    }
    eprintln!("lease-expiry race: {rounds} rounds, the late writer refused in every one");
    db.drop_db().await;
}

/// The takeover and A's appends truly concurrent: whatever the interleaving, every entry
/// A had committed is in what B loaded after its takeover, nothing of A's lands after it,
/// and the tokens never go backwards along the ledger.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_takeover_racing_live_appends_never_interleaves_tokens() {
    let db = Fresh::new().await;
    let (a, b) = (db.stores().await, db.stores().await);
    let sql = db.sql().await;
    for round in 0..rounds().min(50) {
        let run: RunId = format!("live-{round}").parse().unwrap();
        let lease_a = a.acquire_lease(&run, "worker-a", TTL).await.unwrap();
        let writer = {
            let (a, run) = (a.clone(), run.clone());
            tokio::spawn(async move {
                let mut ledger = Ledger::new(run);
                loop {
                    note(&mut ledger, "a");
                    match write(&a, ledger.entries().last().unwrap()).await {
                        Ok(()) => {}
                        Err(LedgerStoreError::FencedOut(_)) => return ledger.len() - 1,
                        Err(e) => panic!("A failed otherwise: {e}"),
                    }
                }
            })
        };
        // Let A write a little, then take over.
        while sql
            .query_one(
                "SELECT count(*) FROM rein_ledger WHERE run_id = $1",
                &[&run.as_str()],
            )
            .await
            .unwrap()
            .get::<_, i64>(0)
            < 3
        {
            tokio::task::yield_now().await;
        }
        expire(&sql, &run).await;
        let lease_b = b.acquire_lease(&run, "worker-b", TTL).await.unwrap();
        let loaded = b.ledgers().load(&run).await.unwrap().ledger;
        let committed_by_a = writer.await.unwrap();
        assert_eq!(loaded.len(), committed_by_a, "round {round}");
        let mut ledger_b = loaded;
        note(&mut ledger_b, "b");
        write(&b, ledger_b.entries().last().unwrap()).await.unwrap();
        let tokens: Vec<i64> = sql
            .query(
                "SELECT fencing_token FROM rein_ledger WHERE run_id = $1 ORDER BY seq",
                &[&run.as_str()],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let (ta, tb) = (lease_a.token() as i64, lease_b.token() as i64);
        let mut expected = vec![ta; committed_by_a];
        expected.push(tb);
        assert_eq!(tokens, expected, "round {round}");
    }
    db.drop_db().await;
}

/// A ledger write (a step's entries, at its sync) and a save are one statement each, checked against the lease row read `FOR
/// SHARE`: made while a takeover's `UPDATE` of that row is not yet committed, they wait
/// for it, and once it commits they read the row's new token and are refused — nothing of
/// the old holder's lands after the takeover (`READ COMMITTED` re-reads the row it waited
/// for).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_made_during_an_uncommitted_takeover_waits_and_is_refused() {
    let db = Fresh::new().await;
    let a = db.stores().await;
    let (mut takeover, watch) = (db.sql().await, db.sql().await);
    let run: RunId = "in-flight".parse().unwrap();
    let lease = a.acquire_lease(&run, "worker-a", TTL).await.unwrap();
    let mut ledger = Ledger::new(run.clone());
    note(&mut ledger, "before");
    write(&a, ledger.entries().last().unwrap()).await.unwrap();
    let snapshot = Run::new(
        run.clone(),
        "in flight",
        serde_json::Map::new(),
        serde_json::json!({}),
        Timestamp::from_unix_millis(0),
    );
    a.runs().save(&snapshot).await.unwrap();

    // The takeover, as a claim makes it, left uncommitted.
    let tx = takeover.transaction().await.unwrap();
    tx.execute(
        "UPDATE rein_leases SET owner = 'worker-b', fencing_token = fencing_token + 1
         WHERE run_id = $1",
        &[&run.as_str()],
    )
    .await
    .unwrap();
    note(&mut ledger, "during");
    let append = {
        let (a, entry) = (a.clone(), ledger.entries().last().unwrap().clone());
        tokio::spawn(async move { write(&a, &entry).await })
    };
    let save = {
        let a = a.clone();
        tokio::spawn(async move { a.runs().save(&snapshot).await })
    };
    // Both writes wait on the takeover's row lock (they lock the row FOR SHARE).
    loop {
        assert!(
            !append.is_finished() && !save.is_finished(),
            "a write did not wait for the uncommitted takeover"
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
        if waiting >= 2 {
            break;
        }
        tokio::task::yield_now().await;
    }
    tx.commit().await.unwrap();

    let fenced = Some(lease.token());
    let taken = Some(lease.token() + 1);
    match append.await.unwrap() {
        Err(LedgerStoreError::FencedOut(Fenced { held, current, .. })) => {
            assert_eq!((held, current), (fenced, taken));
        }
        other => panic!("the append during the takeover was not fenced out: {other:?}"),
    }
    match save.await.unwrap() {
        Err(RunStoreError::FencedOut(Fenced { held, current, .. })) => {
            assert_eq!((held, current), (fenced, taken));
        }
        other => panic!("the save during the takeover was not fenced out: {other:?}"),
    }
    assert_eq!(a.ledgers().load(&run).await.unwrap().ledger.len(), 1);
    db.drop_db().await;
}
