//! Every per-requester rate limit counts a network, not an address (issue
//! 31, threat 47): requests from two IPv6 addresses of one /64 spend one
//! budget at `/register`, `/token`, `/revoke` and `/introspect`, and
//! another /64 has its own. The server listens on `[::1]`; the requests
//! come from addresses added to `lo` for the test ([`helpers::ipv6`]).
//!
//! How an address becomes a network is `src/domain/network.rs`'s, unit
//! tested there; that the limits key by it without root:
//! `src/http/oauth/rate_limit.rs`. The sign-in throttle and the metadata
//! document fetch budgets use the same grouping.
//!
//! [`helpers::ipv6`]: crate::helpers::ipv6

use serde_json::json;

use crate::helpers::ipv6::{self, Ipv6Networks};
use crate::helpers::oauth::{REDIRECT_URI, assert_oauth_error};
use crate::helpers::{Engine, TestApp, retry_after};
use crate::on_both_engines;

on_both_engines!(two_addresses_of_one_64_share_each_budget_and_another_64_has_its_own);

/// Each limit's size in this test.
const BUDGET: u32 = 2;

#[derive(Clone, Copy, Debug)]
enum Endpoint {
    Register,
    Token,
    Revoke,
    Introspect,
}

impl Endpoint {
    /// The status a request of [`send`] gets while within the budget.
    fn served(self) -> u16 {
        match self {
            Self::Register => 201,
            // A made-up refresh token.
            Self::Token => 400,
            // Revoking an unknown token, or asking about one, is answered.
            Self::Revoke | Self::Introspect => 200,
        }
    }

    /// The longest `Retry-After` its limit can ask for: one request's share
    /// of the period.
    fn longest_wait(self) -> u64 {
        let period = match self {
            Self::Register => 3600,
            Self::Token | Self::Revoke | Self::Introspect => 60,
        };
        period / u64::from(BUDGET)
    }
}

/// The clients the requests name.
struct Clients {
    public: String,
    gateway: (String, String),
}

/// One cheap request to `endpoint`, sent from `from`.
async fn send(
    app: &TestApp,
    clients: &Clients,
    from: &reqwest::Client,
    endpoint: Endpoint,
) -> reqwest::Response {
    let public = clients.public.as_str();
    let request = match endpoint {
        Endpoint::Register => from
            .post(app.url("/register"))
            .json(&json!({"redirect_uris": [REDIRECT_URI]})),
        Endpoint::Token => from.post(app.url("/token")).form(&[
            ("grant_type", "refresh_token"),
            ("client_id", public),
            ("refresh_token", "made-up"),
        ]),
        Endpoint::Revoke => from
            .post(app.url("/revoke"))
            .form(&[("client_id", public), ("token", "made-up")]),
        Endpoint::Introspect => from
            .post(app.url("/introspect"))
            .basic_auth(&clients.gateway.0, Some(&clients.gateway.1))
            .form(&[("token", "made-up")]),
    };
    request.send().await.unwrap()
}

/// The status [`send`] gets.
async fn status(
    app: &TestApp,
    clients: &Clients,
    from: &reqwest::Client,
    endpoint: Endpoint,
) -> u16 {
    send(app, clients, from, endpoint).await.status().as_u16()
}

async fn two_addresses_of_one_64_share_each_budget_and_another_64_has_its_own(engine: Engine) {
    let Some(networks) = Ipv6Networks::add(&[2, 1]) else {
        return;
    };
    let app = TestApp::spawn_with(engine, |config| {
        config.bind = ipv6::LISTEN.parse().unwrap();
        config.register_rate_limit = BUDGET;
        config.token_rate_limit = BUDGET;
        config.introspection_rate_limit = BUDGET;
    })
    .await;
    // Made from ::1, a network of its own.
    let clients = Clients {
        public: app.register_public_client().await,
        gateway: app.introspector().await,
    };
    let (one, other_of_one, elsewhere) = (
        networks.client(0, 1),
        networks.client(0, 2),
        networks.client(1, 1),
    );
    for endpoint in [
        Endpoint::Register,
        Endpoint::Token,
        Endpoint::Revoke,
        Endpoint::Introspect,
    ] {
        let served = endpoint.served();
        assert_eq!(
            status(&app, &clients, &one, endpoint).await,
            served,
            "{endpoint:?}"
        );
        let second = status(&app, &clients, &other_of_one, endpoint).await;
        assert_eq!(second, served, "{endpoint:?}");
        // The /64's budget is spent, though this address has sent only one.
        let refused = send(&app, &clients, &other_of_one, endpoint).await;
        let wait = retry_after(&refused);
        assert!(
            (1..=endpoint.longest_wait()).contains(&wait),
            "{endpoint:?}: Retry-After {wait}"
        );
        assert_oauth_error(refused, 429, "temporarily_unavailable").await;
        assert_eq!(
            status(&app, &clients, &one, endpoint).await,
            429,
            "{endpoint:?}"
        );
        // Another /64 is not held back.
        let another_64 = status(&app, &clients, &elsewhere, endpoint).await;
        assert_eq!(another_64, served, "{endpoint:?}");
    }
}
