//! HTTP: the only layer that knows axum.
//!
//! Each area exposes its own `router()`; this module merges them and wraps
//! the whole in the layers every response needs (request id, tracing,
//! security headers). Handlers turn requests into calls on `identity`,
//! `oauth` and `mcp`, and return what those give back.
//!
//! # Errors: one place per kind of client
//!
//! An error becomes an answer in exactly one module for each kind of
//! client, because each kind reads its answers differently:
//!
//! | client | error type | the one place | what it gets |
//! |---|---|---|---|
//! | a person's browser (pages, forms, the authorization endpoint before its redirect URI is trusted) | [`error::PageError`] | [`error`] | an HTML page in plain words; 503 with `Retry-After` when the store is out of reach |
//! | an OAuth client (`/token`, `/revoke`, `/register`, `/introspect`; `/authorize` once its redirect URI is trusted) | [`crate::oauth::error::OAuthError`] | [`oauth::error`] | RFC 6749 §5.2 JSON with `no-store`, or the refusal redirect with `error`, `state` and `iss` |
//! | an MCP client (`/mcp`) | the refusals of [`crate::mcp::admission`] (the bearer check's and the wire's among them) | [`mcp::error`] | 401/403 with the `Bearer` (and `DPoP`) challenges, JSON-RPC error bodies, 503 with `Retry-After` |
//!
//! Handlers never build an error answer themselves: they return one of
//! these types (or call the place's functions), and the place logs the
//! internal cause and sends none of it. Three things are not errors of a
//! request and stay where they are: a form sent back with what was wrong
//! (its own page, re-rendered by its handler with a 4xx status); a
//! JSON-RPC error inside an exchange rmcp carries, which the MCP handler
//! returns as rmcp's `ErrorData` (`crate::mcp::server`: an unknown tool
//! −32602, a failure −32603); and the connection-level answers below the
//! router ([`serve`]: a request not received or not answered in time 408
//! or 503, a connection over the cap 503, in plain text), with `/health`'s
//! readiness answer.

pub mod admin;
pub mod documents;
pub mod dpop;
pub mod error;
pub mod form;
pub mod health;
pub mod mcp;
pub mod metrics;
pub mod oauth;
pub mod pages;
pub mod rate_limit;
pub mod security_headers;
pub mod serve;
pub mod session;

use axum::Router;
use axum::http::HeaderName;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tower_sessions::SessionManagerLayer;
use tracing::Level;

use crate::state::AppState;
use crate::storage::sessions::SessionBackend;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The whole application, ready to serve.
pub fn router(state: AppState, sessions: SessionManagerLayer<SessionBackend>) -> Router {
    // Every page answers `no-store`: each shows or asks for a signed-in
    // person's data (or a sign-in form with its CSRF token), which no
    // shared cache, and no back button on a shared computer after sign-out,
    // may serve again. A layer here rather than in each handler, so no
    // page, redirect or refusal can miss it.
    let browser = pages::router()
        .merge(oauth::browser_router())
        .merge(admin::router())
        .layer(SetResponseHeaderLayer::overriding(
            axum::http::header::CACHE_CONTROL,
            axum::http::HeaderValue::from_static("no-store"),
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            pages::same_origin_posts,
        ))
        .layer(sessions)
        .layer(axum::middleware::from_fn(session::unavailable_store_is_503));

    let static_files = Router::new()
        .nest_service("/static", ServeDir::new(static_dir()))
        .layer(SetResponseHeaderLayer::overriding(
            axum::http::header::CACHE_CONTROL,
            axum::http::HeaderValue::from_static("public, max-age=3600"),
        ));

    Router::new()
        .merge(health::router())
        .merge(oauth::api_router(&state.config))
        .merge(mcp::router(&state))
        .merge(metrics::router())
        .merge(browser)
        .merge(static_files)
        .with_state(state.clone())
        .layer(axum::middleware::from_fn(security_headers::apply))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &axum::http::Request<_>| {
                    // The request id ties every log line of one request
                    // together. Only method and path are logged: a query may
                    // carry a code.
                    let request_id = req
                        .headers()
                        .get(REQUEST_ID)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-");
                    tracing::info_span!(
                        "request",
                        request_id,
                        method = %req.method(),
                        path = req.uri().path()
                    )
                })
                // One line per answered request at the default level: its
                // status and latency, inside the request's span.
                .on_response(DefaultOnResponse::new().level(Level::INFO)),
        )
        // `Router::layer` wraps each route, so the matched route is known
        // here; outside the other layers, so the time includes their work.
        .layer(axum::middleware::from_fn_with_state(
            state.metrics.clone(),
            metrics::track,
        ))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
}

/// Static files ship beside the binary's sources; `COOP_STATIC_DIR` points
/// elsewhere for an installed binary.
fn static_dir() -> std::path::PathBuf {
    std::env::var_os("COOP_STATIC_DIR")
        .map(Into::into)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("static"))
}
