//! The state every handler shares, built once at start.
//!
//! Cloning it is one reference count: axum clones the state for every
//! extractor and middleware of every request, and the parts (the issuer's
//! text, three HMAC keys, a dozen shared handles) cost far more than that
//! to copy one by one.

use std::ops::Deref;
use std::sync::Arc;

use crate::clock::Clock;
use crate::config::Config;
use crate::domain::Issuer;
use crate::http::metrics::Metrics;
use crate::identity::{Passwords, SignIn};
use crate::oauth::cimd::CimdFetcher;
use crate::oauth::keys::Keys;
use crate::secrets::MacKey;
use crate::storage::Store;

#[derive(Clone, Debug)]
pub struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What [`AppState`] holds.
#[derive(Debug)]
pub struct Shared {
    pub config: Arc<Config>,
    /// The issuer actually in force (configured, or derived from the bound
    /// address); every URL Coop prints starts with it.
    pub issuer: Issuer,
    pub store: Store,
    pub clock: Clock,
    pub passwords: Passwords,
    /// The signing keys, shared with every replica through the store.
    pub keys: Keys,
    /// Sign-in and password step-ups: the throttle in the shared store and
    /// the device cookies' key.
    pub signin: SignIn,
    /// The key of the CSRF cookie of signed-out forms (the same on every
    /// replica).
    pub form_key: MacKey,
    /// This server's own metrics registry (see [`crate::http::metrics`]).
    pub metrics: Metrics,
    /// Client ID Metadata Documents, fetched with the SSRF guard and cached.
    pub cimd: CimdFetcher,
    /// How DPoP proofs are taken: the shared nonce key, nonces required or not.
    pub dpop: crate::oauth::dpop::Policy,
}
