//! `GET /jwks.json`: the public keys that verify Coop's access tokens: the
//! active one and every retired one whose tokens may still be alive.
//!
//! The key set is re-read from the store when this process last read it
//! more than a second ago, so a `coop keys rotate` run by the operator (in
//! another process) is published at once without a query per request.

use std::time::Duration;

use axum::extract::State;
use axum::response::Response;

use crate::http::documents::cacheable_json;
use crate::state::AppState;

pub async fn show(State(state): State<AppState>) -> Response {
    if let Err(err) = state
        .keys
        .reload_if_older_than(Duration::from_secs(1), state.clock.now())
        .await
    {
        // The keys in memory are still right for everything this process
        // signed; serve them rather than fail.
        tracing::warn!(error = %err, "could not reload signing keys");
    }
    cacheable_json(state.keys.jwks().await)
}
