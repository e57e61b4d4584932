//! `POST /revoke`: token revocation (RFC 7009).
//!
//! The client authenticates as at `/token` (a public client sends only its
//! `client_id`). The answer is 200 with an empty body whether or not the
//! token was known, so revocation reveals nothing; see
//! [`crate::oauth::revocation`] for what revoking each kind of token does.
//! Rate limited per network, by a budget of its own as large as `/token`'s
//! ([`super::rate_limit`], `--token-rate-limit`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::client_credentials::ClientRequest;
use super::error::no_store;
use super::token::context;
use crate::oauth::error::OAuthError;
use crate::oauth::presented_token::TokenParams;
use crate::oauth::revocation;
use crate::state::AppState;

pub async fn revoke(
    State(state): State<AppState>,
    request: ClientRequest,
) -> Result<Response, OAuthError> {
    let ClientRequest {
        form, client, now, ..
    } = request;
    let token = TokenParams::parse(&form)?;
    let done = revocation::revoke(&context(&state), &client, &token, now).await?;
    tracing::info!(client_id = %client.client_id, revoked = ?done, "revocation request");
    let mut response = StatusCode::OK.into_response();
    no_store(response.headers_mut());
    Ok(response)
}
