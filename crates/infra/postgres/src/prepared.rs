//! Statements prepared once per connection: a query by its text costs two round trips
//! (`Parse` and `Describe`, then `Bind` and `Execute`), a prepared one costs one.

use deadpool_postgres::ClientWrapper;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Error, Row};

/// The parameters of a statement.
pub(crate) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// The rows `sql` returns, on `client`'s statement cache.
pub(crate) async fn query(
    client: &ClientWrapper,
    sql: &str,
    params: Params<'_>,
) -> Result<Vec<Row>, Error> {
    let statement = client.prepare_cached(sql).await?;
    client.query(&statement, params).await
}

/// The row `sql` returns, if any (an error if more), on `client`'s statement cache.
pub(crate) async fn query_opt(
    client: &ClientWrapper,
    sql: &str,
    params: Params<'_>,
) -> Result<Option<Row>, Error> {
    let statement = client.prepare_cached(sql).await?;
    client.query_opt(&statement, params).await
}

/// The one row `sql` returns (an error if none or more), on `client`'s statement cache.
pub(crate) async fn query_one(
    client: &ClientWrapper,
    sql: &str,
    params: Params<'_>,
) -> Result<Row, Error> {
    let statement = client.prepare_cached(sql).await?;
    client.query_one(&statement, params).await
}

/// How many rows `sql` changed, on `client`'s statement cache.
pub(crate) async fn execute(
    client: &ClientWrapper,
    sql: &str,
    params: Params<'_>,
) -> Result<u64, Error> {
    let statement = client.prepare_cached(sql).await?;
    client.execute(&statement, params).await
}
