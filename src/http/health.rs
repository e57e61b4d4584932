//! Liveness and readiness for load balancers and orchestrators.
//!
//! `/readyz` asks the database itself, on a connection the store keeps for
//! this probe alone ([`crate::storage::Store::ping`]), never one from the
//! pool requests draw on. A full pool is load, not an outage: any token
//! holder can fill it for a moment, and a probe that queued behind it
//! would let them take every replica out of the load balancer at once,
//! while each request that cannot get a connection in time already hears
//! 503 with `Retry-After` on its own. What takes a replica out of rotation
//! is the database not answering: refused, gone, or unreadable.

use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

/// 200 while the process serves; touches nothing else.
async fn healthz() -> &'static str {
    "ok"
}

/// How long `/readyz` waits for the database: a probe's own timeout is
/// often a second or two, and an answer beats a probe giving up.
const READY_DEADLINE: Duration = Duration::from_secs(2);

/// 200 only when the database answers: a replica that lost its database is
/// taken out of rotation.
async fn readyz(State(state): State<AppState>) -> (StatusCode, &'static str) {
    match tokio::time::timeout(READY_DEADLINE, state.store.ping()).await {
        Ok(Ok(())) => (StatusCode::OK, "ready"),
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable")
        }
        Err(_) => {
            tracing::warn!(
                "readiness check failed: the database did not answer within {READY_DEADLINE:?}"
            );
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable")
        }
    }
}
