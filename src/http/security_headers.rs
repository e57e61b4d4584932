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
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";

pub async fn apply(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        // Not `no-referrer`: with it Chromium sends `Origin: null` on a
        // same-site form POST, which the same-origin check must refuse.
        // `same-origin` keeps our URLs from other sites all the same.
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    response
}

use axum::http::HeaderName;
