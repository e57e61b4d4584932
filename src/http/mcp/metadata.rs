//! `GET /.well-known/oauth-protected-resource/mcp` (and the root form): the
//! RFC 9728 document. Headers such as an unknown `MCP-Protocol-Version` are
//! ignored.

use axum::extract::State;
use axum::response::Response;

use crate::http::documents::cacheable_json;
use crate::mcp::resource_metadata;
use crate::state::AppState;

pub async fn show(State(state): State<AppState>) -> Response {
    cacheable_json(resource_metadata::document(&state.issuer))
}
