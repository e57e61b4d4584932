//! The DPoP headers (RFC 9449) as `/token` and `/mcp` read and write them;
//! what a proof means is [`crate::oauth::dpop`]'s.

use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// The request header carrying a proof.
pub const PROOF_HEADER: HeaderName = HeaderName::from_static("dpop");
/// The response header carrying a server nonce (RFC 9449 §8).
pub const NONCE_HEADER: HeaderName = HeaderName::from_static("dpop-nonce");

/// Every `DPoP` header value, in order; one that is not visible ASCII is
/// kept as an empty (so malformed) proof rather than dropped.
pub fn proofs(headers: &HeaderMap) -> Vec<&str> {
    headers
        .get_all(PROOF_HEADER)
        .iter()
        .map(|v| v.to_str().unwrap_or(""))
        .collect()
}

/// Hands the client the current nonce.
pub fn offer_nonce(headers: &mut HeaderMap, nonce: &str) {
    if let Ok(value) = HeaderValue::from_str(nonce) {
        headers.insert(NONCE_HEADER, value);
    }
}
