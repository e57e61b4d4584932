//! The MCP resource at `/mcp` and its protected resource metadata.
//!
//! | route | file | protocol |
//! |---|---|---|
//! | `GET /.well-known/oauth-protected-resource/mcp` and the root form | [`metadata`] | [`crate::mcp::resource_metadata`] |
//! | `/mcp` (POST; GET and DELETE answer 405) | [`guard`] then rmcp | [`crate::mcp::admission`], [`crate::mcp::server`] |
//!
//! rmcp's `StreamableHttpService` is configured for Coop (see
//! docs/mcp.md): stateless (`NeverSessionManager`, no legacy sessions), JSON
//! responses, no SSE keep-alive, `Host` and `Origin` allow-lists from the
//! issuer (and `--allowed-hosts`), the same 64 KiB body cap. It is built
//! once; rmcp calls the handler factory per request, which clones two
//! handles.

pub mod error;
pub mod guard;
pub mod metadata;
pub mod rate_limit;

use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::domain::Issuer;
use crate::mcp::admission::{Budgets, MAX_BODY, Resource};
use crate::mcp::resource_metadata;
use crate::mcp::server::FarmServer;
use crate::state::AppState;
use rate_limit::Budget;

/// The guard's state: the server's, and the two request budgets.
#[derive(Clone)]
pub struct Guard {
    pub app: AppState,
    pub per_grant: Budget,
    pub per_subject: Budget,
}

impl Guard {
    /// What the admission consults on the server's side.
    fn resource(&self) -> Resource<'_> {
        Resource {
            issuer: &self.app.issuer,
            allowed_hosts: &self.app.config.allowed_hosts,
            keys: &self.app.keys,
            dpop: &self.app.dpop,
            store: &self.app.store,
        }
    }

    fn budgets(&self) -> Budgets<'_> {
        Budgets {
            per_grant: &self.per_grant,
            per_subject: &self.per_subject,
        }
    }
}

/// The issuer's origin with an explicit port, as rmcp's Origin allow-list
/// wants it (an entry without a port would match any port).
fn origin_with_port(issuer: &Issuer) -> String {
    match url::Url::parse(issuer.as_str()) {
        Ok(url) => match url.port_or_known_default() {
            Some(port) if url.port().is_none() => format!("{}:{port}", issuer.as_str()),
            _ => issuer.as_str().to_owned(),
        },
        Err(_) => issuer.as_str().to_owned(),
    }
}

fn rmcp_config(issuer: &Issuer, allowed_hosts: &[String]) -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_sse_retry(None)
        .with_allowed_hosts(
            std::iter::once(issuer.authority().to_owned()).chain(allowed_hosts.iter().cloned()),
        )
        .with_allowed_origins([origin_with_port(issuer)])
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_BODY)
}

pub fn router(state: &AppState) -> Router<AppState> {
    let (store, clock) = (state.store.clone(), state.clock.clone());
    let service = StreamableHttpService::new(
        move || Ok(FarmServer::new(store.clone(), clock.clone())),
        Arc::new(NeverSessionManager::default()),
        rmcp_config(&state.issuer, &state.config.allowed_hosts),
    );
    let guard = Guard {
        app: state.clone(),
        per_grant: Budget::per_minute(state.config.mcp_rate_limit),
        per_subject: Budget::per_minute(state.config.mcp_subject_rate_limit),
    };
    let metadata_routes = Router::new()
        .route(resource_metadata::PATH, get(metadata::show))
        .route(resource_metadata::ROOT_PATH, get(metadata::show))
        .layer(axum::middleware::from_fn(
            crate::http::oauth::cors::allow_any_origin,
        ));
    Router::new()
        .route_service(
            "/mcp",
            tower::ServiceBuilder::new()
                .layer(axum::middleware::from_fn_with_state(guard, guard::guard))
                .service(service),
        )
        .merge(metadata_routes)
}
