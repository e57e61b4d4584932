//! `POST /register`: Dynamic Client Registration (RFC 7591).
//!
//! Behind the per-network rate limit and a 16 KiB body cap (see
//! [`super::api_router`]). The body must be declared `application/json`
//! (415 `invalid_request` otherwise: a page on another site can post
//! `text/plain` or a form without asking, but not JSON, whose CORS
//! preflight comes first) and be one JSON object naming each member once.
//! The checks are [`crate::oauth::registration`]'s; a refusal is
//! `invalid_redirect_uri` or `invalid_client_metadata`. The
//! answer is 201 with the registered metadata, the client secret (once) for
//! a confidential client, `Cache-Control: no-store`, and no `null`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::no_store;
use crate::oauth::error::OAuthError;
use crate::oauth::registration;
use crate::state::AppState;

pub async fn register(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, OAuthError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("?"));
    registration::check_media_type(content_type)?;
    let json = registration::parse_body(&body)?;
    let validated = registration::validate(&json)?;
    let registered = registration::register(&state.store, &validated, state.clock.now()).await?;
    tracing::info!(client_id = %registered.client_id, "client registered itself");
    let mut response = (StatusCode::CREATED, Json(registered.response())).into_response();
    no_store(response.headers_mut());
    Ok(response)
}
