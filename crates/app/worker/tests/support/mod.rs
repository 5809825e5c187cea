//! What the worker's tests and its `PostgreSQL` benchmarks share.

use std::time::Duration;

use tokio_postgres::error::SqlState;

/// Drops the database `name` (its connections too) over `admin`, a connection to another
/// database. An autovacuum worker busy in it makes `FORCE` fail with
/// `insufficient_privilege` (`PostgreSQL` 15 will not let a role that is not a superuser end
/// it); it is gone within moments, so the drop is made again.
///
/// # Panics
/// When the drop fails otherwise, or still fails after about five seconds.
pub(crate) async fn drop_database(admin: &tokio_postgres::Client, name: &str) {
    let drop = format!("DROP DATABASE {name} WITH (FORCE)");
    for attempt in 1.. {
        match admin.batch_execute(&drop).await {
            Ok(()) => return,
            Err(e) if attempt < 100 && e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the database {name} drops: {e}"),
        }
    }
}
