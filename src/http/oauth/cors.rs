//! CORS for the JSON endpoints, so browser-based MCP clients (the MCP
//! Inspector, web IDEs) can discover, register, exchange and revoke.
//!
//! Any origin is allowed and credentials never are: these endpoints read no
//! cookie, so a foreign page gains nothing it could not do from its own
//! server. The browser pages (consent, sign-in) get no CORS headers at all.
//! A browser client may send a `DPoP` proof and read a `DPoP-Nonce`
//! (RFC 9449).

use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub async fn allow_any_origin(request: Request, next: Next) -> Response {
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut response = if preflight {
        let mut response = StatusCode::NO_CONTENT.into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, OPTIONS"),
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("authorization, content-type, mcp-protocol-version, dpop"),
        );
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
        response
    } else {
        next.run(request).await
    };
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response.headers_mut().insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("dpop-nonce"),
    );
    response
}
