//! The public JSON documents clients fetch before anything else (the
//! authorization server's and the resource's metadata, the key set): the
//! same for every caller, so any cache may keep them for five minutes.

use axum::Json;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// `document` as JSON, cacheable by anyone for five minutes.
pub fn cacheable_json(document: impl Serialize) -> Response {
    let mut response = Json(document).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}
