//! Errors of the token, registration and revocation endpoints, in the
//! vocabulary of RFC 6749 §5.2, RFC 7591 §3.2.2 and RFC 8707.
//!
//! Each variant is one wire `error` code. The `String` a variant carries is
//! for the operator's log only: the HTTP layer (`http::oauth::error`) sends
//! a fixed, generic description per code, so nothing internal (which check
//! failed on a code, a database message) reaches the client. Storage and key
//! failures convert through `From`, which is what makes "a storage failure
//! is never `invalid_grant`" hold by construction: no code path can turn a
//! `StoreError` into a grant error without naming it. A database out of
//! reach is [`OAuthError::Unavailable`] (503 `temporarily_unavailable` with
//! `Retry-After`: the client keeps its tokens and tries again), anything
//! else [`OAuthError::ServerError`].

use std::time::Duration;

use crate::oauth::cimd::{Limit, Throttle};
use crate::oauth::keys::KeyError;
use crate::storage::{RETRY_AFTER_UNAVAILABLE, StoreError};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OAuthError {
    /// A parameter is missing, repeated or malformed; the text is safe to
    /// show (it names the parameter, never a secret).
    #[error("invalid_request: {0}")]
    InvalidRequest(String),
    /// Client authentication failed. `basic` records whether the client
    /// tried HTTP Basic, which earns a `WWW-Authenticate: Basic` challenge.
    #[error("invalid_client: {reason}")]
    InvalidClient { reason: String, basic: bool },
    #[error("invalid_grant: {0}")]
    InvalidGrant(String),
    #[error("unauthorized_client: {0}")]
    UnauthorizedClient(String),
    #[error("unsupported_grant_type")]
    UnsupportedGrantType,
    #[error("invalid_scope: {0}")]
    InvalidScope(String),
    #[error("invalid_target: {0}")]
    InvalidTarget(String),
    /// The request's DPoP proof (RFC 9449 §5) is not acceptable; why, for
    /// the log.
    #[error("invalid_dpop_proof: {0}")]
    InvalidDpopProof(String),
    /// The proof must carry a server nonce: this one, sent back in the
    /// `DPoP-Nonce` header (RFC 9449 §8).
    #[error("use_dpop_nonce")]
    UseDpopNonce(String),
    /// Registration (RFC 7591): a redirect URI Coop will not accept.
    #[error("invalid_redirect_uri: {0}")]
    InvalidRedirectUri(String),
    /// Registration (RFC 7591): any other refused field.
    #[error("invalid_client_metadata: {0}")]
    InvalidClientMetadata(String),
    /// A body that is not the media type the endpoint takes (registration:
    /// only `application/json`, which a cross-site page cannot send without
    /// a CORS preflight). `invalid_request` on the wire, with status 415.
    #[error("unsupported media type: {0}")]
    UnsupportedMediaType(String),
    /// A per-network rate limit; retry after the duration.
    #[error("rate limited for {0:?}")]
    TooManyRequests(Duration),
    /// Coop cannot serve the request now for reasons that are not this
    /// client's doing (a limit on fetches shared by all, the database out of
    /// reach); retry after the duration.
    #[error("temporarily unavailable for {0:?}")]
    Unavailable(Duration),
    /// Anything that is Coop's fault. Always a 500 with a generic body.
    #[error("server_error: {0}")]
    ServerError(String),
}

impl OAuthError {
    /// The RFC `error` code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidRequest(_) | Self::UnsupportedMediaType(_) => "invalid_request",
            Self::InvalidClient { .. } => "invalid_client",
            Self::InvalidGrant(_) => "invalid_grant",
            Self::UnauthorizedClient(_) => "unauthorized_client",
            Self::UnsupportedGrantType => "unsupported_grant_type",
            Self::InvalidScope(_) => "invalid_scope",
            Self::InvalidTarget(_) => "invalid_target",
            Self::InvalidDpopProof(_) => "invalid_dpop_proof",
            Self::UseDpopNonce(_) => "use_dpop_nonce",
            Self::InvalidRedirectUri(_) => "invalid_redirect_uri",
            Self::InvalidClientMetadata(_) => "invalid_client_metadata",
            Self::TooManyRequests(_) | Self::Unavailable(_) => "temporarily_unavailable",
            Self::ServerError(_) => "server_error",
        }
    }

    pub fn invalid_request(why: impl Into<String>) -> Self {
        Self::InvalidRequest(why.into())
    }

    pub fn invalid_grant(why: impl Into<String>) -> Self {
        Self::InvalidGrant(why.into())
    }

    pub fn invalid_client(why: impl Into<String>, basic: bool) -> Self {
        Self::InvalidClient {
            reason: why.into(),
            basic,
        }
    }
}

impl From<StoreError> for OAuthError {
    fn from(err: StoreError) -> Self {
        if err.is_unavailable() {
            // The one log line of the outage for this request; the client
            // sees only "retry later".
            tracing::warn!(error = %err, "OAuth request not served: the database is unavailable");
            return Self::Unavailable(RETRY_AFTER_UNAVAILABLE);
        }
        Self::ServerError(format!("store: {err}"))
    }
}

/// A metadata document or key set that a fetch limit keeps Coop from
/// fetching now (threat 33): the client is not at fault, so never
/// `invalid_client` (which would tell it its identity is bad). The
/// requester's own network's budget is 429, like the endpoint's own rate
/// limit; the limits on fetches in progress (over everyone, and a network's
/// share of them) and per host are 503: a place frees within seconds.
impl From<Throttle> for OAuthError {
    fn from(throttle: Throttle) -> Self {
        match throttle.limit {
            Limit::Network => Self::TooManyRequests(throttle.retry_after),
            Limit::Host | Limit::InFlight | Limit::NetworkInFlight => {
                Self::Unavailable(throttle.retry_after)
            }
        }
    }
}

impl From<KeyError> for OAuthError {
    fn from(err: KeyError) -> Self {
        match err {
            KeyError::Store(err) => err.into(),
            err => Self::ServerError(format!("signing keys: {err}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_storage_failure_is_a_server_error_or_unavailable_never_a_grant_error() {
        for err in [
            StoreError::NotFound,
            StoreError::Conflict("x".into()),
            StoreError::backend("boom"),
        ] {
            assert_eq!(OAuthError::from(err).code(), "server_error");
        }
        for err in [
            StoreError::from(sqlx::Error::PoolTimedOut),
            StoreError::from(sqlx::Error::Io(
                std::io::ErrorKind::ConnectionRefused.into(),
            )),
        ] {
            assert_eq!(
                OAuthError::from(err),
                OAuthError::Unavailable(RETRY_AFTER_UNAVAILABLE)
            );
        }
        assert_eq!(
            OAuthError::from(KeyError::Store(StoreError::from(sqlx::Error::PoolTimedOut))),
            OAuthError::Unavailable(RETRY_AFTER_UNAVAILABLE)
        );
    }

    /// The wire code of each variant, as RFC 6749 §5.2, RFC 7591 §3.2.2,
    /// RFC 8707 and RFC 9449 spell it.
    #[test]
    fn each_variant_sends_its_rfc_code() {
        let x = || "x".to_owned();
        let second = Duration::from_secs(1);
        for (err, code) in [
            (OAuthError::InvalidRequest(x()), "invalid_request"),
            (OAuthError::UnsupportedMediaType(x()), "invalid_request"),
            (OAuthError::invalid_client(x(), true), "invalid_client"),
            (OAuthError::InvalidGrant(x()), "invalid_grant"),
            (OAuthError::UnauthorizedClient(x()), "unauthorized_client"),
            (OAuthError::UnsupportedGrantType, "unsupported_grant_type"),
            (OAuthError::InvalidScope(x()), "invalid_scope"),
            (OAuthError::InvalidTarget(x()), "invalid_target"),
            (OAuthError::InvalidDpopProof(x()), "invalid_dpop_proof"),
            (OAuthError::UseDpopNonce(x()), "use_dpop_nonce"),
            (OAuthError::InvalidRedirectUri(x()), "invalid_redirect_uri"),
            (
                OAuthError::InvalidClientMetadata(x()),
                "invalid_client_metadata",
            ),
            (
                OAuthError::TooManyRequests(second),
                "temporarily_unavailable",
            ),
            (OAuthError::Unavailable(second), "temporarily_unavailable"),
            (OAuthError::ServerError(x()), "server_error"),
        ] {
            assert_eq!(err.code(), code, "{err:?}");
        }
        assert_eq!(
            OAuthError::invalid_client("why", false),
            OAuthError::InvalidClient {
                reason: "why".into(),
                basic: false
            }
        );
        assert_eq!(
            OAuthError::invalid_request("why"),
            OAuthError::InvalidRequest("why".into())
        );
        assert_eq!(
            OAuthError::invalid_grant("why"),
            OAuthError::InvalidGrant("why".into())
        );
    }

    /// Only the requester's own fetch limit is its doing (429); the limits
    /// everyone shares are Coop's (503). Neither blames its identity.
    #[test]
    fn a_fetch_limit_is_429_for_the_requester_and_503_for_everyone() {
        let wait = Duration::from_secs(7);
        let throttled = |limit| {
            OAuthError::from(Throttle {
                limit,
                retry_after: wait,
            })
        };
        assert_eq!(throttled(Limit::Network), OAuthError::TooManyRequests(wait));
        assert_eq!(throttled(Limit::Host), OAuthError::Unavailable(wait));
        assert_eq!(throttled(Limit::InFlight), OAuthError::Unavailable(wait));
        assert_eq!(
            throttled(Limit::NetworkInFlight),
            OAuthError::Unavailable(wait)
        );
        assert_eq!(
            OAuthError::from(KeyError::NoActiveKey).code(),
            "server_error"
        );
    }
}
