//! `POST /register`: Dynamic Client Registration (RFC 7591).
//!
//! Behind the per-address rate limit and a 16 KiB body cap (see
//! [`super::api_router`]). The checks are [`crate::oauth::registration`]'s;
//! a refusal is `invalid_redirect_uri` or `invalid_client_metadata`. The
//! answer is 201 with the registered metadata, the client secret (once) for
//! a confidential client, `Cache-Control: no-store`, and no `null`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error::no_store;
use crate::oauth::error::OAuthError;
use crate::oauth::registration;
use crate::state::AppState;

pub async fn register(State(state): State<AppState>, body: Bytes) -> Result<Response, OAuthError> {
    let json: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|_| OAuthError::InvalidClientMetadata("the body must be a JSON object".into()))?;
    let validated = registration::validate(&json)?;
    let registered = registration::register(&state.store, &validated, state.clock.now()).await?;
    tracing::info!(client_id = %registered.client_id, "client registered itself");
    let mut response = (StatusCode::CREATED, Json(registered.response())).into_response();
    no_store(response.headers_mut());
    Ok(response)
}
