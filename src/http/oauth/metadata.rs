//! `GET /.well-known/oauth-authorization-server` and
//! `GET /.well-known/openid-configuration`: the same RFC 8414 document.
//! Headers such as an unknown `MCP-Protocol-Version` are ignored.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::oauth::metadata;
use crate::state::AppState;

pub async fn show(State(state): State<AppState>) -> Response {
    let mut response = Json(metadata::document(&state.issuer)).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}
