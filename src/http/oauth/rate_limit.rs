//! Per-network rate limits for `/register`, `/token`, `/revoke` and
//! `/introspect` (threats 14, 41, 47, 49).
//!
//! Each budget is keyed by the requester's [`Network`] (an IPv4 address, an
//! IPv6 /64), the grouping every per-requester budget shares: counted per
//! single IPv6 address, a client given a /64 would have 2^64 budgets.
//!
//! The counters are in memory and per replica: N replicas give a network N
//! times the budget, which still bounds a flood. Behind a reverse proxy
//! every request shares the proxy's address, so the limits are settings (0
//! turns one off) to be sized for that.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::domain::network::Network;
use crate::http::rate_limit::KeyedLimit;
use crate::oauth::error::OAuthError;

/// One limit, keyed by the requester's network.
pub type NetworkLimit = KeyedLimit<Network>;

/// Middleware: refuses with 429 (`Retry-After`) once the network's budget
/// is spent. Requests without a peer address (none in practice: the server
/// is always built with connect info) are not limited.
pub async fn limit(State(limit): State<NetworkLimit>, request: Request, next: Next) -> Response {
    let network = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| Network::of(peer.ip()));
    if let Some(network) = network
        && let Err(wait) = limit.check(network)
    {
        tracing::info!(%network, "rate limit reached");
        return OAuthError::TooManyRequests(wait).into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;
    use std::time::Duration;

    use axum::Router;
    use axum::body::Body;
    use axum::routing::post;
    use tower::ServiceExt;

    use super::*;

    /// A route behind a limit of `count` a minute.
    fn limited(count: u32) -> Router {
        Router::new().route("/", post(|| async { "served" })).layer(
            axum::middleware::from_fn_with_state(NetworkLimit::per_minute(count), limit),
        )
    }

    /// The status of a request from `address`, and its `Retry-After`.
    async fn from(app: &Router, address: &str) -> (u16, Option<u64>) {
        let peer = SocketAddr::new(address.parse::<IpAddr>().unwrap(), 40_000);
        let mut request = axum::http::Request::post("/").body(Body::empty()).unwrap();
        request.extensions_mut().insert(ConnectInfo(peer));
        let response = app.clone().oneshot(request).await.unwrap();
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().parse().unwrap());
        (response.status().as_u16(), retry_after)
    }

    #[test]
    fn a_limit_counts_per_network_and_zero_is_off() {
        let limit = NetworkLimit::new(2, Duration::from_secs(60));
        let a = Network::of("10.0.0.1".parse().unwrap());
        let b = Network::of("10.0.0.2".parse().unwrap());
        assert!(limit.check(a).is_ok());
        assert!(limit.check(a).is_ok());
        let wait = limit.check(a).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert!(limit.check(b).is_ok());
        let off = NetworkLimit::new(0, Duration::from_secs(60));
        for _ in 0..100 {
            assert!(off.check(a).is_ok());
        }
    }

    #[tokio::test]
    async fn the_addresses_of_one_64_share_a_budget_and_another_64_has_its_own() {
        let app = limited(2);
        assert_eq!(from(&app, "2001:db8:1:2::1").await, (200, None));
        assert_eq!(from(&app, "2001:db8:1:2::2").await, (200, None));
        let (status, retry_after) = from(&app, "2001:db8:1:2:ffff::3").await;
        assert_eq!(status, 429);
        assert!(
            retry_after.is_some_and(|s| (1..=30).contains(&s)),
            "{retry_after:?}"
        );
        assert_eq!(from(&app, "2001:db8:1:3::1").await, (200, None));
    }

    #[tokio::test]
    async fn an_ipv4_address_counts_alone_and_as_itself_when_mapped() {
        let app = limited(2);
        assert_eq!(from(&app, "192.0.2.1").await, (200, None));
        assert_eq!(from(&app, "::ffff:192.0.2.1").await, (200, None));
        assert_eq!(from(&app, "192.0.2.1").await.0, 429);
        assert_eq!(from(&app, "192.0.2.2").await, (200, None));
    }
}
