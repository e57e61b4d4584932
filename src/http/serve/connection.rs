//! One accepted connection: HTTP/1.1 through hyper, closed when the client
//! is too slow with a head or stays idle too long, and wound down when the
//! server drains or the accept loop needs its place ([`super::served`]).

use std::net::SocketAddr;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

use super::activity::TrackedStream;
use super::request::RequestService;
use super::served::Handle;
use crate::config::ConnectionLimits;

/// Serves `stream` until the client closes it, a timeout closes it, or the
/// server drains or asks it to close through `handle` and the request under
/// way (if any) has been answered. Returning drops the socket, which
/// closes it.
pub async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    limits: ConnectionLimits,
    handle: Handle,
    mut drain: watch::Receiver<bool>,
) {
    let Handle { activity, close } = handle;
    let io = TokioIo::new(TrackedStream::new(stream, activity.clone()));
    let service = RequestService::new(router, peer, activity.clone(), limits);
    let mut builder = http1::Builder::new();
    // Heads and idle waits are timed by `Activity` instead (see there).
    builder.header_read_timeout(None).keep_alive(true);
    let connection = builder.serve_connection(io, service);
    let mut connection = std::pin::pin!(connection);
    // Set once hyper was told to wind down, by the drain or by `close`.
    let mut draining = false;
    loop {
        if !draining && *drain.borrow() {
            draining = true;
            // Closes an idle connection at once; one with a request under
            // way answers it with `Connection: close`.
            connection.as_mut().graceful_shutdown();
        }
        let deadline = activity.deadline(&limits);
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(err) = result {
                    tracing::debug!(error = %err, "connection ended with an error");
                }
                return;
            }
            () = activity.changed() => {}
            () = sleep_until(deadline.map(|(at, _)| at)) => {
                if let Some((at, expired)) = activity.deadline(&limits)
                    && at <= Instant::now()
                {
                    tracing::debug!(?expired, "closing a connection that timed out");
                    return;
                }
            }
            () = close.notified(), if !draining => {
                draining = true;
                connection.as_mut().graceful_shutdown();
            }
            changed = drain.changed(), if !draining => {
                if changed.is_err() {
                    // The accept loop is gone: drain as if told to.
                    draining = true;
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
