//! `POST /token`: the `authorization_code` and `refresh_token` grants, and
//! `client_credentials` for automations (whose `client_id` says they are
//! one, so they never reach the OAuth clients' authentication).
//!
//! Client authentication first (`none`, `client_secret_basic` with the id
//! possibly only in the header, or `client_secret_post`), then the grant
//! ([`crate::oauth::token`]: check everything, then spend). Parameters must
//! not repeat. Every answer has `Cache-Control: no-store`; errors are RFC
//! 6749 JSON (see [`super::error`]). Rate limited per network
//! ([`super::rate_limit`]).
//!
//! A `DPoP` header makes the tokens bound to its key. The proof is checked
//! ([`crate::oauth::dpop::check_at_token_endpoint`]) first, before the
//! client is authenticated, because authenticating spends a client
//! assertion's `jti` and a proof's refusal (`use_dpop_nonce` above all)
//! sends the client back to retry with the same assertion (issue 31); its
//! own `jti` is spent once the client is known, before the grant runs.
//! While nonces are required every answer to a token request carries the
//! current one in `DPoP-Nonce`.

use axum::Json;
use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use super::client_credentials;
use super::error::no_store;
use crate::oauth::client_auth;
use crate::oauth::dpop;
use crate::oauth::error::OAuthError;
use crate::oauth::token::client_credentials as automations;
use crate::oauth::token::{self, TokenContext};
use crate::state::AppState;

pub async fn token(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OAuthError> {
    let now = state.clock.now();
    let (form, presented) = client_credentials::presented(&headers, &body)?;
    let ctx = context(&state);
    let cimd = state.cimd.for_peer(peer.ip());
    let proofs = crate::http::dpop::proofs(&headers);
    let proof = dpop::check_at_token_endpoint(&state.dpop, &state.issuer, &proofs, now)?;
    // An automation's client_id is never an OAuth client's: it is
    // authenticated as the automation, and may only ask for its own grant.
    if let Some(automation) = automations::names_an_automation(&presented) {
        let automation =
            automations::authenticate(&ctx, &cimd, automation, &presented, now).await?;
        let request = automations::parse(&form)?;
        let proof = spend(&state, proof, now).await?;
        let issued =
            automations::exchange(&ctx, &automation, &request, proof.as_ref(), now).await?;
        return Ok(answer(&state, issued, now));
    }
    let client =
        client_auth::authenticate(&state.store, &cimd, &state.issuer, &presented, now).await?;
    let request = token::parse(&form)?;
    let proof = spend(&state, proof, now).await?;
    let issued = token::exchange(&ctx, &client, request, proof.as_ref(), now).await?;
    Ok(answer(&state, issued, now))
}

/// The request's checked DPoP proof, spent, if it sent one.
async fn spend(
    state: &AppState,
    proof: Option<dpop::UnspentProof>,
    now: time::OffsetDateTime,
) -> Result<Option<dpop::Proof>, OAuthError> {
    match proof {
        Some(proof) => Ok(Some(proof.spend(&state.store, &state.dpop, now).await?)),
        None => Ok(None),
    }
}

/// The token response, not to be stored, with the current nonce while
/// nonces are required.
fn answer(state: &AppState, issued: token::TokenResponse, now: time::OffsetDateTime) -> Response {
    let mut response = Json(issued).into_response();
    no_store(response.headers_mut());
    if state.dpop.requires_nonce() {
        crate::http::dpop::offer_nonce(response.headers_mut(), &state.dpop.fresh_nonce(now));
    }
    response
}

/// What the protocol's token functions need from the running server.
pub fn context(state: &AppState) -> TokenContext<'_> {
    TokenContext {
        store: &state.store,
        keys: &state.keys,
        issuer: &state.issuer,
        access_ttl: time::Duration::try_from(state.config.access_token_ttl)
            .unwrap_or(time::Duration::minutes(15)),
        reuse_window: time::Duration::try_from(state.config.refresh_reuse_window)
            .unwrap_or(time::Duration::ZERO),
    }
}
