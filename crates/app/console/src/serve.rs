//! Serving a console on an address: the loopback rule checked before anything is bound,
//! and a graceful end that lets decisions in flight finish.

use std::future::Future;
use std::net::SocketAddr;

use crate::{Console, ConsoleError};

/// Where and how `rein serve` serves.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The address to bind (loopback by default in `rein serve`).
    pub addr: SocketAddr,
    /// Whether operators are named by a tokens file (required off loopback).
    pub has_tokens_file: bool,
}

/// Refuses an address that is not loopback unless a tokens file says who may act: anyone
/// who can reach the address could otherwise act on runs with a token printed at start.
///
/// # Errors
/// [`ConsoleError::NotLoopbackWithoutTokens`].
pub fn bind_check(config: &ServeConfig) -> Result<(), ConsoleError> {
    if config.addr.ip().is_loopback() || config.has_tokens_file {
        Ok(())
    } else {
        Err(ConsoleError::NotLoopbackWithoutTokens { addr: config.addr })
    }
}

/// Serves `console` on `config.addr` until `shutdown` completes, then waits for the
/// decisions and drives in flight to finish. `bound` is called with the address actually
/// bound (port 0 picks one) before the first request is taken.
///
/// # Errors
/// [`ConsoleError::NotLoopbackWithoutTokens`]; [`ConsoleError::Serve`] when the address
/// cannot be bound or serving fails.
pub async fn serve(
    console: &Console,
    config: &ServeConfig,
    bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ConsoleError> {
    bind_check(config)?;
    let serve_error = |reason: String| ConsoleError::Serve {
        addr: config.addr,
        reason,
    };
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|e| serve_error(e.to_string()))?;
    let addr = listener
        .local_addr()
        .map_err(|e| serve_error(e.to_string()))?;
    bound(addr);
    axum::serve(listener, console.router())
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|e| serve_error(e.to_string()))?;
    console.settled().await;
    Ok(())
}
