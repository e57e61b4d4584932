//! The authorization server's endpoints, one file each.
//!
//! | endpoint | file | protocol |
//! |---|---|---|
//! | `GET /.well-known/oauth-authorization-server`, `…/openid-configuration` | [`metadata`] | [`crate::oauth::metadata`] |
//! | `GET /jwks.json` | [`jwks`] | [`crate::oauth::keys`] |
//! | `POST /register` | [`register`] | [`crate::oauth::registration`] |
//! | `GET /authorize` | [`authorize`] | [`crate::oauth::authorize`] |
//! | `GET`, `POST /authorize/consent`, `POST /authorize/confirm` | [`consent`] | [`crate::oauth::consent`] |
//! | `POST /token` | [`token`] | [`crate::oauth::token`] |
//! | `POST /revoke` | [`revoke`] | [`crate::oauth::revocation`] |
//! | `POST /introspect` | [`introspect`] | [`crate::mcp::introspection`], [`crate::oauth::introspection`] |
//!
//! Two routers: [`api_router`] for the JSON endpoints that clients call
//! directly (no cookies, CORS open to any origin since nothing there rests
//! on ambient credentials, but `/register`'s only to pages served from the
//! person's own computer ([`cors`]), small body caps, per-network rate
//! limits on `/register`, `/token`, `/revoke` and `/introspect`:
//! [`rate_limit`]), and [`browser_router`] for the pages, which
//! the caller puts behind the session layer and the same-origin POST check.
//! [`error`] is where an OAuth error becomes a response; a refusal shown
//! as a page goes through [`crate::http::error::PageError`] (the rule:
//! [`crate::http`]).

pub mod authorize;
pub mod client_credentials;
pub mod consent;
pub mod cors;
pub mod error;
pub mod introspect;
pub mod jwks;
pub mod metadata;
pub mod rate_limit;
pub mod register;
pub mod revoke;
pub mod token;

use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{MethodRouter, get, post};

use crate::config::Config;
use crate::state::AppState;
use rate_limit::NetworkLimit;

/// Token, revocation and consent forms are a few hundred bytes.
const FORM_LIMIT: usize = 8 * 1024;
/// A registration with ten long redirect URIs fits comfortably.
const REGISTRATION_LIMIT: usize = 16 * 1024;

/// The JSON endpoints clients call directly.
pub fn api_router(config: &Config) -> Router<AppState> {
    let token_limit = NetworkLimit::per_minute(config.token_rate_limit);
    // A budget of its own, of the token endpoint's size: revocation is
    // called by the same clients, far more rarely, and costs the same (a
    // client check, a look-up); sharing `/token`'s budget would let a
    // flood of revocations hold back a network's refreshes.
    let revocation_limit = NetworkLimit::per_minute(config.token_rate_limit);
    let register_limit = NetworkLimit::new(config.register_rate_limit, Duration::from_secs(3600));
    let introspection_limit = NetworkLimit::per_minute(config.introspection_rate_limit);
    // Its own CORS: a web page may not register through its visitors.
    let registration = Router::new()
        .route(
            "/register",
            limited(post(register::register), REGISTRATION_LIMIT, register_limit),
        )
        .layer(axum::middleware::from_fn(
            cors::allow_pages_on_this_computer,
        ));
    Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(metadata::show),
        )
        .route("/.well-known/openid-configuration", get(metadata::show))
        .route("/jwks.json", get(jwks::show))
        .route(
            "/token",
            limited(post(token::token), FORM_LIMIT, token_limit),
        )
        .route(
            "/revoke",
            limited(post(revoke::revoke), FORM_LIMIT, revocation_limit),
        )
        .route(
            "/introspect",
            limited(
                post(introspect::introspect),
                FORM_LIMIT,
                introspection_limit,
            ),
        )
        .layer(axum::middleware::from_fn(cors::allow_any_origin))
        .merge(registration)
}

/// `route` with its body cap, behind its per-network rate limit.
fn limited(
    route: MethodRouter<AppState>,
    body_limit: usize,
    limit: NetworkLimit,
) -> MethodRouter<AppState> {
    route
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(
            limit,
            rate_limit::limit,
        ))
}

/// The browser pages of the authorization flow (`no-store`, like every
/// page: see [`crate::http::router`]).
pub fn browser_router() -> Router<AppState> {
    Router::new()
        .route("/authorize", get(authorize::authorize))
        .route(
            "/authorize/consent",
            get(consent::show)
                .post(consent::answer)
                .layer(DefaultBodyLimit::max(FORM_LIMIT)),
        )
        .route(
            "/authorize/confirm",
            post(consent::confirm_password).layer(DefaultBodyLimit::max(FORM_LIMIT)),
        )
}
