//! Headers every response carries.
//!
//! The content security policy allows no script at all and styles only from
//! Coop's own `/static`; `frame-ancestors 'none'` and `X-Frame-Options` stop
//! the consent button being framed by another site (clickjacking). There is
//! deliberately no `form-action`: browsers apply it to the redirect that
//! follows the consent form, which goes to the client's own redirect URI.
//! The referrer policy is `same-origin`: no URL of Coop's (a consent
//! request id, a grant id) leaves for another site.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";

const EVERY_RESPONSE: [(HeaderName, &str); 5] = [
    (header::CONTENT_SECURITY_POLICY, CSP),
    (header::X_FRAME_OPTIONS, "DENY"),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    // Not `no-referrer`: with it Chromium sends `Origin: null` on a
    // same-site form POST, which the same-origin check must refuse.
    // `same-origin` keeps our URLs from other sites all the same.
    (header::REFERRER_POLICY, "same-origin"),
    (
        HeaderName::from_static("cross-origin-opener-policy"),
        "same-origin",
    ),
];

pub async fn apply(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    insert_all(response.headers_mut(), &EVERY_RESPONSE);
    response
}

/// Sets each of `pairs`, replacing what the header held.
pub fn insert_all(headers: &mut HeaderMap, pairs: &[(HeaderName, &'static str)]) {
    for (name, value) in pairs {
        headers.insert(name.clone(), HeaderValue::from_static(value));
    }
}
