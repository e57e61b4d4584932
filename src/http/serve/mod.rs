//! Serving the router on the bound listener, so that connections cannot
//! exhaust the server (threat 32).
//!
//! - Each connection is HTTP/1.1 through hyper (as `axum::serve` gave it),
//!   with the peer address as `ConnectInfo<SocketAddr>` for the rate
//!   limits.
//! - Timeouts, from [`ConnectionLimits`]: a request's head
//!   ([`activity`]: the connection is closed, without an answer, since no
//!   request was made), its body and the whole request ([`request`]:
//!   `408` or `503`, then closed), and an idle kept-alive connection
//!   (closed).
//! - A cap on connections served at once, and one per network (an IPv4
//!   address, an IPv6 /64), so that one network cannot take them all
//!   ([`served`]). At a cap, the kept-alive connection idle longest (of
//!   that network, or of any) is closed to make room. With none idle the
//!   newest connection is answered a fixed `503` ([`SHED_RESPONSE`]; its
//!   network's cap: `429`, [`NETWORK_SHED_RESPONSE`]) with `Retry-After:
//!   1` and `Connection: close`, written straight on the socket, and
//!   closed: no hyper, no router, nothing parsed, so the accept loop keeps
//!   up with a flood. The answer follows the first bytes of the request:
//!   at once when they are there at the accept, as in a flood; otherwise a
//!   task waits for them (at most [`REFUSAL_WAIT`]), because an answer that
//!   arrives before the request is one HTTP clients take for a broken
//!   connection rather than a refusal. At most [`MAX_REFUSALS`] connections
//!   wait so; past that the newest is closed at once without a word. The
//!   connections in the middle of a request keep their place (refusing the
//!   oldest instead would let a flood cut off requests under way).
//! - Accept errors that are about the listener, not one connection (out of
//!   descriptors: `EMFILE`, `ENFILE`), pause accepting, from 10 ms doubling
//!   to 1 s, instead of spinning on the error.
//! - On stop: the listener is closed, idle connections are closed, each
//!   request under way is answered (with `Connection: close`); what is left
//!   at the drain deadline is closed, and serving ends without an error.

mod activity;
mod connection;
mod request;
mod served;

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use self::activity::Activity;
use self::served::{Full, Handle, Served};
use crate::config::ConnectionLimits;

/// What a connection past the cap receives, whole, before it is closed.
pub const SHED_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
Content-Length: 0\r\n\
Retry-After: 1\r\n\
Connection: close\r\n\r\n";

/// What a connection past its network's cap receives, whole, before it is
/// closed: the client's own network holds its share, so "too many" rather
/// than "unavailable".
pub const NETWORK_SHED_RESPONSE: &[u8] = b"HTTP/1.1 429 Too Many Requests\r\n\
Content-Length: 0\r\n\
Retry-After: 1\r\n\
Connection: close\r\n\r\n";

/// How long a refused connection may take to send its request before it
/// is answered anyway.
pub const REFUSAL_WAIT: Duration = Duration::from_millis(500);

/// Refused connections waiting for their request at once; beyond the cap
/// these are the only descriptors a flood can hold.
pub const MAX_REFUSALS: usize = 64;

/// Serves `router` on `listener` until `stop` completes, then drains.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    stop: impl Future<Output = ()>,
) -> io::Result<()> {
    let (drain, draining) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut served = Served::new(&limits);
    let mut refusals = JoinSet::new();
    let mut stop = std::pin::pin!(stop);
    let mut pause = Pause::default();
    let mut shed = ShedLog::new("connection cap reached: refusing new connections with 503");
    let mut network_shed =
        ShedLog::new("a network reached its connection cap: refusing its new connections with 429");
    loop {
        tokio::select! {
            biased;
            () = &mut stop => break,
            // Finished connections are counted out before the next accept,
            // so the caps count live ones.
            Some(ended) = connections.join_next_with_id(), if !connections.is_empty() => {
                served.leave(match ended {
                    Ok((id, ())) => id,
                    Err(err) => err.id(),
                });
            }
            Some(_) = refusals.join_next(), if !refusals.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    pause.reset();
                    let network = served::network_of(peer);
                    let answer = match served.admit(network) {
                        Ok(()) => {
                            let handle = Handle {
                                activity: Arc::new(Activity::new(Instant::now())),
                                close: Arc::new(Notify::new()),
                            };
                            let task = connections.spawn(connection::serve(
                                stream,
                                peer,
                                router.clone(),
                                limits,
                                handle.clone(),
                                draining.clone(),
                            ));
                            served.enter(task.id(), network, handle);
                            continue;
                        }
                        Err(Full::Server) => {
                            shed.record(limits.max_connections, None);
                            SHED_RESPONSE
                        }
                        Err(Full::Network) => {
                            network_shed
                                .record(limits.max_connections_per_network, Some(network));
                            NETWORK_SHED_RESPONSE
                        }
                    };
                    match refuse(&stream, answer) {
                        Refused::Answered | Refused::Gone => {}
                        Refused::NotAsked if refusals.len() < MAX_REFUSALS => {
                            refusals.spawn(refuse_when_asked(stream, answer));
                        }
                        // Closed at once, without a word.
                        Refused::NotAsked => drop(stream),
                    }
                }
                Err(err) if is_one_connection(&err) => {}
                Err(err) => {
                    let wait = pause.next();
                    tracing::error!(
                        error = %err,
                        pause_ms = wait.as_millis(),
                        "cannot accept connections; pausing"
                    );
                    tokio::select! {
                        () = &mut stop => break,
                        () = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
    }
    drop(listener);
    refusals.shutdown().await;
    let _ = drain.send(true);
    let drained = tokio::time::timeout(limits.drain_timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            connections = connections.len(),
            "drain deadline passed: closing the connections left"
        );
        connections.shutdown().await;
    }
    Ok(())
}

enum Refused {
    Answered,
    /// Nothing of a request has arrived yet.
    NotAsked,
    /// The client closed the connection or it failed.
    Gone,
}

/// Answers a connection past a cap with `answer` if its request has begun
/// to arrive. What the client has sent so far is read and dropped first,
/// so that the close after the answer is a FIN rather than a reset that
/// could destroy the answer.
fn refuse(stream: &TcpStream, answer: &[u8]) -> Refused {
    let mut scratch = [0u8; 4096];
    let mut read = 0;
    for _ in 0..4 {
        match stream.try_read(&mut scratch) {
            Ok(0) => return Refused::Gone,
            Ok(n) => read += n,
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => break,
            Err(_) => return Refused::Gone,
        }
    }
    if read == 0 {
        return Refused::NotAsked;
    }
    // A fresh socket's send buffer takes these few bytes whole.
    let _ = stream.try_write(answer);
    Refused::Answered
}

/// Waits (briefly) for the request of a refused connection, then answers.
async fn refuse_when_asked(stream: TcpStream, answer: &'static [u8]) {
    let _ = tokio::time::timeout(REFUSAL_WAIT, stream.readable()).await;
    if let Refused::NotAsked = refuse(&stream, answer) {
        // Still nothing: the answer goes out regardless.
        let _ = stream.try_write(answer);
    }
}

/// Errors of one incoming connection, which leave the listener usable.
fn is_one_connection(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// The pause after a listener error: 10 ms, doubling to 1 s, reset by the
/// next accepted connection.
#[derive(Debug, Default)]
struct Pause {
    last: Option<Duration>,
}

impl Pause {
    const FIRST: Duration = Duration::from_millis(10);
    const MAX: Duration = Duration::from_secs(1);

    fn next(&mut self) -> Duration {
        let wait = self
            .last
            .map_or(Self::FIRST, |last| (last * 2).min(Self::MAX));
        self.last = Some(wait);
        wait
    }

    fn reset(&mut self) {
        self.last = None;
    }
}

/// One warning when shedding starts and at most one a minute while it
/// lasts, with the count (and the last network refused, for a network's
/// cap): a flood must not become a log flood.
#[derive(Debug)]
struct ShedLog {
    message: &'static str,
    since_warned: u64,
    warned_at: Option<Instant>,
}

impl ShedLog {
    const EVERY: Duration = Duration::from_secs(60);

    fn new(message: &'static str) -> Self {
        Self {
            message,
            since_warned: 0,
            warned_at: None,
        }
    }

    fn record(&mut self, cap: usize, network: Option<crate::domain::network::Network>) {
        self.since_warned += 1;
        let now = Instant::now();
        if self
            .warned_at
            .is_none_or(|at| now.duration_since(at) >= Self::EVERY)
        {
            tracing::warn!(
                refused = self.since_warned,
                cap,
                network = network.map(tracing::field::display),
                "{}",
                self.message
            );
            self.since_warned = 0;
            self.warned_at = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_to_a_second_and_resets() {
        let mut pause = Pause::default();
        let waits: Vec<u128> = (0..9).map(|_| pause.next().as_millis()).collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        pause.reset();
        assert_eq!(pause.next(), Duration::from_millis(10));
    }
}
