//! CORS for the JSON endpoints, so browser-based MCP clients (web IDEs,
//! a page doing its own OAuth) can discover, exchange and revoke.
//!
//! Any origin is allowed and credentials never are ([`allow_any_origin`]):
//! these endpoints read no cookie, so a foreign page gains nothing it could
//! not do from its own server. The browser pages (consent, sign-in) get no
//! CORS headers at all. A browser client may send a `DPoP` proof and read a
//! `DPoP-Nonce` (RFC 9449).
//!
//! `/register` is the exception ([`allow_pages_on_this_computer`]): a page
//! of any web site registering through its visitors' browsers would make
//! every visitor a fresh network past the per-network limit (threat 38).
//! Its body must be `application/json`, which a browser sends across
//! origins only after a preflight, and the preflight is granted only to a
//! page served from the person's own computer (the MCP Inspector's,
//! `http://localhost:6274`, in its "Direct" mode), never to a web site
//! (docs/decisions/cross-origin-registration.md).

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::domain::this_computer::is_on_this_computer;
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

fn is_preflight(request: &Request) -> bool {
    request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

fn granted_preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    insert_all(response.headers_mut(), &PREFLIGHT);
    response
}

pub async fn allow_any_origin(request: Request, next: Next) -> Response {
    let mut response = if is_preflight(&request) {
        granted_preflight()
    } else {
        next.run(request).await
    };
    insert_all(response.headers_mut(), &EVERY_ANSWER);
    response
}

/// The request's `Origin` when it is a page served from this computer.
fn origin_on_this_computer(headers: &HeaderMap) -> Option<HeaderValue> {
    headers
        .get(header::ORIGIN)
        .filter(|origin| origin.to_str().is_ok_and(is_on_this_computer))
        .cloned()
}

/// CORS for `/register`: the preflight and the answer name a page of this
/// computer as the one origin allowed; a preflight from any other origin
/// (or none) is refused, 403 with no `Access-Control-*` header, so the
/// browser never sends the registration. Every answer varies by `Origin`.
pub async fn allow_pages_on_this_computer(request: Request, next: Next) -> Response {
    let allowed = origin_on_this_computer(request.headers());
    let mut response = match (is_preflight(&request), &allowed) {
        (true, Some(_)) => granted_preflight(),
        (true, None) => StatusCode::FORBIDDEN.into_response(),
        (false, _) => next.run(request).await,
    };
    let headers = response.headers_mut();
    if let Some(origin) = allowed {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    }
    headers.insert(header::VARY, HeaderValue::from_static("origin"));
    response
}
