//! `GET /.well-known/oauth-authorization-server` and
//! `GET /.well-known/openid-configuration`: the same RFC 8414 document.
//! Headers such as an unknown `MCP-Protocol-Version` are ignored.

use axum::extract::State;
use axum::response::Response;

use crate::http::documents::cacheable_json;
use crate::oauth::metadata;
use crate::state::AppState;

pub async fn show(State(state): State<AppState>) -> Response {
    cacheable_json(metadata::document(&state.issuer))
}
