//! `GET /.well-known/oauth-protected-resource/mcp` (and the root form): the
//! RFC 9728 document. Headers such as an unknown `MCP-Protocol-Version` are
//! ignored.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::mcp::resource_metadata;
use crate::state::AppState;

pub async fn show(State(state): State<AppState>) -> Response {
    let mut response = Json(resource_metadata::document(&state.issuer)).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}
