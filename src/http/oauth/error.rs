//! OAuth clients' errors: where an [`OAuthError`] becomes an RFC 6749
//! answer (the rule for every kind of client: [`crate::http`]).
//!
//! JSON endpoints (`/token`, `/revoke`, `/register`, `/introspect`) answer
//! RFC 6749 §5.2 bodies: `error` and a fixed `error_description` per code,
//! with `Cache-Control: no-store`. The internal reason a variant carries
//! goes to the log only (for `invalid_grant` and `server_error` it could
//! name what was wrong with a code, or a database message). `invalid_client`
//! is a 401, with a `WWW-Authenticate: Basic` challenge when the client
//! tried Basic.
//!
//! The authorization endpoint's refusals, once the redirect URI is trusted,
//! go back to the client: a redirect carrying `error`, `state` and `iss`
//! ([`refusal_redirect`]). Before that they are pages
//! ([`PageError::Authorization`]).

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use crate::domain::Issuer;
use crate::http::error::PageError;
use crate::oauth::approval;
use crate::oauth::authorize::RedirectRefusal;
use crate::oauth::error::OAuthError;

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let (status, description): (StatusCode, String) = match &self {
            Self::InvalidRequest(why)
            | Self::UnauthorizedClient(why)
            | Self::InvalidScope(why)
            | Self::InvalidTarget(why)
            | Self::InvalidRedirectUri(why)
            | Self::InvalidClientMetadata(why) => (StatusCode::BAD_REQUEST, why.clone()),
            Self::UnsupportedMediaType(why) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, why.clone()),
            Self::InvalidClient { reason, .. } => {
                tracing::info!(reason = %reason, "client authentication failed");
                (
                    StatusCode::UNAUTHORIZED,
                    "client authentication failed".to_owned(),
                )
            }
            Self::InvalidGrant(reason) => {
                tracing::info!(reason = %reason, "token request refused: invalid_grant");
                (
                    StatusCode::BAD_REQUEST,
                    "the code or refresh token is invalid, expired, already used, revoked, or was issued to another client"
                        .to_owned(),
                )
            }
            Self::InvalidDpopProof(reason) => {
                tracing::info!(reason = %reason, "token request refused: invalid_dpop_proof");
                (
                    StatusCode::BAD_REQUEST,
                    "the DPoP proof is malformed, expired, replayed, or does not match this request"
                        .to_owned(),
                )
            }
            Self::UseDpopNonce(_) => (
                StatusCode::BAD_REQUEST,
                "the DPoP proof must carry the nonce in the DPoP-Nonce header".to_owned(),
            ),
            Self::UnsupportedGrantType => (
                StatusCode::BAD_REQUEST,
                "supported grant types: authorization_code, refresh_token".to_owned(),
            ),
            Self::TooManyRequests(_) => (
                StatusCode::TOO_MANY_REQUESTS,
                "too many requests from this address; retry later".to_owned(),
            ),
            Self::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "the server cannot handle this request now; retry later".to_owned(),
            ),
            Self::ServerError(detail) => {
                tracing::error!(detail = %detail, "OAuth request failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "something went wrong on the server; retry later".to_owned(),
                )
            }
        };
        let body = serde_json::json!({
            "error": self.code(),
            "error_description": description,
        });
        let mut response = (status, Json(body)).into_response();
        let headers = response.headers_mut();
        no_store(headers);
        match &self {
            Self::InvalidClient { basic: true, .. } => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Basic realm=\"coop\""),
                );
            }
            Self::UseDpopNonce(nonce) => crate::http::dpop::offer_nonce(headers, nonce),
            Self::TooManyRequests(wait) | Self::Unavailable(wait) => {
                if let Ok(value) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
                    headers.insert(header::RETRY_AFTER, value);
                }
            }
            _ => {}
        }
        response
    }
}

/// `Cache-Control: no-store` and `Pragma: no-cache` (RFC 6749 §5.1).
pub fn no_store(headers: &mut axum::http::HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

/// Sends a refusal back to the client's validated redirect URI, with
/// `state` (when sent) and `iss`.
pub fn refusal_redirect(
    redirect_uri: &str,
    refusal: &RedirectRefusal,
    state: Option<&str>,
    issuer: &Issuer,
) -> Response {
    match approval::error_redirect(redirect_uri, refusal, state, issuer) {
        Some(url) => Redirect::to(&url).into_response(),
        None => {
            PageError::Internal("a validated redirect URI did not parse".into()).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(response: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn each_error_has_its_status_code_and_no_store() {
        let cases = [
            (
                OAuthError::invalid_request("x is required"),
                400,
                "invalid_request",
            ),
            (
                OAuthError::invalid_client("unknown", false),
                401,
                "invalid_client",
            ),
            (
                OAuthError::invalid_grant("secret detail"),
                400,
                "invalid_grant",
            ),
            (
                OAuthError::UnauthorizedClient("no".into()),
                400,
                "unauthorized_client",
            ),
            (
                OAuthError::UnsupportedGrantType,
                400,
                "unsupported_grant_type",
            ),
            (OAuthError::InvalidScope("no".into()), 400, "invalid_scope"),
            (
                OAuthError::InvalidTarget("no".into()),
                400,
                "invalid_target",
            ),
            (
                OAuthError::UnsupportedMediaType("send application/json".into()),
                415,
                "invalid_request",
            ),
            (
                OAuthError::InvalidDpopProof("secret detail".into()),
                400,
                "invalid_dpop_proof",
            ),
            (
                OAuthError::UseDpopNonce("n-1".into()),
                400,
                "use_dpop_nonce",
            ),
            (
                OAuthError::ServerError("db password=hunter2".into()),
                500,
                "server_error",
            ),
            (
                OAuthError::TooManyRequests(std::time::Duration::from_secs(3)),
                429,
                "temporarily_unavailable",
            ),
            (
                OAuthError::Unavailable(std::time::Duration::from_secs(5)),
                503,
                "temporarily_unavailable",
            ),
        ];
        for (error, status, code) in cases {
            let response = error.into_response();
            assert_eq!(response.status().as_u16(), status, "{code}");
            assert_eq!(response.headers()["cache-control"], "no-store", "{code}");
            let json = body(response).await;
            assert_eq!(json["error"], code);
            let text = json.to_string();
            assert!(
                !text.contains("secret detail") && !text.contains("hunter2"),
                "{text}"
            );
        }
    }

    #[tokio::test]
    async fn basic_clients_get_a_basic_challenge_and_rate_limits_a_retry_after() {
        let response = OAuthError::invalid_client("bad secret", true).into_response();
        assert_eq!(
            response.headers()["www-authenticate"],
            "Basic realm=\"coop\""
        );
        let response = OAuthError::invalid_client("bad secret", false).into_response();
        assert!(response.headers().get("www-authenticate").is_none());
        let response =
            OAuthError::TooManyRequests(std::time::Duration::from_secs(7)).into_response();
        assert_eq!(response.headers()["retry-after"], "7");
        let response = OAuthError::Unavailable(std::time::Duration::from_secs(5)).into_response();
        assert_eq!(response.headers()["retry-after"], "5");
        let response = OAuthError::UseDpopNonce("n-1".into()).into_response();
        assert_eq!(response.headers()["dpop-nonce"], "n-1");
    }
}
