//! Per-client-address rate limits for `/token` and `/register` (threat 14).
//!
//! The counters are in memory and per replica, like the sign-in throttle:
//! N replicas give an address N times the budget, which still bounds a
//! flood. Behind a reverse proxy every request shares the proxy's address,
//! so the limits are settings (0 turns one off) to be sized for that.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::http::rate_limit::KeyedLimit;
use crate::oauth::error::OAuthError;

/// One limit, keyed by client address.
pub type AddressLimit = KeyedLimit<IpAddr>;

/// Middleware: refuses with 429 (`Retry-After`) once the address's budget
/// is spent. Requests without a peer address (none in practice: the server
/// is always built with connect info) are not limited.
pub async fn limit(State(limit): State<AddressLimit>, request: Request, next: Next) -> Response {
    let address = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| peer.ip());
    if let Some(address) = address
        && let Err(wait) = limit.check(address)
    {
        tracing::info!(%address, "rate limit reached");
        return OAuthError::TooManyRequests(wait).into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_limit_counts_per_address_and_zero_is_off() {
        let limit = AddressLimit::new(2, Duration::from_secs(60));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        assert!(limit.check(a).is_ok());
        assert!(limit.check(a).is_ok());
        let wait = limit.check(a).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert!(limit.check(b).is_ok());
        let off = AddressLimit::new(0, Duration::from_secs(60));
        for _ in 0..100 {
            assert!(off.check(a).is_ok());
        }
    }
}
