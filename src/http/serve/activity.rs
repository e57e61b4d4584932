//! Where one connection is between requests, and the deadline that gives.
//!
//! The head of a request and the wait for the next one are timed here, per
//! connection, rather than with hyper's `header_read_timeout`: hyper starts
//! that timer again as soon as a response is written, so a kept-alive
//! connection would be closed after the header timeout, never the longer
//! idle timeout. Here the next request's head is timed from its first byte,
//! and the wait before that byte from the previous response.
//!
//! A request under way has no deadline here: its body and its answer are
//! timed by [`super::request`].

use std::io;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::config::ConnectionLimits;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No byte of the next request yet. `first`: none of any request, so
    /// the wait counts against the header timeout (a connection opened and
    /// never used is the cheapest slow client there is).
    Waiting { since: Instant, first: bool },
    /// Part of a request's head has arrived; the rest must follow in time.
    Head { since: Instant },
    /// The head is in and the service has the request.
    Busy,
}

/// Which timeout closed a connection, for the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expired {
    Header,
    Idle,
}

#[derive(Debug)]
pub struct Activity {
    phase: Mutex<Phase>,
    /// Woken when a deadline appears or moves earlier.
    changed: Notify,
}

impl Activity {
    pub fn new(accepted: Instant) -> Self {
        Self {
            phase: Mutex::new(Phase::Waiting {
                since: accepted,
                first: true,
            }),
            changed: Notify::new(),
        }
    }

    fn with_phase<T>(&self, f: impl FnOnce(&mut Phase) -> T) -> T {
        let mut phase = self.phase.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut phase)
    }

    /// Bytes arrived from the client.
    pub fn bytes_read(&self, now: Instant) {
        let moved = self.with_phase(|phase| match *phase {
            Phase::Waiting { since, first } => {
                // The first request's head is timed from the accept, so
                // waiting before the first byte buys a client nothing.
                let since = if first { since } else { now };
                *phase = Phase::Head { since };
                true
            }
            Phase::Head { .. } | Phase::Busy => false,
        });
        if moved {
            self.changed.notify_one();
        }
    }

    /// The head is complete: the request belongs to the service now.
    pub fn request_started(&self) {
        self.with_phase(|phase| *phase = Phase::Busy);
    }

    /// The service answered; the connection waits for the client to take
    /// the response and send the next request.
    pub fn request_answered(&self, now: Instant) {
        self.with_phase(|phase| {
            *phase = Phase::Waiting {
                since: now,
                first: false,
            }
        });
        self.changed.notify_one();
    }

    /// Since when the connection has sat idle after answering a request,
    /// if it has: a kept-alive connection the client is not using.
    pub fn idle_since(&self) -> Option<Instant> {
        match self.with_phase(|phase| *phase) {
            Phase::Waiting {
                since,
                first: false,
            } => Some(since),
            Phase::Waiting { first: true, .. } | Phase::Head { .. } | Phase::Busy => None,
        }
    }

    /// When the connection must be closed if nothing changes, and why.
    pub fn deadline(&self, limits: &ConnectionLimits) -> Option<(Instant, Expired)> {
        let phase = self.with_phase(|phase| *phase);
        deadline_of(phase, limits)
    }

    /// Resolves when the phase may have a new, earlier deadline.
    pub async fn changed(&self) {
        self.changed.notified().await;
    }
}

fn deadline_of(phase: Phase, limits: &ConnectionLimits) -> Option<(Instant, Expired)> {
    let after = |since: Instant, timeout: Duration| since.checked_add(timeout);
    match phase {
        Phase::Waiting { since, first: true } | Phase::Head { since } => {
            after(since, limits.header_timeout).map(|at| (at, Expired::Header))
        }
        Phase::Waiting {
            since,
            first: false,
        } => after(since, limits.idle_timeout).map(|at| (at, Expired::Idle)),
        Phase::Busy => None,
    }
}

/// The accepted socket, telling [`Activity`] when bytes arrive.
pub struct TrackedStream {
    stream: TcpStream,
    activity: std::sync::Arc<Activity>,
}

impl TrackedStream {
    pub fn new(stream: TcpStream, activity: std::sync::Arc<Activity>) -> Self {
        Self { stream, activity }
    }
}

impl AsyncRead for TrackedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.bytes_read(Instant::now());
        }
        polled
    }
}

impl AsyncWrite for TrackedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            ..ConnectionLimits::default()
        }
    }

    #[test]
    fn each_phase_has_its_deadline() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let activity = Activity::new(t0);
        let limits = limits();
        let deadline = || activity.deadline(&limits);
        // Never used: the header timeout, from the accept.
        assert_eq!(deadline(), Some((t0 + s(10), Expired::Header)));
        // The first bytes do not restart it.
        activity.bytes_read(t0 + s(5));
        assert_eq!(deadline(), Some((t0 + s(10), Expired::Header)));
        activity.request_started();
        activity.bytes_read(t0 + s(6));
        assert_eq!(deadline(), None);
        // Answered: the idle timeout, from the answer.
        activity.request_answered(t0 + s(7));
        assert_eq!(deadline(), Some((t0 + s(67), Expired::Idle)));
        // The next request's head: the header timeout from its first byte.
        activity.bytes_read(t0 + s(30));
        assert_eq!(deadline(), Some((t0 + s(40), Expired::Header)));
    }

    /// Only a connection waiting after an answer is idle: never one not
    /// used yet, nor one with a request arriving or under way.
    #[test]
    fn idle_means_kept_alive_between_requests() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let activity = Activity::new(t0);
        assert_eq!(activity.idle_since(), None);
        activity.bytes_read(t0 + s(1));
        assert_eq!(activity.idle_since(), None);
        activity.request_started();
        assert_eq!(activity.idle_since(), None);
        activity.request_answered(t0 + s(2));
        assert_eq!(activity.idle_since(), Some(t0 + s(2)));
        activity.bytes_read(t0 + s(3));
        assert_eq!(activity.idle_since(), None);
    }
}
