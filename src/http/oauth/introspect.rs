//! `POST /introspect`: token introspection (RFC 7662), for resource servers
//! and gateways.
//!
//! The caller authenticates as at `/token` and must be a confidential
//! client registered for introspection; anyone else is 401
//! `invalid_client`. The answer is 200 JSON, `{"active": false}` for any
//! token that `/mcp` would refuse now (see [`crate::mcp::introspection`]).
//! `Cache-Control: no-store`; rate limited per client address.

use std::net::SocketAddr;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use super::client_credentials;
use super::error::no_store;
use crate::mcp::introspection::{self, Introspector};
use crate::oauth::client_auth;
use crate::oauth::error::OAuthError;
use crate::oauth::introspection::require_introspector;
use crate::oauth::params::Params;
use crate::state::AppState;

pub async fn introspect(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OAuthError> {
    let now = state.clock.now();
    let form = Params::parse(&body);
    let presented = client_auth::presented(client_credentials::basic(&headers), &form)?;
    let cimd = state.cimd.for_peer(peer.ip());
    let caller =
        client_auth::authenticate(&state.store, &cimd, &state.issuer, &presented, now).await?;
    require_introspector(&state.store, &caller, presented.basic).await?;
    let repeated = |name| OAuthError::invalid_request(format!("{name} is repeated"));
    let token = form
        .single("token")
        .map_err(repeated)?
        .ok_or_else(|| OAuthError::invalid_request("token is required"))?;
    let hint = form.single("token_type_hint").map_err(repeated)?;
    let ctx = Introspector {
        store: &state.store,
        keys: &state.keys,
        issuer: &state.issuer,
    };
    let answer = introspection::introspect(&ctx, &caller, token, hint, now).await?;
    tracing::info!(client_id = %caller.client_id, active = answer.active, "introspection request");
    let mut response = Json(answer).into_response();
    no_store(response.headers_mut());
    Ok(response)
}
