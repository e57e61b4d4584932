//! `POST /introspect`: token introspection (RFC 7662), for resource servers
//! and gateways.
//!
//! The caller authenticates as at `/token` and must be a confidential
//! client registered for introspection; anyone else is 401
//! `invalid_client`. The answer is 200 JSON, `{"active": false}` for any
//! token that `/mcp` would refuse now ([`crate::oauth::introspection`] asks
//! [`crate::mcp::introspection`] about access tokens).
//! `Cache-Control: no-store`; rate limited per network ([`super::rate_limit`]).

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};

use super::client_credentials::ClientRequest;
use super::error::no_store;
use crate::mcp::introspection::Introspector;
use crate::oauth::error::OAuthError;
use crate::oauth::introspection::{self, require_introspector};
use crate::oauth::presented_token::TokenParams;
use crate::state::AppState;

pub async fn introspect(
    State(state): State<AppState>,
    request: ClientRequest,
) -> Result<Response, OAuthError> {
    let ClientRequest {
        form,
        presented,
        client: caller,
        now,
    } = request;
    require_introspector(&state.store, &caller, presented.basic).await?;
    let token = TokenParams::parse(&form)?;
    let access_tokens = Introspector {
        store: &state.store,
        keys: &state.keys,
        issuer: &state.issuer,
    };
    let answer =
        introspection::introspect(&state.store, &access_tokens, &caller, &token, now).await?;
    tracing::info!(client_id = %caller.client_id, active = answer.active, "introspection request");
    let mut response = Json(answer).into_response();
    no_store(response.headers_mut());
    Ok(response)
}
