//! `POST /revoke`: token revocation (RFC 7009).
//!
//! The client authenticates as at `/token` (a public client sends only its
//! `client_id`). The answer is 200 with an empty body whether or not the
//! token was known, so revocation reveals nothing; see
//! [`crate::oauth::revocation`] for what revoking each kind of token does.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::client_credentials;
use super::error::no_store;
use super::token::context;
use crate::oauth::client_auth;
use crate::oauth::error::OAuthError;
use crate::oauth::params::Params;
use crate::oauth::revocation;
use crate::state::AppState;

pub async fn revoke(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OAuthError> {
    let now = state.clock.now();
    let form = Params::parse(&body);
    let presented = client_auth::presented(client_credentials::basic(&headers), &form)?;
    let cimd = state.cimd.for_peer(peer.ip());
    let client =
        client_auth::authenticate(&state.store, &cimd, &state.issuer, &presented, now).await?;
    let repeated = |name| OAuthError::invalid_request(format!("{name} is repeated"));
    let token = form
        .single("token")
        .map_err(repeated)?
        .ok_or_else(|| OAuthError::invalid_request("token is required"))?;
    let hint = form.single("token_type_hint").map_err(repeated)?;
    let done = revocation::revoke(&context(&state), &client, token, hint, now).await?;
    tracing::info!(client_id = %client.client_id, revoked = ?done, "revocation request");
    let mut response = StatusCode::OK.into_response();
    no_store(response.headers_mut());
    Ok(response)
}
