//! Building and running the server: bind first, then everything else.
//!
//! The listener is bound before the issuer is derived, so a server asked for
//! port 0 (every test) knows its real address and advertises it. Then the
//! store is connected and migrated, the session layer built on it, and the
//! router assembled. `run_until_stopped` serves until SIGTERM or Ctrl-C and
//! drains in-flight requests, up to the drain deadline; connections and
//! their timeouts are `crate::http::serve`'s.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};

use crate::clock::Clock;
use crate::config::Config;
use crate::domain::Issuer;
use crate::http::metrics::Metrics;
use crate::identity::{Passwords, SignIn};
use crate::oauth::cimd::CimdFetcher;
use crate::oauth::cimd::copies::{self, LastGoodCopies};
use crate::oauth::keys::Keys;
use crate::secrets::{self, MacKey, MasterSecret};
use crate::state::{AppState, Shared};
use crate::storage::sessions::SessionBackend;
use crate::storage::{Store, StoreError, server_secrets};

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("--bind / COOP_BIND: cannot bind {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    /// The database could not be opened or migrated: named like a setting,
    /// since the URL is what the operator fixes.
    #[error("{setting}: cannot open the database: {source}", setting = crate::config::DATABASE_URL_SETTING)]
    Database {
        #[source]
        source: StoreError,
    },
    #[error("database: {0}")]
    Store(#[from] StoreError),
    #[error("password hasher: {0}")]
    Passwords(#[from] crate::identity::PasswordError),
    #[error("{0}")]
    Other(String),
}

/// The stored secret every signed cookie's key is derived from.
const COOKIE_MASTER_SECRET: &str = "cookie_mac";

/// The longest access-token lifetime the configuration accepts.
pub const MAX_ACCESS_TOKEN_TTL: time::Duration = time::Duration::days(1);

pub struct Application {
    listener: TcpListener,
    address: SocketAddr,
    state: AppState,
    sessions: SessionBackend,
}

impl Application {
    /// Binds, connects, migrates and assembles; serves nothing yet.
    pub async fn build(config: Config, clock: Clock) -> Result<Self, StartupError> {
        let listener =
            TcpListener::bind(config.bind)
                .await
                .map_err(|source| StartupError::Bind {
                    addr: config.bind,
                    source,
                })?;
        let address = listener.local_addr().map_err(|source| StartupError::Bind {
            addr: config.bind,
            source,
        })?;
        let issuer = config
            .issuer
            .clone()
            .unwrap_or_else(|| Issuer::from_bound_address(address));

        // Before the database: a refused setting must leave nothing behind.
        let cimd = build_cimd_fetcher(&config)?;

        let store = Store::connect(&config.database_url)
            .await
            .map_err(|source| StartupError::Database { source })?;
        let sessions = SessionBackend::new(store.clone());
        let passwords = Passwords::new(config.password_hash_concurrency)?;
        // A retired key stays published for the longest lifetime any replica
        // may give a token, so a rotation never cuts a live token short.
        let keys = Keys::load_or_create(store.clone(), MAX_ACCESS_TOKEN_TTL, clock.now())
            .await
            .map_err(|e| StartupError::Other(format!("signing keys: {e}")))?;
        // The same on every replica: the first to start makes it.
        let cookie_master = server_secrets::load_or_create(
            &store,
            COOKIE_MASTER_SECRET,
            || MasterSecret::new(secrets::random_token(32)),
            clock.now(),
        )
        .await?;
        let signin = SignIn::new(
            store.clone(),
            passwords.clone(),
            config.signin,
            MacKey::derive(cookie_master.expose().as_bytes(), "device cookie"),
        );
        let form_key = MacKey::derive(cookie_master.expose().as_bytes(), "signed-out form csrf");
        let dpop = crate::oauth::dpop::Policy::new(
            crate::oauth::dpop::NonceKey::new(MacKey::derive(
                cookie_master.expose().as_bytes(),
                "dpop nonce",
            )),
            config.dpop_require_nonce,
        );

        let metrics = Metrics::new().map_err(|e| StartupError::Other(format!("metrics: {e}")))?;
        let grace = time::Duration::try_from(config.cimd_stale_grace)
            .map_err(|e| StartupError::Other(format!("--cimd-stale-grace: {e}")))?;
        let cimd = cimd.keeping_copies(LastGoodCopies::new(store.clone(), grace, |kind| {
            metrics.counter(
                copies::STALE_SERVED_TOTAL,
                copies::STALE_SERVED_HELP,
                &[("kind", kind)],
            )
        }));

        let state = AppState::new(Shared {
            config: Arc::new(config),
            issuer,
            store,
            clock,
            passwords,
            keys,
            signin,
            form_key,
            metrics,
            cimd,
            dpop,
        });
        Ok(Self {
            listener,
            address,
            state,
            sessions,
        })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    pub fn port(&self) -> u16 {
        self.address.port()
    }

    pub fn issuer(&self) -> &Issuer {
        &self.state.issuer
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until SIGTERM or Ctrl-C, then lets in-flight requests finish
    /// until the drain deadline.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.run_until(shutdown_signal()).await
    }

    /// Serves until `stop` completes (tests stop a replica this way).
    pub async fn run_until(
        self,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let Self {
            listener,
            state,
            sessions,
            ..
        } = self;
        spawn_housekeeping(&state, sessions.clone());
        let upkeep = state.metrics.spawn_upkeep();
        let app = crate::http::router(state.clone(), session_layer(&state, sessions));
        let limits = state.config.connections;
        let served = crate::http::serve::serve(listener, app, limits, stop).await;
        upkeep.abort();
        // Every request has been answered or cut off at the drain deadline;
        // closing the pool lets SQLite checkpoint its write-ahead log so the
        // file is whole on its own.
        state.store.close().await;
        served
    }
}

/// The metadata-document fetcher, with a loud warning when the test-only
/// settings relax it, and through the outbound proxy when one is set.
fn build_cimd_fetcher(config: &Config) -> Result<CimdFetcher, StartupError> {
    let settings = &config.cimd_test;
    if settings.is_on() {
        tracing::warn!(
            extra_ca = ?settings.extra_ca_pem,
            allow_loopback = settings.allow_loopback,
            "CIMD TEST SETTINGS ARE ON: client metadata documents may be fetched \
             with an extra trusted CA and/or from loopback hosts. Never use this in production."
        );
    }
    if let Some(proxy) = &config.outbound_proxy {
        tracing::info!(
            proxy = %proxy.address(),
            "client metadata documents and key sets are fetched through the outbound proxy"
        );
    }
    CimdFetcher::with_proxy(settings.clone(), config.outbound_proxy.clone())
        .map_err(|e| StartupError::Other(e.to_string()))
}

/// Session cookies: HttpOnly and SameSite=Lax always (Lax, so the top-level
/// GET to `/authorize` from a client's site carries the sign-in); Secure and
/// the `__Host-` prefix (no Domain, Path=/) when the issuer is https.
fn session_layer(
    state: &AppState,
    sessions: SessionBackend,
) -> SessionManagerLayer<SessionBackend> {
    let https = state.issuer.is_https();
    let name = if https {
        "__Host-coop_session"
    } else {
        "coop_session"
    };
    SessionManagerLayer::new(sessions)
        .with_name(name)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(https)
        .with_path("/")
        .with_expiry(Expiry::OnInactivity(time::Duration::hours(12)))
}

/// Periodic clean-up that keeps memory and tables bounded.
fn spawn_housekeeping(state: &AppState, sessions: SessionBackend) {
    let throttle = state.signin.throttle().clone();
    let keys = state.keys.clone();
    let clock = state.clock.clone();
    let store = state.store.clone();
    let cimd = state.cimd.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        loop {
            tick.tick().await;
            if let Err(err) = throttle.forget_cleared(clock.now()).await {
                tracing::warn!(error = %err, "could not delete spent sign-in counters");
            }
            // Another process may have rotated the signing key.
            if let Err(err) = keys.reload(clock.now()).await {
                tracing::warn!(error = %err, "could not reload signing keys");
            }
            // tower-sessions stamps expiries from the system clock.
            if let Err(err) = sessions
                .delete_expired(time::OffsetDateTime::now_utc())
                .await
            {
                tracing::warn!(error = %err, "could not delete expired sessions");
            }
            match crate::oauth::housekeeping::sweep(&store, clock.now()).await {
                Ok(swept) => tracing::debug!(?swept, "OAuth housekeeping"),
                Err(err) => tracing::warn!(error = %err, "OAuth housekeeping failed"),
            }
            if let Err(err) = crate::identity::reset::forget_old(&store, clock.now()).await {
                tracing::warn!(error = %err, "could not delete old password reset links");
            }
            if let Err(err) = cimd.sweep_copies(clock.now()).await {
                tracing::warn!(error = %err, "could not delete last good copies past their grace");
            }
        }
    });
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %err, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::warn!(error = %err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: draining in-flight requests");
}
