//! CORS for the JSON endpoints, so browser-based MCP clients (the MCP
//! Inspector, web IDEs) can discover, register, exchange and revoke.
//!
//! Any origin is allowed and credentials never are: these endpoints read no
//! cookie, so a foreign page gains nothing it could not do from its own
//! server. The browser pages (consent, sign-in) get no CORS headers at all.
//! A browser client may send a `DPoP` proof and read a `DPoP-Nonce`
//! (RFC 9449).

use axum::extract::Request;
use axum::http::{HeaderName, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::http::security_headers::insert_all;

const PREFLIGHT: [(HeaderName, &str); 3] = [
    (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, OPTIONS"),
    (
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        "authorization, content-type, mcp-protocol-version, dpop",
    ),
    (header::ACCESS_CONTROL_MAX_AGE, "600"),
];

const EVERY_ANSWER: [(HeaderName, &str); 2] = [
    (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
    (header::ACCESS_CONTROL_EXPOSE_HEADERS, "dpop-nonce"),
];

pub async fn allow_any_origin(request: Request, next: Next) -> Response {
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut response = if preflight {
        let mut response = StatusCode::NO_CONTENT.into_response();
        insert_all(response.headers_mut(), &PREFLIGHT);
        response
    } else {
        next.run(request).await
    };
    insert_all(response.headers_mut(), &EVERY_ANSWER);
    response
}
