//! W1 with every sync waiting as a commit does (no database), and W1 runs for a profiler.

use std::time::{Duration, Instant};

use rein::ledger::{Entry, LoadedLedger};
use rein::postgres::PgStores;
use rein::store::{LedgerStore, LedgerStoreError, MemoryLedgerStore};
use rein::{Engine, RunId};

use crate::common::{self, DECISIONS};
use crate::{Fresh, P1_RUNS, w1_on};

/// `runs` W1 runs one after another, on the `PostgreSQL` stores or in memory.
pub(crate) fn profile(url: &str, runs: usize, in_memory: bool) {
    let rt = common::current_thread();
    let db = rt.block_on(Fresh::new(url));
    let stores = rt
        .block_on(PgStores::connect(db.config().with_pool_size(1)))
        .expect("the stores");
    let engine = if in_memory {
        common::engine(Engine::builder())
    } else {
        w1_on(&stores)
    };
    rt.block_on(async {
        for _ in 0..runs {
            common::run_w1(&engine).await;
        }
    });
    drop((engine, stores));
    rt.block_on(db.drop_db());
}

/// The memory ledger store, each sync of which waits 300 µs on a blocking thread, as a
/// commit makes the engine wait for the database: the engine's own step after a wait.
struct Waiting(MemoryLedgerStore);

/// How long a [`Waiting`] sync waits.
const WAIT: Duration = Duration::from_micros(300);

async fn wait() {
    let _ = tokio::task::spawn_blocking(|| std::thread::sleep(WAIT)).await;
}

impl LedgerStore for Waiting {
    async fn append(&self, entry: &Entry) -> Result<(), LedgerStoreError> {
        self.0.append(entry).await
    }
    fn try_append_now(&self, entry: &Entry) -> Option<Result<(), LedgerStoreError>> {
        self.0.try_append_now(entry)
    }
    async fn sync(&self, run_id: &RunId) -> Result<(), LedgerStoreError> {
        wait().await;
        self.0.sync(run_id).await
    }
    async fn load(&self, run_id: &RunId) -> Result<LoadedLedger, LedgerStoreError> {
        self.0.load(run_id).await
    }
    async fn list(&self) -> Result<Vec<RunId>, LedgerStoreError> {
        self.0.list().await
    }
}

/// `wait`: W1 in memory, and again with every sync waiting (no database), and the wait
/// alone: what the engine's step costs when it starts after a wait rather than in a tight
/// loop.
pub(crate) fn waits() {
    let rt = common::current_thread();
    let runs = |engine: &Engine| {
        rt.block_on(async {
            let start = Instant::now();
            for _ in 0..P1_RUNS {
                common::run_w1(engine).await;
            }
            (start.elapsed(), (P1_RUNS * DECISIONS) as u64)
        })
    };
    let (tight, waiting) = (
        common::engine(Engine::builder()),
        common::engine(Engine::builder().ledger_store(Waiting(MemoryLedgerStore::default()))),
    );
    let figures =
        common::repeat_each(
            &mut [&mut || runs(&tight), &mut || runs(&waiting), &mut || {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..P1_RUNS {
                        wait().await;
                    }
                    (start.elapsed(), P1_RUNS as u64)
                })
            }],
        );
    let show = |figure: common::Figure| figure.scaled(1e-3).show(1);
    println!(
        "\nW1 in memory, each sync waiting {} µs (no database)",
        WAIT.as_micros()
    );
    println!("    tight loop    {} µs per step", show(figures[0]));
    println!("    with waits    {} µs per step", show(figures[1]));
    println!("    one wait      {} µs", show(figures[2]));
}
