//! One request on a connection: the body timeout, the whole-request
//! timeout, and the peer address the rate limits key on.
//!
//! The timers start when the head is complete. A body the handler is still
//! waiting for when the body timeout passes fails the body read, and the
//! request is answered `408 Request Timeout`, whatever the handler made of
//! the failed read. A request not answered within the request timeout is
//! dropped (its handler with it: a transaction rolls back) and answered
//! `408` if the handler was waiting for the body then, `503 Service
//! Unavailable` otherwise. Both answers close the connection.
//!
//! These two answers are made here, outside the router, because the router
//! is what timed out; they are plain text and carry no page or session.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, Response, StatusCode, header};
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

use super::activity::Activity;
use crate::config::ConnectionLimits;
use crate::http::security_headers::insert_all;

/// The router, as hyper calls it for each request of one connection.
#[derive(Clone)]
pub struct RequestService {
    router: Router,
    peer: SocketAddr,
    activity: Arc<Activity>,
    limits: ConnectionLimits,
}

impl RequestService {
    pub fn new(
        router: Router,
        peer: SocketAddr,
        activity: Arc<Activity>,
        limits: ConnectionLimits,
    ) -> Self {
        Self {
            router,
            peer,
            activity,
            limits,
        }
    }
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for RequestService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        self.activity.request_started();
        let started = Instant::now();
        let body_state = Arc::new(BodyState::default());
        let (mut parts, incoming) = request.into_parts();
        parts.extensions.insert(ConnectInfo(self.peer));
        let body = TimedBody::new(
            incoming,
            started.checked_add(self.limits.body_timeout),
            body_state.clone(),
        );
        let call = self
            .router
            .clone()
            .oneshot(Request::from_parts(parts, Body::new(body)));
        let answered = Answered(self.activity.clone());
        let deadline = started.checked_add(self.limits.request_timeout);
        Box::pin(async move {
            let outcome = match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline, call).await.ok(),
                None => Some(call.await),
            };
            let response = match outcome {
                Some(Ok(response)) if !body_state.timed_out() => response,
                Some(Ok(_)) => {
                    tracing::debug!("request body not received in time");
                    refusal(StatusCode::REQUEST_TIMEOUT)
                }
                Some(Err(never)) => match never {},
                None if body_state.waiting() => {
                    tracing::debug!("request body not received in time");
                    refusal(StatusCode::REQUEST_TIMEOUT)
                }
                None => {
                    tracing::warn!("request not answered within the request timeout");
                    refusal(StatusCode::SERVICE_UNAVAILABLE)
                }
            };
            drop(answered);
            Ok(response)
        })
    }
}

/// Marks the request answered when its future ends, also if hyper drops it.
struct Answered(Arc<Activity>);

impl Drop for Answered {
    fn drop(&mut self) {
        self.0.request_answered(Instant::now());
    }
}

/// A timeout answer: plain text, and the connection closed after it.
pub fn refusal(status: StatusCode) -> Response<Body> {
    let text = match status {
        StatusCode::REQUEST_TIMEOUT => "The request was not received in time.\n",
        _ => "The request could not be answered in time.\n",
    };
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    insert_all(
        response.headers_mut(),
        &[
            (header::CONNECTION, "close"),
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
    );
    response
}

const READING: u8 = 0;
const WAITING: u8 = 1;
const DONE: u8 = 2;
const TIMED_OUT: u8 = 3;

/// What the handler last saw of the body.
#[derive(Debug, Default)]
struct BodyState(AtomicU8);

impl BodyState {
    fn set(&self, state: u8) {
        self.0.store(state, Ordering::Release);
    }
    fn get(&self) -> u8 {
        self.0.load(Ordering::Acquire)
    }
    fn timed_out(&self) -> bool {
        self.get() == TIMED_OUT
    }
    /// The handler asked for more of the body and the client had not sent it.
    fn waiting(&self) -> bool {
        matches!(self.get(), WAITING | TIMED_OUT)
    }
}

/// Why a body read failed at the body timeout.
#[derive(Debug, thiserror::Error)]
#[error("the request body was not received in time")]
pub struct BodyTimeout;

/// The request body, failing once the body timeout has passed while the
/// handler waits for bytes the client has not sent.
struct TimedBody {
    inner: Incoming,
    deadline: Option<Instant>,
    /// Made at the first wait only: most bodies arrive with their head.
    timer: Option<Pin<Box<Sleep>>>,
    state: Arc<BodyState>,
}

impl TimedBody {
    fn new(inner: Incoming, deadline: Option<Instant>, state: Arc<BodyState>) -> Self {
        if inner.is_end_stream() {
            state.set(DONE);
        }
        Self {
            inner,
            deadline,
            timer: None,
            state,
        }
    }
}

impl HttpBody for TimedBody {
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if this.state.timed_out() {
            return Poll::Ready(Some(Err(BodyTimeout.into())));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                this.state.set(DONE);
                Poll::Ready(None)
            }
            Poll::Ready(Some(frame)) => {
                this.state.set(READING);
                Poll::Ready(Some(frame.map_err(Into::into)))
            }
            Poll::Pending => {
                this.state.set(WAITING);
                let Some(deadline) = this.deadline else {
                    return Poll::Pending;
                };
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        this.state.set(TIMED_OUT);
                        Poll::Ready(Some(Err(BodyTimeout.into())))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
